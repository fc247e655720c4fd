#include "console.hpp"

#include "../agent_client.hpp"
#include "../conventions.hpp"
#include "session.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>
#include <memory>

namespace hotscope::cli::console {
namespace {

// The process named by -p or -n; without either, the only one running an agent, or (live) the
// one the user picks. Nothing when the user quit the picker.
std::optional<AgentProcess> choose(const Options& options, bool live,
                                   std::unique_ptr<Screen>& screen) {
  const std::string dir = runtime_dir();
  if (options.pid != 0) {
    return find_by_pid(dir, options.pid);
  }
  if (!options.name.empty()) {
    return find_by_name(dir, options.name);
  }
  const std::vector<AgentProcess> agents = live_agents(dir);
  if (agents.empty()) {
    throw Failure(kNoProcess, fmt::format("no process runs a hotscope agent in {}: start one, or "
                                          "say which with -p PID or -n NAME",
                                          dir));
  }
  if (agents.size() == 1) {
    return find_by_pid(dir, agents.front().pid);
  }
  if (!live) {
    std::string pids;
    for (const AgentProcess& agent : agents) {
      pids += fmt::format(" {}", agent.pid);
    }
    throw Failure(kUsage, fmt::format("{} processes run an agent (pids{}): choose one with -p PID "
                                      "or -n NAME",
                                      agents.size(), pids));
  }
  screen = std::make_unique<Screen>();
  const std::optional<AgentProcess> picked = pick(*screen, agents);
  return picked ? std::optional(find_by_pid(dir, picked->pid)) : std::nullopt;
}

} // namespace

ConsoleCommand::ConsoleCommand(CLI::App& app) {
  command_ = app.add_subcommand("console", "Watch a running process live in the terminal");
  command_->add_option("-p,--pid", options_.pid, "The process, by pid");
  command_->add_option("-n,--name", options_.name,
                       "The process, by name; the console reconnects when it starts again");
  command_->add_option("--interval", options_.interval_seconds, "Seconds between refreshes")
      ->check(number_in(0.05, 3600, true))
      ->capture_default_str();
  command_->add_option("--tab", options_.tab, "The tab shown first (and the one --once prints)")
      ->check(CLI::IsMember(tab_list()))
      ->capture_default_str();
  command_
      ->add_option("--stuck", options_.stuck_ms,
                   "Milliseconds inside one scope after which a thread is shown as stuck")
      ->check(number_in(0))
      ->capture_default_str();
  command_
      ->add_option("--flame-seconds", options_.flame_seconds,
                   "The flame graph covers the trace's last N seconds")
      ->check(number_in(0))
      ->capture_default_str();
  command_->add_flag("--once", options_.once,
                     "Print the tab once as plain text and exit (also when standard output is "
                     "not a terminal)");
  command_->footer("Without -p and -n: the only process with an agent, or a list to pick from. "
                   "Keys and tabs: docs/console.md. Exit codes: see docs/agent.md.");
}

std::optional<int> ConsoleCommand::run() const {
  if (!command_->parsed()) {
    return std::nullopt;
  }
  std::unique_ptr<Screen> screen;
  try {
    if (options_.pid != 0 && !options_.name.empty()) {
      throw Failure(kUsage, "console: give -p PID or -n NAME, not both");
    }
    const bool live = !options_.once && isatty(STDOUT_FILENO) == 1 && isatty(STDIN_FILENO) == 1;
    const std::optional<AgentProcess> process = choose(options_, live, screen);
    if (!process) {
      return kOk;
    }
    Source source(*process, options_.name);
    if (!live) {
      return print_once(source, options_);
    }
    if (!screen) {
      screen = std::make_unique<Screen>();
    }
    return run_live(*screen, source, options_);
  } catch (const Failure& failure) {
    screen.reset(); // the terminal back to normal before the message
    std::fprintf(stderr, "hotscope: %s\n", failure.what());
    return failure.code;
  }
}

} // namespace hotscope::cli::console
