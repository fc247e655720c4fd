#include "attach/attach_command.hpp"

#include "attach/remote.hpp"
#include "attach/target.hpp"
#include "config/config.hpp"
#include "conventions.hpp"
#include "heap_link/heap_link.hpp"
#include "run_command.hpp"

#include <fmt/format.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

namespace hotscope::cli::attach {
namespace {

namespace fs = std::filesystem;

// HOTSCOPE_ATTACH_FAIL_AT=STEP, a test hook (docs/heap.md): the command gives up after STEP as if
// it had failed there, and puts the process back as it does on a real failure.
bool failing_after(const char* step) {
  const char* chosen = std::getenv("HOTSCOPE_ATTACH_FAIL_AT");
  return chosen != nullptr && std::string_view(chosen) == step;
}

// Whose step failed: `hotscope attach`'s, or `hotscope run`'s loading the runtime at the first
// client (load_runtime).
enum class Purpose { Attach, LateAgent };

std::string fail_line(pid_t pid, const std::string& step, const std::string& problem,
                      Purpose purpose = Purpose::Attach) {
  if (purpose == Purpose::LateAgent) {
    return fmt::format("hotscope run: cannot load the live agent into process {}: {} ({}); it "
                       "goes on profiled, without one",
                       pid, problem, step);
  }
  return fmt::format("hotscope attach: cannot attach to process {}: {} ({}); it goes on "
                     "unprofiled",
                     pid, problem, step);
}

// The C library's functions the calls use.
struct Functions {
  std::uint64_t dlopen = 0;
  std::uint64_t dlsym = 0;
  std::uint64_t dlerror = 0;
  std::uint64_t getenv = 0;
  std::uint64_t setenv = 0;
  std::uint64_t unsetenv = 0;
};

std::optional<Functions> functions_of(pid_t pid) {
  Functions found;
  const std::pair<const char*, std::uint64_t*> wanted[] = {
      {"dlopen", &found.dlopen}, {"dlsym", &found.dlsym},   {"dlerror", &found.dlerror},
      {"getenv", &found.getenv}, {"setenv", &found.setenv}, {"unsetenv", &found.unsetenv}};
  for (const auto& [name, address] : wanted) {
    const auto value = libc_function(pid, name);
    if (!value) {
      return std::nullopt;
    }
    *address = *value;
  }
  return found;
}

// A NUL-terminated string at `address` in the process.
std::string read_string(pid_t pid, std::uint64_t address) {
  std::string text(4096, '\0');
  const int fd = open(fmt::format("/proc/{}/mem", pid).c_str(), O_RDONLY | O_CLOEXEC);
  const ssize_t got =
      fd < 0 ? -1 : pread(fd, text.data(), text.size(), static_cast<off_t>(address));
  if (fd >= 0) {
    close(fd);
  }
  text.resize(got < 0 ? 0 : static_cast<std::size_t>(got));
  return text.substr(0, text.find('\0'));
}

Argument text(const std::string& value) {
  return Argument{0, value};
}
Argument number(std::uint64_t value) {
  return Argument{value, std::nullopt};
}

// The settings the libraries read at load, set in the process's environment for the attach only:
// its own values are put back afterwards (restore()), its children never see them.
class Environment {
public:
  Environment(Tracee& tracee, pid_t pid, const Functions& functions)
      : tracee_(tracee), pid_(pid), functions_(functions) {}
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
  ~Environment() { restore(); }

  bool set(const std::string& name, const std::string& value, std::string& problem) {
    const auto old = tracee_.call(functions_.getenv, {text(name)}, problem);
    if (!old) {
      return false;
    }
    changed_.push_back(
        {name, *old == 0 ? std::nullopt : std::optional<std::string>(read_string(pid_, *old))});
    const auto done =
        tracee_.call(functions_.setenv, {text(name), text(value), number(1)}, problem);
    return done && *done == 0;
  }

