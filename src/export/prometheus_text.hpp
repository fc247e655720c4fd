// The Prometheus text exposition format 0.0.4 (docs/agent.md, "Prometheus metrics"): metric
// families written with the format's escaping and number rules, by hotscope itself (libhotscope
// links no C++ library a service may bring at another version).
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hotscope::exporters::prometheus_text {

enum class MetricType { Counter, Gauge, Histogram };

struct Label {
  std::string name;
  std::string value; // UTF-8 (valid_utf8)
  auto operator<=>(const Label&) const = default;
};
using Labels = std::vector<Label>;

struct Bucket {
  double upper_bound = 0;
  std::uint64_t cumulative_count = 0;
};

// The finite buckets, bounds ascending; the writer adds the `+Inf` one, equal to `count`.
struct Histogram {
  std::uint64_t count = 0;
  double sum = 0;
  std::vector<Bucket> buckets;
};

// One series: `value` for a counter or gauge, `histogram` for a histogram.
struct Metric {
  Labels labels;
  double value = 0;
  Histogram histogram;
};

struct MetricFamily {
  std::string name;
  std::string help; // UTF-8
  MetricType type = MetricType::Gauge;
  std::vector<Metric> metrics;
};

// Copies `text`, replacing each invalid UTF-8 sequence with U+FFFD: the exposition is UTF-8.
std::string valid_utf8(std::string_view text);

// Each family: its HELP and TYPE lines, then its samples. Label values escape `\`, `"` and
// newline, HELP text `\` and newline; numbers are written in the C locale, NaN as `NaN` and
// infinities as `+Inf`/`-Inf`.
std::string exposition(const std::vector<MetricFamily>& families);

} // namespace hotscope::exporters::prometheus_text
