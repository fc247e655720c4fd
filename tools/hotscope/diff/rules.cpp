// The compared columns and the --fail-on grammar (docs/diff-and-report.md#fail-on):
//   RULE    := COLUMN ('>' | '<') AMOUNT
//   AMOUNT  := ('+' | '-')? NUMBER ('%' | UNIT)?
// "p99>+10%" matches a row whose p99 grew by more than 10 %; "mean>+2ms" one whose mean grew by
// more than 2 ms; "calls<-50%" one whose calls fell by more than half. UNIT: ns, us, µs, ms, s for
// times; B, KiB, MiB, GiB for bytes; none for counts (a bare number is in ns, bytes or a count).
#include "diff.hpp"

#include "agent_client.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace hotscope::cli::diff {
namespace {

struct Suffix {
  const char* text;
  double factor;
};
constexpr Suffix kTimeSuffixes[] = {{"ns", 1}, {"us", 1e3}, {"µs", 1e3}, {"ms", 1e6}, {"s", 1e9}};
constexpr Suffix kByteSuffixes[] = {
    {"B", 1}, {"KiB", 1024.0}, {"MiB", 1024.0 * 1024}, {"GiB", 1024.0 * 1024 * 1024}};

std::string trim(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) {
    return "";
  }
  return std::string(text.substr(first, text.find_last_not_of(" \t") - first + 1));
}

std::string column_keys(profiles::Kind kind) {
  std::string keys;
  for (const Column& column : columns(kind)) {
    keys += keys.empty() ? column.key : fmt::format(", {}", column.key);
  }
  return keys;
}

[[noreturn]] void bad_rule(const std::string& text, const std::string& why) {
  throw Failure(kUsage, fmt::format("--fail-on '{}': {}; a rule is COLUMN>+N% or COLUMN<-N "
                                    "with a unit, e.g. 'p99>+10%', 'mean>+2ms' "
                                    "(docs/diff-and-report.md)",
                                    text, why));
}

Rule parse_rule(const std::string& text, profiles::Kind kind) {
  const std::size_t op = text.find_first_of("<>");
  if (op == std::string::npos) {
    bad_rule(text, "no '>' or '<'");
  }
  Rule rule;
  rule.text = text;
  rule.above = text[op] == '>';
  const std::string key = trim(std::string_view(text).substr(0, op));
  const std::vector<Column>& all = columns(kind);
  const auto column =
      std::find_if(all.begin(), all.end(), [&](const Column& c) { return key == c.key; });
  if (column == all.end()) {
    bad_rule(text, fmt::format("no column '{}' in {}'s comparison (columns: {})", key,
                               profiles::kind_name(kind), column_keys(kind)));
  }
  rule.column = static_cast<std::size_t>(column - all.begin());
  const Amount amount = parse_amount(std::string_view(text).substr(op + 1), *column);
  if (!amount.error.empty()) {
    bad_rule(text, amount.error);
  }
  rule.amount = amount.value;
  rule.percent = amount.percent;
  return rule;
}

} // namespace

Amount parse_amount(std::string_view text, const Column& column) {
  Amount result;
  std::string amount = trim(text);
  double sign = 1;
  if (!amount.empty() && (amount.front() == '+' || amount.front() == '-')) {
    sign = amount.front() == '-' ? -1 : 1;
    amount.erase(0, 1);
  }
  double number = 0;
  const auto [end, error] = std::from_chars(amount.data(), amount.data() + amount.size(), number);
  if (error != std::errc() || !std::isfinite(number)) {
    result.error = fmt::format("'{}' is not a number", amount);
    return result;
  }
  const std::string unit = trim(std::string_view(amount).substr(end - amount.data()));
  double factor = 1;
  if (unit == "%") {
    result.percent = true;
  } else if (!unit.empty()) {
    const Suffix* begin = nullptr;
    const Suffix* last = nullptr;
    if (column.unit == Unit::Nanoseconds) {
      begin = std::begin(kTimeSuffixes);
      last = std::end(kTimeSuffixes);
    } else if (column.unit == Unit::Bytes) {
      begin = std::begin(kByteSuffixes);
      last = std::end(kByteSuffixes);
    }
    const Suffix* found =
        begin == nullptr
            ? nullptr
            : std::find_if(begin, last, [&](const Suffix& s) { return unit == s.text; });
    if (found == nullptr || found == last) {
      result.error = fmt::format("'{}' is not a unit of {} (% or {})", unit, column.key,
                                 column.unit == Unit::Nanoseconds ? "ns, us, ms, s"
                                 : column.unit == Unit::Bytes     ? "B, KiB, MiB, GiB"
                                                                  : "a bare number");
      return result;
    }
    factor = found->factor;
  }
  result.value = sign * number * factor;
  return result;
}

