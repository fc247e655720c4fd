// The statistics as JSON; docs/formats-output.md documents the schema, which the agent API
// serves too, so keys change only together with that document.
#include "export/common.hpp"
#include "export/export.hpp"
#include "export/lock_frames.hpp"
#include "text/text.hpp"

#include <ostream>

namespace hotscope::exporters {
namespace {

using text::JsonWriter;

enum class StatsLayout { Full, Columns };

void write_allocations(JsonWriter& json, const Allocations& allocations) {
  json.begin_object()
      .member("bytes", allocations.all.bytes)
      .member("blocks", allocations.all.blocks)
      .member("outside_scopes_bytes", allocations.outside_scopes.bytes)
      .member("outside_scopes_blocks", allocations.outside_scopes.blocks)
      .end_object();
}

// One function's figures, in stats.json's key order: both layouts are built from this table.
// An `instrumented` key is in the full layout's entry of an instrumented function only (a macro
// scope's entry has none); the columns hold it for every function ("" for a macro scope).
struct FunctionField {
  const char* key;
  void (*write)(JsonWriter&, const FunctionStats&);
  bool instrumented = false;
};
constexpr FunctionField kFunctionFields[] = {
    {"name", [](JsonWriter& json, const FunctionStats& f) { json.value(f.name); }},
    {"file", [](JsonWriter& json, const FunctionStats& f) { json.value(f.file); }},
    {"line", [](JsonWriter& json, const FunctionStats& f) { json.value(f.line); }},
    {"module", [](JsonWriter& json, const FunctionStats& f) { json.value(f.module); }, true},
    {"build_id", [](JsonWriter& json, const FunctionStats& f) { json.value(f.build_id); }, true},
    {"calls", [](JsonWriter& json, const FunctionStats& f) { json.value(f.stats.calls); }},
    {"total_ns", [](JsonWriter& json, const FunctionStats& f) { json.value(f.stats.total_ns); }},
    {"self_ns", [](JsonWriter& json, const FunctionStats& f) { json.value(f.stats.self_ns); }},
    {"min_ns", [](JsonWriter& json, const FunctionStats& f) { json.value(f.stats.min_ns); }},
    {"max_ns", [](JsonWriter& json, const FunctionStats& f) { json.value(f.stats.max_ns); }},
    {"mean_ns", [](JsonWriter& json, const FunctionStats& f) { json.value(f.stats.mean_ns); }},
    {"p50_ns", [](JsonWriter& json, const FunctionStats& f) { json.value(f.stats.p50_ns); }},
    {"p90_ns", [](JsonWriter& json, const FunctionStats& f) { json.value(f.stats.p90_ns); }},
    {"p95_ns", [](JsonWriter& json, const FunctionStats& f) { json.value(f.stats.p95_ns); }},
    {"p99_ns", [](JsonWriter& json, const FunctionStats& f) { json.value(f.stats.p99_ns); }},
    {"p999_ns", [](JsonWriter& json, const FunctionStats& f) { json.value(f.stats.p999_ns); }},
    {"alloc_bytes_self",
     [](JsonWriter& json, const FunctionStats& f) { json.value(f.allocated_self.bytes); }},
    {"alloc_blocks_self",
     [](JsonWriter& json, const FunctionStats& f) { json.value(f.allocated_self.blocks); }},
    {"alloc_bytes_total",
     [](JsonWriter& json, const FunctionStats& f) { json.value(f.allocated_total.bytes); }},
    {"alloc_blocks_total",
     [](JsonWriter& json, const FunctionStats& f) { json.value(f.allocated_total.blocks); }},
    {"cpu_self_ns", [](JsonWriter& json, const FunctionStats& f) { json.value(f.cpu_self_ns); }},
    {"cpu_total_ns", [](JsonWriter& json, const FunctionStats& f) { json.value(f.cpu_total_ns); }},
};

void write_functions(JsonWriter& json, const std::vector<FunctionStats>& functions) {
  json.begin_array();
  for (const FunctionStats& function : functions) {
    json.begin_object();
    for (const FunctionField& field : kFunctionFields) {
      if (field.instrumented && function.module.empty()) {
        continue;
      }
      json.key(field.key);
      field.write(json, function);
    }
    json.end_object();
  }
  json.end_array();
}

// The same figures as one array per key: no key repeated per function, so a live view with
// thousands of functions reads a fraction of the bytes.
void write_function_columns(JsonWriter& json, const std::vector<FunctionStats>& functions) {
  json.begin_object();
  for (const FunctionField& field : kFunctionFields) {
    json.key(field.key).begin_array();
    for (const FunctionStats& function : functions) {
      field.write(json, function);
    }
    json.end_array();
  }
  json.end_object();
}

// The keys stats.json's threads and /v1/threads share (docs/formats-output.md), up to records.
void write_thread_head(JsonWriter& json, const ThreadInfo& thread) {
  json.member("index", thread.index)
      .member("os_tid", thread.os_tid)
      .member("name", thread.name)
      .member("exited", thread.exited)
      .member("state", thread.os.state)
      .member("cpu_user_ns", thread.os.cpu_user_ns)
      .member("cpu_system_ns", thread.os.cpu_system_ns)
      .member("voluntary_switches", thread.os.voluntary_switches)
      .member("involuntary_switches", thread.os.involuntary_switches);
  if (thread.os_only) {
    json.member("os_only", true); // no records, no scopes: an unmodified program's thread
  }
  json.key("records");
  detail::write_records(json, thread.records);
}

void write_strings(JsonWriter& json, const std::vector<std::string>& list) {
  json.begin_array();
  for (const std::string& item : list) {
    json.value(item);
  }
  json.end_array();
}

void write_queues(JsonWriter& json, const std::vector<QueueStats>& queues) {
  json.begin_array();
  for (const QueueStats& queue : queues) {
    const DurationStats& wait = queue.wait;
    json.begin_object()
        .member("name", queue.name)
        .member("pushed", queue.pushed)
        .member("popped", queue.popped)
        .member("depth", queue.depth)
        .member("max_depth", queue.max_depth)
        .member("capacity", queue.capacity)
        .member("waits", wait.calls)
        .member("wait_total_ns", wait.total_ns)
        .member("wait_mean_ns", wait.mean_ns)
        .member("wait_min_ns", wait.min_ns)
        .member("wait_p50_ns", wait.p50_ns)
        .member("wait_p90_ns", wait.p90_ns)
        .member("wait_p95_ns", wait.p95_ns)
        .member("wait_p99_ns", wait.p99_ns)
        .member("wait_p999_ns", wait.p999_ns)
        .member("wait_max_ns", wait.max_ns)
        .member("popped_never_pushed", queue.popped_never_pushed)
        .member("pending", queue.pending)
        .member("pending_given_up", queue.pending_given_up)
        .member("oldest_pending_ns", queue.oldest_pending_ns)
        .key("push_threads");
    write_strings(json, queue.push_threads);
    json.key("pop_threads");
    write_strings(json, queue.pop_threads);
    json.end_object();
  }
  json.end_array();
}

void write_durations(JsonWriter& json, const DurationStats& d) {
  json.begin_object()
      .member("count", d.calls)
      .member("total_ns", d.total_ns)
      .member("mean_ns", d.mean_ns)
      .member("min_ns", d.min_ns)
      .member("p50_ns", d.p50_ns)
      .member("p90_ns", d.p90_ns)
      .member("p95_ns", d.p95_ns)
      .member("p99_ns", d.p99_ns)
      .member("p999_ns", d.p999_ns)
      .member("max_ns", d.max_ns)
      .end_object();
}

void write_tasks(JsonWriter& json, const std::vector<TaskStats>& tasks) {
  json.begin_array();
  for (const TaskStats& task : tasks) {
    json.begin_object()
        .member("name", task.name)
        .member("kind", task.kind)
        .member("created", task.created)
        .member("completed", task.completed)
        .member("destroyed_unfinished", task.destroyed_unfinished)
        .member("alive", task.alive)
        .member("resumes", task.resumes)
        .key("running");
    write_durations(json, task.running);
    json.key("waiting");
    write_durations(json, task.waiting);
    json.key("lifetime");
    write_durations(json, task.lifetime);
    json.member("given_up", task.given_up).end_object();
  }
  json.end_array();
}

// The keys of a lock's waits and holds: "waits", "wait_total_ns" ... "wait_max_ns".
void write_lock_durations(JsonWriter& json, const char* count, const char* prefix,
                          const DurationStats& d) {
  const auto key = [&](const char* figure) { return text::cat(prefix, "_", figure, "_ns"); };
  json.member(count, d.calls)
      .member(key("total"), d.total_ns)
      .member(key("mean"), d.mean_ns)
      .member(key("min"), d.min_ns)
      .member(key("p50"), d.p50_ns)
      .member(key("p90"), d.p90_ns)
      .member(key("p95"), d.p95_ns)
      .member(key("p99"), d.p99_ns)
      .member(key("p999"), d.p999_ns)
      .member(key("max"), d.max_ns);
}

void write_lock_thread(JsonWriter& json, const LockThread& thread) {
  json.begin_object()
      .member("thread", thread.thread)
      .member("os_tid", thread.os_tid)
      .member("for_ns", thread.for_ns)
      .member("shared", thread.shared)
      .end_object();
}

void write_lock_threads(JsonWriter& json, const std::vector<LockThread>& threads) {
  json.begin_array();
  for (const LockThread& thread : threads) {
    write_lock_thread(json, thread);
  }
  json.end_array();
}

// "scopes" and "stack" as members of the object being written.
void write_site_members(JsonWriter& json, const LockSite& site,
                        const detail::LockFrameNames& frames) {
  json.key("scopes");
  write_strings(json, site.scopes);
  json.key("stack");
  write_strings(json, frames.names(site.stack));
}

void write_lock(JsonWriter& json, const LockStats& lock, const detail::LockFrameNames& frames) {
  json.begin_object().member("name", lock.name).member("kind", lock.kind);
  if (lock.address != 0) {
    json.member("address", text::cat("0x", text::hex(lock.address)));
  }
  json.member("acquisitions", lock.acquisitions)
      .member("contended", lock.contended)
      .member("try_failed", lock.try_failed);
  write_lock_durations(json, "waits", "wait", lock.wait);
  write_lock_durations(json, "holds", "hold", lock.hold);
  json.key("top_waiters").begin_array();
  for (const LockStats::Waiter& waiter : lock.top_waiters) {
    json.begin_object()
        .member("thread", waiter.thread)
        .member("waits", waiter.waits)
        .member("wait_ns", waiter.wait_ns)
        .end_object();
  }
  json.end_array().key("contended_at").begin_array();
  for (const LockStats::Contention& contention : lock.contended_at) {
    json.begin_object();
    write_site_members(json, contention.site, frames);
    json.member("waits", contention.waits).member("wait_ns", contention.wait_ns).end_object();
  }
  json.end_array().key("holders");
  write_lock_threads(json, lock.holders);
  json.key("waiters");
  write_lock_threads(json, lock.waiters);
  json.end_object();
}

void write_deadlocks(JsonWriter& json, const std::vector<Deadlock>& deadlocks) {
  json.begin_array();
  for (const Deadlock& deadlock : deadlocks) {
    json.begin_object().key("cycle").begin_array();
    for (const Deadlock::Link& link : deadlock.cycle) {
      json.begin_object().key("waiter");
      write_lock_thread(json, link.waiter);
      json.member("lock", link.lock).key("holder");
      write_lock_thread(json, link.holder);
      json.key("waiter_scopes");
      write_strings(json, link.waiter_scopes);
      json.end_object();
    }
    json.end_array().end_object();
  }
  json.end_array();
}

void write_inversions(JsonWriter& json, const std::vector<LockInversion>& inversions,
                      const detail::LockFrameNames& frames) {
  json.begin_array();
  for (const LockInversion& inversion : inversions) {
    json.begin_object()
        .member("first", inversion.first)
        .member("second", inversion.second)
        .member("thread_one", inversion.thread_one)
        .key("site_one")
        .begin_object();
    write_site_members(json, inversion.site_one, frames);
    json.end_object().member("thread_two", inversion.thread_two).key("site_two").begin_object();
    write_site_members(json, inversion.site_two, frames);
    json.end_object().member("found_ns", inversion.found_ns).end_object();
  }
  json.end_array();
}

// The members "locks", "deadlocks", "lock_inversions" and "lock_figures" of the object being
// written: stats.json's and /v1/locks's (docs/formats-output.md).
void write_lock_members(JsonWriter& json, const Snapshot& snapshot) {
  const detail::LockFrameNames frames(snapshot);
  json.key("locks").begin_array();
  for (const LockStats& lock : snapshot.locks) {
    write_lock(json, lock, frames);
  }
  json.end_array().key("deadlocks");
  write_deadlocks(json, snapshot.deadlocks);
  json.key("lock_inversions");
  write_inversions(json, snapshot.inversions, frames);
  json.key("lock_figures")
      .begin_object()
      .member("deadlocks_found", snapshot.lock_figures.deadlocks_found)
      .member("order_edges", snapshot.lock_figures.order_edges)
      .member("given_up", snapshot.lock_figures.given_up)
      .end_object();
}

void write_threads(JsonWriter& json, const Snapshot& snapshot, StatsLayout layout) {
  json.begin_array();
  for (const ThreadInfo& thread : snapshot.threads) {
    json.begin_object();
    write_thread_head(json, thread);
    json.key("allocations");
    write_allocations(json, thread.allocations);
    json.member("cpu_samples", thread.cpu_samples);
    if (thread.batches) {
      json.key("batches")
          .begin_object()
          .member("accepted", thread.batches->accepted)
          .member("rejected", thread.batches->rejected)
          .member("records_rejected", thread.batches->records_rejected)
          .member("nesting_repairs", thread.batches->nesting_repairs)
          .member("last_rejection", thread.batches->last_rejection)
          .end_object();
    }
    if (layout == StatsLayout::Full) {
      json.key("functions");
      write_functions(json, thread.functions);
    }
    json.end_object();
  }
  json.end_array();
}

// The CPU sampler's figures (the stacks are in cpu.pb.gz and cpu.folded).
void write_cpu(JsonWriter& json, const CpuProfile& cpu) {
  json.begin_object()
      .member("hz", cpu.hz)
      .member("period_ns", cpu.period_ns)
      .member("samples", cpu.samples)
      .member("signals", cpu.signals)
      .member("lost", cpu.lost)
      .member("incomplete", cpu.incomplete)
      .member("unstored", cpu.unstored)
      .member("problem", cpu.problem)
      .end_object();
}

void write_counters(JsonWriter& json, const std::vector<CounterStats>& counters) {
  json.begin_array();
  for (const CounterStats& counter : counters) {
    json.begin_object()
        .member("name", counter.name)
        .member("updates", counter.updates)
        .member("last", counter.last)
        .member("min", counter.min)
        .member("max", counter.max)
        .end_object();
  }
  json.end_array();
}

// Names may hold invalid UTF-8 (text cut at a size limit): the writer replaces it.
void write_stats(std::string& out, int indent, const Snapshot& snapshot, StatsLayout layout) {
  JsonWriter json(out, indent);
  json.begin_object()
      .member("hotscope_version", snapshot.hotscope_version)
      .member("pid", snapshot.pid)
      .member("process_name", snapshot.process_name)
      .member("duration_ns", snapshot.duration_ns)
      .member("start_unix_ns", snapshot.start_unix_ns)
      .key("clock");
  detail::write_clock(json, snapshot.clock);
  json.key("records");
  detail::write_records(json, snapshot.records);
  json.member("threads_folded", snapshot.threads_folded);
  if (snapshot.unmodified_program) {
    json.member("unmodified_program", true);
  }
  json.key("allocations");
  write_allocations(json, snapshot.allocations);
  json.key("functions");
  if (layout == StatsLayout::Full) {
    write_functions(json, snapshot.functions);
  } else {
    write_function_columns(json, snapshot.functions);
  }
  json.key("filtered_functions").begin_array();
  for (const FilteredFunction& function : snapshot.filtered_functions) {
    json.begin_object()
        .member("name", function.name)
        .member("file", function.file)
        .member("line", function.line)
        .member("module", function.module)
        .member("build_id", function.build_id)
        .member("recorded_calls", function.recorded_calls)
        .member("skipped_calls", function.skipped_calls)
        .member("max_ns", function.max_ns)
        .end_object();
  }
  json.end_array();
  json.key("threads");
  write_threads(json, snapshot, layout);
  json.key("counters");
  write_counters(json, snapshot.counters);
  json.key("queues");
  write_queues(json, snapshot.queues);
  json.key("tasks");
  write_tasks(json, snapshot.tasks);
  write_lock_members(json, snapshot);
  json.key("guest_images");
  detail::write_guest_images(json, snapshot.guest_images);
  json.key("cpu");
  write_cpu(json, snapshot.cpu);
  json.key("trace")
      .begin_object()
      .member("events", snapshot.trace_window_events)
      .member("start_ns", snapshot.trace_start_ns)
      .member("evicted", snapshot.trace_evicted)
      .member("open_scopes", snapshot.trace_open_scopes)
      .end_object()
      .key("memory")
      .begin_object()
      .member("rings_bytes", snapshot.memory.rings)
      .member("trace_window_bytes", snapshot.memory.trace_window)
      .member("statistics_bytes", snapshot.memory.statistics)
      .member("slow_calls_bytes", snapshot.memory.slow_calls)
      .end_object()
      .key("slow_calls_figures")
      .begin_object()
      .member("per_function", snapshot.slow_call_figures.per_function)
      .member("budget_bytes", snapshot.slow_call_figures.budget_bytes)
      .member("kept", snapshot.slow_call_figures.kept)
      .member("evicted", snapshot.slow_call_figures.evicted)
      .member("cut", snapshot.slow_call_figures.cut)
      .end_object()
      .end_object();
  out += '\n';
}

} // namespace

void write_threads_json(const Snapshot& snapshot, std::uint64_t stuck_ns, std::ostream& out) {
  std::string text;
  JsonWriter json(text, 2);
  json.begin_object()
      .member("pid", snapshot.pid)
      .member("process_name", snapshot.process_name)
      .member("now_ns", snapshot.duration_ns)
      .member("stuck_threshold_ns", stuck_ns);
  if (snapshot.unmodified_program) {
    json.member("unmodified_program", true);
  }
  json.key("threads").begin_array();
  for (const ThreadInfo* thread : detail::stuck_first(snapshot, stuck_ns)) {
    json.begin_object();
    write_thread_head(json, *thread);
    json.key("open_scopes").begin_array();
    for (const OpenScope& scope : thread->open_scopes) {
      json.begin_object()
          .member("name", scope.name)
          .member("file", scope.file)
          .member("line", scope.line)
          .member("opened_ns", scope.opened_ns)
          .member("open_ns", scope.open_ns)
          .end_object();
    }
    json.end_array().member("stuck", detail::is_stuck(*thread, stuck_ns)).end_object();
  }
  json.end_array().key("deadlocks");
  write_deadlocks(json, snapshot.deadlocks);
  json.end_object();
  out << text << '\n';
}

void write_locks_json(const Snapshot& snapshot, std::ostream& out) {
  std::string text;
  JsonWriter json(text, 2);
  json.begin_object();
  write_lock_members(json, snapshot);
  json.end_object();
  out << text << '\n';
}

void write_stats_json(const Snapshot& snapshot, std::ostream& out) {
  std::string text;
  write_stats(text, 2, snapshot, StatsLayout::Full);
  out << text;
}

std::string stats_columns(const Snapshot& snapshot) {
  std::string text;
  write_stats(text, -1, snapshot, StatsLayout::Columns);
  return text;
}

} // namespace hotscope::exporters
