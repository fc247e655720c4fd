// hotscope: the command-line front end.
//   hotscope run --heap [--out DIR] [--no-summary] -- prog args...
// starts `prog` with the heap profiler preloaded (LD_PRELOAD) and HOTSCOPE_OUT set, waits for
// it and exits with its status; the program writes DIR/heap.json when it ends.
//   hotscope list | info | stats | heap | trace | metrics | reset
// ask a running process's agent (agent_commands.hpp).
//   hotscope exporter [--listen ADDRESS:PORT] [--allow-remote] [--timeout-ms N]
// serves every agent's metrics as one Prometheus target (exporter.hpp).
//   hotscope console [-p PID | -n NAME] [--once] ...
// watches one live in the terminal (console/console.hpp).
//   hotscope vm run GUEST [--calls N] [--out DIR] [--process] ...
// runs a guest under guest tracing: hands its arguments to hotscope-vm (vm_main.cpp), installed
// beside this executable.
#include "agent_client.hpp"
#include "agent_commands.hpp"
#include "console/console.hpp"
#include "exporter.hpp"

#include <CLI/CLI.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace {

// HOTSCOPE_PRELOAD, else the installed library next to an installed hotscope (bin/../lib/), else
// the build tree's. The installed one comes first: an installed copy must not use a build tree.
std::string preload_library() {
  const char* chosen = std::getenv("HOTSCOPE_PRELOAD");
  if (chosen != nullptr && *chosen != '\0') {
    return chosen;
  }
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::filesystem::path installed =
        (self.parent_path() / HOTSCOPE_INSTALLED_PRELOAD).lexically_normal();
    if (std::filesystem::exists(installed, error)) {
      return installed;
    }
  }
  return HOTSCOPE_DEFAULT_PRELOAD;
}

// In the child: the environment the profiled program starts with, then the program itself.
struct RunOptions {
  bool heap = false;
  bool summary = true;
  std::string out_dir;
};

[[noreturn]] void exec_program(const std::vector<std::string>& command, const RunOptions& options) {
  if (!options.out_dir.empty()) {
    setenv("HOTSCOPE_OUT", options.out_dir.c_str(), 1);
  }
  if (!options.summary) {
    setenv("HOTSCOPE_HEAP_SUMMARY", "0", 1);
  }
  if (options.heap) {
    std::string preload = preload_library();
    if (const char* existing = std::getenv("LD_PRELOAD"); existing != nullptr && *existing) {
      preload += std::string(":") + existing;
    }
    setenv("LD_PRELOAD", preload.c_str(), 1);
    // The program itself writes heap.json; processes it execs write heap.<pid>.json.
    setenv("HOTSCOPE_HEAP_PID", std::to_string(getpid()).c_str(), 1);
  }
  std::vector<char*> argv;
  for (const std::string& argument : command) {
    argv.push_back(const_cast<char*>(argument.c_str()));
  }
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::fprintf(stderr, "hotscope: cannot run %s: %s\n", argv[0], std::strerror(errno));
  _exit(127);
}

int run(const std::vector<std::string>& command, const RunOptions& options) {
  const pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "hotscope: fork failed: %s\n", std::strerror(errno));
    return 127;
  }
  if (child == 0) {
    exec_program(command, options);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) {
      std::fprintf(stderr, "hotscope: waitpid failed: %s\n", std::strerror(errno));
      return 127;
    }
  }
  // As a shell reports it: the exit status, or 128 + the signal that ended the program.
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// `hotscope vm ...` is `hotscope-vm ...` from this executable's directory, with the live agent
// off unless asked for (HOTSCOPE_AGENT) and no HOTSCOPE_OUT (hotscope-vm writes --out itself).
int exec_vm(const std::vector<std::string>& arguments) {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  const std::string tool = (self.parent_path() / "hotscope-vm").string();
  setenv("HOTSCOPE_AGENT", "0", 0);
  unsetenv("HOTSCOPE_OUT");
  std::vector<char*> argv{const_cast<char*>(tool.c_str())};
  for (const std::string& argument : arguments) {
    argv.push_back(const_cast<char*>(argument.c_str()));
  }
  argv.push_back(nullptr);
  execv(argv[0], argv.data());
  std::fprintf(stderr, "hotscope: cannot run %s: %s (is hotscope built with guest tracing?)\n",
               tool.c_str(), std::strerror(errno));
  return 127;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"hotscope: profile a program, or look inside a running one"};
  app.require_subcommand(1);
  const hotscope::cli::AgentCommands agent_commands(app);
  const hotscope::cli::console::ConsoleCommand console_command(app);
  CLI::App* run_command = app.add_subcommand("run", "Run a program under the profiler");
  RunOptions options;
  std::vector<std::string> command;
  run_command->add_flag("--heap", options.heap,
                        "Profile the heap: preload the allocation hooks, write DIR/heap.json");
  run_command->add_option("--out", options.out_dir,
                          "Directory for the reports (sets HOTSCOPE_OUT)");
  run_command->add_flag("!--no-summary", options.summary,
                        "No heap summary on stderr (sets HOTSCOPE_HEAP_SUMMARY=0)");
  run_command->add_option("command", command, "The program and its arguments, after --")
      ->required();
  CLI::App* exporter_command = app.add_subcommand(
      "exporter", "Serve the metrics of every process with an agent as one Prometheus target");
  hotscope::cli::ExporterOptions exporter;
  exporter_command
      ->add_option("--listen", exporter.listen,
                   "Numeric address and port: 127.0.0.1:9464, [::1]:9464")
      ->capture_default_str();
  exporter_command->add_flag("--allow-remote", exporter.allow_remote,
                             "Allow a non-loopback --listen address (no access control)");
  long timeout_ms = exporter.timeout.count();
  exporter_command
      ->add_option("--timeout-ms", timeout_ms,
                   "The longest one process may take to answer a scrape, in milliseconds")
      ->check(CLI::Range(1L, 60'000L))
      ->capture_default_str();
  CLI::App* vm_command =
      app.add_subcommand("vm", "Guest tracing: `hotscope vm run GUEST [--calls N] [--out DIR] "
                               "[--process]` (see `hotscope vm run --help`)");
  vm_command->prefix_command();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help is not an error; every real usage error has one documented exit code.
    return app.exit(error) == 0 ? 0 : hotscope::cli::kUsage;
  }
  if (exporter_command->parsed()) {
    exporter.timeout = std::chrono::milliseconds(timeout_ms);
    return hotscope::cli::run_exporter(exporter);
  }
  if (vm_command->parsed()) {
    return exec_vm(vm_command->remaining());
  }
  if (const auto status = agent_commands.run()) {
    return *status;
  }
  if (const auto status = console_command.run()) {
    return *status;
  }
  return run(command, options);
}