  void restore() {
    for (auto it = changed_.rbegin(); it != changed_.rend(); ++it) {
      std::string ignored;
      if (it->second) {
        tracee_.call(functions_.setenv, {text(it->first), text(*it->second), number(1)}, ignored);
      } else {
        tracee_.call(functions_.unsetenv, {text(it->first)}, ignored);
      }
    }
    changed_.clear();
  }

private:
  Tracee& tracee_;
  pid_t pid_;
  const Functions& functions_;
  std::vector<std::pair<std::string, std::optional<std::string>>> changed_;
};

// dlopen(path, flags) in the process: its handle, or 0 with `problem` naming dlerror's reason.
std::uint64_t load(Tracee& tracee, pid_t pid, const Functions& functions, const std::string& path,
                   int flags, std::string& problem) {
  const auto handle = tracee.call(functions.dlopen, {text(path), number(flags)}, problem);
  if (!handle || *handle != 0) {
    return handle.value_or(0);
  }
  if (flags & RTLD_NOLOAD) {
    return 0;
  }
  const auto reason = tracee.call(functions.dlerror, {}, problem);
  problem =
      fmt::format("cannot load {}: {}", path,
                  reason && *reason != 0 ? read_string(pid, *reason) : "dlerror said nothing");
  return 0;
}

// `entry` (hotscope_heap_attach or _detach) of the preload library, called in the process.
std::optional<int> call_entry(Tracee& tracee, const Functions& functions, std::uint64_t handle,
                              const std::string& entry, double seconds, std::string& problem) {
  const auto address = tracee.call(functions.dlsym, {number(handle), text(entry)}, problem);
  if (!address || *address == 0) {
    if (problem.empty()) {
      problem = "the preload library has no " + entry + " (an older hotscope's?)";
    }
    return std::nullopt;
  }
  const auto result = tracee.call(*address, {}, problem, seconds);
  if (!result) {
    return std::nullopt;
  }
  return static_cast<int>(static_cast<std::uint32_t>(*result));
}

// Stops the process under ptrace, ready for calls; "" or the line that says why not.
std::string take_hold(Tracee& tracee, pid_t pid, Purpose outcome = Purpose::Attach) {
  if (const int error = tracee.seize(); error != 0) {
    return refusal_for_errno(pid, error);
  }
  if (failing_after("seize")) {
    return fail_line(pid, "seize", "HOTSCOPE_ATTACH_FAIL_AT, a test hook", outcome);
  }
  if (std::string problem = tracee.stop(); !problem.empty()) {
    return fail_line(pid, "stop", problem, outcome);
  }
  if (failing_after("stop")) {
    return fail_line(pid, "stop", "HOTSCOPE_ATTACH_FAIL_AT, a test hook", outcome);
  }
  if (std::string problem = tracee.save_registers(); !problem.empty()) {
    return fail_line(pid, "registers", problem, outcome);
  }
  if (failing_after("registers")) {
    return fail_line(pid, "registers", "HOTSCOPE_ATTACH_FAIL_AT, a test hook", outcome);
  }
  return "";
}

struct AttachSettings {
  std::string mode;
  std::string out_dir;
};

// The attach itself, once the facts allow it: "" or the line that says why it failed.
std::string inject(pid_t pid, const Functions& functions, const AttachSettings& settings) {
  Tracee tracee(pid);
  if (std::string problem = take_hold(tracee, pid); !problem.empty()) {
    return problem;
  }
  std::string problem;
  Environment environment(tracee, pid, functions);
  const std::pair<std::string, std::string> variables[] = {
      {"HOTSCOPE_HEAP_ATTACH", "1"},
      {"HOTSCOPE_HEAP_MODE", settings.mode},
      {"HOTSCOPE_OUT", settings.out_dir},
      {"HOTSCOPE_HEAP_SUMMARY", "0"},
      {"HOTSCOPE_ON_SIGNAL", "off"}, // the program's own signal handlers stay
      {"HOTSCOPE_ON_CRASH", "off"},
      // The agent's socket where this hotscope looks for it.
      {"HOTSCOPE_RUNTIME_DIR", config::runtime_dir(std::getenv("HOTSCOPE_RUNTIME_DIR"),
                                                   std::getenv("XDG_RUNTIME_DIR"), geteuid())}};
  for (const auto& [name, value] : variables) {
    if (!environment.set(name, value, problem)) {
      return fail_line(pid, "environment", problem.empty() ? "setenv failed" : problem);
    }
  }
  if (failing_after("environment")) {
    return fail_line(pid, "environment", "HOTSCOPE_ATTACH_FAIL_AT, a test hook");
  }
  // The heap library first and global: libhotscope-run.so's references to it bind at its load.
  const std::uint64_t heap =
      load(tracee, pid, functions, heap_preload_path(), RTLD_NOW | RTLD_GLOBAL, problem);
  if (heap == 0 || failing_after("load")) {
    return fail_line(pid, "load", heap == 0 ? problem : "HOTSCOPE_ATTACH_FAIL_AT, a test hook");
  }
  // Its own definitions first (RTLD_DEEPBIND), as when it is preloaded: its calls of the pthread
  // functions it defines reach them, not the C library's oldest versions (for pthread_cond_wait,
  // glibc 2.2.5's, whose waiters pthread_cond_signal@@GLIBC_2.3.2 never wakes).
  if (load(tracee, pid, functions, run_preload_path(), RTLD_NOW | RTLD_DEEPBIND, problem) == 0 ||
      failing_after("runtime")) {
    return fail_line(pid, "runtime",
                     problem.empty() ? "HOTSCOPE_ATTACH_FAIL_AT, a test hook" : problem);
  }
  const auto result = call_entry(tracee, functions, heap, "hotscope_heap_attach", 30, problem);
  environment.restore();
  switch (result.value_or(-1)) {
  case HOTSCOPE_ATTACH_DONE:
    return "";
  case HOTSCOPE_ATTACH_ALREADY:
    return fmt::format("hotscope attach: process {} is attached already: `hotscope detach -p {}` "
                       "writes its profile",
                       pid, pid);
  case HOTSCOPE_ATTACH_PRELOADED:
    return fmt::format("hotscope attach: process {} runs under `hotscope run --heap`, which "
                       "profiles it already: ask it with `hotscope heap -p {}`",
                       pid, pid);
  case HOTSCOPE_ATTACH_OFF:
    return fail_line(pid, "hook", "the heap profiler did not start in it");
  default:
    return fail_line(pid, "hook", problem);
  }
}

} // namespace

std::string load_runtime(pid_t pid, const std::string& runtime_dir) {
  const auto functions = functions_of(pid);
  if (!functions) {
    return fail_line(pid, "lookup", "no dlopen in its C library", Purpose::LateAgent);
  }
  Tracee tracee(pid);
  if (std::string problem = take_hold(tracee, pid, Purpose::LateAgent); !problem.empty()) {
    return problem;
  }
  std::string problem;
  Environment environment(tracee, pid, *functions);
  const std::pair<std::string, std::string> variables[] = {
      // Handlers the program installed since its start stay first, as under attach.
      {"HOTSCOPE_ON_SIGNAL", "off"},
      {"HOTSCOPE_ON_CRASH", "off"},
      {"HOTSCOPE_RUNTIME_DIR", runtime_dir}};
  for (const auto& [name, value] : variables) {
    if (!environment.set(name, value, problem)) {
      return fail_line(pid, "environment", problem.empty() ? "setenv failed" : problem,
                       Purpose::LateAgent);
    }
  }
  if (failing_after("environment")) {
    return fail_line(pid, "environment", "HOTSCOPE_ATTACH_FAIL_AT, a test hook",
                     Purpose::LateAgent);
  }
  // What the runtime allocates while it starts (its agent's files, its threads) is the
  // profiler's: the heap library's section around the load, on this thread.
  std::uint64_t section[2] = {};
  const char* section_functions[2] = {"hotscope_heap_enter", "hotscope_heap_leave"};
  for (int i = 0; i < 2; ++i) {
    const auto address = tracee.call(functions->dlsym, {number(0), text(section_functions[i])},
                                     problem); // RTLD_DEFAULT
    if (!address || *address == 0) {
      return fail_line(pid, "lookup",
                       problem.empty() ? "the heap library is not loaded in it" : problem,
                       Purpose::LateAgent);
    }
    section[i] = *address;
  }
  if (!tracee.call(section[0], {}, problem)) {
    return fail_line(pid, "runtime", problem, Purpose::LateAgent);
  }
  // Bound as a preloaded runtime is (no RTLD_DEEPBIND, which only the lock functions of
  // libhotscope-run-locks.so need): its threads start through the heap library's pthread_create,
  // which marks them as the profiler's.
  const std::uint64_t runtime =
      load(tracee, pid, *functions, run_preload_path(), RTLD_NOW, problem);
  std::string leaving;
  tracee.call(section[1], {}, leaving);
  if (runtime == 0 || failing_after("runtime")) {
    return fail_line(pid, "runtime",
                     problem.empty() ? "HOTSCOPE_ATTACH_FAIL_AT, a test hook" : problem,
                     Purpose::LateAgent);
  }
  return "";
}

namespace {

// Neither gone nor a zombie waiting for its parent.
bool alive(pid_t pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!std::getline(stat, line) || line.rfind(") ") == std::string::npos) {
    return false;
  }
  const char state = line[line.rfind(") ") + 2];
  return state != 'Z' && state != 'X';
}

// `hotscope detach`: the profile written, the hooks taken out. "" or why not.
std::string detach(pid_t pid) {
  const auto functions = functions_of(pid);
  if (!alive(pid)) {
    return fmt::format("hotscope detach: no process {} (it has ended)", pid);
  }
  if (!functions) {
    return fmt::format("hotscope detach: process {} has no dlopen: it was never attached", pid);
  }
  Tracee tracee(pid);
  if (std::string problem = take_hold(tracee, pid); !problem.empty()) {
    return problem;
  }
  std::string problem;
  const std::uint64_t heap =
      load(tracee, pid, *functions, heap_preload_path(), RTLD_NOW | RTLD_NOLOAD, problem);
  if (heap == 0) {
    return fmt::format("hotscope detach: process {} is not attached{}", pid,
                       problem.empty() ? "" : " (" + problem + ")");
  }
  // Writing a large profile takes a while.
  const auto result = call_entry(tracee, *functions, heap, "hotscope_heap_detach", 300, problem);
  if (!result) {
    return fmt::format("hotscope detach: process {}: {}", pid, problem);
  }
  if (*result == HOTSCOPE_ATTACH_NOT_ATTACHED) {
    return fmt::format("hotscope detach: process {} is not attached", pid);
  }
  return "";
}

// The one process -p or -n names, or 0 after printing why there is none.
pid_t target_pid(std::int64_t pid, const std::string& name, const char* command) {
  if (pid > 0) {
    return static_cast<pid_t>(pid);
  }
  if (name.empty()) {
    std::fprintf(stderr, "hotscope %s: name the process with -p PID or -n NAME\n", command);
    return 0;
  }
  const std::vector<pid_t> pids = pids_named(name);
  if (pids.size() == 1) {
    return pids.front();
  }
  std::fprintf(stderr, "hotscope %s: %s\n", command,
               pids.empty() ? fmt::format("no process is named {}", name).c_str()
                            : fmt::format("{} processes are named {} ({}): choose one with -p",
                                          pids.size(), name, fmt::join(pids, ", "))
                                  .c_str());
  return 0;
}

} // namespace

