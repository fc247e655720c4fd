// Rows of a comparison: functions matched by name, file, line and object (then by name and
// file, when the line moved or the object is not known), allocation sites by their frames'
// functions and files (queues and locks: queues_locks.cpp); each figure's significance, the rows'
// impact, and the rules they match.
#include "diff.hpp"

#include "agent_client.hpp"
#include "export/common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <tuple>

namespace hotscope::cli::diff {
namespace {

using Json = nlohmann::json;
using profiles::Kind;

// A function on one side: its figures in columns(Kind::Stats)'s order (none without calls).
struct FunctionFigures {
  std::string name, file;
  int line = 0;
  // An instrumented function's object, its file name only (runs from two build directories
  // match), and build id; "" for a macro scope.
  std::string module, build_id;
  std::uint64_t calls = 0;
  std::vector<std::optional<double>> values;
  Spread spread;
  // The self time of a typical call: self time per call scaled by the median call over the
  // mean one, so that a few calls stretched by preemption (or a page fault) weigh as little in
  // the impact as they do in the median.
  double typical_self_ns = 0;
};

bool has_samples(const profiles::Stats& stats) {
  return stats.has_cpu_samples() && stats.cpu->period_ns > 0;
}

// `function` of a run one of whose CPU samples stands for `cpu_period_ns` (0: it has none), taken
// `samples_per_signal` at a time.
FunctionFigures function_side(const profiles::FunctionStats& function, double cpu_period_ns,
                              double samples_per_signal) {
  FunctionFigures side;
  side.name = function.name;
  side.file = function.file;
  side.line = function.line;
  side.module = std::filesystem::path(function.module).filename().string();
  side.build_id = function.build_id;
  side.calls = function.calls;
  side.values.emplace_back(static_cast<double>(side.calls));
  const double calls = static_cast<double>(side.calls);
  const auto per_call = [&](double value) -> std::optional<double> {
    return side.calls > 0 ? std::optional(value) : std::nullopt;
  };
  const auto ns = [](std::uint64_t value) { return static_cast<double>(value); };
  side.values.push_back(per_call(function.mean_ns));
  side.values.push_back(per_call(ns(function.p50_ns)));
  side.values.push_back(per_call(ns(function.p95_ns)));
  side.values.push_back(per_call(ns(function.p99_ns)));
  const double self_per_call = ns(function.self_ns) / std::max(calls, 1.0);
  const double mean = function.mean_ns;
  side.typical_self_ns = mean > 0 ? self_per_call * ns(function.p50_ns) / mean : 0;
  // A figure the file lacks: left out of the spread.
  const auto given = [&](const char* key, double value) {
    return function.has(key) ? value : -1.0;
  };
  side.spread = Spread{calls,
                       given("mean_ns", function.mean_ns),
                       given("min_ns", ns(function.min_ns)),
                       given("max_ns", ns(function.max_ns)),
                       given("p50_ns", ns(function.p50_ns)),
                       given("p90_ns", ns(function.p90_ns)),
                       given("p95_ns", ns(function.p95_ns)),
                       given("p99_ns", ns(function.p99_ns)),
                       given("p999_ns", ns(function.p999_ns))};
  side.values.push_back(per_call(self_per_call));
  side.values.push_back(per_call(ns(function.total_ns) / std::max(calls, 1.0)));
  side.values.push_back(per_call(ns(function.alloc_bytes_total) / std::max(calls, 1.0)));
  side.values.push_back(per_call(ns(function.alloc_blocks_total) / std::max(calls, 1.0)));
  side.spread.cpu_period_ns = cpu_period_ns;
  side.spread.samples_per_signal = samples_per_signal;
  for (const std::uint64_t cpu_ns : {function.cpu_self_ns, function.cpu_total_ns}) {
    side.values.push_back(cpu_period_ns > 0 ? per_call(ns(cpu_ns) / std::max(calls, 1.0))
                                            : std::nullopt);
  }
  return side;
}

std::vector<FunctionFigures> function_sides(const profiles::Profile& profile) {
  std::vector<FunctionFigures> sides;
  const profiles::Stats& stats = profile.stats;
  const double cpu_period_ns = has_samples(stats) ? static_cast<double>(stats.cpu->period_ns) : 0.0;
  const double samples_per_signal =
      has_samples(stats) ? static_cast<double>(stats.cpu->samples) /
                               static_cast<double>(std::max<std::uint64_t>(stats.cpu->signals, 1))
                         : 1.0;
  for (const profiles::FunctionStats& function : stats.functions) {
    sides.push_back(function_side(function, cpu_period_ns, samples_per_signal));
  }
  return sides;
}

Row timing_row(const FunctionFigures* base, const FunctionFigures* now) {
  const FunctionFigures& any = now != nullptr ? *now : *base;
  Row row;
  row.name = any.name;
  row.file = any.file;
  row.line = any.line;
  row.module = any.module;
  row.side = base == nullptr  ? diff::Side::NewOnly
             : now == nullptr ? diff::Side::BaseOnly
                              : diff::Side::Both;
  const std::vector<Column>& all = columns(Kind::Stats);
  for (std::size_t i = 0; i < all.size(); ++i) {
    Cell cell;
    cell.base = base != nullptr ? base->values[i] : std::nullopt;
    cell.now = now != nullptr ? now->values[i] : std::nullopt;
    cell.significant = cell.base && cell.now &&
                       significant(all[i], base->spread, now->spread, *cell.base, *cell.now);
    row.cells.push_back(cell);
  }
  // Added self time per typical call times the calls: where the added time is spent (a
  // caller's total time grows with its callee's, its self time does not).
  const auto time_in = [](const FunctionFigures* side) {
    return side == nullptr ? 0.0 : side->typical_self_ns;
  };
  row.impact = (time_in(now) - time_in(base)) *
               static_cast<double>(now != nullptr ? now->calls : base->calls);
  return row;
}

// Pairs the functions of `before` and `after` not yet matched whose `key` is the same and
// unique on each side.
template <typename Key>
void match_unique(const std::vector<FunctionFigures>& before,
                  const std::vector<FunctionFigures>& after, Key key,
                  std::vector<const FunctionFigures*>& matched, std::vector<bool>& taken) {
  using Found = std::pair<int, std::size_t>; // how many share the key; the last one's index
  std::map<decltype(key(before.front())), Found> left_before, left_after;
  for (std::size_t i = 0; i < before.size(); ++i) {
    if (matched[i] == nullptr) {
      auto& [n, index] = left_before[key(before[i])];
      ++n;
      index = i;
    }
  }
  for (std::size_t i = 0; i < after.size(); ++i) {
    if (!taken[i]) {
      auto& [n, index] = left_after[key(after[i])];
      ++n;
      index = i;
    }
  }
  for (const auto& [shared, first] : left_before) {
    const auto other = left_after.find(shared);
    if (first.first == 1 && other != left_after.end() && other->second.first == 1) {
      matched[first.second] = &after[other->second.second];
      taken[other->second.second] = true;
    }
  }
}

// The objects whose build id differs between the matched functions of BASE and NEW, by name.
std::vector<Rebuilt> rebuilt_objects(const std::vector<FunctionFigures>& before,
                                     const std::vector<const FunctionFigures*>& matched) {
  std::map<std::string, Rebuilt> objects;
  for (std::size_t i = 0; i < before.size(); ++i) {
    const FunctionFigures* now = matched[i];
    if (now != nullptr && !before[i].build_id.empty() && !now->build_id.empty() &&
        before[i].build_id != now->build_id) {
      objects.try_emplace(now->module, Rebuilt{now->module, before[i].build_id, now->build_id});
    }
  }
  std::vector<Rebuilt> list;
  for (auto& [module, object] : objects) {
    list.push_back(std::move(object));
  }
  return list;
}

std::vector<Row> timing_rows(const profiles::Profile& base, const profiles::Profile& now,
                             std::vector<Rebuilt>& rebuilt) {
  const std::vector<FunctionFigures> before = function_sides(base);
  const std::vector<FunctionFigures> after = function_sides(now);
  std::vector<const FunctionFigures*> matched(before.size(), nullptr);
  std::vector<bool> taken(after.size(), false);
  // First by name, file, line and object (the first of equals); then what is left where it is
  // unique: by name, file and object (the line moved), then by name and file (a file of a
  // hotscope that wrote no objects, an object renamed). A build id never keeps two functions
  // apart: a rebuilt object's functions match by the same keys, the object listed in `rebuilt`.
  std::map<std::tuple<std::string, std::string, int, std::string>, std::size_t> exact;
  for (std::size_t i = 0; i < after.size(); ++i) {
    exact.emplace(std::tuple(after[i].name, after[i].file, after[i].line, after[i].module), i);
  }
  for (std::size_t i = 0; i < before.size(); ++i) {
    if (const auto found = exact.find(
            std::tuple(before[i].name, before[i].file, before[i].line, before[i].module));
        found != exact.end() && !taken[found->second]) {
      matched[i] = &after[found->second];
      taken[found->second] = true;
    }
  }
  match_unique(
      before, after,
      [](const FunctionFigures& side) { return std::tuple(side.name, side.file, side.module); },
      matched, taken);
  match_unique(
      before, after, [](const FunctionFigures& side) { return std::pair(side.name, side.file); },
      matched, taken);
  rebuilt = rebuilt_objects(before, matched);
  std::vector<Row> rows;
  for (std::size_t i = 0; i < before.size(); ++i) {
    rows.push_back(timing_row(&before[i], matched[i]));
  }
  for (std::size_t i = 0; i < after.size(); ++i) {
    if (!taken[i]) {
      rows.push_back(timing_row(nullptr, &after[i]));
    }
  }
  // The same inline function or source in two objects: their labels name the object.
  std::map<std::tuple<std::string, std::string, int>, int> places;
  for (const Row& row : rows) {
    ++places[std::tuple(row.name, row.file, row.line)];
  }
  for (Row& row : rows) {
    row.shares_place = places[std::tuple(row.name, row.file, row.line)] > 1;
  }
  return rows;
}

// A site's figures summed over the sites that share its key: its frames' functions and files.
struct SiteSum {
  profiles::Site site; // the first one's frames, the sums' figures
  std::array<double, 6> figures{};
};

std::string frame_key(const std::string& text) {
  const profiles::Frame frame = profiles::parse_frame(text);
  return frame.function + " (" + frame.file + ")";
}

std::map<std::vector<std::string>, SiteSum> site_sums(const profiles::Profile& profile) {
  std::map<std::vector<std::string>, SiteSum> sums;
  for (profiles::Site& site : profiles::heap_sites(profile)) {
    std::vector<std::string> key;
    for (const std::string* frame : site.frames) {
      key.push_back(frame_key(*frame));
    }
    const std::array<std::uint64_t, 6> figures{site.total_bytes, site.total_blocks,
                                               site.gmax_bytes,  site.gmax_blocks,
                                               site.end_bytes,   site.end_blocks};
    auto [slot, added] = sums.try_emplace(std::move(key));
    if (added) {
      slot->second.site = std::move(site);
    }
    for (std::size_t i = 0; i < figures.size(); ++i) {
      slot->second.figures[i] += static_cast<double>(figures[i]);
    }
  }
  return sums;
}

// A missing side allocated nothing at that site: its figures are 0, so a new site that leaks
// can match a rule.
Row heap_row(const SiteSum* base, const SiteSum* now) {
  Row row;
  const SiteSum& any = now != nullptr ? *now : *base;
  row.name = profiles::site_name(any.site);
  for (const std::string* frame : any.site.frames) {
    row.stack.push_back(profiles::short_frame(*frame));
  }
  row.side = base == nullptr  ? diff::Side::NewOnly
             : now == nullptr ? diff::Side::BaseOnly
                              : diff::Side::Both;
  for (std::size_t i = 0; i < 6; ++i) {
    Cell cell;
    cell.base = base != nullptr ? base->figures[i] : 0;
    cell.now = now != nullptr ? now->figures[i] : 0;
    cell.significant = *cell.base != *cell.now;
    row.cells.push_back(cell);
  }
  // The largest growth in bytes: in total, at the peak or at the end (a leak).
  row.impact = std::max({row.cells[0].change(), row.cells[2].change(), row.cells[4].change()});
  return row;
}

std::vector<Row> heap_rows(const profiles::Profile& base, const profiles::Profile& now,
                           Row& totals) {
  const auto before = site_sums(base);
  const auto after = site_sums(now);
  std::vector<Row> rows;
  for (const auto& [key, sum] : before) {
    const auto other = after.find(key);
    rows.push_back(heap_row(&sum, other != after.end() ? &other->second : nullptr));
  }
  for (const auto& [key, sum] : after) {
    if (before.find(key) == before.end()) {
      rows.push_back(heap_row(nullptr, &sum));
    }
  }
  totals.name = "(all sites)";
  totals.cells.assign(6, Cell{0.0, 0.0, false});
  for (const Row& row : rows) {
    for (std::size_t i = 0; i < 6; ++i) {
      *totals.cells[i].base += *row.cells[i].base;
      *totals.cells[i].now += *row.cells[i].now;
    }
  }
  for (Cell& cell : totals.cells) {
    cell.significant = *cell.base != *cell.now;
  }
  return rows;
}

std::string summary(const profiles::Profile& profile) {
  if (profile.kind == Kind::Stats) {
    const profiles::Stats& stats = profile.stats;
    return fmt::format("{} (pid {}), {}", stats.process_name.value_or("?"), stats.pid,
                       exporters::detail::human_duration(stats.duration_ns));
  }
  const Json& document = profile.document;
  return fmt::format("{} (pid {})", document.value("cmd", "?"),
                     document.value("pid", std::int64_t{0}));
}

Comparison sides(const profiles::Profile& base, const profiles::Profile& now) {
  Comparison comparison;
  comparison.kind = base.kind;
  comparison.base_source = base.source;
  comparison.new_source = now.source;
  comparison.base_summary = summary(base);
  comparison.new_summary = summary(now);
  return comparison;
}

void sort_by_impact(std::vector<Row>& rows) {
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.impact > b.impact; });
}

} // namespace