const std::vector<Column>& columns(profiles::Kind kind) {
  static const std::vector<Column> timing{
      {"calls", "Calls", Unit::Count, 1, Noise::Exact, 0, true},
      {"mean", "Mean", Unit::Nanoseconds, 10, Noise::Mean},
      {"p50", "P50", Unit::Nanoseconds, 10, Noise::Percentile, 0.5},
      {"p95", "P95", Unit::Nanoseconds, 20, Noise::Percentile, 0.95},
      {"p99", "P99", Unit::Nanoseconds, 100, Noise::Percentile, 0.99},
      {"self", "Self/call", Unit::Nanoseconds, 10, Noise::Self},
      {"total", "Total/call", Unit::Nanoseconds, 10, Noise::Mean},
      {"alloc_bytes", "Alloc/call", Unit::Bytes, 10},
      {"alloc_blocks", "Blocks/call", Unit::Count, 10},
      {"cpu_self", "CPU self/call", Unit::Nanoseconds, 1, Noise::Samples},
      {"cpu_total", "CPU total/call", Unit::Nanoseconds, 1, Noise::Samples},
  };
  static const std::vector<Column> heap{
      {"total_bytes", "Total", Unit::Bytes, 0},    {"total_blocks", "Blocks", Unit::Count, 0},
      {"gmax_bytes", "At t-gmax", Unit::Bytes, 0}, {"gmax_blocks", "Blocks", Unit::Count, 0},
      {"end_bytes", "At t-end", Unit::Bytes, 0},   {"end_blocks", "Blocks", Unit::Count, 0},
  };
  return kind == profiles::Kind::Stats ? timing : heap;
}

std::vector<Rule> parse_rules(const std::vector<std::string>& texts, profiles::Kind kind) {
  std::vector<Rule> rules;
  for (const std::string& option : texts) {
    for (std::size_t start = 0; start <= option.size();) {
      const std::size_t comma = std::min(option.find(',', start), option.size());
      const std::string text = trim(std::string_view(option).substr(start, comma - start));
      if (text.empty()) {
        bad_rule(option, "an empty rule");
      }
      rules.push_back(parse_rule(text, kind));
      start = comma + 1;
    }
  }
  return rules;
}

namespace {

struct Point {
  double u, x; // the call at rank u * calls takes x ns
};

// The quantile function the percentiles outline: straight lines from min through P50, P90,
// P95, P99 and P99.9 to max, those the file has.
std::vector<Point> outline(const Spread& side) {
  const Point known[] = {{0, side.min},    {0.5, side.p50},    {0.9, side.p90}, {0.95, side.p95},
                         {0.99, side.p99}, {0.999, side.p999}, {1, side.max}};
  std::vector<Point> points;
  for (const Point& point : known) {
    if (point.x >= 0) {
      points.push_back({point.u, points.empty() ? point.x : std::max(point.x, points.back().x)});
    }
  }
  if (points.empty()) {
    points.push_back({0, std::max(side.mean, 0.0)});
  }
  if (points.front().u > 0) {
    points.insert(points.begin(), Point{0, points.front().x});
  }
  if (points.back().u < 1) {
    points.push_back({1, points.back().x});
  }
  return points;
}

double value_at(const std::vector<Point>& points, double u) {
  for (std::size_t i = 1; i < points.size(); ++i) {
    if (u <= points[i].u) {
      const Point& a = points[i - 1];
      const Point& b = points[i];
      return b.u == a.u ? b.x : a.x + (b.x - a.x) * (u - a.u) / (b.u - a.u);
    }
  }
  return points.back().x;
}

// The duration at rank `u` on the outline, or that of a known point (min, a percentile, max)
// within `reach` (a share of the calls) of it, below it for a `lower` bound, above it else: the
// calls between two known percentiles need not lie on the line between them (a few preempted
// calls make a step), and a rank that close to a known one may well fall on its side of a step.
double bound_at(const std::vector<Point>& points, double u, double reach, bool lower) {
  for (std::size_t i = 0; i < points.size(); ++i) {
    const Point& point = points[lower ? points.size() - 1 - i : i];
    if (lower ? point.u <= u : point.u >= u) {
      return std::fabs(point.u - u) <= reach ? point.x : value_at(points, u);
    }
  }
  return value_at(points, u);
}

// A call's standard deviation: that of the outlined distribution, and at least what the
// slowest and the fastest call alone imply: calls sigma^2 >= (max - mean)^2 + (mean - min)^2.
double sigma(const Spread& side) {
  const std::vector<Point> points = outline(side);
  double mean = 0;
  for (std::size_t i = 1; i < points.size(); ++i) {
    mean += (points[i].u - points[i - 1].u) * (points[i].x + points[i - 1].x) / 2;
  }
  double variance = 0;
  for (std::size_t i = 1; i < points.size(); ++i) {
    const double a = points[i - 1].x - mean;
    const double b = points[i].x - mean;
    variance += (points[i].u - points[i - 1].u) * (a * a + a * b + b * b) / 3;
  }
  const double centre = side.mean >= 0 ? side.mean : mean;
  const double slowest = points.back().x - centre;
  const double fastest = centre - points.front().x;
  const double extremes = (slowest * slowest + fastest * fastest) / std::max(side.calls, 1.0);
  return std::sqrt(std::max(variance, extremes));
}

} // namespace

