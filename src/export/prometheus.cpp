// Prometheus text exposition 0.0.4 and OpenMetrics 1.0 (docs/agent.md, "Prometheus metrics"):
// metric families built here, written by prometheus_text.hpp. Every series appears once: entries
// that share their labels (template instantiations shortened to one name, threads that share a
// name) are added up.
#include "export/export.hpp"

#include "export/prometheus_text.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hotscope::exporters {
namespace {

using prometheus_text::Exemplar;
using prometheus_text::Histogram;
using prometheus_text::Labels;
using prometheus_text::Metric;
using prometheus_text::MetricFamily;
using prometheus_text::MetricType;

// The exposition is UTF-8: label values are made valid before series are told apart by them.
Labels labels(std::initializer_list<std::pair<const char*, std::string_view>> pairs) {
  Labels out;
  for (const auto& [name, value] : pairs) {
    out.push_back({name, prometheus_text::valid_utf8(value)});
  }
  return out;
}

MetricFamily& family(std::vector<MetricFamily>& families, std::string name, std::string help,
                     MetricType type) {
  return families.emplace_back(MetricFamily{std::move(name), std::move(help), type, {}});
}

Metric& sample(MetricFamily& family, Labels labels = {}) {
  Metric& metric = family.metrics.emplace_back();
  metric.labels = std::move(labels);
  return metric;
}

void add_gauge(std::vector<MetricFamily>& families, std::string name, std::string help,
               double value, Labels labels = {}) {
  sample(family(families, std::move(name), std::move(help), MetricType::Gauge), std::move(labels))
      .value = value;
}

void add_counter(std::vector<MetricFamily>& families, std::string name, std::string help,
                 double value, Labels labels = {}) {
  sample(family(families, std::move(name), std::move(help), MetricType::Counter), std::move(labels))
      .value = value;
}

// Threads are labelled by name: a thread id would make a new series on every restart.
std::string thread_name(const ThreadInfo& thread) {
  return thread.name.empty() ? "(unnamed)" : thread.name;
}

double seconds(std::uint64_t ns) {
  return static_cast<double>(ns) / 1e9;
}

// A duration histogram with the functions' fixed buckets: how many of `calls` took at most each
// bucket's bound.
Histogram histogram_of(std::uint64_t calls, std::uint64_t total_ns,
                       std::span<const std::uint64_t> at_most_bucket) {
  Histogram histogram;
  histogram.count = calls;
  histogram.sum = seconds(total_ns);
  for (std::size_t i = 0; i < kDurationBucketsNs.size(); ++i) {
    const std::uint64_t at_most = i < at_most_bucket.size() ? at_most_bucket[i] : 0;
    histogram.buckets.push_back({seconds(kDurationBucketsNs[i]), at_most});
  }
  return histogram;
}

Histogram histogram_of(const DurationStats& durations) {
  return histogram_of(durations.calls, durations.total_ns, durations.at_most_bucket);
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
  // Per bucket, `+Inf` last: the slowest kept call inside it (docs/slow.md, "Exemplars").
  std::array<const SlowCall*, kDurationBucketsNs.size() + 1> slowest{};
};

// The bucket a duration falls in: the first whose bound is not below it, or `+Inf`'s.
std::size_t bucket_of(std::uint64_t duration_ns) {
  return static_cast<std::size_t>(
      std::lower_bound(kDurationBucketsNs.begin(), kDurationBucketsNs.end(), duration_ns) -
      kDurationBucketsNs.begin());
}

// Kept calls know their function by name only: a call goes to every series of that name.
void add_kept_calls(
    const Snapshot& snapshot,
    const std::unordered_map<std::string_view, std::vector<FunctionSeries*>>& named) {
  for (const SlowCall& call : snapshot.slow_calls) {
    const auto series = call.function < snapshot.names.size()
                            ? named.find(snapshot.names[call.function])
                            : named.end();
    if (series == named.end()) {
      continue;
    }
    for (FunctionSeries* one : series->second) {
      const SlowCall*& slowest = one->slowest[bucket_of(call.duration_ns)];
      if (slowest == nullptr || call.duration_ns > slowest->duration_ns) {
        slowest = &call;
      }
    }
  }
}

std::map<Labels, FunctionSeries> function_series(const Snapshot& snapshot) {
  std::map<Labels, FunctionSeries> functions;
  std::unordered_map<std::string_view, std::vector<FunctionSeries*>> named;
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
    named[function.name].push_back(&series);
  }
  add_kept_calls(snapshot, named);
  return functions;
}

// A bucket's exemplar: its slowest kept call, if the bucket counts any call (a call kept under a
// name several series share may not be of this one).
std::optional<Exemplar> exemplar(const Snapshot& snapshot, const FunctionSeries& series,
                                 std::size_t bucket) {
  const SlowCall* call = series.slowest[bucket];
  const std::uint64_t below = bucket == 0 ? 0 : series.at_most_bucket[bucket - 1];
  const std::uint64_t at_most =
      bucket < series.at_most_bucket.size() ? series.at_most_bucket[bucket] : series.calls;
  if (call == nullptr || at_most <= below) {
    return std::nullopt;
  }
  const std::uint64_t end_unix_ns = snapshot.start_unix_ns + call->start_ns + call->duration_ns;
  return Exemplar{labels({{"call_id", std::to_string(call->id)}}), seconds(call->duration_ns),
                  static_cast<double>(end_unix_ns) / 1e9};
}

