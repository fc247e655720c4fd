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

DiffCommand::DiffCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "diff", "Compare two profiles (stats.json or heap.json), or a stats.json and a running "
              "process: what got slower or allocates more");
  command_->add_option("base", base_, "The earlier profile: a stats.json or a heap.json")
      ->required();
  command_->add_option("new", new_, "The later profile of the same kind (or -p/-n)");
  command_->add_option("-p,--pid", pid_, "NEW is the process with this pid, now");
  command_->add_option("-n,--name", name_, "NEW is the process with this name, now");
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
    const int targets = (new_.empty() ? 0 : 1) + (command_->count("--pid") > 0 ? 1 : 0) +
                        (command_->count("--name") > 0 ? 1 : 0);
    if (targets != 1) {
      throw Failure(kUsage, targets == 0 ? "diff: say what to compare BASE with: a file NEW, or a "
                                           "process with -p PID or -n NAME"
                                         : "diff: give one of NEW, -p PID and -n NAME");
    }
    const std::optional<policy::Policy> rules =
        policy_.empty() ? std::nullopt : std::optional(policy::read_policy(policy_));
    const profiles::Profile base = profiles::read_profile(base_);
    const profiles::Profile now =
        new_.empty() ? live_profile(base.kind, pid_ != 0 ? find_by_pid(runtime_dir(), pid_)
                                                         : find_by_name(runtime_dir(), name_))
                     : profiles::read_profile(new_);
    Comparison comparison = compare(base, now, rules_);
    if (rules) {
      policy::judge(*rules, now, comparison);
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
