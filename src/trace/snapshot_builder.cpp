#include "text/text.hpp"
#include "trace/trace.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <unistd.h>
#include <utility>

namespace hotscope::trace {
namespace {

class Converter {
public:
  explicit Converter(const TimeBase& time)
      : start_(time.start_ticks), ns_per_tick_(1e9 / time.clock.ticks_per_second) {}
  std::uint64_t duration(std::uint64_t ticks) const {
    return static_cast<std::uint64_t>(std::llround(static_cast<double>(ticks) * ns_per_tick_));
  }
  // The most ticks that last at most `ns`.
  std::uint64_t ticks(std::uint64_t ns) const {
    return static_cast<std::uint64_t>(std::floor(static_cast<double>(ns) / ns_per_tick_));
  }
  std::uint64_t since_start(std::uint64_t ticks) const {
    return ticks > start_ ? duration(ticks - start_) : 0;
  }

private:
  std::uint64_t start_;
  double ns_per_tick_;
};

void sort_by_total(std::vector<FunctionStats>& functions) {
  // Through (total, index) pairs: a FunctionStats is a few hundred bytes, which a merge sort of
  // thousands would move many times each.
  std::vector<std::pair<std::uint64_t, std::size_t>> order;
  order.reserve(functions.size());
  for (std::size_t i = 0; i < functions.size(); ++i) {
    order.emplace_back(functions[i].stats.total_ns, i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<FunctionStats> sorted;
  sorted.reserve(functions.size());
  for (const auto& [total, i] : order) {
    sorted.push_back(std::move(functions[i]));
  }
  functions = std::move(sorted);
}

} // namespace

// The conversions of one snapshot: ticks to ns with the clock's latest rate, the same for every
// table, and the statistics of functions as the snapshot shows them.
class Aggregator::Figures {
public:
  Figures(const TimeBase& time, Contents contents, const std::vector<LocationText>& names,
          std::uint64_t cpu_period_ns)
      : convert_(time), contents_(contents), names_(names), cpu_period_ns_(cpu_period_ns) {
    for (std::size_t i = 0; i < bucket_ticks_.size(); ++i) {
      bucket_ticks_[i] = convert_.ticks(kDurationBucketsNs[i]);
    }
  }
  const Converter& convert() const { return convert_; }
  std::uint64_t cpu_period_ns() const { return cpu_period_ns_; }
  bool per_thread_functions() const { return contents_ != Contents::ProcessTotals; }

  // Shared by functions, queue waits and tasks, so all have the same figures.
  DurationStats durations(const Durations& durations, std::uint64_t self = 0) const {
    const Histogram& histogram = durations.histogram;
    DurationStats d;
    d.calls = durations.calls;
    d.total_ns = convert_.duration(durations.total);
    d.self_ns = convert_.duration(self);
    d.min_ns = convert_.duration(durations.min);
    d.max_ns = convert_.duration(durations.max);
    d.mean_ns = static_cast<double>(d.total_ns) / static_cast<double>(durations.calls);
    static constexpr std::array<double, 5> kQuantiles{0.50, 0.90, 0.95, 0.99, 0.999};
    std::array<std::uint64_t, kQuantiles.size()> ticks{};
    histogram.quantiles(kQuantiles, ticks);
    // Bucket midpoints may fall outside what was seen: keep quantiles within [min, max].
    const auto quantile = [&](std::size_t i) {
      return std::clamp(convert_.duration(ticks[i]), d.min_ns, d.max_ns);
    };
    d.p50_ns = quantile(0);
    d.p90_ns = quantile(1);
    d.p95_ns = quantile(2);
    d.p99_ns = quantile(3);
    d.p999_ns = quantile(4);
    if (contents_ != Contents::ProcessTotals) { // only the Prometheus histograms read them
      d.at_most_bucket = histogram.counts_at_most(bucket_ticks_);
    }
    return d;
  }

  // The statistics of ended calls plus what the calls still open have allocated so far.
  std::vector<FunctionStats> functions(const std::unordered_map<std::uint32_t, Stats>& table,
                                       const std::vector<OpenAllocation>& open) const {
    std::vector<FunctionStats> functions;
    std::unordered_map<std::uint32_t, std::size_t> position;
    for (const auto& [location, stats] : table) {
      position.emplace(location, functions.size());
      functions.push_back(function(location, stats));
    }
    for (const OpenAllocation& allocation : open) {
      const auto [it, added] = position.try_emplace(allocation.location, functions.size());
      if (added) {
        functions.push_back(function(allocation.location, Stats{}));
      }
      functions[it->second].allocated_self += allocation.self;
      functions[it->second].allocated_total += allocation.total;
    }
    sort_by_total(functions);
    return functions;
  }

private:
  FunctionStats function(std::uint32_t location, const Stats& stats) const {
    FunctionStats out;
    out.name = names_[location].name;
    out.file = names_[location].file;
    out.line = names_[location].line;
    out.module = names_[location].module;
    out.build_id = names_[location].build_id;
    out.allocated_self = stats.allocated_self;
    out.allocated_total = stats.allocated_total;
    out.cpu_self_ns = stats.cpu_self * cpu_period_ns_;
    out.cpu_total_ns = stats.cpu_total * cpu_period_ns_;
    if (stats.calls == 0) {
      return out; // only allocations so far, from calls still open
    }
    out.stats = durations(stats, stats.self);
    return out;
  }

  Converter convert_;
  Contents contents_;
  const std::vector<LocationText>& names_;
  std::uint64_t cpu_period_ns_;
  std::array<std::uint64_t, kDurationBucketsNs.size()> bucket_ticks_{};
};

CapturedSnapshot Aggregator::capture(const TimeBase& time, Contents contents) const {
  const Figures figures(time, contents, names_, cpu_period_ns_);
  Snapshot snapshot;
  snapshot.pid = getpid();
  snapshot.clock = time.clock;
  snapshot.duration_ns = figures.convert().since_start(time.now_ticks);
  snapshot.captured_ticks = time.now_ticks;
  snapshot.threads_folded = threads_folded_;
  if (contents != Contents::ProcessTotals) {
    for (const LocationText& name : names_) {
      snapshot.names.push_back(name.name);
    }
  }
  capture_functions_and_threads(figures, time.now_ticks, snapshot);
  capture_series(figures, time.now_ticks, snapshot);
  capture_cpu(figures, snapshot);
  snapshot.trace_evicted = window_.evicted();
  snapshot.trace_window_events = window_.events();
  snapshot.memory.trace_window = window_.bytes();
  snapshot.memory.statistics = statistics_bytes();
  snapshot.memory.slow_calls = slow_.bytes();
  snapshot.slow_call_figures = slow_.figures();
  for (const auto& [index, state] : threads_) {
    snapshot.trace_open_scopes += state.stack.size();
  }
  const bool with_trace = contents == Contents::StatisticsAndTrace;
  CapturedSnapshot captured{std::move(snapshot), time, with_trace, {}, {}, {}, false};
  capture_slow_calls(contents, captured);
  if (with_trace) {
    captured.window = window_.view();
    for (const auto& [index, state] : threads_) {
      std::vector<std::uint32_t> locations;
      locations.reserve(state.stack.size());
      for (const Frame& frame : state.stack) {
        locations.push_back(frame.location);
      }
      captured.open_scopes.emplace_back(index, std::move(locations));
    }
  }
  return captured;
}

// The kept calls by function in Snapshot::functions' order (total time, longest first), slowest
// first within one. Their events are converted by complete(), without the collector's lock.
void Aggregator::capture_slow_calls(Contents contents, CapturedSnapshot& captured) const {
  if (contents == Contents::ProcessTotals) {
    return;
  }
  captured.slow_call_events = contents != Contents::StatisticsOnly;
  captured.slow_calls = slow_.kept();
  const auto total = [&](std::uint32_t location) {
    const auto found = stats_.find(location);
    return found == stats_.end() ? 0 : found->second.total;
  };
  std::stable_sort(captured.slow_calls.begin(), captured.slow_calls.end(),
                   [&](const KeptCall& a, const KeptCall& b) {
                     if (a.location != b.location) {
                       const std::uint64_t a_total = total(a.location);
                       const std::uint64_t b_total = total(b.location);
                       return a_total != b_total ? a_total > b_total : a.location < b.location;
                     }
                     return a.duration_ticks > b.duration_ticks;
                   });
}

void Aggregator::capture_functions_and_threads(const Figures& figures, std::uint64_t now_ticks,
                                               Snapshot& snapshot) const {
  std::unordered_map<std::uint32_t, std::vector<OpenAllocation>> open_by_thread;
  std::vector<OpenAllocation> open_in_all;
  snapshot.allocations = folded_allocations_;
  for (const auto& [index, thread] : threads_) {
    auto open = open_allocations(thread.stack);
    open_in_all.insert(open_in_all.end(), open.begin(), open.end());
    open_by_thread.emplace(index, std::move(open));
    snapshot.allocations += thread.allocations;
  }
  snapshot.functions = figures.functions(stats_, open_in_all);
  for (const auto& [location, entry] : filtered_) {
    const LocationText& where = names_[location];
    const auto found = stats_.find(location); // gone after a reset
    const Stats* recorded = found != stats_.end() ? &found->second : nullptr;
    snapshot.filtered_functions.push_back(
        {where.name, where.file, where.line, where.module, where.build_id,
         recorded != nullptr ? recorded->calls : 0, filter_.skipped ? filter_.skipped(entry) : 0,
         recorded != nullptr ? figures.convert().duration(recorded->max) : 0});
  }
  snapshot.records = folded_records_;
  for (const auto& [index, thread] : threads_) {
    if (thread.stats_folded) {
      ThreadInfo named;
      named.index = index;
      named.os_tid = thread.os_tid;
      named.name = thread.name;
      named.exited = true;
      snapshot.trace_threads.push_back(std::move(named));
      continue;
    }
    snapshot.threads.push_back(
        capture_thread(figures, now_ticks, index, thread, open_by_thread[index]));
    snapshot.records.kept += thread.records.kept;
    snapshot.records.dropped += thread.records.dropped;
  }
  snapshot.records.written = snapshot.records.kept + snapshot.records.dropped;
  if (!folded_thread_stats_.empty() || folded_allocations_.all.blocks != 0) {
    ThreadInfo folded;
    folded.index = next_thread_;
    folded.name = text::cat("(", threads_folded_, " ended threads)");
    folded.exited = true;
    folded.records = folded_records_;
    folded.records.written = folded_records_.kept + folded_records_.dropped;
    folded.allocations = folded_allocations_;
    folded.os = folded_os_;
    folded.cpu_samples = folded_cpu_samples_;
    if (figures.per_thread_functions()) {
      folded.functions = figures.functions(folded_thread_stats_, {});
    }
    snapshot.threads.push_back(std::move(folded));
  }
}

ThreadInfo Aggregator::capture_thread(const Figures& figures, std::uint64_t now_ticks,
                                      std::uint32_t index, const ThreadState& thread,
                                      const std::vector<OpenAllocation>& open) const {
  ThreadInfo info;
  info.index = index;
  info.os_tid = thread.os_tid;
  info.name = thread.name;
  info.exited = thread.exited;
  info.records = thread.records;
  info.records.written = thread.records.kept + thread.records.dropped;
  info.allocations = thread.allocations;
  info.batches = thread.batches;
  info.cpu_samples = thread.cpu_samples;
  info.os = thread.at_exit; // a live thread's figures are read from /proc with the snapshot
  if (figures.per_thread_functions()) {
    info.functions = figures.functions(thread.stats, open);
  }
  for (const Frame& frame : thread.stack) {
    const LocationText& where = names_[frame.location];
    const std::uint64_t open_ticks = now_ticks > frame.start ? now_ticks - frame.start : 0;
    info.open_scopes.push_back({where.name, where.file, where.line,
                                figures.convert().since_start(frame.start),
                                figures.convert().duration(open_ticks)});
  }
  return info;
}

void Aggregator::capture_cpu(const Figures& figures, Snapshot& snapshot) const {
  CpuProfile& cpu = snapshot.cpu;
  cpu.hz = cpu_now_.hz;
  cpu.period_ns = figures.cpu_period_ns();
  cpu.lost = cpu_now_.lost - std::min(cpu_now_.lost, cpu_at_reset_.lost);
  cpu.incomplete = cpu_now_.incomplete - std::min(cpu_now_.incomplete, cpu_at_reset_.incomplete);
  cpu.problem = cpu_now_.problem;
  cpu_stacks_.capture(cpu, [&](std::uint32_t location) {
    const LocationText& where = names_[location];
    return CpuScope{where.name, where.file, where.line};
  });
}

void Aggregator::capture_series(const Figures& figures, std::uint64_t now_ticks,
                                Snapshot& snapshot) const {
  for (const auto& [location, counter] : counters_) {
    snapshot.counters.push_back(
        {names_[location].name, counter.updates, counter.last, counter.min, counter.max});
  }
  std::sort(snapshot.counters.begin(), snapshot.counters.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  const SnapshotConversion conversion{
      now_ticks, [&](std::uint64_t ticks) { return figures.convert().duration(ticks); },
      [&](const Durations& durations) { return figures.durations(durations); },
      [&](std::uint32_t thread) { return thread_label(thread); },
      [&](std::uint64_t ticks) { return figures.convert().since_start(ticks); }};
  snapshot.queues = queues_.snapshot(conversion);
  snapshot.tasks = tasks_.snapshot(conversion);
  LockTable::Captured locks = locks_.snapshot(
      conversion, [&](std::uint32_t name) { return names_[name].name; },
      [&](std::uint32_t thread) {
        const auto found = threads_.find(thread);
        return found == threads_.end() ? std::int64_t{0} : found->second.os_tid;
      });
  snapshot.locks = std::move(locks.locks);
  snapshot.deadlocks = std::move(locks.deadlocks);
  snapshot.inversions = std::move(locks.inversions);
  snapshot.lock_figures = locks.figures;
}

// The trace window, with each thread's scopes balanced (see Snapshot::trace). Threads are
// drained one after another, so the window is in time order per thread only: its start is its
// earliest event, not its first.
namespace {

// What the conversion keeps per thread: the slices open at its last event, the ends whose begin
// came before the window (innermost first), and its last time.
struct ThreadTrace {
  std::vector<std::uint32_t> open;
  std::vector<std::uint32_t> orphan_ends;
  std::uint64_t last_ns = 0;
};
using ThreadTraces = std::unordered_map<std::uint32_t, ThreadTrace>;

template <typename Visit> void for_each_event(const CapturedSnapshot& captured, Visit visit) {
  for (const WindowPiece& piece : captured.window) {
    for (std::size_t i = 0; i < piece.events; ++i) {
      visit(piece, piece.chunk->events[i]);
    }
  }
}

// Events in nanoseconds, inline texts (`texts`, indexed by the event's value) interned as names,
// each end named after the begin it closes, in `thread`'s order.
class EventConverter {
public:
  EventConverter(const Converter& convert, Snapshot& snapshot)
      : convert_(convert), snapshot_(snapshot) {}
  TraceEvent operator()(const WindowEvent& event, const std::string* texts, ThreadTrace& thread);

private:
  const Converter& convert_;
  Snapshot& snapshot_;
  std::unordered_map<std::string, std::uint32_t> inline_names_;
};

TraceEvent EventConverter::operator()(const WindowEvent& event, const std::string* texts,
                                      ThreadTrace& thread) {
  TraceEvent out{convert_.since_start(event.ticks), event.thread, event.kind, event.name,
                 event.value};
  if (event.kind == EventKind::LockHandoff) {
    // Put on the releasing thread when its waiter was read, perhaps after its later events: an
    // instant, it changes no slice, so its own time is kept.
  } else {
    out.ns = std::max(out.ns, thread.last_ns); // per-thread order is time order
    thread.last_ns = out.ns;
  }
  if (event.kind == EventKind::LockWait) {
    out.value =
        static_cast<std::int64_t>(convert_.duration(static_cast<std::uint64_t>(event.value)));
  }
  if (event.name == kInlineText) {
    const std::string& text = texts[static_cast<std::size_t>(event.value)];
    const auto [it, inserted] =
        inline_names_.try_emplace(text, static_cast<std::uint32_t>(snapshot_.names.size()));
    if (inserted) {
      snapshot_.names.push_back(text);
    }
    out.name = it->second;
    out.value = 0;
  }
  if (opens_slice(event.kind)) {
    thread.open.push_back(out.name);
  } else if (closes_slice(event.kind)) {
    if (thread.open.empty()) {
      thread.orphan_ends.push_back(out.name);
    } else {
      out.name = thread.open.back();
      thread.open.pop_back();
    }
  }
  return out;
}

// The window's events; returns what each thread had open.
ThreadTraces convert_window(const CapturedSnapshot& captured, EventConverter& converted,
                            Snapshot& snapshot) {
  ThreadTraces per_thread;
  snapshot.trace.reserve(snapshot.trace_window_events);
  for_each_event(captured, [&](const WindowPiece& piece, const WindowEvent& event) {
    snapshot.trace.push_back(converted(event, piece.chunk->texts.get(), per_thread[event.thread]));
  });
  return per_thread;
}

// The kept calls, each with its own events when they were asked for (docs/slow.md).
void convert_slow_calls(const CapturedSnapshot& captured, const Converter& convert,
                        EventConverter& converted, Snapshot& snapshot) {
  snapshot.slow_calls.reserve(captured.slow_calls.size());
  for (const KeptCall& kept : captured.slow_calls) {
    SlowCall call;
    call.id = kept.id;
    call.function = kept.location;
    call.thread = kept.thread;
    call.thread_name = kept.thread_name;
    call.os_tid = kept.os_tid;
    call.start_ns = convert.since_start(kept.start_ticks);
    call.duration_ns = convert.duration(kept.duration_ticks);
    call.allocations = kept.allocated.blocks;
    call.allocated_bytes = kept.allocated.bytes;
    call.cpu_samples = kept.cpu_periods;
    call.cut_events = kept.cut_events;
    call.cut_at_ns = kept.cut_events != 0 ? convert.since_start(kept.cut_at_ticks) : 0;
    if (captured.slow_call_events) {
      ThreadTrace thread;
      call.events.reserve(kept.count);
      for (std::uint32_t i = kept.first; i < kept.first + kept.count; ++i) {
        call.events.push_back(
            converted(kept.storage->events[i], kept.storage->texts.data(), thread));
      }
      // The End closes the call, whatever a cut left open inside it.
      call.events.back().name = kept.location;
    }
    snapshot.slow_calls.push_back(std::move(call));
  }
}

// Scopes open now but begun before the window (or before a reset) get a begin at the window's
// start; every scope open now gets an end at the snapshot.
void balance_open_scopes(const CapturedSnapshot& captured, ThreadTraces& per_thread,
                         Snapshot& snapshot) {
  for (const auto& [index, stack] : captured.open_scopes) {
    const ThreadTrace& thread = per_thread[index];
    const std::size_t open_before_window =
        stack.size() > thread.open.size() ? stack.size() - thread.open.size() : 0;
    for (std::size_t i = 0; i < open_before_window; ++i) {
      snapshot.trace.push_back({snapshot.trace_start_ns, index, EventKind::Begin, stack[i], 0});
    }
    for (auto it = thread.orphan_ends.rbegin(); it != thread.orphan_ends.rend(); ++it) {
      snapshot.trace.push_back({snapshot.trace_start_ns, index, EventKind::Begin, *it, 0});
    }
    const std::uint64_t end_ns = std::max(snapshot.duration_ns, thread.last_ns);
    for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
      snapshot.trace.push_back({end_ns, index, EventKind::End, *it, 0});
    }
  }
}

// Time order; synthetic begins sort before everything at their time, synthetic ends after. The
// order is sorted as plain keys (time; group and index packed in one word): a comparison of
// built-in integers stays cheap in every build, a snapshot holds a million events.
void sort_trace(Snapshot& snapshot) {
  const std::size_t window_events = snapshot.trace_window_events;
  constexpr unsigned kGroupShift = 62;
  constexpr std::uint64_t kIndexMask = (std::uint64_t{1} << kGroupShift) - 1;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> order(snapshot.trace.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    const TraceEvent& e = snapshot.trace[i];
    const std::uint64_t group = i < window_events ? 1 : (e.kind == EventKind::Begin ? 0 : 2);
    order[i] = {e.ns, group << kGroupShift | i};
  }
  std::sort(order.begin(), order.end());
  std::vector<TraceEvent> sorted;
  sorted.reserve(order.size());
  for (const auto& [ns, group_and_index] : order) {
    sorted.push_back(snapshot.trace[group_and_index & kIndexMask]);
  }
  snapshot.trace = std::move(sorted);
}

} // namespace

Snapshot complete(CapturedSnapshot captured) {
  Snapshot& snapshot = captured.snapshot;
  const Converter convert(captured.time);
  EventConverter converted(convert, snapshot);
  convert_slow_calls(captured, convert, converted, snapshot);
  if (!captured.with_trace) {
    return std::move(snapshot);
  }
  if (snapshot.trace_evicted > 0 && snapshot.trace_window_events > 0) {
    std::uint64_t earliest = UINT64_MAX;
    for_each_event(captured, [&](const WindowPiece&, const WindowEvent& event) {
      earliest = std::min(earliest, event.ticks);
    });
    snapshot.trace_start_ns = convert.since_start(earliest);
  }
  ThreadTraces per_thread = convert_window(captured, converted, snapshot);
  balance_open_scopes(captured, per_thread, snapshot);
  sort_trace(snapshot);
  return std::move(snapshot);
}

} // namespace hotscope::trace
