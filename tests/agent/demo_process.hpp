// Integration test helpers: hotscope-demo running with a private runtime directory, and
// commands (curl, the CLI) run with their output captured.
#pragma once

#include "agent/protocol.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/files.hpp"
#include "support/stats.hpp"
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace hotscope::testing {

namespace fs = std::filesystem;

using Env = std::map<std::string, std::string>;

struct CommandResult {
  int status = -1; // the exit code, or 128 + the signal
  std::string out; // standard output
  std::string err; // standard error
};

using hotscope::test_support::slurp;

inline std::string quote(const std::string& word) {
  std::string quoted = "'";
  for (const char c : word) {
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return quoted + "'";
}

// A scratch directory under /tmp with a short path (a Unix socket path has at most 107 bytes),
// removed unless the test failed.
class ScratchDir {
public:
  ScratchDir() {
    char pattern[] = "/tmp/hs-agent-XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~ScratchDir() {
    if (!::testing::Test::HasFailure()) {
      std::error_code error;
      fs::remove_all(path_, error);
    }
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const fs::path& path() const { return path_; }

private:
  fs::path path_;
};

// Runs `words` through the shell with `env` added, standard output and error captured.
inline CommandResult run(const std::vector<std::string>& words, const Env& env = {}) {
  static std::atomic<int> counter{0};
  const fs::path base = fs::temp_directory_path() / ("hs-agent-run-" + std::to_string(getpid()) +
                                                     "-" + std::to_string(counter++));
  std::string command = "env";
  for (const auto& [name, value] : env) {
    command += " " + quote(name + "=" + value);
  }
  for (const std::string& word : words) {
    command += " " + quote(word);
  }
  command += " >" + base.string() + ".out 2>" + base.string() + ".err </dev/null";
  const int status = std::system(command.c_str());
  CommandResult result;
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = slurp(base.string() + ".out");
  result.err = slurp(base.string() + ".err");
  fs::remove(base.string() + ".out");
  fs::remove(base.string() + ".err");
  return result;
}

// Another program to run in the demo's place: it must handle SIGTERM (by ending) like the demo.
struct Program {
  std::vector<std::string> command;
};

// Arguments for a demo whose threads use enough CPU for a few seconds' CPU samples to name its
// functions: each thread is sampled on its own CPU clock, and at the default 2,000 requests a
// second a fast machine's demo threads can each stay under one 99 Hz period in two seconds.
inline const std::vector<std::string> kBusyDemo{"--rate", "10000"};

// hotscope-demo --seconds 0, with HOTSCOPE_RUNTIME_DIR=<scratch>/rt (unless `env` names another),
// until the test ends.
class Demo {
public:
  // `before_exec`: run by the test with the demo's pid while its forked process waits to exec it
  // (to prepare files named after that pid).
  explicit Demo(const Env& env = {}, bool expect_agent = true,
                const std::vector<std::string>& arguments = {},
                const std::function<void(pid_t)>& before_exec = {})
      : runtime_dir_(runtime_dir_of(env)) {
    std::vector<std::string> command{HOTSCOPE_DEMO, "--seconds", "0", "--threads", "2"};
    command.insert(command.end(), arguments.begin(), arguments.end());
    start(command, env, expect_agent, before_exec);
  }
  explicit Demo(const Program& program, const Env& env = {}) : runtime_dir_(runtime_dir_of(env)) {
    start(program.command, env, true);
  }
  ~Demo() { stop(); }
  Demo(const Demo&) = delete;
  Demo& operator=(const Demo&) = delete;

private:
  fs::path runtime_dir_of(const Env& env) const {
    const auto named = env.find("HOTSCOPE_RUNTIME_DIR");
    return named != env.end() ? fs::path(named->second) : scratch_.path() / "rt";
  }

  void start(const std::vector<std::string>& command, const Env& env, bool expect_agent,
             const std::function<void(pid_t)>& before_exec = {}) {
    int go[2];
    ASSERT_EQ(pipe2(go, O_CLOEXEC), 0);
    pid_ = fork();
    if (pid_ == 0) {
      close(go[1]);
      char ignored;
      static_cast<void>(read(go[0], &ignored, 1)); // until the test closes its end
      close(go[0]);
      prctl(PR_SET_PDEATHSIG, SIGKILL); // a test killed at its timeout takes the demo along
      setenv("HOTSCOPE_RUNTIME_DIR", runtime_dir_.c_str(), 1);
      // A small trace window: a snapshot of the default 32 MiB takes seconds under TSan.
      setenv("HOTSCOPE_TRACE_MIB", "2", 1);
      for (const auto& [name, value] : env) {
        setenv(name.c_str(), value.c_str(), 1);
      }
      const std::string out = (scratch_.path() / "demo.out").string();
      freopen(out.c_str(), "w", stdout);
      freopen((scratch_.path() / "demo.err").c_str(), "w", stderr);
      std::vector<const char*> argv;
      for (const std::string& word : command) {
        argv.push_back(word.c_str());
      }
      argv.push_back(nullptr);
      execv(argv[0], const_cast<char* const*>(argv.data()));
      _exit(127);
    }
    close(go[0]);
    if (before_exec) {
      before_exec(pid_);
    }
    close(go[1]);
    // The agent starts at load time, before main: a SIGTERM sent then would kill the demo
    // instead of ending it through main. Sanitized builds start slowly.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while ((!catches_sigterm() || (expect_agent && !fs::exists(info_path()))) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!expect_agent) {
      return;
    }
    EXPECT_TRUE(fs::exists(info_path())) << "no agent: " << slurp(scratch_.path() / "demo.err");
  }

public:
  // SIGTERM, then the demo returns from main; its exit status.
  int stop() {
    if (pid_ <= 0) {
      return status_;
    }
    // Sent again every 5 s: GCC 12's TSan runtime now and then drops an asynchronous signal
    // outright, the handler never run and nothing left pending, in the kernel or in TSan's own
    // queue. A 40-line program with no hotscope code in it (a SIGTERM handler that posts a
    // semaphore, five threads waiting on a condition variable or sleeping, main in sem_wait) lost
    // 22 of 600 SIGTERMs under TSan, none of 2,400 without it, none with no threads.
    // A demo still there after 60 s hangs: the failure names where each of its threads waits,
    // and the demo is killed, rather than the test waiting for ctest's timeout.
    kill(pid_, SIGTERM);
    int status = 0;
    for (int polls = 1;; ++polls) {
      const pid_t ended = waitpid(pid_, &status, WNOHANG);
      if (ended == pid_) {
        break;
      }
      if ((ended < 0 && errno != EINTR) || polls == 3000) {
        if (ended < 0) {
          ADD_FAILURE() << "waitpid: " << std::strerror(errno);
        } else {
          const std::string threads = threads_of(pid_);
          kill_hard(); // its stderr is whole once it has ended
          ADD_FAILURE() << "the demo did not end within 60 s of SIGTERM; its threads:\n"
                        << threads << "its stderr:\n"
                        << stderr_text();
        }
        pid_ = 0;
        status_ = -1;
        return status_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (polls % 250 == 0) {
        kill(pid_, SIGTERM);
      }
    }
    pid_ = 0;
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return status_;
  }
  // SIGKILL: the agent cannot clean up.
  void kill_hard() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = 0;
  }

  // Each thread of `pid`: its name, state and the kernel function it waits in (/proc).
  static std::string threads_of(pid_t pid) {
    std::string text;
    const fs::path tasks = "/proc/" + std::to_string(pid) + "/task";
    std::error_code error;
    for (const auto& task : fs::directory_iterator(tasks, error)) {
      const std::string stat = slurp(task.path() / "stat");
      const std::size_t name_end = stat.rfind(')');
      std::string name = slurp(task.path() / "comm");
      if (!name.empty() && name.back() == '\n') {
        name.pop_back();
      }
      text += task.path().filename().string() + " " + name;
      text += name_end == std::string::npos ? "" : stat.substr(name_end + 1, 3);
      text += " in " + slurp(task.path() / "wchan") + "\n";
    }
    return text;
  }

  // The demo's main has installed its SIGTERM handler (SigCgt in /proc/<pid>/status).
  bool catches_sigterm() const {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("SigCgt:", 0) == 0) {
        return (std::stoull(line.substr(7), nullptr, 16) >> (SIGTERM - 1) & 1) != 0;
      }
    }
    return false;
  }

  pid_t pid() const { return pid_; }
  const fs::path& scratch() const { return scratch_.path(); }
  const fs::path& runtime_dir() const { return runtime_dir_; }
  fs::path socket() const { return agent::socket_path(runtime_dir_, pid_); }
  fs::path info_path() const { return agent::info_path(runtime_dir_, pid_); }
  std::string stderr_text() const { return slurp(scratch_.path() / "demo.err"); }

  // curl --unix-socket, with `arguments` after the socket option.
  CommandResult curl(const std::vector<std::string>& arguments) const {
    std::vector<std::string> words{CURL, "--silent",      "--show-error", "--max-time",
                                   "60", "--unix-socket", socket()};
    words.insert(words.end(), arguments.begin(), arguments.end());
    return run(words);
  }
  std::string get(const std::string& path) const {
    const CommandResult result = curl({"--fail", "http://localhost" + path});
    EXPECT_EQ(result.status, 0) << path << ": " << result.err;
    return result.out;
  }

private:
  ScratchDir scratch_;
  fs::path runtime_dir_;
  pid_t pid_ = 0;
  int status_ = -1;
};

using hotscope::test_support::calls_of;

#ifdef HOTSCOPE_CLI
// hotscope ARGS with the runtime directory of `process`.
inline CommandResult cli(const Demo& process, std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), HOTSCOPE_CLI);
  return run(arguments, {{"HOTSCOPE_RUNTIME_DIR", process.runtime_dir()}});
}
#endif

} // namespace hotscope::testing
