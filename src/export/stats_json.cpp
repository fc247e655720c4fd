// The statistics as JSON; docs/formats-output.md documents the schema, which the agent API
// serves too, so keys change only together with that document.
#include "export/export.hpp"

#include <nlohmann/json.hpp>

#include <ostream>

namespace hotscope::exporters {
namespace {

using Json = nlohmann::ordered_json;

Json records_json(const RecordCounts& records) {
  return {{"written", records.written}, {"kept", records.kept}, {"dropped", records.dropped}};
}

Json allocations_json(const Allocations& allocations) {
  return {{"bytes", allocations.all.bytes},
          {"blocks", allocations.all.blocks},
          {"outside_scopes_bytes", allocations.outside_scopes.bytes},
          {"outside_scopes_blocks", allocations.outside_scopes.blocks}};
}

Json functions_json(const std::vector<FunctionStats>& functions) {
  Json list = Json::array();
  for (const FunctionStats& function : functions) {
    const DurationStats& s = function.stats;
    list.push_back({{"name", function.name},
                    {"file", function.file},
                    {"line", function.line},
                    {"calls", s.calls},
                    {"total_ns", s.total_ns},
                    {"self_ns", s.self_ns},
                    {"min_ns", s.min_ns},
                    {"max_ns", s.max_ns},
                    {"mean_ns", s.mean_ns},
                    {"p50_ns", s.p50_ns},
                    {"p90_ns", s.p90_ns},
                    {"p95_ns", s.p95_ns},
                    {"p99_ns", s.p99_ns},
                    {"p999_ns", s.p999_ns},
                    {"alloc_bytes_self", function.allocated_self.bytes},
                    {"alloc_blocks_self", function.allocated_self.blocks},
                    {"alloc_bytes_total", function.allocated_total.bytes},
                    {"alloc_blocks_total", function.allocated_total.blocks}});
  }
  return list;
}

} // namespace

void write_stats_json(const Snapshot& snapshot, std::ostream& out) {
  Json threads = Json::array();
  for (const ThreadInfo& thread : snapshot.threads) {
    threads.push_back({{"index", thread.index},
                       {"os_tid", thread.os_tid},
                       {"name", thread.name},
                       {"exited", thread.exited},
                       {"records", records_json(thread.records)},
                       {"allocations", allocations_json(thread.allocations)},
                       {"functions", functions_json(thread.functions)}});
  }
  Json counters = Json::array();
  for (const CounterStats& counter : snapshot.counters) {
    counters.push_back({{"name", counter.name},
                        {"updates", counter.updates},
                        {"last", counter.last},
                        {"min", counter.min},
                        {"max", counter.max}});
  }
  const Json stats = {
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
      {"functions", functions_json(snapshot.functions)},
      {"threads", std::move(threads)},
      {"counters", std::move(counters)},
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
  // Names may hold invalid UTF-8 (text cut at a size limit): replace it rather than fail.
  out << stats.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
}

} // namespace hotscope::exporters