Comparison one_run(const profiles::Profile& run) {
  Comparison comparison = sides(run, run);
  comparison.base_source.clear();
  comparison.base_summary.clear();
  if (run.kind == Kind::Stats) {
    comparison.cpu = has_samples(run.stats);
    for (const FunctionFigures& side : function_sides(run)) {
      comparison.rows.push_back(timing_row(nullptr, &side));
    }
    comparison.queues = queue_rows(nullptr, run.stats);
    comparison.locks = lock_rows(nullptr, run.stats);
  } else {
    // The sites against themselves, then their BASE side dropped; by total bytes, largest first.
    comparison.totals.emplace();
    comparison.rows = heap_rows(run, run, *comparison.totals);
    const auto drop_base = [](Row& row) {
      row.side = diff::Side::NewOnly;
      row.impact = row.cells[0].now.value_or(0);
      for (Cell& cell : row.cells) {
        cell.base.reset();
      }
    };
    drop_base(*comparison.totals);
    std::for_each(comparison.rows.begin(), comparison.rows.end(), drop_base);
  }
  sort_by_impact(comparison.rows);
  return comparison;
}

Comparison compare(const profiles::Profile& base, const profiles::Profile& now,
                   const std::vector<std::string>& rule_texts) {
  if (base.kind != now.kind) {
    throw Failure(kUsage, fmt::format("{} is {} and {} is {}: compare two of a kind", base.source,
                                      profiles::kind_name(base.kind), now.source,
                                      profiles::kind_name(now.kind)));
  }
  const std::vector<Rule> rules = parse_rules(rule_texts, base.kind);
  Comparison comparison = sides(base, now);
  if (base.kind == Kind::Stats) {
    comparison.cpu = has_samples(base.stats) && has_samples(now.stats);
    comparison.rows = timing_rows(base, now, comparison.rebuilt);
    comparison.queues = queue_rows(&base.stats, now.stats);
    comparison.locks = lock_rows(&base.stats, now.stats);
  } else {
    comparison.totals.emplace();
    comparison.rows = heap_rows(base, now, *comparison.totals);
  }
  sort_by_impact(comparison.rows);
  for (const Rule& rule : rules) {
    comparison.rules.push_back(rule.text);
    for (Row& row : comparison.rows) {
      if (matches(rule, row.cells[rule.column])) {
        row.failed.push_back(rule.text);
      }
    }
    if (comparison.totals && matches(rule, comparison.totals->cells[rule.column])) {
      comparison.totals->failed.push_back(rule.text);
    }
  }
  return comparison;
}

} // namespace hotscope::cli::diff