Interval noise_interval(const Column& column, const Spread& side, double value) {
  const double calls = std::max(side.calls, 1.0);
  switch (column.noise) {
  case Noise::Exact:
    return {value, value};
  case Noise::Mean:
  case Noise::Self: {
    const double half = kNoiseZ * sigma(side) / std::sqrt(calls);
    return {value - half, value + half};
  }
  case Noise::Samples: {
    const double period = side.cpu_period_ns;
    const double samples = period > 0 ? value * calls / period : 0;
    const double per_signal = std::max(side.samples_per_signal, 1.0);
    const double half =
        kNoiseZ * std::sqrt(per_signal * std::max(samples, per_signal)) * period / calls;
    return {value - half, value + half};
  }
  case Noise::Events: {
    const double half = kNoiseZ * std::sqrt(std::max(value, 1.0));
    return {value - half, value + half};
  }
  case Noise::Max:
    return {value, HUGE_VAL};
  case Noise::Percentile:
    break;
  }
  // The ranks that hold the quantile's call in another run: binomial around calls q.
  const double q = column.quantile;
  const double spread = kNoiseZ * std::sqrt(calls * q * (1 - q));
  const double low = calls * q - spread;
  const double high = calls * q + spread;
  const std::vector<Point> points = outline(side);
  return {std::min(value, low < 1 ? 0 : bound_at(points, low / calls, spread / calls, true)),
          std::max(value, high > calls ? HUGE_VAL
                                       : bound_at(points, high / calls, spread / calls, false))};
}

bool significant(const Column& column, const Spread& base, const Spread& now, double b, double n) {
  if (base.calls < static_cast<double>(column.min_calls) ||
      now.calls < static_cast<double>(column.min_calls)) {
    return false;
  }
  if (column.noise == Noise::Exact) {
    return n != b;
  }
  const Interval before = noise_interval(column, base, b);
  const Interval after = noise_interval(column, now, n);
  const double scale = column.noise == Noise::Self ? std::max(base.mean, now.mean)
                                                   : std::max(std::fabs(b), std::fabs(n));
  const double change = std::fabs(n - b);
  return (after.low > before.high || after.high < before.low) && change > kDriftFloor * scale &&
         (column.unit != Unit::Nanoseconds || change >= kDriftFloorNs);
}

double Cell::change() const {
  return now.value_or(0) - base.value_or(0);
}

std::optional<double> Cell::percent() const {
  if (!base || *base == 0) {
    return std::nullopt;
  }
  return 100 * change() / *base;
}

double Cell::change_by(bool in_percent) const {
  const double difference = change();
  if (!in_percent) {
    return difference;
  }
  const std::optional<double> share = percent();
  return share ? *share : difference > 0 ? HUGE_VAL : difference < 0 ? -HUGE_VAL : 0;
}

bool matches(const Rule& rule, const Cell& cell) {
  if (!cell.significant) {
    return false;
  }
  const double change = cell.change_by(rule.percent);
  return rule.above ? change > rule.amount : change < rule.amount;
}

bool Row::significant() const {
  return std::any_of(cells.begin(), cells.end(), [](const Cell& cell) { return cell.significant; });
}

std::vector<Table> Comparison::tables() const {
  if (kind == profiles::Kind::Heap) {
    return {{"heap site", columns(kind), rows, 0}};
  }
  const auto at = [](const std::vector<Column>& all, std::string_view key) {
    return static_cast<std::size_t>(
        std::find_if(all.begin(), all.end(), [&](const Column& c) { return key == c.key; }) -
        all.begin());
  };
  // The headline: the mean call; an item's or a waiter's P99 wait.
  return {{"function", columns(kind), rows, at(columns(kind), "mean")},
          {"queue", queue_columns(), queues, at(queue_columns(), "wait_p99")},
          {"lock", lock_columns(), locks, at(lock_columns(), "wait_p99")}};
}

bool Comparison::failed() const {
  const auto failing = [](const Row& row) { return !row.failed.empty(); };
  return std::any_of(rows.begin(), rows.end(), failing) || (totals && failing(*totals)) ||
         std::any_of(judgements.begin(), judgements.end(),
                     [](const Judgement& judgement) { return judgement.fails(); });
}

} // namespace hotscope::cli::diff
