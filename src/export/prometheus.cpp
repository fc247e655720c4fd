// Prometheus text exposition 0.0.4 (docs/agent.md, "Prometheus metrics"), serialized by
// prometheus-cpp's TextSerializer from metric families built here. Every series appears once:
// entries that share their labels (template instantiations shortened to one name, threads that
// share a name) are added up.
#include "export/export.hpp"

#include <fmt/format.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hotscope::exporters {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

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

// The exposition is UTF-8 and prometheus-cpp escapes label values but does not check them.
Labels labels(std::initializer_list<std::pair<const char*, std::string_view>> pairs) {
  Labels out;
  for (const auto& [name, value] : pairs) {
    out.push_back({name, valid_utf8(value)});
  }
  return out;
}

MetricFamily& family(std::vector<MetricFamily>& families, std::string name, std::string help,
                     MetricType type) {
  return families.emplace_back(MetricFamily{std::move(name), std::move(help), type, {}});
}

ClientMetric& sample(MetricFamily& family, Labels labels = {}) {
  ClientMetric& metric = family.metric.emplace_back();
  metric.label = std::move(labels);
  return metric;
}

void add_gauge(std::vector<MetricFamily>& families, std::string name, std::string help,
               double value, Labels labels = {}) {
  sample(family(families, std::move(name), std::move(help), MetricType::Gauge), std::move(labels))
      .gauge.value = value;
}

void add_counter(std::vector<MetricFamily>& families, std::string name, std::string help,
                 double value, Labels labels = {}) {
  sample(family(families, std::move(name), std::move(help), MetricType::Counter), std::move(labels))
      .counter.value = value;
}

// Threads are labelled by name: a thread id would make a new series on every restart.
std::string thread_name(const ThreadInfo& thread) {
  return thread.name.empty() ? "(unnamed)" : thread.name;
}

double seconds(std::uint64_t ns) {
  return static_cast<double>(ns) / 1e9;
}

// A function's series: its name, the source file's base name (an absolute build path would differ
// between builds of the same code) and the line.
struct FunctionSeries {
  std::uint64_t calls = 0;
  std::uint64_t total_ns = 0;
  std::uint64_t self_ns = 0;
  std::array<std::uint64_t, kDurationBucketsNs.size()> at_most_bucket{};
  AllocationCounts allocated_self;
  AllocationCounts allocated_total;
};

std::map<Labels, FunctionSeries> function_series(const Snapshot& snapshot) {
  std::map<Labels, FunctionSeries> functions;
  for (const FunctionStats& function : snapshot.functions) {
    const DurationStats& s = function.stats;
    FunctionSeries& series =
        functions[labels({{"function", function.name},
                          {"file", std::filesystem::path(function.file).filename().string()},
                          {"line", std::to_string(function.line)}})];
    series.calls += s.calls;
    series.total_ns += s.total_ns;
    series.self_ns += s.self_ns;
    series.allocated_self += function.allocated_self;
    series.allocated_total += function.allocated_total;
    for (std::size_t i = 0; i < s.at_most_bucket.size() && i < series.at_most_bucket.size(); ++i) {
      series.at_most_bucket[i] += s.at_most_bucket[i];
    }
  }
  return functions;
}

