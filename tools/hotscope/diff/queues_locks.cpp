// A stats.json's queues and locks compared as its functions are (docs/diff-and-report.md,
// "Queues and locks"): a queue's items' wait and a lock's waits and holds are durations with
// percentiles, each judged against the noise its count implies; depths and contended
// acquisitions are counts of chance events; a maximum is one item's and never beyond noise.
#include "diff.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <tuple>

namespace hotscope::cli::diff {
namespace {

using profiles::LockStats;
using profiles::QueueStats;

// Which durations a figure's noise is estimated from.
enum class From { None, Waits, Holds };

template <typename Stats> struct Figure {
  Column column;
  std::uint64_t Stats::*value;
  From from;
};

constexpr Unit kNs = Unit::Nanoseconds;

const Figure<QueueStats> kQueueFigures[] = {
    {{"pushed", "Pushed", Unit::Count, 0, Noise::Exact, 0, true}, &QueueStats::pushed, From::None},
    {{"popped", "Popped", Unit::Count, 0, Noise::Exact, 0, true}, &QueueStats::popped, From::None},
    {{"max_depth", "Max depth", Unit::Count, 0, Noise::Events}, &QueueStats::max_depth, From::None},
    {{"pending", "Pending", Unit::Count, 0, Noise::Events}, &QueueStats::pending, From::None},
    {{"wait_p50", "Wait P50", kNs, 10, Noise::Percentile, 0.5},
     &QueueStats::wait_p50_ns,
     From::Waits},
    {{"wait_p95", "Wait P95", kNs, 20, Noise::Percentile, 0.95},
     &QueueStats::wait_p95_ns,
     From::Waits},
    {{"wait_p99", "Wait P99", kNs, 100, Noise::Percentile, 0.99},
     &QueueStats::wait_p99_ns,
     From::Waits},
    {{"wait_max", "Wait max", kNs, 0, Noise::Max}, &QueueStats::wait_max_ns, From::Waits},
    {{"oldest_pending", "Oldest pending", kNs, 0, Noise::Max},
     &QueueStats::oldest_pending_ns,
     From::None},
};

const Figure<LockStats> kLockFigures[] = {
    {{"acquisitions", "Acquired", Unit::Count, 0, Noise::Exact, 0, true},
     &LockStats::acquisitions,
     From::None},
    {{"contended", "Contended", Unit::Count, 0, Noise::Events}, &LockStats::contended, From::None},
    {{"wait_p50", "Wait P50", kNs, 10, Noise::Percentile, 0.5},
     &LockStats::wait_p50_ns,
     From::Waits},
    {{"wait_p95", "Wait P95", kNs, 20, Noise::Percentile, 0.95},
     &LockStats::wait_p95_ns,
     From::Waits},
    {{"wait_p99", "Wait P99", kNs, 100, Noise::Percentile, 0.99},
     &LockStats::wait_p99_ns,
     From::Waits},
    {{"wait_max", "Wait max", kNs, 0, Noise::Max}, &LockStats::wait_max_ns, From::Waits},
    {{"hold_p50", "Hold P50", kNs, 10, Noise::Percentile, 0.5},
     &LockStats::hold_p50_ns,
     From::Holds},
    {{"hold_p95", "Hold P95", kNs, 20, Noise::Percentile, 0.95},
     &LockStats::hold_p95_ns,
     From::Holds},
    {{"hold_p99", "Hold P99", kNs, 100, Noise::Percentile, 0.99},
     &LockStats::hold_p99_ns,
     From::Holds},
    {{"hold_max", "Hold max", kNs, 0, Noise::Max}, &LockStats::hold_max_ns, From::Holds},
};

template <typename Figures> std::vector<Column> columns_of(const Figures& figures) {
  std::vector<Column> all;
  for (const auto& figure : figures) {
    all.push_back(figure.column);
  }
  return all;
}

// Durations as a Spread: their count, mean (from the total) and the percentiles the file gives.
Spread spread(std::uint64_t count, std::uint64_t total_ns, std::uint64_t p50, std::uint64_t p95,
              std::uint64_t p99, std::uint64_t max) {
  const auto ns = [](std::uint64_t value) { return static_cast<double>(value); };
  Spread out;
  out.calls = ns(count);
  out.mean = count > 0 && total_ns > 0 ? ns(total_ns) / ns(count) : -1;
  out.p50 = ns(p50);
  out.p95 = ns(p95);
  out.p99 = ns(p99);
  out.max = ns(max);
  return out;
}

// One queue's or lock's figures on one side.
struct Entry {
  std::string name, key;
  std::vector<double> values;
  Spread waits, holds;
  double wait_total_ns = 0;
};

Entry side_of(const QueueStats& queue) {
  Entry side{queue.name, queue.name, {}, {}, {}, static_cast<double>(queue.wait_total_ns)};
  for (const Figure<QueueStats>& figure : kQueueFigures) {
    side.values.push_back(static_cast<double>(queue.*figure.value));
  }
  side.waits = spread(queue.waits, queue.wait_total_ns, queue.wait_p50_ns, queue.wait_p95_ns,
                      queue.wait_p99_ns, queue.wait_max_ns);
  return side;
}

Entry side_of(const LockStats& lock) {
  Entry side{lock.name, lock.name + '\0' + lock.kind,           {}, {},
             {},        static_cast<double>(lock.wait_total_ns)};
  for (const Figure<LockStats>& figure : kLockFigures) {
    side.values.push_back(static_cast<double>(lock.*figure.value));
  }
  side.waits = spread(lock.waits, lock.wait_total_ns, lock.wait_p50_ns, lock.wait_p95_ns,
                      lock.wait_p99_ns, lock.wait_max_ns);
  side.holds = spread(lock.holds, lock.hold_total_ns, lock.hold_p50_ns, lock.hold_p95_ns,
                      lock.hold_p99_ns, lock.hold_max_ns);
  return side;
}

template <typename Figures>
Row row_of(const Figures& figures, const Entry* base, const Entry* now) {
  const Entry& any = now != nullptr ? *now : *base;
  Row row;
  row.name = any.name;
  row.side = base == nullptr  ? diff::Side::NewOnly
             : now == nullptr ? diff::Side::BaseOnly
                              : diff::Side::Both;
  for (std::size_t i = 0; i < std::size(figures); ++i) {
    Cell cell;
    if (base != nullptr) {
      cell.base = base->values[i];
    }
    if (now != nullptr) {
      cell.now = now->values[i];
    }
    const auto spread_of = [&](const Entry& side) {
      return figures[i].from == From::Holds ? side.holds : side.waits;
    };
    cell.significant =
        base != nullptr && now != nullptr &&
        significant(figures[i].column, spread_of(*base), spread_of(*now), *cell.base, *cell.now);
    row.cells.push_back(cell);
  }
  // The time the items (or the threads) spent waiting, added.
  row.impact =
      (now != nullptr ? now->wait_total_ns : 0) - (base != nullptr ? base->wait_total_ns : 0);
  return row;
}

// Sides matched by key, the first of a key in BASE with the first in NEW, and so on.
template <typename Figures, typename Stats>
std::vector<Row> rows_of(const Figures& figures, const std::optional<std::vector<Stats>>* base,
                         const std::optional<std::vector<Stats>>& now) {
  std::vector<Entry> before, after;
  if (base != nullptr && *base) {
    std::transform((*base)->begin(), (*base)->end(), std::back_inserter(before),
                   [](const Stats& stats) { return side_of(stats); });
  }
  if (now) {
    std::transform(now->begin(), now->end(), std::back_inserter(after),
                   [](const Stats& stats) { return side_of(stats); });
  }
  std::map<std::string, std::vector<std::size_t>> unmatched;
  for (std::size_t i = after.size(); i-- > 0;) {
    unmatched[after[i].key].push_back(i);
  }
  std::vector<bool> taken(after.size(), false);
  std::vector<Row> rows;
  for (const Entry& side : before) {
    std::vector<std::size_t>& left = unmatched[side.key];
    const Entry* other = left.empty() ? nullptr : &after[left.back()];
    if (!left.empty()) {
      taken[left.back()] = true;
      left.pop_back();
    }
    rows.push_back(row_of(figures, &side, other));
  }
  for (std::size_t i = 0; i < after.size(); ++i) {
    if (!taken[i]) {
      rows.push_back(row_of(figures, nullptr, &after[i]));
    }
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.impact > b.impact; });
  return rows;
}

} // namespace

const std::vector<Column>& queue_columns() {
  static const std::vector<Column> all = columns_of(kQueueFigures);
  return all;
}

const std::vector<Column>& lock_columns() {
  static const std::vector<Column> all = columns_of(kLockFigures);
  return all;
}

std::vector<Row> queue_rows(const profiles::Stats* base, const profiles::Stats& now) {
  return rows_of(kQueueFigures, base != nullptr ? &base->queues : nullptr, now.queues);
}

std::vector<Row> lock_rows(const profiles::Stats* base, const profiles::Stats& now) {
  return rows_of(kLockFigures, base != nullptr ? &base->locks.locks : nullptr, now.locks.locks);
}

} // namespace hotscope::cli::diff
