// hotscope: the command-line front end.
//   hotscope run [--heap] [--out DIR] [--no-summary] [--usage FILE] -- prog args...
// starts `prog` with HOTSCOPE_OUT set (and with --heap the heap profiler preloaded), passes
// signals on to it and ends as it ended (run_command.hpp).
//   hotscope list | info | stats | heap | trace | threads | slow | cpu | metrics | reset |
//     instrument
// ask a running process's agent (agent_commands.hpp).
//   hotscope exporter [--listen ADDRESS:PORT] [--allow-remote] [--timeout-ms N]
// serves every agent's metrics as one Prometheus target (exporter.hpp).
//   hotscope console [-p PID | -n NAME] [--once] ...
// watches one live in the terminal (console/console.hpp).
//   hotscope vm run GUEST [--calls N] [--out DIR] [--process] ...
// runs a guest under guest tracing: hands its arguments to hotscope-vm (vm_main.cpp), installed
// beside this executable.
//   hotscope diff BASE [NEW | -p PID | -n NAME] [--fail-on RULE] [--format F] [--policy FILE]
// compares two profiles (diff/diff.hpp); `hotscope check NEW --policy FILE` judges one
// (policy/policy.hpp).
//   hotscope mcp
// serves the agent commands' views to an assistant over stdio (mcp/mcp.hpp).
//   hotscope report DIR [-o FILE] | hotscope flame FILE [-o FILE]
// draw them: one HTML page, an SVG flame graph (report/report.hpp).
//   hotscope attach (-p PID | -n NAME) [--heap [sampled|full]] [--seconds N | --until-exit]
//   [--out DIR] | hotscope detach (-p PID | -n NAME)
// load the heap profiler into a running process and take it out (attach/attach_command.hpp).
//   hotscope version | --version
#include "agent_client.hpp"
#include "agent_commands.hpp"
#include "attach/attach_command.hpp"
#include "console/console.hpp"
#include "conventions.hpp"
#include "crash_command.hpp"
#include "diff/diff.hpp"
#include "exporter.hpp"
#include "mcp/mcp.hpp"
#include "policy/policy.hpp"
#include "report/report.hpp"
#include "run_command.hpp"

#include <CLI/CLI.hpp>

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

// `hotscope vm ...` is `hotscope-vm ...` from this executable's directory, with the live agent
// off unless asked for (HOTSCOPE_AGENT), no HOTSCOPE_OUT (hotscope-vm writes --out itself), and
// reports written on SIGTERM, SIGINT and SIGHUP unless HOTSCOPE_ON_SIGNAL says otherwise.
int exec_vm(const std::vector<std::string>& arguments) {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  const std::string tool = (self.parent_path() / "hotscope-vm").string();
  setenv("HOTSCOPE_AGENT", "0", 0);
  setenv("HOTSCOPE_ON_SIGNAL", "report", 0);
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
  CLI::App app{"hotscope: profile a program, or look inside a running one", "hotscope"};
  hotscope::cli::apply_conventions(app);
  app.require_subcommand(1);
  const hotscope::cli::AgentCommands agent_commands(app);
  const hotscope::cli::console::ConsoleCommand console_command(app);
  const hotscope::cli::diff::DiffCommand diff_command(app);
  const hotscope::cli::policy::CheckCommand check_command(app);
  const hotscope::cli::mcp::McpCommand mcp_command(app);
  const hotscope::cli::report::ReportCommands report_commands(app);
  const hotscope::cli::CrashCommand crash_command(app);
  const hotscope::cli::attach::AttachCommands attach_commands(app);
  CLI::App* run_command = app.add_subcommand("run", "Run a program under the profiler");
  hotscope::cli::RunOptions options;
  std::vector<std::string> command;
  run_command->add_flag("--heap", options.heap,
                        "Profile the heap: preload the allocation hooks, write DIR/heap.json");
  run_command->add_flag("--cpu", options.cpu,
                        "Sample the CPU (HOTSCOPE_CPU_HZ, default 99): write DIR/cpu.pb.gz and "
                        "DIR/cpu.folded");
  run_command->add_flag("--locks", options.locks,
                        "Interpose the pthread locks (HOTSCOPE_LOCKS, default 1): contention, "
                        "deadlocks and lock-order inversions in the reports");
  run_command->add_option("--out", options.out_dir,
                          "Directory for the reports (sets HOTSCOPE_OUT)");
  run_command->add_flag("!--no-summary", options.summary,
                        "No heap summary on stderr (sets HOTSCOPE_HEAP_SUMMARY=0)");
  run_command->add_option("--usage", options.usage_file,
                          "Write the program's CPU time (user + system, s), peak RSS (KiB) and "
                          "minor page faults, as wait4 reports them, to FILE");
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
      ->check(hotscope::cli::whole_number(1, 60'000))
      ->capture_default_str();
  CLI::App* vm_command =
      app.add_subcommand("vm", "Guest tracing: `hotscope vm run GUEST [--calls N] [--out DIR] "
                               "[--process]` (see `hotscope vm run --help`)");
  vm_command->prefix_command();
  CLI::App* version_command = app.add_subcommand("version", "Print the version");
  if (const auto status = hotscope::cli::parse_command_line(app, argc, argv)) {
    return *status;
  }
  if (version_command->parsed()) {
    std::printf("hotscope %s\n", HOTSCOPE_VERSION);
    return 0;
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
  if (const auto status = diff_command.run()) {
    return *status;
  }
  if (const auto status = check_command.run()) {
    return *status;
  }
  if (const auto status = mcp_command.run()) {
    return *status;
  }
  if (const auto status = report_commands.run()) {
    return *status;
  }
  if (const auto status = crash_command.run()) {
    return *status;
  }
  if (const auto status = attach_commands.run()) {
    return *status;
  }
  return hotscope::cli::run_program(command, options);
}
