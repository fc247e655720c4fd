#include "cpu_command.hpp"

#include "agent_commands.hpp"
#include "export/common.hpp"
#include "export/formats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>

namespace hotscope::cli {
namespace {

using exporters::detail::human_duration;

const exporters::FormatInfo& format_of(const CpuOptions& options) {
  return exporters::format_info(options.folded ? exporters::Format::CpuFolded
                                               : exporters::Format::PprofCpu);
}

// The agent's statistics now, as a stats.json of the process reads.
profiles::Stats stats_now(const AgentProcess& process) {
  const std::string path = exporters::agent_target(exporters::Format::StatsJson);
  const std::string text = request(process, "GET", path).body;
  profiles::Stats stats;
  try {
    profiles::read_stats(text, "the answer to GET " + path, stats);
  } catch (const nlohmann::json::exception& error) {
    throw Failure(kFailed, fmt::format("process {}: the answer to GET {} is not JSON: {}",
                                       process.pid, path, error.what()));
  }
  return stats;
}

std::string share(std::uint64_t ns, std::uint64_t all_ns) {
  return all_ns == 0 ? ""
                     : fmt::format("{:.1f}%",
                                   100.0 * static_cast<double>(ns) / static_cast<double>(all_ns));
}

} // namespace

CpuWindow cpu_window(const profiles::Stats& before, const profiles::Stats& after) {
  // A measuring window that is shorter than before started after it: all of it is new.
  const bool reset = after.duration_ns < before.duration_ns;
  // Views into the rows of `before` and `after`, which outlive the map.
  using Key = std::tuple<std::string_view, std::string_view, int>;
  std::map<Key, const profiles::FunctionStats*> earlier;
  if (!reset) {
    for (const profiles::FunctionStats& function : before.functions) {
      earlier.emplace(Key{function.name, function.file, function.line}, &function);
    }
  }
  CpuWindow window;
  for (const profiles::FunctionStats& function : after.functions) {
    CpuRow row{function.name, function.file, function.line, function.cpu_self_ns,
               function.cpu_total_ns};
    if (const auto found = earlier.find(Key{function.name, function.file, function.line});
        found != earlier.end()) {
      row.self_ns -= std::min(row.self_ns, found->second->cpu_self_ns);
      row.total_ns -= std::min(row.total_ns, found->second->cpu_total_ns);
    }
    if (row.total_ns > 0) {
      window.rows.push_back(std::move(row));
    }
  }
  std::sort(window.rows.begin(), window.rows.end(), [](const CpuRow& a, const CpuRow& b) {
    return std::tie(b.self_ns, b.total_ns, a.name) < std::tie(a.self_ns, a.total_ns, b.name);
  });
  const std::uint64_t samples_after = after.cpu ? after.cpu->samples : 0;
  const std::uint64_t samples_before = !reset && before.cpu ? before.cpu->samples : 0;
  window.samples = samples_after - std::min(samples_after, samples_before);
  window.period_ns = after.cpu ? after.cpu->period_ns : 0;
  return window;
}

std::vector<std::string> cpu_top(const CpuWindow& window, std::size_t k) {
  const std::uint64_t all_ns = window.samples * window.period_ns;
  std::vector<std::string> lines{
      fmt::format("{} CPU samples{}", window.samples,
                  all_ns == 0 ? "" : fmt::format(", {} of CPU", human_duration(all_ns))),
      fmt::format("{:>10} {:>6}  {:>10} {:>6}  {}", "CPU self", "%", "CPU total", "%", "Function")};
  for (std::size_t i = 0; i < std::min(k, window.rows.size()); ++i) {
    const CpuRow& row = window.rows[i];
    const std::string where = row.file.empty() ? "" : fmt::format(" ({}:{})", row.file, row.line);
    lines.push_back(fmt::format(
        "{:>10} {:>6}  {:>10} {:>6}  {}{}", human_duration(static_cast<double>(row.self_ns)),
        share(row.self_ns, all_ns), human_duration(static_cast<double>(row.total_ns)),
        share(row.total_ns, all_ns), row.name, where));
  }
  if (window.rows.empty()) {
    lines.push_back("(no function had CPU samples)");
  }
  return lines;
}

std::string cpu_file(const CpuOptions& options) {
  return options.output.empty() ? format_of(options).file : options.output;
}

int run_cpu(const AgentProcess& process, const CpuOptions& options) {
  const exporters::FormatInfo& format = format_of(options);
  if (options.top > 0 && cpu_file(options) == "-") {
    throw Failure(kUsage, "cpu: --top prints to standard output; write the profile to a file "
                          "(-o FILE) to have both");
  }
  const std::string path = fmt::format("{}{}seconds={}", exporters::agent_target(format),
                                       *format.name == '\0' ? "?" : "&", options.seconds);
  std::optional<profiles::Stats> before;
  if (options.top > 0) {
    before = stats_now(process);
  }
  const Reply profile = request(process, "GET", path, options.seconds);
  const std::string file = cpu_file(options);
  write_output(file, profile.body);
  if (file != "-") {
    std::fprintf(stderr, "hotscope: the CPU profile of process %lld (%s) over %u s is in %s\n",
                 static_cast<long long>(process.pid), process.name().c_str(), options.seconds,
                 file.c_str());
  }
  if (before) {
    std::string table;
    for (const std::string& line : cpu_top(cpu_window(*before, stats_now(process)), options.top)) {
      table += line + "\n";
    }
    write_output("", table);
  }
  return kOk;
}

} // namespace hotscope::cli
