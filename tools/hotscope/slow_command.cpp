#include "slow_command.hpp"

#include "agent_client.hpp"
#include "conventions.hpp"
#include "export/formats.hpp"

#include <fmt/format.h>

namespace hotscope::cli {

void add_slow_options(CLI::App& command, SlowOptions& options) {
  command.add_option("--function", options.function,
                     "Only this function's calls (its exact name, as `hotscope stats` shows it)");
  command.add_option("--top", options.top, "At most K calls per function, the slowest")
      ->check(whole_number(1, 1'000'000));
  command.add_flag("--json", options.json, "Print them as JSON (the schema of slow.json)");
}

std::string slow_target(const SlowOptions& options) {
  std::string target = exporters::agent_target(options.json ? exporters::Format::SlowJson
                                                            : exporters::Format::SlowText);
  if (!options.function.empty()) {
    target += "&function=" + query_value(options.function);
  }
  if (options.top > 0) {
    target += fmt::format("&top={}", options.top);
  }
  return target;
}

} // namespace hotscope::cli