void add_functions(const Snapshot& snapshot, std::vector<MetricFamily>& families) {
  const std::map<Labels, FunctionSeries> functions = function_series(snapshot);
  // A family's reference is used only until the next family is added (the vector may grow).
  MetricFamily& calls = family(families, "hotscope_function_calls_total",
                               "Completed calls of a scope.", MetricType::Counter);
  for (const auto& [key, series] : functions) {
    sample(calls, key).counter.value = static_cast<double>(series.calls);
  }
  MetricFamily& self =
      family(families, "hotscope_function_self_seconds_total",
             "Time inside a scope but not inside its child scopes.", MetricType::Counter);
  for (const auto& [key, series] : functions) {
    sample(self, key).counter.value = seconds(series.self_ns);
  }
  MetricFamily& duration =
      family(families, "hotscope_function_duration_seconds",
             "Duration of one call of a scope (inclusive), over the measuring window; the same "
             "fixed buckets in every process.",
             MetricType::Histogram);
  for (const auto& [key, series] : functions) {
    ClientMetric::Histogram& histogram = sample(duration, key).histogram;
    histogram.sample_count = series.calls;
    histogram.sample_sum = seconds(series.total_ns);
    for (std::size_t i = 0; i < kDurationBucketsNs.size(); ++i) {
      histogram.bucket.push_back({series.at_most_bucket[i], seconds(kDurationBucketsNs[i])});
    }
    histogram.bucket.push_back({series.calls, std::numeric_limits<double>::infinity()});
  }

  // Allocation figures only for programs that record allocations, like the table's columns.
  if (snapshot.allocations.all.blocks == 0) {
    return;
  }
  const std::pair<const char*, std::uint64_t AllocationCounts::*> units[] = {
      {"bytes", &AllocationCounts::bytes},
      {"blocks", &AllocationCounts::blocks},
  };
  for (const auto& [unit, field] : units) {
    add_counter(families, fmt::format("hotscope_allocated_{}_total", unit),
                fmt::format("Heap {} allocated by the measured threads in this window.", unit),
                static_cast<double>(snapshot.allocations.all.*field));
  }
  for (const auto& [unit, field] : units) {
    MetricFamily& exclusive =
        family(families, fmt::format("hotscope_function_self_allocated_{}_total", unit),
               fmt::format("Heap {} allocated while a scope was the innermost one.", unit),
               MetricType::Counter);
    for (const auto& [key, series] : functions) {
      sample(exclusive, key).counter.value = static_cast<double>(series.allocated_self.*field);
    }
    MetricFamily& inclusive = family(
        families, fmt::format("hotscope_function_allocated_{}_total", unit),
        fmt::format("Heap {} allocated while a scope was open, its child scopes included.", unit),
        MetricType::Counter);
    for (const auto& [key, series] : functions) {
      sample(inclusive, key).counter.value = static_cast<double>(series.allocated_total.*field);
    }
  }
}

// The heap profiler's gauges and counters; in the sampled mode the values are estimates.
void add_heap_figures(const HeapFigures& heap, std::vector<MetricFamily>& families) {
  const struct {
    const char* name;
    MetricType type;
    const char* help;
    std::uint64_t value;
  } series[] = {
      {"hotscope_heap_allocated_bytes_total", MetricType::Counter,
       "Heap bytes allocated in this window, every thread (the heap profiler's count).",
       heap.total_bytes},
      {"hotscope_heap_allocated_blocks_total", MetricType::Counter,
       "Heap blocks allocated in this window, every thread.", heap.total_blocks},
      {"hotscope_heap_live_bytes", MetricType::Gauge, "Heap bytes live now.", heap.live_bytes},
      {"hotscope_heap_live_blocks", MetricType::Gauge, "Heap blocks live now.", heap.live_blocks},
      {"hotscope_heap_peak_bytes", MetricType::Gauge,
       "The most heap bytes live at once in this window.", heap.peak_bytes},
      {"hotscope_heap_peak_blocks", MetricType::Gauge,
       "Heap blocks live at the peak of live bytes.", heap.peak_blocks},
  };
  for (const auto& s : series) {
    ClientMetric& metric =
        sample(family(families, s.name, s.help, s.type), labels({{"mode", heap.mode}}));
    (s.type == MetricType::Counter ? metric.counter.value : metric.gauge.value) =
        static_cast<double>(s.value);
  }
}

// A duration histogram with the functions' fixed buckets.
ClientMetric::Histogram histogram_of(const DurationStats& durations) {
  ClientMetric::Histogram histogram;
  histogram.sample_count = durations.calls;
  histogram.sample_sum = seconds(durations.total_ns);
  for (std::size_t i = 0; i < kDurationBucketsNs.size(); ++i) {
    const std::uint64_t at_most =
        i < durations.at_most_bucket.size() ? durations.at_most_bucket[i] : 0;
    histogram.bucket.push_back({at_most, seconds(kDurationBucketsNs[i])});
  }
  histogram.bucket.push_back({durations.calls, std::numeric_limits<double>::infinity()});
  return histogram;
}