void add_functions(const Snapshot& snapshot, std::vector<MetricFamily>& families) {
  const std::map<Labels, FunctionSeries> functions = function_series(snapshot);
  // A family's reference is used only until the next family is added (the vector may grow).
  MetricFamily& calls = family(families, "hotscope_function_calls_total",
                               "Completed calls of a scope.", MetricType::Counter);
  for (const auto& [key, series] : functions) {
    sample(calls, key).value = static_cast<double>(series.calls);
  }
  MetricFamily& self =
      family(families, "hotscope_function_self_seconds_total",
             "Time inside a scope but not inside its child scopes.", MetricType::Counter);
  for (const auto& [key, series] : functions) {
    sample(self, key).value = seconds(series.self_ns);
  }
  MetricFamily& duration =
      family(families, "hotscope_function_duration_seconds",
             "Duration of one call of a scope (inclusive), over the measuring window; the same "
             "fixed buckets in every process.",
             MetricType::Histogram);
  for (const auto& [key, series] : functions) {
    Histogram& histogram = sample(duration, key).histogram;
    histogram = histogram_of(series.calls, series.total_ns, series.at_most_bucket);
    for (std::size_t i = 0; i < histogram.buckets.size(); ++i) {
      histogram.buckets[i].exemplar = exemplar(snapshot, series, i);
    }
    histogram.infinite_exemplar = exemplar(snapshot, series, histogram.buckets.size());
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
    add_counter(families, std::string("hotscope_allocated_") + unit + "_total",
                std::string("Heap ") + unit + " allocated by the measured threads in this window.",
                static_cast<double>(snapshot.allocations.all.*field));
  }
  for (const auto& [unit, field] : units) {
    MetricFamily& exclusive =
        family(families, std::string("hotscope_function_self_allocated_") + unit + "_total",
               std::string("Heap ") + unit + " allocated while a scope was the innermost one.",
               MetricType::Counter);
    for (const auto& [key, series] : functions) {
      sample(exclusive, key).value = static_cast<double>(series.allocated_self.*field);
    }
    MetricFamily& inclusive =
        family(families, std::string("hotscope_function_allocated_") + unit + "_total",
               std::string("Heap ") + unit +
                   " allocated while a scope was open, its child scopes included.",
               MetricType::Counter);
    for (const auto& [key, series] : functions) {
      sample(inclusive, key).value = static_cast<double>(series.allocated_total.*field);
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
    Metric& metric =
        sample(family(families, s.name, s.help, s.type), labels({{"mode", heap.mode}}));
    metric.value = static_cast<double>(s.value);
  }
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
      Metric& metric = sample(metrics, labels({{"queue", queue.name}}));
      metric.value = static_cast<double>(queue.*s.value);
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
      Metric& metric = sample(metrics, task_labels(task));
      metric.value = static_cast<double>(task.*s.value);
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

// A lock's series: the locks of one name added up (interposed locks are told apart by address,
// which would make a new series on every run).
struct LockSeries {
  std::uint64_t acquisitions = 0;
  std::uint64_t contended = 0;
  std::uint64_t wait_count = 0;
  std::uint64_t wait_ns = 0;
  std::array<std::uint64_t, kDurationBucketsNs.size()> wait_buckets{};
  std::uint64_t hold_count = 0;
  std::uint64_t hold_ns = 0;
  std::array<std::uint64_t, kDurationBucketsNs.size()> hold_buckets{};
};

void add_buckets(std::array<std::uint64_t, kDurationBucketsNs.size()>& sum,
                 const DurationStats& durations) {
  for (std::size_t i = 0; i < durations.at_most_bucket.size() && i < sum.size(); ++i) {
    sum[i] += durations.at_most_bucket[i];
  }
}

// Per lock name: acquisitions, contended ones, wait and hold times; then the deadlocks standing,
// found and the inversions (docs/locks.md, "Outputs").
void add_locks(const Snapshot& snapshot, std::vector<MetricFamily>& families) {
  if (snapshot.locks.empty()) { // a program without locks followed, like one without queues
    return;
  }
  std::map<Labels, LockSeries> locks;
  for (const LockStats& lock : snapshot.locks) {
    LockSeries& series = locks[labels({{"lock", lock.name}})];
    series.acquisitions += lock.acquisitions;
    series.contended += lock.contended;
    series.wait_count += lock.wait.calls;
    series.wait_ns += lock.wait.total_ns;
    add_buckets(series.wait_buckets, lock.wait);
    series.hold_count += lock.hold.calls;
    series.hold_ns += lock.hold.total_ns;
    add_buckets(series.hold_buckets, lock.hold);
  }
  const std::pair<const char*, std::uint64_t LockSeries::*> counts[] = {
      {"hotscope_lock_acquisitions_total", &LockSeries::acquisitions},
      {"hotscope_lock_contended_total", &LockSeries::contended},
  };
  for (const auto& [name, field] : counts) {
    MetricFamily& metrics = family(families, name,
                                   field == &LockSeries::contended
                                       ? "Acquisitions of a lock that waited first, in this window."
                                       : "Acquisitions of a lock in this window (shared ones too).",
                                   MetricType::Counter);
    for (const auto& [key, series] : locks) {
      sample(metrics, key).value = static_cast<double>(series.*field);
    }
  }
  MetricFamily& wait = family(families, "hotscope_lock_wait_seconds",
                              "Wait of a contended acquisition of a lock, over the measuring "
                              "window; the functions' buckets.",
                              MetricType::Histogram);
  for (const auto& [key, series] : locks) {
    sample(wait, key).histogram =
        histogram_of(series.wait_count, series.wait_ns, series.wait_buckets);
  }
  MetricFamily& hold =
      family(families, "hotscope_lock_hold_seconds",
             "A lock held, acquisition to release, over the measuring window; the functions' "
             "buckets (interposed locks: with HOTSCOPE_LOCKS=hold only).",
             MetricType::Histogram);
  for (const auto& [key, series] : locks) {
    sample(hold, key).histogram =
        histogram_of(series.hold_count, series.hold_ns, series.hold_buckets);
  }
  add_gauge(families, "hotscope_deadlocks",
            "Deadlocks standing now: cycles of threads each waiting for a lock the next holds.",
            static_cast<double>(snapshot.deadlocks.size()));
  add_counter(families, "hotscope_deadlocks_found_total", "Deadlocks found since the start.",
              static_cast<double>(snapshot.lock_figures.deadlocks_found));
  add_counter(families, "hotscope_lock_inversions_total",
              "Lock-order inversions found since the start: two locks taken in both orders.",
              static_cast<double>(snapshot.inversions.size()));
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
    add_counter(families, std::string("hotscope_records_") + what + "_total",
                std::string("Records ") + what + " by the measured threads in this window.",
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
    sample(drops, key).value = static_cast<double>(dropped);
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
    sample(cpu, key).value = seconds(ns);
  }
}

// What the profiler itself holds: the trace window's evictions and its memory.
void add_profiler_figures(const Snapshot& snapshot, std::vector<MetricFamily>& families) {
  add_counter(families, "hotscope_trace_evicted_total",
              "Trace events pushed out of the bounded trace window.",
              static_cast<double>(snapshot.trace_evicted));
  MetricFamily& memory =
      family(families, "hotscope_memory_bytes",
             "Memory the profiler holds: the threads' rings, the trace window, the statistics, "
             "the kept slowest calls.",
             MetricType::Gauge);
  const std::pair<const char*, std::uint64_t> parts[] = {
      {"rings", snapshot.memory.rings},
      {"trace_window", snapshot.memory.trace_window},
      {"statistics", snapshot.memory.statistics},
      {"slow_calls", snapshot.memory.slow_calls},
  };
  for (const auto& [part, bytes] : parts) {
    sample(memory, labels({{"part", part}})).value = static_cast<double>(bytes);
  }
}

// The CPU sampler's periods in this window, and those its buffer had no room for.
void add_cpu_figures(const CpuProfile& cpu, std::vector<MetricFamily>& families) {
  add_counter(families, "hotscope_cpu_samples_total",
              "CPU sampling periods taken in this window (each stands for period_ns of CPU time "
              "of one thread).",
              static_cast<double>(cpu.samples));
  add_counter(families, "hotscope_cpu_samples_lost_total",
              "CPU samples lost in this window: the sampler's buffer was full.",
              static_cast<double>(cpu.lost));
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
    sample(last, key).value = static_cast<double>(counter->last);
  }
}

void write_exposition(const Snapshot& snapshot, prometheus_text::Dialect dialect,
                      std::ostream& out) {
  std::vector<MetricFamily> families;
  add_process_figures(snapshot, families);
  add_thread_figures(snapshot.threads, families);
  add_profiler_figures(snapshot, families);
  add_cpu_figures(snapshot.cpu, families);
  add_functions(snapshot, families);
  if (snapshot.heap) {
    add_heap_figures(*snapshot.heap, families);
  }
  add_counters(snapshot.counters, families);
  add_queues(snapshot.queues, families);
  add_tasks(snapshot.tasks, families);
  add_locks(snapshot, families);
  const std::string text = prometheus_text::exposition(families, dialect);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

} // namespace

void write_prometheus(const Snapshot& snapshot, std::ostream& out) {
  write_exposition(snapshot, prometheus_text::Dialect::Prometheus, out);
}

void write_openmetrics(const Snapshot& snapshot, std::ostream& out) {
  write_exposition(snapshot, prometheus_text::Dialect::OpenMetrics, out);
}

} // namespace hotscope::exporters
