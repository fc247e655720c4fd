// The statistics as JSON; docs/formats-output.md documents the schema, which the agent API
// serves too, so keys change only together with that document.
#include "export/common.hpp"
#include "export/export.hpp"

#include <nlohmann/json.hpp>

#include <ostream>

namespace hotscope::exporters {
namespace {

using Json = nlohmann::ordered_json;

enum class StatsLayout { Full, Columns };

Json records_json(const RecordCounts& records) {
  return {{"written", records.written}, {"kept", records.kept}, {"dropped", records.dropped}};
}

Json allocations_json(const Allocations& allocations) {
  return {{"bytes", allocations.all.bytes},
          {"blocks", allocations.all.blocks},
          {"outside_scopes_bytes", allocations.outside_scopes.bytes},
          {"outside_scopes_blocks", allocations.outside_scopes.blocks}};
}

// One function's figures, in stats.json's key order: both layouts are built from this table.
struct FunctionField {
  const char* key;
  Json (*value)(const FunctionStats&);
};
constexpr FunctionField kFunctionFields[] = {
    {"name", [](const FunctionStats& f) -> Json { return f.name; }},
    {"file", [](const FunctionStats& f) -> Json { return f.file; }},
    {"line", [](const FunctionStats& f) -> Json { return f.line; }},
    {"calls", [](const FunctionStats& f) -> Json { return f.stats.calls; }},
    {"total_ns", [](const FunctionStats& f) -> Json { return f.stats.total_ns; }},
    {"self_ns", [](const FunctionStats& f) -> Json { return f.stats.self_ns; }},
    {"min_ns", [](const FunctionStats& f) -> Json { return f.stats.min_ns; }},
    {"max_ns", [](const FunctionStats& f) -> Json { return f.stats.max_ns; }},
    {"mean_ns", [](const FunctionStats& f) -> Json { return f.stats.mean_ns; }},
    {"p50_ns", [](const FunctionStats& f) -> Json { return f.stats.p50_ns; }},
    {"p90_ns", [](const FunctionStats& f) -> Json { return f.stats.p90_ns; }},
    {"p95_ns", [](const FunctionStats& f) -> Json { return f.stats.p95_ns; }},
    {"p99_ns", [](const FunctionStats& f) -> Json { return f.stats.p99_ns; }},
    {"p999_ns", [](const FunctionStats& f) -> Json { return f.stats.p999_ns; }},
    {"alloc_bytes_self", [](const FunctionStats& f) -> Json { return f.allocated_self.bytes; }},
    {"alloc_blocks_self", [](const FunctionStats& f) -> Json { return f.allocated_self.blocks; }},
    {"alloc_bytes_total", [](const FunctionStats& f) -> Json { return f.allocated_total.bytes; }},
    {"alloc_blocks_total", [](const FunctionStats& f) -> Json { return f.allocated_total.blocks; }},
};

// An object with room for `keys` keys. An ordered_json object is a vector of (const key, value)
// pairs, which copies every value, deeply, each time it grows: these objects never grow.
Json object_of(std::size_t keys) {
  Json object = Json::object();
  object.get_ref<Json::object_t&>().reserve(keys);
  return object;
}

Json functions_json(const std::vector<FunctionStats>& functions) {
  Json::array_t list;
  list.reserve(functions.size());
  for (const FunctionStats& function : functions) {
    Json object = object_of(std::size(kFunctionFields));
    for (const FunctionField& field : kFunctionFields) {
      object.emplace(field.key, field.value(function));
    }
    list.push_back(std::move(object));
  }
  return list;
}

// The same figures as one array per key: no key repeated per function, so a live view with
// thousands of functions reads a fraction of the bytes.
Json functions_columns(const std::vector<FunctionStats>& functions) {
  Json columns = object_of(std::size(kFunctionFields));
  for (const FunctionField& field : kFunctionFields) {
    Json::array_t column;
    column.reserve(functions.size());
    for (const FunctionStats& function : functions) {
      column.push_back(field.value(function));
    }
    columns.emplace(field.key, std::move(column));
  }
  return columns;
}

// The keys stats.json's threads and /v1/threads share (docs/formats-output.md).
void add_os_figures(Json& json, const OsThreadFigures& os) {
  json["state"] = os.state;
  json["cpu_user_ns"] = os.cpu_user_ns;
  json["cpu_system_ns"] = os.cpu_system_ns;
  json["voluntary_switches"] = os.voluntary_switches;
  json["involuntary_switches"] = os.involuntary_switches;
}

Json queues_json(const std::vector<QueueStats>& queues) {
  Json list = Json::array();
  for (const QueueStats& queue : queues) {
    const DurationStats& wait = queue.wait;
    list.push_back({{"name", queue.name},
                    {"pushed", queue.pushed},
                    {"popped", queue.popped},
                    {"depth", queue.depth},
                    {"max_depth", queue.max_depth},
                    {"capacity", queue.capacity},
                    {"waits", wait.calls},
                    {"wait_total_ns", wait.total_ns},
                    {"wait_mean_ns", wait.mean_ns},
                    {"wait_min_ns", wait.min_ns},
                    {"wait_p50_ns", wait.p50_ns},
                    {"wait_p90_ns", wait.p90_ns},
                    {"wait_p95_ns", wait.p95_ns},
                    {"wait_p99_ns", wait.p99_ns},
                    {"wait_p999_ns", wait.p999_ns},
                    {"wait_max_ns", wait.max_ns},
                    {"popped_never_pushed", queue.popped_never_pushed},
                    {"pending", queue.pending},
                    {"pending_given_up", queue.pending_given_up},
                    {"oldest_pending_ns", queue.oldest_pending_ns},
                    {"push_threads", queue.push_threads},
                    {"pop_threads", queue.pop_threads}});
  }
  return list;
}

Json durations_json(const DurationStats& d) {
  return {{"count", d.calls},   {"total_ns", d.total_ns}, {"mean_ns", d.mean_ns},
          {"min_ns", d.min_ns}, {"p50_ns", d.p50_ns},     {"p90_ns", d.p90_ns},
          {"p95_ns", d.p95_ns}, {"p99_ns", d.p99_ns},     {"p999_ns", d.p999_ns},
          {"max_ns", d.max_ns}};
}

Json tasks_json(const std::vector<TaskStats>& tasks) {
  Json list = Json::array();
  for (const TaskStats& task : tasks) {
    list.push_back({{"name", task.name},
                    {"kind", task.kind},
                    {"created", task.created},
                    {"completed", task.completed},
                    {"destroyed_unfinished", task.destroyed_unfinished},
                    {"alive", task.alive},
                    {"resumes", task.resumes},
                    {"running", durations_json(task.running)},
                    {"waiting", durations_json(task.waiting)},
                    {"lifetime", durations_json(task.lifetime)},
                    {"given_up", task.given_up}});
  }
  return list;
}

void write_json(const Json& json, std::ostream& out) {
  // Names may hold invalid UTF-8 (text cut at a size limit): replace it rather than fail.
  out << json.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
}

} // namespace

void write_threads_json(const Snapshot& snapshot, std::uint64_t stuck_ns, std::ostream& out) {
  Json threads = Json::array();
  for (const ThreadInfo* thread : detail::stuck_first(snapshot, stuck_ns)) {
    Json json = {{"index", thread->index},
                 {"os_tid", thread->os_tid},
                 {"name", thread->name},
                 {"exited", thread->exited}};
    add_os_figures(json, thread->os);
    json["records"] = records_json(thread->records);
    Json scopes = Json::array();
    for (const OpenScope& scope : thread->open_scopes) {
      scopes.push_back({{"name", scope.name},
                        {"file", scope.file},
                        {"line", scope.line},
                        {"opened_ns", scope.opened_ns},
                        {"open_ns", scope.open_ns}});
    }
    json["open_scopes"] = std::move(scopes);
    json["stuck"] = detail::is_stuck(*thread, stuck_ns);
    threads.push_back(std::move(json));
  }
  write_json({{"pid", snapshot.pid},
              {"process_name", snapshot.process_name},
              {"now_ns", snapshot.duration_ns},
              {"stuck_threshold_ns", stuck_ns},
              {"threads", std::move(threads)}},
             out);
}

namespace {

Json stats_json(const Snapshot& snapshot, StatsLayout layout) {
  Json threads = Json::array();
  for (const ThreadInfo& thread : snapshot.threads) {
    Json json = {{"index", thread.index},
                 {"os_tid", thread.os_tid},
                 {"name", thread.name},
                 {"exited", thread.exited}};
    add_os_figures(json, thread.os);
    json["records"] = records_json(thread.records);
    json["allocations"] = allocations_json(thread.allocations);
    if (thread.batches) {
      json["batches"] = {{"accepted", thread.batches->accepted},
                         {"rejected", thread.batches->rejected},
                         {"records_rejected", thread.batches->records_rejected},
                         {"nesting_repairs", thread.batches->nesting_repairs},
                         {"last_rejection", thread.batches->last_rejection}};
    }
    if (layout == StatsLayout::Full) {
      json["functions"] = functions_json(thread.functions);
    }
    threads.push_back(std::move(json));
  }
  Json counters = Json::array();
  for (const CounterStats& counter : snapshot.counters) {
    counters.push_back({{"name", counter.name},
                        {"updates", counter.updates},
                        {"last", counter.last},
                        {"min", counter.min},
                        {"max", counter.max}});
  }
  // The functions go in last, into their place: the object grows while it is built.
  Json stats = {
      {"hotscope_version", snapshot.hotscope_version},
      {"pid", snapshot.pid},
      {"process_name", snapshot.process_name},
      {"duration_ns", snapshot.duration_ns},
      {"start_unix_ns", snapshot.start_unix_ns},
      {"clock",
       {{"source", snapshot.clock.source},
        {"frequency_origin", snapshot.clock.frequency_origin},
        {"ticks_per_second", snapshot.clock.ticks_per_second},
        {"invariant_tsc", snapshot.clock.invariant_tsc},
        {"reason", snapshot.clock.reason}}},
      {"records", records_json(snapshot.records)},
      {"threads_folded", snapshot.threads_folded},
      {"allocations", allocations_json(snapshot.allocations)},
      {"functions", nullptr},
      {"threads", std::move(threads)},
      {"counters", std::move(counters)},
      {"queues", queues_json(snapshot.queues)},
      {"tasks", tasks_json(snapshot.tasks)},
      {"guest_images", detail::guest_images_json(snapshot.guest_images)},
      {"trace",
       {{"events", snapshot.trace_window_events},
        {"start_ns", snapshot.trace_start_ns},
        {"evicted", snapshot.trace_evicted},
        {"open_scopes", snapshot.trace_open_scopes}}},
      {"memory",
       {{"rings_bytes", snapshot.memory.rings},
        {"trace_window_bytes", snapshot.memory.trace_window},
        {"statistics_bytes", snapshot.memory.statistics}}},
  };
  stats["functions"] = layout == StatsLayout::Full ? functions_json(snapshot.functions)
                                                   : functions_columns(snapshot.functions);
  return stats;
}

} // namespace

void write_stats_json(const Snapshot& snapshot, std::ostream& out) {
  write_json(stats_json(snapshot, StatsLayout::Full), out);
}

std::string stats_columns(const Snapshot& snapshot) {
  return stats_json(snapshot, StatsLayout::Columns)
             .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
         '\n';
}

} // namespace hotscope::exporters
