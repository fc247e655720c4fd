#include "run_command.hpp"

#include "atomic_file/atomic_file.hpp"
#include "config/config.hpp"
#include "run_agent.hpp"

#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

namespace hotscope::cli {
namespace {

// Passed on to the program. The launcher takes them through a signalfd, so none ends it.
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

// `variable` (HOTSCOPE_PRELOAD, HOTSCOPE_RUN_PRELOAD), else the installed library next to an
// installed hotscope (bin/../lib/), else the build tree's. The installed one comes first: an
// installed copy must not use a build tree.
std::string preload_library(const char* variable, const char* installed_path,
                            const char* build_tree_path) {
  const char* chosen = std::getenv(variable);
  if (chosen != nullptr && *chosen != '\0') {
    return chosen;
  }
  if (*build_tree_path == '\0') {
    // Where no exception can reach the command (an attach under way).
    std::fprintf(stderr,
                 "hotscope: this hotscope was built without its preload libraries (a sanitizer "
                 "build): name one with %s\n",
                 variable);
    _exit(127);
  }
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::filesystem::path installed =
        (self.parent_path() / installed_path).lexically_normal();
    if (std::filesystem::exists(installed, error)) {
      return installed;
    }
  }
  return build_tree_path;
}

// The program's environment: the launcher's with hotscope's variables, made before the program's
// process starts. That process is a vfork of the launcher, which only writes its own pid into the
// variables that name it and execs: a fork would copy the launcher's page tables, and its exec
// tear them down again, on the program's CPU time (about a millisecond).
class ProgramEnvironment {
public:
  ProgramEnvironment() {
    for (char** entry = environ; *entry != nullptr; ++entry) {
      entries_.emplace_back(*entry);
    }
  }
  // setenv(name, value, overwrite) on the copy.
  void set(const std::string& name, const std::string& value, bool overwrite = true) {
    if (std::string* entry = entry_of(name)) {
      if (overwrite) {
        *entry = name + "=" + value;
      }
      return;
    }
    entries_.push_back(name + "=" + value);
  }
  const char* get(const std::string& name) {
    const std::string* entry = entry_of(name);
    return entry != nullptr ? entry->c_str() + name.size() + 1 : nullptr;
  }
  // `name` will be the program's pid: room for it, filled by fill_pids() in its process.
  void set_to_program_pid(const std::string& name) {
    set(name, std::string(kPidDigits, '0'));
    pid_entries_.push_back(entry_of(name) - entries_.data());
  }
  // Puts `library` first in LD_PRELOAD.
  void preload(const std::string& library) {
    const char* existing = get("LD_PRELOAD");
    set("LD_PRELOAD", existing != nullptr && *existing ? library + ":" + existing : library);
  }
  // Makes envp(); the entries must not change after this.
  void prepare() {
    pointers_.clear();
    for (std::string& entry : entries_) {
      pointers_.push_back(entry.data());
    }
    pointers_.push_back(nullptr);
    pid_slots_.clear();
    for (const std::ptrdiff_t index : pid_entries_) {
      std::string& entry = entries_[static_cast<std::size_t>(index)];
      pid_slots_.push_back(entry.data() + entry.find('=') + 1);
    }
  }
  char** envp() { return pointers_.data(); }
  // In the vforked process: system calls and stores only.
  void fill_pids() {
    unsigned long pid = static_cast<unsigned long>(getpid());
    char digits[kPidDigits + 1];
    char* end = digits + kPidDigits;
    char* first = end;
    *end = '\0';
    do {
      *--first = static_cast<char>('0' + pid % 10);
      pid /= 10;
    } while (pid != 0 && first != digits);
    for (char* slot : pid_slots_) {
      std::memcpy(slot, first, static_cast<std::size_t>(end - first) + 1);
    }
  }

private:
  std::string* entry_of(const std::string& name) {
    for (std::string& entry : entries_) {
      if (entry.size() > name.size() && entry[name.size()] == '=' &&
          entry.compare(0, name.size(), name) == 0) {
        return &entry;
      }
    }
    return nullptr;
  }

