#include "export/prometheus_text.hpp"

#include <array>
#include <charconv>
#include <cmath>

namespace hotscope::exporters::prometheus_text {
namespace {

void append_escaped(std::string& out, std::string_view text, bool quotes) {
  for (const char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quotes) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

// Shortest form up to 16 significant digits, as %.16g in the C locale (to_chars ignores the
// locale a program may have set).
void append_number(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
    return;
  }
  if (std::isinf(value)) {
    out += value < 0 ? "-Inf" : "+Inf";
    return;
  }
  std::array<char, 32> text{};
  const auto result =
      std::to_chars(text.data(), text.data() + text.size(), value, std::chars_format::general, 16);
  out.append(text.data(), result.ptr);
}

void append_number(std::string& out, std::uint64_t value) {
  std::array<char, 24> text{};
  const auto result = std::to_chars(text.data(), text.data() + text.size(), value);
  out.append(text.data(), result.ptr);
}

// `{name="value",...}`, `{}` when there is none; `le` is a histogram bucket's extra label.
void append_labels(std::string& out, const Labels& labels, const double* le = nullptr) {
  out += '{';
  for (const Label& label : labels) {
    out += &label == &labels.front() ? "" : ",";
    out += label.name;
    out += "=\"";
    append_escaped(out, label.value, true);
    out += '"';
  }
  if (le != nullptr) {
    out += labels.empty() ? "" : ",";
    out += "le=\"";
    append_number(out, *le);
    out += '"';
  }
  out += '}';
}

// A sample line's name and labels, and the space before its value; `le` is a histogram
// bucket's extra label.
void append_head(std::string& out, const MetricFamily& family, std::string_view suffix,
                 const Labels& labels, const double* le = nullptr) {
  out += family.name;
  out += suffix;
  if (!labels.empty() || le != nullptr) {
    append_labels(out, labels, le);
  }
  out += ' ';
}

// The end of a bucket's line: its exemplar in OpenMetrics, then the line feed.
void end_bucket(std::string& out, const std::optional<Exemplar>& exemplar, Dialect dialect) {
  if (exemplar && dialect == Dialect::OpenMetrics) {
    out += " # ";
    append_labels(out, exemplar->labels);
    out += ' ';
    append_number(out, exemplar->value);
    out += ' ';
    append_number(out, exemplar->unix_seconds);
  }
  out += '\n';
}

void append_histogram(std::string& out, const MetricFamily& family, const Metric& metric,
                      Dialect dialect) {
  const Histogram& histogram = metric.histogram;
  append_head(out, family, "_count", metric.labels);
  append_number(out, histogram.count);
  out += '\n';
  append_head(out, family, "_sum", metric.labels);
  append_number(out, histogram.sum);
  out += '\n';
  for (const Bucket& bucket : histogram.buckets) {
    append_head(out, family, "_bucket", metric.labels, &bucket.upper_bound);
    append_number(out, bucket.cumulative_count);
    end_bucket(out, bucket.exemplar, dialect);
  }
  constexpr double infinity = HUGE_VAL;
  append_head(out, family, "_bucket", metric.labels, &infinity);
  append_number(out, histogram.count);
  end_bucket(out, histogram.infinite_exemplar, dialect);
}

const char* type_name(MetricType type) {
  switch (type) {
  case MetricType::Counter:
    return "counter";
  case MetricType::Gauge:
    return "gauge";
  case MetricType::Histogram:
    return "histogram";
  }
  return "untyped";
}

} // namespace

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    std::size_t length = 0;
    std::uint32_t minimum = 0;
    if (byte < 0x80) {
      length = 1;
    } else if ((byte & 0xE0) == 0xC0) {
      length = 2;
      minimum = 0x80;
    } else if ((byte & 0xF0) == 0xE0) {
      length = 3;
      minimum = 0x800;
    } else if ((byte & 0xF8) == 0xF0) {
      length = 4;
      minimum = 0x10000;
    }
    bool valid = length > 0 && i + length <= text.size();
    std::uint32_t code = length == 1 ? byte : byte & (0x7F >> length);
    for (std::size_t k = 1; valid && k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      valid = (next & 0xC0) == 0x80;
      code = (code << 6) | (next & 0x3F);
    }
    valid = valid && code >= minimum && code <= 0x10FFFF && (code < 0xD800 || code > 0xDFFF);
    if (valid) {
      out.append(text.substr(i, length));
      i += length;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::string exposition(const std::vector<MetricFamily>& families, Dialect dialect) {
  const bool openmetrics = dialect == Dialect::OpenMetrics;
  std::string out;
  for (const MetricFamily& family : families) {
    std::string_view name = family.name;
    if (openmetrics && family.type == MetricType::Counter && name.ends_with("_total")) {
      name.remove_suffix(6);
    }
    out += "# HELP ";
    out += name;
    out += ' ';
    append_escaped(out, family.help, openmetrics);
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += type_name(family.type);
    out += '\n';
    for (const Metric& metric : family.metrics) {
      if (family.type == MetricType::Histogram) {
        append_histogram(out, family, metric, dialect);
      } else {
        append_head(out, family, "", metric.labels);
        append_number(out, metric.value);
        out += '\n';
      }
    }
  }
  if (openmetrics) {
    out += "# EOF\n";
  }
  return out;
}

} // namespace hotscope::exporters::prometheus_text