AttachCommands::AttachCommands(CLI::App& app) {
  attach_ = app.add_subcommand("attach", "Profile the heap of a running process from now on");
  detach_ = app.add_subcommand("detach", "Write an attached process's heap profile and detach");
  for (CLI::App* command : {attach_, detach_}) {
    CLI::Option* pid = command->add_option("-p,--pid", pid_, "The process's id");
    CLI::Option* name = command->add_option("-n,--name", name_, "The process's name (comm)");
    pid->excludes(name);
  }
  attach_->add_option("--heap", mode_, "The heap profiler's mode (sampled, the default, or full)")
      ->expected(0, 1)
      ->default_str("sampled")
      ->check(CLI::IsMember({"sampled", "full"}));
  CLI::Option* seconds =
      attach_->add_option("--seconds", seconds_,
                          "Detach after N seconds, writing the profile (else on `hotscope "
                          "detach` or at the program's exit)");
  CLI::Option* until_exit = attach_->add_flag("--until-exit", until_exit_,
                                              "Wait for the program's exit, which writes "
                                              "the profile");
  seconds->excludes(until_exit);
  attach_->add_option("--out", out_dir_, "Directory for heap.json and heap.pb.gz (default: .)");
}

std::optional<int> AttachCommands::run() const {
  if (detach_->parsed()) {
    const pid_t pid = target_pid(pid_, name_, "detach");
    if (pid == 0) {
      return 1;
    }
    if (const std::string problem = detach(pid); !problem.empty()) {
      std::fprintf(stderr, "%s\n", problem.c_str());
      return 1;
    }
    std::fprintf(stderr, "hotscope detach: process %d: profile written, hooks taken out\n", pid);
    return 0;
  }
  if (!attach_->parsed()) {
    return std::nullopt;
  }
  const pid_t pid = target_pid(pid_, name_, "attach");
  if (pid == 0) {
    return 1;
  }
  if (const std::string problem = refusal(pid, read_facts(pid)); !problem.empty()) {
    std::fprintf(stderr, "%s\n", problem.c_str());
    return 1;
  }
  std::error_code error;
  const std::string out_dir = fs::absolute(out_dir_, error).lexically_normal().string();
  if (const std::string problem = config::check_out_dir(out_dir, "--out "); !problem.empty()) {
    std::fprintf(stderr, "hotscope attach: %s\n", problem.c_str());
    return 1;
  }
  const auto started = std::chrono::steady_clock::now();
  const auto functions = functions_of(pid);
  if (!functions) {
    std::fprintf(stderr, "%s\n", fail_line(pid, "lookup", "no dlopen in its C library").c_str());
    return 1;
  }
  if (const std::string problem = inject(pid, *functions, {mode_, out_dir}); !problem.empty()) {
    std::fprintf(stderr, "%s\n", problem.c_str());
    return 1;
  }
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::fprintf(stderr,
               "hotscope attach: process %d attached in %.3f s, %s mode; `hotscope heap -p %d` "
               "shows it live, `hotscope detach -p %d` writes %s/heap.json\n",
               pid, took, mode_.c_str(), pid, pid, out_dir.c_str());
  if (until_exit_ || seconds_ > 0) {
    const auto deadline = started + std::chrono::duration<double>(seconds_);
    while (alive(pid) && (until_exit_ || std::chrono::steady_clock::now() < deadline)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (alive(pid)) {
      if (const std::string problem = detach(pid); !problem.empty()) {
        std::fprintf(stderr, "%s\n", problem.c_str());
        return 1;
      }
    }
    std::fprintf(stderr, "hotscope attach: process %d: profile in %s/heap.json\n", pid,
                 out_dir.c_str());
  }
  return 0;
}

} // namespace hotscope::cli::attach