  static constexpr std::size_t kPidDigits = 10;
  std::vector<std::string> entries_;
  std::vector<std::ptrdiff_t> pid_entries_; // entries_' indexes
  std::vector<char*> pointers_;
  std::vector<char*> pid_slots_;
};

// The environment the profiled program starts with. `raw_report`: where the sampled mode leaves
// the report for the launcher to symbolize ("": none). `runtime_later`: the runtime is loaded at
// the first client (run_agent.hpp), not preloaded.
ProgramEnvironment program_environment(const RunOptions& options, const std::string& raw_report,
                                       bool runtime_later) {
  ProgramEnvironment environment;
  if (!options.out_dir.empty()) {
    environment.set("HOTSCOPE_OUT", options.out_dir);
  }
  if (!options.summary) {
    environment.set("HOTSCOPE_HEAP_SUMMARY", "0");
  }
  // SIGTERM, SIGINT and SIGHUP write the reports before they end the program, unless the user
  // said otherwise.
  environment.set("HOTSCOPE_ON_SIGNAL", "report", false);
  // The program itself writes DIR/heap.json and DIR/cpu.*; processes it execs write
  // heap.<name>.<pid>.json and DIR/<name>.<pid>/cpu.*.
  environment.set_to_program_pid("HOTSCOPE_RUN_PID");
  if (options.cpu) {
    environment.set("HOTSCOPE_CPU_HZ", "99", false);
  }
  if (options.locks) {
    environment.set("HOTSCOPE_LOCKS", "1", false); // HOTSCOPE_LOCKS=hold asks for hold times too
  }
  // libhotscope-run.so under every option: the live agent and the crash reports (it stands
  // down in a program linked with hotscope, which has them already); with --locks the same with
  // the pthread lock functions, libhotscope-run-locks.so.
  if (runtime_later) {
    // The processes the program starts load it themselves (the heap library does): the launcher
    // knows none of their pids.
    environment.set("HOTSCOPE_RUN_RUNTIME", run_preload_path());
  } else if (options.cpu || options.locks || options.heap) {
    environment.preload(options.locks ? locks_runtime_path() : run_preload_path());
  }
  if (options.heap) {
    environment.preload(heap_preload_path());
    environment.set_to_program_pid("HOTSCOPE_HEAP_PID");
    if (!raw_report.empty()) {
      environment.set("HOTSCOPE_HEAP_RAW_REPORT", raw_report);
      environment.set("HOTSCOPE_HEAP_LAUNCHER", std::to_string(getpid()));
    }
  }
  return environment;
}

// Ends the launcher as the program ended: killed by the same signal where that ends a process
// without a core dump (a shell running hotscope in a loop then stops at Ctrl-C, as it would for
// the program itself), else 128 + the signal, as a shell reports it.
int end_as(int signal) {
  switch (signal) {
  case SIGINT:
  case SIGTERM:
  case SIGHUP:
  case SIGUSR1:
  case SIGUSR2:
  case SIGPIPE:
  case SIGALRM:
  case SIGKILL: {
    std::signal(signal, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, signal);
    sigprocmask(SIG_UNBLOCK, &only, nullptr);
    raise(signal);
    break;
  }
  default:
    break;
  }
  return 128 + signal;
}

// A directory of the launcher's own for the sampled mode's raw report (docs/heap.md, "The report
// at exit"); "" when none can be made: the program then writes its report itself. In memory where
// there is a place for it ($XDG_RUNTIME_DIR, /dev/shm): creating the file on a disk's file system
// (ext4 here) took 30 µs of the program's exit, on tmpfs 6 µs. A file that does not fit there is
// written by the program itself, in full.
std::string raw_report_directory() {
  std::vector<std::filesystem::path> places;
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime != nullptr && *runtime == '/') {
    places.emplace_back(runtime);
  }
  places.emplace_back("/dev/shm");
  std::error_code error;
  if (std::filesystem::path temporary = std::filesystem::temp_directory_path(error); !error) {
    places.push_back(std::move(temporary));
  }
  for (const std::filesystem::path& place : places) {
    std::string pattern = place / "hotscope-run.XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) {
      return pattern;
    }
  }
  return "";
}

// Removes the directory (and what is in it) when the launcher returns.
struct RemovedAtReturn {
  std::string directory;
  ~RemovedAtReturn() {
    std::error_code error;
    if (!directory.empty()) {
      std::filesystem::remove_all(directory, error);
    }
  }
};

// heap.json and heap.pb.gz from the raw report the program left at `raw_report`, if it did, by
// libhotscope-pprof.so beside the heap library.
void write_heap_report(const std::string& raw_report) {
  std::error_code error;
  if (!std::filesystem::exists(raw_report, error)) {
    return; // the program wrote its report itself, or none
  }
  const std::string module =
      std::filesystem::path(heap_preload_path()).parent_path() / "libhotscope-pprof.so";
  void* handle = dlopen(module.c_str(), RTLD_NOW | RTLD_LOCAL);
  const auto report =
      handle == nullptr
          ? nullptr
          : reinterpret_cast<bool (*)(const char*)>(dlsym(handle, "hotscope_heap_report"));
  if (report == nullptr) {
    const char* reason = dlerror();
    std::fprintf(stderr, "hotscope: no heap profile: cannot load its writer %s: %s\n",
                 module.c_str(), reason == nullptr ? "no hotscope_heap_report" : reason);
    return;
  }
  report(raw_report.c_str());
}

// The program's own CPU time, peak RSS and minor page faults, as wait4 gave them (`--usage`: the
// figures of bench/sampled-fixed-cost.sh).
void write_usage(const std::string& path, const rusage& usage) {
  char line[96];
  std::snprintf(line, sizeof line, "%.6f %ld %ld\n",
                static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                    static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6,
                usage.ru_maxrss, usage.ru_minflt);
  if (const std::string problem = atomic_file::write(path, line); !problem.empty()) {
    std::fprintf(stderr, "hotscope: cannot write %s: %s\n", path.c_str(), problem.c_str());
  }
}

} // namespace

std::string heap_preload_path() {
  return preload_library("HOTSCOPE_PRELOAD", HOTSCOPE_INSTALLED_PRELOAD, HOTSCOPE_DEFAULT_PRELOAD);
}

