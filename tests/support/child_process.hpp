// For tests that start a command, signal it and look at how it ended.
#pragma once

#include "support/files.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace hotscope::test_support {

// The exit status of `command`, run by the shell; -1 when a signal ended it.
inline int shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// What `command`, run by the shell, writes to its standard output.
inline std::string output_of(const std::string& command) {
  std::string text;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[65536];
    std::size_t got = 0;
    while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) {
      text.append(buffer, got);
    }
    pclose(pipe);
  }
  return text;
}

// The GNU build id of the ELF object at `path` as binutils' readelf reads it (lowercase hex),
// "" when it has none.
inline std::string build_id_of(const std::filesystem::path& path) {
  std::string id = output_of("readelf -n '" + path.string() + "' | sed -n 's/.*Build ID: //p'");
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) {
    id.pop_back();
  }
  return id;
}

// In a child about to exec: every signal at its default action and none blocked, as a program
// started from a terminal has them (a background job of a script has SIGINT ignored).
inline void default_signals() {
  for (int signal = 1; signal < NSIG; ++signal) {
    ::signal(signal, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

[[noreturn]] inline void exec_command(const std::vector<std::string>& command) {
  std::vector<char*> argv;
  for (const std::string& argument : command) {
    argv.push_back(const_cast<char*>(argument.c_str()));
  }
  argv.push_back(nullptr);
  execv(argv[0], argv.data());
  _exit(126);
}

// `command` as a child with default signals, its standard output and error into `output`.
inline pid_t start_command(const std::vector<std::string>& command,
                           const std::filesystem::path& output) {
  const pid_t child = fork();
  if (child == 0) {
    default_signals();
    if (std::freopen(output.c_str(), "w", stdout) == nullptr || dup2(fileno(stdout), 2) < 0) {
      _exit(125);
    }
    exec_command(command);
  }
  return child;
}

// The child's wait status, or -1 when it did not end within 30 s (then it is killed).
inline int wait_for_child(pid_t child) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int status = 0;
  while (waitpid(child, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status;
}

// The text of `file` from where `text` first appears in it, once it does (10 s at most); "" if
// it never does.
inline std::string wait_for_text(const std::filesystem::path& file, const std::string& text) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string content = slurp(file);
    if (const std::size_t at = content.find(text); at != std::string::npos) {
      return content.substr(at);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "";
}

// Polls `check` every 20 ms until it is true or `seconds` have passed; true if it became so.
template <class Check> bool eventually(int seconds, Check check) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!check()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// The threads of process `pid` named `name` (their comm), now.
inline std::size_t threads_named(const std::string& pid, const std::string& name) {
  std::size_t count = 0;
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + pid + "/task", error)) {
    count += slurp(task.path() / "comm") == name + "\n" ? 1 : 0;
  }
  return count;
}

} // namespace hotscope::test_support
