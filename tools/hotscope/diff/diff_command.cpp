#include "diff.hpp"

#include "agent_client.hpp"
#include "agent_commands.hpp"
#include "export/formats.hpp"
#include "policy/policy.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace hotscope::cli::diff {

profiles::Profile live_profile(profiles::Kind kind, const AgentProcess& process) {
  const std::string path = kind == profiles::Kind::Stats
                               ? exporters::format_info(exporters::Format::StatsJson).path
                               : exporters::agent_target(exporters::Format::Dhat);
  const std::string body = request(process, "GET", path).body;
  const std::string source = fmt::format("process {} ({})", process.pid, process.name());
  nlohmann::json document = nlohmann::json::parse(body, nullptr, false);
  if (document.is_discarded()) {
    throw Failure(kFailed,
                  fmt::format("{} answered GET {} with something that is not JSON", source, path));
  }
  profiles::Profile profile = profiles::classify(std::move(document), source);
  profile.text_bytes = body.size();
  return profile;
}

profiles::Profile new_profile(const ProfileSource& target, profiles::Kind kind, const char* command,
                              const char* what) {
  const int given = (target.path.empty() ? 0 : 1) + (target.pid ? 1 : 0) + (target.name ? 1 : 0);
  if (given != 1) {
    throw Failure(kUsage, given == 0
                              ? fmt::format("{}: say what to {}: a file NEW, or a "
                                            "process with -p PID or -n NAME",
                                            command, what)
                              : fmt::format("{}: give one of NEW, -p PID and -n NAME", command));
  }
  if (!target.path.empty()) {
    return profiles::read_profile(target.path);
  }
  return live_profile(kind, target.pid ? find_by_pid(runtime_dir(), *target.pid)
                                       : find_by_name(runtime_dir(), *target.name));
}

void ProfileSource::add_options(CLI::App& command, const char* path_help) {
  command.add_option("new", path, path_help);
  command.add_option("-p,--pid", pid, "NEW is the process with this pid, now");
  command.add_option("-n,--name", name, "NEW is the process with this name, now");
}

DiffCommand::DiffCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "diff", "Compare two profiles (stats.json or heap.json), or a stats.json and a running "
              "process: what got slower or allocates more");
  command_->add_option("base", base_, "The earlier profile: a stats.json or a heap.json")
      ->required();
  new_.add_options(*command_, "The later profile of the same kind (or -p/-n)");
  command_
      ->add_option("--fail-on", rules_,
                   "Exit 1 when a significant change matches RULE, e.g. 'p99>+10%', "
                   "'mean>+2ms', 'end_bytes>+1MiB'; several allowed (comma-separated or repeated)")
      ->allow_extra_args(false);
  command_->add_flag("--json", json_, "Print the comparison as JSON (--format json)");
  command_->add_option("--format", format_, "text, json, or markdown for a pull-request comment")
      ->check(CLI::IsMember({"text", "json", "markdown"}))
      ->capture_default_str();
  command_->add_option("--policy", policy_,
                       "Judge NEW and its changes by a policy file (TOML, docs/ci.md)");
  command_->footer("NEW is a file, or the process named by -p or -n. Exit codes: 0 no rule "
                   "fails, 1 a rule fails or a --policy budget breaks, 2 bad input; with -p/-n as "
                   "in docs/agent.md. Columns, thresholds and rules: docs/diff-and-report.md; "
                   "--policy and --format markdown: docs/ci.md.");
}

std::optional<int> DiffCommand::run() const {
  if (!command_->parsed()) {
    return std::nullopt;
  }
  try {
    const std::optional<policy::Policy> rules =
        policy_.empty() ? std::nullopt : std::optional(policy::read_policy(policy_));
    const profiles::Profile base = profiles::read_profile(base_);
    const profiles::Profile now = new_profile(new_, base.kind, "diff", "compare BASE with");
    Comparison comparison = compare(base, now, rules_);
    if (rules) {
      policy::judge(*rules, comparison);
    }
    const std::string format = json_ ? "json" : format_;
    write_output("", format == "json"       ? as_json(comparison).dump(2) + "\n"
                     : format == "markdown" ? as_markdown(comparison)
                                            : as_text(comparison));
    return comparison.failed() ? kFailed : kOk;
  } catch (const Failure& failure) {
    std::fprintf(stderr, "hotscope: %s\n", failure.what());
    return failure.code;
  }
}

} // namespace hotscope::cli::diff