std::string run_preload_path() {
  return preload_library("HOTSCOPE_RUN_PRELOAD", HOTSCOPE_INSTALLED_RUN_PRELOAD,
                         HOTSCOPE_DEFAULT_RUN_PRELOAD);
}

std::string locks_runtime_path() {
  return std::filesystem::path(run_preload_path()).replace_filename("libhotscope-run-locks.so");
}

int run_program(const std::vector<std::string>& command, const RunOptions& options) {
  std::signal(SIGCHLD, SIG_DFL); // an inherited SIG_IGN would reap the program for us
  sigset_t taken;
  sigemptyset(&taken);
  for (const int signal : kForwarded) {
    sigaddset(&taken, signal);
  }
  sigaddset(&taken, SIGCHLD);
  sigset_t before;
  sigprocmask(SIG_BLOCK, &taken, &before);
  const pid_t launcher = getpid();
  const RemovedAtReturn raw_directory{options.heap ? raw_report_directory() : ""};
  const std::string raw_report =
      raw_directory.directory.empty() ? "" : raw_directory.directory + "/heap.raw";
  const config::Config config = config::parse(std::getenv).config;
  const bool runtime_later =
      runtime_waits_for_a_client(options.heap && !options.cpu && !options.locks, config);
  ProgramEnvironment environment = program_environment(options, raw_report, runtime_later);
  environment.prepare();
  std::vector<char*> argv;
  for (const std::string& argument : command) {
    argv.push_back(const_cast<char*>(argument.c_str()));
  }
  argv.push_back(nullptr);
  volatile int exec_error = 0; // the vforked process's, seen here once it exec'd or ended
  const pid_t child = vfork();
  if (child < 0) {
    std::fprintf(stderr, "hotscope: cannot start %s: vfork failed: %s\n", command[0].c_str(),
                 std::strerror(errno));
    return 127;
  }
  if (child == 0) {
    // A launcher killed with SIGKILL cannot pass anything on: the kernel then sends the program
    // SIGTERM, which writes its reports (HOTSCOPE_ON_SIGNAL=report) and ends it. The launcher
    // may have died before the request was made.
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != launcher) {
      _exit(127);
    }
    environment.fill_pids();
    sigprocmask(SIG_SETMASK, &before, nullptr);
    execvpe(argv[0], argv.data(), environment.envp());
    exec_error = errno;
    _exit(127);
  }
  if (exec_error != 0) {
    std::fprintf(stderr, "hotscope: cannot run %s: %s\n", argv[0], std::strerror(exec_error));
  }
  std::unique_ptr<AgentAtFirstClient> agent;
  if (runtime_later && exec_error == 0) {
    std::string problem;
    agent = AgentAtFirstClient::start(child, config, problem);
    if (agent == nullptr && !problem.empty()) {
      std::fprintf(stderr, "hotscope: agent: %s; no agent socket\n", problem.c_str());
    }
  }
  const int signals = signalfd(-1, &taken, SFD_CLOEXEC);
  if (signals < 0) {
    std::fprintf(stderr, "hotscope: signalfd failed: %s\n", std::strerror(errno));
    return 127;
  }
  int status = 0;
  rusage usage{};
  for (;;) {
    std::vector<pollfd> fds{{signals, POLLIN, 0}};
    if (agent != nullptr) {
      agent->add_descriptors(fds);
    }
    if (poll(fds.data(), fds.size(), -1) < 0) {
      continue; // EINTR
    }
    if (agent != nullptr) {
      agent->serve(std::span(fds).subspan(1));
    }
    signalfd_siginfo info{};
    if ((fds[0].revents & POLLIN) == 0 || read(signals, &info, sizeof info) != sizeof info) {
      continue;
    }
    const int signal = static_cast<int>(info.ssi_signo);
    if (signal == SIGCHLD) {
      const pid_t ended = wait4(child, &status, WNOHANG, &usage);
      if (ended == child) {
        break;
      }
      if (ended < 0 && errno == ECHILD && agent != nullptr) {
        // It ended while its runtime was being loaded, whose wait took its status: its
        // profile is still written.
        std::fprintf(stderr,
                     "hotscope: %s ended while its live agent was being loaded; its exit "
                     "status is lost\n",
                     command[0].c_str());
        status = W_EXITCODE(1, 0);
        break;
      }
      if (ended < 0 && errno != EINTR) {
        std::fprintf(stderr, "hotscope: waitpid failed: %s\n", std::strerror(errno));
        return 127;
      }
    } else if (info.ssi_code != SI_KERNEL) {
      // SI_KERNEL: the terminal sent it (Ctrl-C, Ctrl-\) to the whole foreground process group,
      // so the program has it already; anything else is for the launcher alone.
      kill(child, signal);
    }
  }
  close(signals);
  agent.reset(); // its files are removed before the reports are written
  if (!options.usage_file.empty()) {
    write_usage(options.usage_file, usage);
  }
  if (!raw_report.empty()) {
    write_heap_report(raw_report);
  }
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status);
  }
  return end_as(WTERMSIG(status));
}

} // namespace hotscope::cli