// Queues are one per name already: no series to merge. Time in the queue is a histogram with the
// functions' buckets.
void add_queues(const std::vector<QueueStats>& queues, std::vector<MetricFamily>& families) {
  if (queues.empty()) {
    return;
  }
  const struct {
    const char* name;
    MetricType type;
    const char* help;
    std::uint64_t QueueStats::*value;
  } series[] = {
      {"hotscope_queue_pushed_total", MetricType::Counter,
       "Items pushed into a queue in this window.", &QueueStats::pushed},
      {"hotscope_queue_popped_total", MetricType::Counter,
       "Items popped from a queue in this window.", &QueueStats::popped},
      {"hotscope_queue_depth", MetricType::Gauge, "Items in a queue now (pushes less pops).",
       &QueueStats::depth},
      {"hotscope_queue_pending_given_up_total", MetricType::Counter,
       "Waiting items whose wait can no longer be measured (past the per-queue cap).",
       &QueueStats::pending_given_up},
  };
  for (const auto& s : series) {
    MetricFamily& metrics = family(families, s.name, s.help, s.type);
    for (const QueueStats& queue : queues) {
      ClientMetric& metric = sample(metrics, labels({{"queue", queue.name}}));
      (s.type == MetricType::Counter ? metric.counter.value : metric.gauge.value) =
          static_cast<double>(queue.*s.value);
    }
  }
  MetricFamily& wait =
      family(families, "hotscope_queue_wait_seconds",
             "Time an item spent in a queue, from its push to its pop, over the measuring "
             "window; the functions' buckets.",
             MetricType::Histogram);
  for (const QueueStats& queue : queues) {
    sample(wait, labels({{"queue", queue.name}})).histogram = histogram_of(queue.wait);
  }
}

// Tasks are one per name and kind already: no series to merge.
void add_tasks(const std::vector<TaskStats>& tasks, std::vector<MetricFamily>& families) {
  if (tasks.empty()) {
    return;
  }
  const auto task_labels = [](const TaskStats& task) {
    return labels({{"task", task.name}, {"kind", task.kind}});
  };
  const struct {
    const char* name;
    MetricType type;
    const char* help;
    std::uint64_t TaskStats::*value;
  } series[] = {
      {"hotscope_tasks_created_total", MetricType::Counter,
       "Tasks (coroutines, Asio operations) created in this window.", &TaskStats::created},
      {"hotscope_tasks_completed_total", MetricType::Counter,
       "Tasks that completed in this window (an Asio operation: its handler ran).",
       &TaskStats::completed},
      {"hotscope_tasks_destroyed_unfinished_total", MetricType::Counter,
       "Tasks destroyed while suspended in this window (an Asio handler destroyed unrun).",
       &TaskStats::destroyed_unfinished},
      {"hotscope_tasks_alive", MetricType::Gauge, "Tasks created and not finished, now.",
       &TaskStats::alive},
      {"hotscope_task_resumes_total", MetricType::Counter,
       "Running slices of tasks begun in this window.", &TaskStats::resumes},
  };
  for (const auto& s : series) {
    MetricFamily& metrics = family(families, s.name, s.help, s.type);
    for (const TaskStats& task : tasks) {
      ClientMetric& metric = sample(metrics, task_labels(task));
      (s.type == MetricType::Counter ? metric.counter.value : metric.gauge.value) =
          static_cast<double>(task.*s.value);
    }
  }
  const struct {
    const char* name;
    const char* help;
    DurationStats TaskStats::*durations;
  } histograms[] = {
      {"hotscope_task_running_seconds",
       "One running slice of a task (resumption to suspension), over the measuring window.",
       &TaskStats::running},
      {"hotscope_task_waiting_seconds",
       "A finished task's time not running (an Asio operation's latency), over the window.",
       &TaskStats::waiting},
  };
  for (const auto& h : histograms) {
    MetricFamily& metrics = family(families, h.name, h.help, MetricType::Histogram);
    for (const TaskStats& task : tasks) {
      sample(metrics, task_labels(task)).histogram = histogram_of(task.*h.durations);
    }
  }
}

// The process: version, clock, window, and the records written, kept and dropped.
void add_process_figures(const Snapshot& snapshot, std::vector<MetricFamily>& families) {
  add_gauge(families, "hotscope_info",
            "Always 1: the hotscope version and the clock the timings were measured with.", 1,
            labels({{"version", snapshot.hotscope_version},
                    {"clock_source", snapshot.clock.source},
                    {"frequency_origin", snapshot.clock.frequency_origin}}));
  add_gauge(families, "hotscope_clock_ticks_per_second",
            "Frequency of the clock, used to convert ticks to seconds.",
            snapshot.clock.ticks_per_second);
  add_gauge(families, "hotscope_window_seconds",
            "Length of the measuring window: since the start or the last reset.",
            seconds(snapshot.duration_ns));
  const std::pair<const char*, std::uint64_t RecordCounts::*> records[] = {
      {"written", &RecordCounts::written},
      {"kept", &RecordCounts::kept},
      {"dropped", &RecordCounts::dropped},
  };
  for (const auto& [what, field] : records) {
    add_counter(families, fmt::format("hotscope_records_{}_total", what),
                fmt::format("Records {} by the measured threads in this window.", what),
                static_cast<double>(snapshot.records.*field));
  }
}

