// The Prometheus text exposition format 0.0.4 and OpenMetrics 1.0 (docs/agent.md, "Prometheus
// metrics"): metric families written with the formats' escaping and number rules, by hotscope
// itself (libhotscope links no C++ library a service may bring at another version).
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hotscope::exporters::prometheus_text {

enum class MetricType { Counter, Gauge, Histogram };

// OpenMetrics differs in a counter family's name (without `_total` in HELP and TYPE), in HELP's
// escaping of `"`, in exemplars and in the `# EOF` line that ends it.
enum class Dialect { Prometheus, OpenMetrics };

struct Label {
  std::string name;
  std::string value; // UTF-8 (valid_utf8)
  auto operator<=>(const Label&) const = default;
};
using Labels = std::vector<Label>;

// An example observation of a bucket (OpenMetrics only): `# {labels} value timestamp`.
struct Exemplar {
  Labels labels;
  double value = 0;
  double unix_seconds = 0;
};

struct Bucket {
  double upper_bound = 0;
  std::uint64_t cumulative_count = 0;
  std::optional<Exemplar> exemplar{};
};

// The finite buckets, bounds ascending; the writer adds the `+Inf` one, equal to `count`.
struct Histogram {
  std::uint64_t count = 0;
  double sum = 0;
  std::vector<Bucket> buckets;
  std::optional<Exemplar> infinite_exemplar{}; // the `+Inf` bucket's
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
// newline, HELP text `\` and newline (and `"` in OpenMetrics); numbers are written in the C
// locale, NaN as `NaN` and infinities as `+Inf`/`-Inf`. A counter's family name ends with
// `_total` (Prometheus keeps it in HELP and TYPE, OpenMetrics drops it there).
std::string exposition(const std::vector<MetricFamily>& families,
                       Dialect dialect = Dialect::Prometheus);

} // namespace hotscope::exporters::prometheus_text
