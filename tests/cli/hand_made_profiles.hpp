// Hand-made profiles for the unit tests of `hotscope diff`, `check` and `mcp`: stats.json and
// DHAT documents built in code, and what the tests look up in a comparison.
#pragma once

#include "agent_client.hpp"
#include "diff/diff.hpp"

#include <fmt/format.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace hotscope::cli::hand_made {

using Json = nlohmann::json;

inline int failure_code(const std::function<void()>& action) {
  try {
    action();
  } catch (const Failure& failure) {
    return failure.code;
  }
  return 0;
}

inline Json function(const std::string& name, std::uint64_t calls, double mean, int line = 10) {
  const auto ns = static_cast<std::uint64_t>(mean);
  return Json{{"name", name},          {"file", "w.cpp"},        {"line", line},
              {"calls", calls},        {"mean_ns", mean},        {"total_ns", ns * calls},
              {"self_ns", ns * calls}, {"p50_ns", ns},           {"p95_ns", ns},
              {"p99_ns", ns},          {"alloc_bytes_total", 0}, {"alloc_blocks_total", 0}};
}

// `cpu`: stats.json's "cpu" object, none when null; `more`: further keys ("queues", "locks").
inline profiles::Profile stats(const std::vector<Json>& functions, const std::string& source,
                               const Json& cpu = nullptr, const Json& more = Json::object()) {
  Json document{{"hotscope_version", "0.1.0"},
                {"pid", 1},
                {"process_name", "w"},
                {"duration_ns", 1000000},
                {"functions", functions}};
  if (!cpu.is_null()) {
    document["cpu"] = cpu;
  }
  document.update(more);
  return profiles::classify(document, source);
}

// A queue whose `waits` items each waited `wait_ns` (its percentiles, max and mean), and whose
// depth peaked at `max_depth`.
inline Json queue(const std::string& name, std::uint64_t waits, std::uint64_t wait_ns,
                  std::uint64_t max_depth) {
  return Json{{"name", name},           {"pushed", waits},
              {"popped", waits},        {"depth", 0},
              {"max_depth", max_depth}, {"capacity", 0},
              {"waits", waits},         {"wait_total_ns", waits * wait_ns},
              {"wait_p50_ns", wait_ns}, {"wait_p95_ns", wait_ns},
              {"wait_p99_ns", wait_ns}, {"wait_max_ns", wait_ns},
              {"pending", 0},           {"oldest_pending_ns", 0}};
}

// A mutex acquired `acquisitions` times, held `hold_ns` each time, `waits` of them contended
// and waiting `wait_ns` each.
inline Json lock(const std::string& name, std::uint64_t acquisitions, std::uint64_t hold_ns,
                 std::uint64_t waits, std::uint64_t wait_ns) {
  Json out{{"name", name},
           {"kind", "mutex"},
           {"acquisitions", acquisitions},
           {"contended", waits},
           {"try_failed", 0},
           {"holds", acquisitions},
           {"hold_total_ns", acquisitions * hold_ns},
           {"waits", waits},
           {"wait_total_ns", waits * wait_ns}};
  for (const char* q : {"p50", "p95", "p99", "max"}) {
    out[fmt::format("hold_{}_ns", q)] = hold_ns;
    out[fmt::format("wait_{}_ns", q)] = wait_ns;
  }
  return out;
}

// `function` with `self` and `total` CPU samples of 10 ms.
inline constexpr std::uint64_t kCpuPeriodNs = 10'000'000;
inline Json sampled(Json function, std::uint64_t self, std::uint64_t total) {
  function["cpu_self_ns"] = self * kCpuPeriodNs;
  function["cpu_total_ns"] = total * kCpuPeriodNs;
  return function;
}
inline Json cpu_object(std::uint64_t samples) {
  return Json{{"hz", 100}, {"period_ns", kCpuPeriodNs}, {"samples", samples}};
}

// A DHAT profile whose sites are {frames (function, file, line), tb, eb}; addresses differ by
// `address_base`, so only functions and files can match sites across profiles.
struct SiteSpec {
  std::vector<std::tuple<std::string, std::string, int>> frames;
  std::uint64_t total_bytes, end_bytes;
};
inline profiles::Profile heap(const std::vector<SiteSpec>& sites, unsigned address_base) {
  Json table = Json::array({"[root]"});
  Json points = Json::array();
  for (const SiteSpec& site : sites) {
    Json frames = Json::array();
    for (const auto& [function, file, line] : site.frames) {
      table.push_back(fmt::format("0x{:X}: {} ({}:{})", address_base + table.size() * 16, function,
                                  file, line));
      frames.push_back(table.size() - 1);
    }
    points.push_back(Json{{"tb", site.total_bytes},
                          {"tbk", site.total_bytes / 64},
                          {"gb", site.end_bytes},
                          {"gbk", site.end_bytes / 64},
                          {"eb", site.end_bytes},
                          {"ebk", site.end_bytes / 64},
                          {"fs", frames}});
  }
  return profiles::classify(
      Json{{"dhatFileVersion", 2}, {"cmd", "w"}, {"pid", 1}, {"pps", points}, {"ftbl", table}},
      "heap.json");
}

inline const diff::Row& row_named(const diff::Comparison& comparison, const std::string& name) {
  for (const diff::Row& row : comparison.rows) {
    if (row.name == name) {
      return row;
    }
  }
  throw std::runtime_error("no row " + name);
}

inline std::size_t column(profiles::Kind kind, const std::string& key) {
  const auto& all = diff::columns(kind);
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (key == all[i].key) {
      return i;
    }
  }
  throw std::runtime_error("no column " + key);
}

} // namespace hotscope::cli::hand_made
