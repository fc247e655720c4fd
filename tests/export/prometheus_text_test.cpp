// The Prometheus text exposition's escaping and number rules (docs/agent.md, "Prometheus
// metrics"), on odd names and values.
#include "export/export.hpp"
#include "export/prometheus_text.hpp"
#include "export/snapshot_fixture.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

namespace {

namespace pt = hotscope::exporters::prometheus_text;

TEST(PrometheusText, LabelValuesAndHelpAreEscaped) {
  pt::MetricFamily family{
      "odd_total", "Back\\slash, \"quotes\" and a\nnewline.", pt::MetricType::Counter, {}};
  family.metrics.push_back(
      {{{"path", "C:\\dir\\"}, {"quote", "say \"hi\""}, {"lines", "a\nb"}}, 3, {}});
  family.metrics.push_back({{{"empty", ""}}, 4, {}});
  EXPECT_EQ(pt::exposition({family}),
            "# HELP odd_total Back\\\\slash, \"quotes\" and a\\nnewline.\n"
            "# TYPE odd_total counter\n"
            "odd_total{path=\"C:\\\\dir\\\\\",quote=\"say \\\"hi\\\"\",lines=\"a\\nb\"} 3\n"
            "odd_total{empty=\"\"} 4\n");
}

TEST(PrometheusText, NumbersNanAndInfinities) {
  pt::MetricFamily family{"g", "A gauge.", pt::MetricType::Gauge, {}};
  for (const double value :
       {std::nan(""), HUGE_VAL, -HUGE_VAL, 0.1 + 0.2, 1e21, 9007199254740992.0, 1.5e-7, -0.0,
        123456789012345678.0, std::numeric_limits<double>::denorm_min()}) {
    family.metrics.push_back({{}, value, {}});
  }
  EXPECT_EQ(pt::exposition({family}), "# HELP g A gauge.\n# TYPE g gauge\n"
                                      "g NaN\ng +Inf\ng -Inf\ng 0.3\ng 1e+21\n"
                                      "g 9007199254740992\ng 1.5e-07\ng -0\n"
                                      "g 1.234567890123457e+17\ng 4.940656458412465e-324\n");
}

TEST(PrometheusText, HistogramEndsWithTheInfBucket) {
  pt::MetricFamily family{"d_seconds", "Durations.", pt::MetricType::Histogram, {}};
  pt::Metric metric{{{"f", "x"}}, 0, {}};
  metric.histogram = {std::numeric_limits<std::uint64_t>::max(), 0.25, {{1e-7, 0}, {0.0025, 2}}};
  family.metrics.push_back(metric);
  family.metrics.push_back({{}, 0, {0, 0, {}}});
  EXPECT_EQ(pt::exposition({family}), "# HELP d_seconds Durations.\n# TYPE d_seconds histogram\n"
                                      "d_seconds_count{f=\"x\"} 18446744073709551615\n"
                                      "d_seconds_sum{f=\"x\"} 0.25\n"
                                      "d_seconds_bucket{f=\"x\",le=\"1e-07\"} 0\n"
                                      "d_seconds_bucket{f=\"x\",le=\"0.0025\"} 2\n"
                                      "d_seconds_bucket{f=\"x\",le=\"+Inf\"} 18446744073709551615\n"
                                      "d_seconds_count 0\n"
                                      "d_seconds_sum 0\n"
                                      "d_seconds_bucket{le=\"+Inf\"} 0\n");
}

// OpenMetrics: a counter family named without `_total`, `"` escaped in HELP, exemplars on the
// buckets that have one, `# EOF` at the end; the Prometheus text leaves the exemplars out.
TEST(PrometheusText, OpenMetricsDialect) {
  pt::MetricFamily counter{"calls_total", "Say \"hi\".", pt::MetricType::Counter, {}};
  counter.metrics.push_back({{{"f", "x"}}, 3, {}});
  pt::MetricFamily durations{"d_seconds", "Durations.", pt::MetricType::Histogram, {}};
  pt::Metric metric{{{"f", "x"}}, 0, {}};
  const pt::Exemplar call{{{"call_id", "17"}}, 0.0012, 1733300000.123};
  metric.histogram = {3, 0.25, {{1e-7, 0}, {0.0025, 2, call}}, pt::Exemplar{{}, 5, 1.5}};
  durations.metrics.push_back(metric);
  EXPECT_EQ(pt::exposition({counter, durations}, pt::Dialect::OpenMetrics),
            "# HELP calls Say \\\"hi\\\".\n# TYPE calls counter\ncalls_total{f=\"x\"} 3\n"
            "# HELP d_seconds Durations.\n# TYPE d_seconds histogram\n"
            "d_seconds_count{f=\"x\"} 3\n"
            "d_seconds_sum{f=\"x\"} 0.25\n"
            "d_seconds_bucket{f=\"x\",le=\"1e-07\"} 0\n"
            "d_seconds_bucket{f=\"x\",le=\"0.0025\"} 2 # {call_id=\"17\"} 0.0012 1733300000.123\n"
            "d_seconds_bucket{f=\"x\",le=\"+Inf\"} 3 # {} 5 1.5\n"
            "# EOF\n");
  EXPECT_EQ(pt::exposition({counter, durations}),
            "# HELP calls_total Say \"hi\".\n# TYPE calls_total counter\ncalls_total{f=\"x\"} 3\n"
            "# HELP d_seconds Durations.\n# TYPE d_seconds histogram\n"
            "d_seconds_count{f=\"x\"} 3\n"
            "d_seconds_sum{f=\"x\"} 0.25\n"
            "d_seconds_bucket{f=\"x\",le=\"1e-07\"} 0\n"
            "d_seconds_bucket{f=\"x\",le=\"0.0025\"} 2\n"
            "d_seconds_bucket{f=\"x\",le=\"+Inf\"} 3\n");
}

TEST(PrometheusText, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(
      pt::valid_utf8("ok \xC3\xA9 \xFF \xC0\xAF \xED\xA0\x80 \xF0\x9F\x98\x80 \xE2\x82"),
      "ok \xC3\xA9 \xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD "
      "\xF0\x9F\x98\x80 \xEF\xBF\xBD\xEF\xBF\xBD");
}

// A clock whose frequency is not a number is written as the format spells it.
TEST(PrometheusText, SnapshotNanIsWrittenAsNaN) {
  hotscope::Snapshot snapshot = hotscope::testing::known_snapshot();
  snapshot.clock.ticks_per_second = std::nan("");
  std::ostringstream out;
  hotscope::exporters::write_prometheus(snapshot, out);
  EXPECT_NE(out.str().find("\nhotscope_clock_ticks_per_second NaN\n"), std::string::npos)
      << out.str();
}

} // namespace