// Per thread name: the records its rings dropped, and the live threads' CPU time.
void add_thread_figures(const std::vector<ThreadInfo>& threads,
                        std::vector<MetricFamily>& families) {
  std::map<Labels, std::uint64_t> thread_drops;
  for (const ThreadInfo& thread : threads) {
    thread_drops[labels({{"thread", thread_name(thread)}})] += thread.records.dropped;
  }
  MetricFamily& drops =
      family(families, "hotscope_thread_records_dropped_total",
             "Records the full rings of the threads of this name refused in this window.",
             MetricType::Counter);
  for (const auto& [key, dropped] : thread_drops) {
    sample(drops, key).counter.value = static_cast<double>(dropped);
  }
  // Live threads only: an ended thread's CPU time can no longer be read.
  std::map<Labels, std::uint64_t> thread_cpu;
  for (const ThreadInfo& thread : threads) {
    if (thread.os.state.empty()) {
      continue;
    }
    const std::pair<const char*, std::uint64_t> modes[] = {{"user", thread.os.cpu_user_ns},
                                                           {"system", thread.os.cpu_system_ns}};
    for (const auto& [mode, ns] : modes) {
      thread_cpu[labels({{"thread", thread_name(thread)}, {"mode", mode}})] += ns;
    }
  }
  MetricFamily& cpu = family(families, "hotscope_thread_cpu_seconds_total",
                             "CPU time of the live threads of this name since they started, in "
                             "user or system mode.",
                             MetricType::Counter);
  for (const auto& [key, ns] : thread_cpu) {
    sample(cpu, key).counter.value = seconds(ns);
  }
}

// What the profiler itself holds: the trace window's evictions and its memory.
void add_profiler_figures(const Snapshot& snapshot, std::vector<MetricFamily>& families) {
  add_counter(families, "hotscope_trace_evicted_total",
              "Trace events pushed out of the bounded trace window.",
              static_cast<double>(snapshot.trace_evicted));
  MetricFamily& memory =
      family(families, "hotscope_memory_bytes",
             "Memory the profiler holds: the threads' rings, the trace window, the statistics.",
             MetricType::Gauge);
  const std::pair<const char*, std::uint64_t> parts[] = {
      {"rings", snapshot.memory.rings},
      {"trace_window", snapshot.memory.trace_window},
      {"statistics", snapshot.memory.statistics},
  };
  for (const auto& [part, bytes] : parts) {
    sample(memory, labels({{"part", part}})).gauge.value = static_cast<double>(bytes);
  }
}

// HOTSCOPE_COUNTER series: the last value of each name.
void add_counters(const std::vector<CounterStats>& series, std::vector<MetricFamily>& families) {
  // Counter series that share a name: the one updated most often stands for the name.
  std::map<Labels, const CounterStats*> counters;
  for (const CounterStats& counter : series) {
    const CounterStats*& kept = counters[labels({{"series", counter.name}})];
    if (kept == nullptr || counter.updates > kept->updates) {
      kept = &counter;
    }
  }
  // promtool objects to a type name ("counter") inside a metric name.
  MetricFamily& last = family(families, "hotscope_series_last_value",
                              "Last value of a HOTSCOPE_COUNTER series.", MetricType::Gauge);
  for (const auto& [key, counter] : counters) {
    sample(last, key).gauge.value = static_cast<double>(counter->last);
  }
}

} // namespace

void write_prometheus(const Snapshot& snapshot, std::ostream& out) {
  std::vector<MetricFamily> families;
  add_process_figures(snapshot, families);
  add_thread_figures(snapshot.threads, families);
  add_profiler_figures(snapshot, families);
  add_functions(snapshot, families);
  if (snapshot.heap) {
    add_heap_figures(*snapshot.heap, families);
  }
  add_counters(snapshot.counters, families);
  add_queues(snapshot.queues, families);
  add_tasks(snapshot.tasks, families);
  prometheus::TextSerializer().Serialize(out, families);
}

} // namespace hotscope::exporters
