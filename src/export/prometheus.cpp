// Prometheus text exposition 0.0.4 (../shared/formats.md §5). Every family is written as one
// contiguous group, HELP and TYPE first, and every series once: entries that share their labels
// (template instantiations shortened to one name, threads whose tid was reused) are merged.
#include "export/export.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hotscope::exporters {
namespace {

// Copies `text`, replacing each invalid UTF-8 sequence with U+FFFD: the exposition is UTF-8.
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

// Label values escape backslash, double quote and line feed; nothing else may be escaped.
std::string label_value(std::string_view text) {
  std::string out;
  for (const char c : valid_utf8(text)) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

using Labels = std::vector<std::pair<std::string_view, std::string>>;

// `{name="value",...}` with the values escaped; "" for no labels.
std::string label_set(const Labels& labels) {
  if (labels.empty()) {
    return "";
  }
  std::string out = "{";
  for (const auto& [name, value] : labels) {
    out += fmt::format("{}{}=\"{}\"", out.size() > 1 ? "," : "", name, label_value(value));
  }
  return out + "}";
}

// Go ParseFloat accepts what {fmt} prints for a double: the shortest round-trip form.
std::string seconds(double ns) {
  return fmt::format("{}", ns / 1e9);
}

void family(std::ostream& out, std::string_view name, std::string_view type,
            std::string_view help) {
  // HELP texts are fixed strings here, without backslashes or line feeds to escape.
  out << "# HELP " << name << ' ' << help << '\n' << "# TYPE " << name << ' ' << type << '\n';
}

struct FunctionSeries {
  std::uint64_t calls = 0;
  std::uint64_t total_ns = 0;
  std::uint64_t self_ns = 0;
  // The quantiles of merged entries cannot be combined exactly: the largest is kept, an upper
  // bound of the merged quantile.
  std::uint64_t quantiles_ns[5] = {};
  AllocationCounts allocated_self;
  AllocationCounts allocated_total;
};

constexpr std::pair<const char*, std::uint64_t DurationStats::*> kQuantiles[] = {
    {"0.5", &DurationStats::p50_ns},    {"0.9", &DurationStats::p90_ns},
    {"0.95", &DurationStats::p95_ns},   {"0.99", &DurationStats::p99_ns},
    {"0.999", &DurationStats::p999_ns},
};

// The heap profiler's gauges and counters; in the sampled mode the values are estimates.
void write_heap_figures(const HeapFigures& heap, std::ostream& out) {
  const std::string mode = label_set({{"mode", heap.mode}});
  const struct {
    const char* name;
    const char* type;
    const char* help;
    std::uint64_t value;
  } series[] = {
      {"hotscope_heap_allocated_bytes_total", "counter",
       "Heap bytes allocated in this window, every thread (the heap profiler's count).",
       heap.total_bytes},
      {"hotscope_heap_allocated_blocks_total", "counter",
       "Heap blocks allocated in this window, every thread.", heap.total_blocks},
      {"hotscope_heap_live_bytes", "gauge", "Heap bytes live now.", heap.live_bytes},
      {"hotscope_heap_live_blocks", "gauge", "Heap blocks live now.", heap.live_blocks},
      {"hotscope_heap_peak_bytes", "gauge", "The most heap bytes live at once in this window.",
       heap.peak_bytes},
      {"hotscope_heap_peak_blocks", "gauge", "Heap blocks live at the peak of live bytes.",
       heap.peak_blocks},
  };
  for (const auto& s : series) {
    family(out, s.name, s.type, s.help);
    out << s.name << mode << ' ' << s.value << '\n';
  }
}

} // namespace

void write_prometheus(const Snapshot& snapshot, std::ostream& out) {
  family(out, "hotscope_info", "gauge",
         "Always 1: the hotscope version and the clock the timings were measured with.");
  out << "hotscope_info"
      << label_set({{"version", snapshot.hotscope_version},
                    {"clock_source", snapshot.clock.source},
                    {"frequency_origin", snapshot.clock.frequency_origin}})
      << " 1\n";
  family(out, "hotscope_clock_ticks_per_second", "gauge",
         "Frequency of the clock, used to convert ticks to seconds.");
  out << "hotscope_clock_ticks_per_second " << fmt::format("{}", snapshot.clock.ticks_per_second)
      << '\n';
  family(out, "hotscope_window_seconds", "gauge",
         "Length of the measuring window: since the start or the last reset.");
  out << "hotscope_window_seconds " << seconds(static_cast<double>(snapshot.duration_ns)) << '\n';

  const std::pair<const char*, std::uint64_t RecordCounts::*> records[] = {
      {"written", &RecordCounts::written},
      {"kept", &RecordCounts::kept},
      {"dropped", &RecordCounts::dropped},
  };
  for (const auto& [what, field] : records) {
    const std::string name = fmt::format("hotscope_records_{}_total", what);
    family(out, name, "counter",
           fmt::format("Records {} by the measured threads in this window.", what));
    out << name << ' ' << snapshot.records.*field << '\n';
  }
  std::map<std::string, std::uint64_t> thread_drops;
  for (const ThreadInfo& thread : snapshot.threads) {
    thread_drops[label_set({{"thread", thread.name}, {"tid", std::to_string(thread.os_tid)}})] +=
        thread.records.dropped;
  }
  family(out, "hotscope_thread_records_dropped_total", "counter",
         "Records a thread's full ring refused in this window.");
  for (const auto& [labels, dropped] : thread_drops) {
    out << "hotscope_thread_records_dropped_total" << labels << ' ' << dropped << '\n';
  }
  // Live threads only: an ended thread's CPU time can no longer be read.
  std::map<std::string, std::uint64_t> thread_cpu;
  for (const ThreadInfo& thread : snapshot.threads) {
    if (thread.os.state.empty()) {
      continue;
    }
    const std::pair<const char*, std::uint64_t> modes[] = {{"user", thread.os.cpu_user_ns},
                                                           {"system", thread.os.cpu_system_ns}};
    for (const auto& [mode, ns] : modes) {
      thread_cpu[label_set(
          {{"thread", thread.name}, {"tid", std::to_string(thread.os_tid)}, {"mode", mode}})] += ns;
    }
  }
  family(out, "hotscope_thread_cpu_seconds_total", "counter",
         "CPU time of a live thread since it started, in user or system mode.");
  for (const auto& [labels, ns] : thread_cpu) {
    out << "hotscope_thread_cpu_seconds_total" << labels << ' ' << seconds(static_cast<double>(ns))
        << '\n';
  }
  family(out, "hotscope_trace_evicted_total", "counter",
         "Trace events pushed out of the bounded trace window.");
  out << "hotscope_trace_evicted_total " << snapshot.trace_evicted << '\n';
  family(out, "hotscope_memory_bytes", "gauge",
         "Memory the profiler holds: the threads' rings, the trace window, the statistics.");
  const std::pair<const char*, std::uint64_t> memory[] = {
      {"rings", snapshot.memory.rings},
      {"trace_window", snapshot.memory.trace_window},
      {"statistics", snapshot.memory.statistics},
  };
  for (const auto& [part, bytes] : memory) {
    out << "hotscope_memory_bytes" << label_set({{"part", part}}) << ' ' << bytes << '\n';
  }

  std::map<std::string, FunctionSeries> functions;
  for (const FunctionStats& function : snapshot.functions) {
    const DurationStats& s = function.stats;
    FunctionSeries& series = functions[label_set({{"function", function.name},
                                                  {"file", function.file},
                                                  {"line", std::to_string(function.line)}})];
    series.calls += s.calls;
    series.total_ns += s.total_ns;
    series.self_ns += s.self_ns;
    series.allocated_self += function.allocated_self;
    series.allocated_total += function.allocated_total;
    for (std::size_t q = 0; q < std::size(kQuantiles); ++q) {
      series.quantiles_ns[q] = std::max(series.quantiles_ns[q], s.*kQuantiles[q].second);
    }
  }
  family(out, "hotscope_function_calls_total", "counter", "Completed calls of a scope.");
  for (const auto& [labels, series] : functions) {
    out << "hotscope_function_calls_total" << labels << ' ' << series.calls << '\n';
  }
  family(out, "hotscope_function_self_seconds_total", "counter",
         "Time inside a scope but not inside its child scopes.");
  for (const auto& [labels, series] : functions) {
    out << "hotscope_function_self_seconds_total" << labels << ' '
        << seconds(static_cast<double>(series.self_ns)) << '\n';
  }
  family(out, "hotscope_function_duration_seconds", "summary",
         "Duration of one call of a scope (inclusive), over the measuring window.");
  for (const auto& [labels, series] : functions) {
    // The quantile label goes last inside the braces.
    const std::string open = labels.substr(0, labels.size() - 1);
    for (std::size_t q = 0; q < std::size(kQuantiles); ++q) {
      // No call has ended yet (an open scope that allocated): no quantile, as client libraries say.
      out << "hotscope_function_duration_seconds" << open << ",quantile=\"" << kQuantiles[q].first
          << "\"} "
          << (series.calls == 0 ? "NaN" : seconds(static_cast<double>(series.quantiles_ns[q])))
          << '\n';
    }
    out << "hotscope_function_duration_seconds_sum" << labels << ' '
        << seconds(static_cast<double>(series.total_ns)) << '\n';
    out << "hotscope_function_duration_seconds_count" << labels << ' ' << series.calls << '\n';
  }

  // Allocation figures only for programs that record allocations, like the table's columns.
  if (snapshot.allocations.all.blocks > 0) {
    const std::pair<const char*, std::uint64_t AllocationCounts::*> units[] = {
        {"bytes", &AllocationCounts::bytes},
        {"blocks", &AllocationCounts::blocks},
    };
    for (const auto& [unit, field] : units) {
      const std::string name = fmt::format("hotscope_allocated_{}_total", unit);
      family(out, name, "counter",
             fmt::format("Heap {} allocated by the measured threads in this window.", unit));
      out << name << ' ' << snapshot.allocations.all.*field << '\n';
    }
    for (const auto& [unit, field] : units) {
      const std::string self = fmt::format("hotscope_function_self_allocated_{}_total", unit);
      family(out, self, "counter",
             fmt::format("Heap {} allocated while a scope was the innermost one.", unit));
      for (const auto& [labels, series] : functions) {
        out << self << labels << ' ' << series.allocated_self.*field << '\n';
      }
      const std::string total = fmt::format("hotscope_function_allocated_{}_total", unit);
      family(out, total, "counter",
             fmt::format("Heap {} allocated while a scope was open, its child scopes included.",
                         unit));
      for (const auto& [labels, series] : functions) {
        out << total << labels << ' ' << series.allocated_total.*field << '\n';
      }
    }
  }

  if (snapshot.heap) {
    write_heap_figures(*snapshot.heap, out);
  }

  // Counter series that share a name: the one updated most often stands for the name.
  std::map<std::string, const CounterStats*> counters;
  for (const CounterStats& counter : snapshot.counters) {
    const CounterStats*& kept = counters[label_set({{"series", counter.name}})];
    if (kept == nullptr || counter.updates > kept->updates) {
      kept = &counter;
    }
  }
  // promtool objects to a type name ("counter") inside a metric name.
  family(out, "hotscope_series_last_value", "gauge", "Last value of a HOTSCOPE_COUNTER series.");
  for (const auto& [labels, counter] : counters) {
    out << "hotscope_series_last_value" << labels << ' ' << counter->last << '\n';
  }
}

} // namespace hotscope::exporters
