#include "export/export.hpp"
#include "snapshot_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <sstream>

namespace hotscope {
namespace {

using nlohmann::json;

json stats(const Snapshot& snapshot) {
  std::ostringstream out;
  exporters::write_stats_json(snapshot, out);
  return json::parse(out.str());
}

// A function's entry; `module` and `build_id` only for an instrumented function (one with a
// module).
void expect_function(const json& actual, const FunctionStats& expected) {
  const DurationStats& s = expected.stats;
  json object = json::object();
  if (!expected.module.empty()) {
    object = json{{"module", expected.module}, {"build_id", expected.build_id}};
  }
  object.update(json{{"name", expected.name},
                     {"file", expected.file},
                     {"line", expected.line},
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
                     {"alloc_bytes_self", expected.allocated_self.bytes},
                     {"alloc_blocks_self", expected.allocated_self.blocks},
                     {"alloc_bytes_total", expected.allocated_total.bytes},
                     {"alloc_blocks_total", expected.allocated_total.blocks},
                     {"cpu_self_ns", expected.cpu_self_ns},
                     {"cpu_total_ns", expected.cpu_total_ns}});
  EXPECT_EQ(actual, object);
}

TEST(ExportStatsJson, TopLevelFiguresRoundTrip) {
  Snapshot snapshot = testing::known_snapshot();
  snapshot.threads_folded = 2;
  snapshot.trace_start_ns = 500;
  snapshot.trace_evicted = 9;
  snapshot.trace_open_scopes = 1;
  snapshot.trace_window_events = 8;
  snapshot.memory = {3 << 20, 1 << 20, 4096};
  const json j = stats(snapshot);
  EXPECT_EQ(j["hotscope_version"], "0.1.0");
  EXPECT_EQ(j["pid"], 4242);
  EXPECT_EQ(j["process_name"], "demo");
  EXPECT_EQ(j["duration_ns"], 10'000'000u);
  EXPECT_EQ(j["start_unix_ns"].get<std::uint64_t>(), 1'700'000'000'000'000'000u);
  EXPECT_EQ(j["clock"], (json{{"source", "tsc"},
                              {"frequency_origin", "cpuid"},
                              {"ticks_per_second", 3e9},
                              {"invariant_tsc", true},
                              {"reason", "invariant TSC"}}));
  EXPECT_EQ(j["records"], (json{{"written", 20}, {"kept", 18}, {"dropped", 2}}));
  EXPECT_EQ(j["threads_folded"], 2);
  // A program that records no allocation has them all zero, in the same schema.
  EXPECT_EQ(
      j["allocations"],
      (json{
          {"bytes", 0}, {"blocks", 0}, {"outside_scopes_bytes", 0}, {"outside_scopes_blocks", 0}}));
  EXPECT_EQ(j["trace"],
            (json{{"events", 8}, {"start_ns", 500}, {"evicted", 9}, {"open_scopes", 1}}));
  EXPECT_EQ(j["memory"], (json{{"rings_bytes", 3 << 20},
                               {"trace_window_bytes", 1 << 20},
                               {"statistics_bytes", 4096},
                               {"slow_calls_bytes", 0}}));
}

TEST(ExportStatsJson, FunctionsThreadsAndCountersRoundTrip) {
  const Snapshot snapshot = testing::known_snapshot();
  const json j = stats(snapshot);
  ASSERT_EQ(j["functions"].size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    expect_function(j["functions"][i], snapshot.functions[i]);
  }
  EXPECT_EQ(j["functions"][2]["mean_ns"].get<double>(), 1'500'000.0);

  ASSERT_EQ(j["threads"].size(), 2u);
  const json& loader = j["threads"][1];
  EXPECT_EQ(loader["index"], 1);
  EXPECT_EQ(loader["os_tid"], 4243);
  EXPECT_EQ(loader["name"], "");
  EXPECT_EQ(loader["exited"], false);
  EXPECT_EQ(loader["records"], (json{{"written", 8}, {"kept", 7}, {"dropped", 1}}));
  ASSERT_EQ(loader["functions"].size(), 1u);
  expect_function(loader["functions"][0], snapshot.threads[1].functions[0]);

  EXPECT_EQ(
      j["counters"],
      (json::array({json{
          {"name", "heap"}, {"updates", 1}, {"last", 10592}, {"min", 10592}, {"max", 10592}}})));
}

// The live views' layout: the same figures, one array per key, and no per-thread functions.
TEST(ExportStatsJson, TheColumnsLayoutHoldsTheSameFunctionsAsTheObjectLayout) {
  const Snapshot snapshot = testing::known_snapshot();
  const std::string text = exporters::stats_columns(snapshot);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << "one unindented line";
  const json columns = json::parse(text);
  const json objects = stats(snapshot);
  const json& functions = columns["functions"];
  ASSERT_TRUE(functions.is_object());
  ASSERT_EQ(functions["name"].size(), snapshot.functions.size());
  for (std::size_t i = 0; i < snapshot.functions.size(); ++i) {
    json function = json::object();
    for (const auto& [key, column] : functions.items()) {
      ASSERT_EQ(column.size(), snapshot.functions.size()) << key;
      function[key] = column[i];
    }
    // Every function has an object in the columns, "" for a macro scope.
    if (function.at("module") == "") {
      EXPECT_EQ(function.at("build_id"), "");
      function.erase("module");
      function.erase("build_id");
    }
    expect_function(function, snapshot.functions[i]);
  }
  ASSERT_EQ(columns["threads"].size(), objects["threads"].size());
  for (std::size_t i = 0; i < columns["threads"].size(); ++i) {
    json thread = objects["threads"][i];
    thread.erase("functions");
    EXPECT_EQ(columns["threads"][i], thread);
  }
  json rest = columns;
  json rest_of_objects = objects;
  for (json* whole : {&rest, &rest_of_objects}) {
    whole->erase("functions");
    whole->erase("threads");
  }
  EXPECT_EQ(rest, rest_of_objects);
}

// An instrumented function's entry names its object and build id (docs/instrument.md); a macro
// scope's has neither key, in the columns "" for it.
TEST(ExportStatsJson, InstrumentedFunctionsHaveTheirObject) {
  Snapshot snapshot = testing::known_snapshot();
  snapshot.functions[1].module = "/opt/server/bin/server";
  snapshot.functions[1].build_id = "1f0c";
  snapshot.filtered_functions.push_back(
      {"tiny", "main.cpp", 5, "/opt/server/bin/server", "1f0c", 1000, 52000, 150});
  const json j = stats(snapshot);
  EXPECT_EQ(j["functions"][1]["module"], "/opt/server/bin/server");
  EXPECT_EQ(j["functions"][1]["build_id"], "1f0c");
  expect_function(j["functions"][1], snapshot.functions[1]);
  EXPECT_FALSE(j["functions"][0].contains("module"));
  EXPECT_FALSE(j["functions"][0].contains("build_id"));
  EXPECT_EQ(j["filtered_functions"][0]["module"], "/opt/server/bin/server");
  EXPECT_EQ(j["filtered_functions"][0]["build_id"], "1f0c");
  const json columns = json::parse(exporters::stats_columns(snapshot))["functions"];
  EXPECT_EQ(columns["module"], (json{"", "/opt/server/bin/server", ""}));
  EXPECT_EQ(columns["build_id"], (json{"", "1f0c", ""}));
}

TEST(ExportStatsJson, AGuestTracksBatchesAndOnlyItsHaveThem) {
  Snapshot snapshot = testing::known_snapshot();
  snapshot.threads[1].batches = BatchCounts{3, 1, 10, 2, "guest batch rejected at record 4: x"};
  const json j = stats(snapshot);
  EXPECT_FALSE(j["threads"][0].contains("batches"));
  EXPECT_EQ(j["threads"][1]["batches"],
            (json{{"accepted", 3},
                  {"rejected", 1},
                  {"records_rejected", 10},
                  {"nesting_repairs", 2},
                  {"last_rejection", "guest batch rejected at record 4: x"}}));
}

TEST(ExportStatsJson, AllocationsRoundTrip) {
  const Snapshot snapshot = testing::known_snapshot_with_allocations();
  const json j = stats(snapshot);
  EXPECT_EQ(j["allocations"], (json{{"bytes", 2'098'798},
                                    {"blocks", 10},
                                    {"outside_scopes_bytes", 10},
                                    {"outside_scopes_blocks", 1}}));
  EXPECT_EQ(j["threads"][1]["allocations"], (json{{"bytes", 100},
                                                  {"blocks", 1},
                                                  {"outside_scopes_bytes", 0},
                                                  {"outside_scopes_blocks", 0}}));
  for (std::size_t i = 0; i < 3; ++i) {
    expect_function(j["functions"][i], snapshot.functions[i]);
  }
  EXPECT_EQ(j["functions"][0]["alloc_bytes_total"], 2'098'688);
  expect_function(j["threads"][0]["functions"][1], snapshot.threads[0].functions[1]);
  // Keys keep their documented order: allocations follow the records.
  std::ostringstream out;
  exporters::write_stats_json(snapshot, out);
  const std::string text = out.str();
  EXPECT_LT(text.find("\"threads_folded\""), text.find("\"allocations\""));
  EXPECT_LT(text.find("\"p999_ns\""), text.find("\"alloc_bytes_self\""));
}

// The CPU sampler's figures: per function, per thread and the top-level "cpu" object.
TEST(ExportStatsJson, CpuFiguresRoundTrip) {
  Snapshot snapshot = testing::known_snapshot();
  const json off = stats(snapshot);
  EXPECT_EQ(off["cpu"], (json{{"hz", 0},
                              {"period_ns", 0},
                              {"samples", 0},
                              {"signals", 0},
                              {"lost", 0},
                              {"incomplete", 0},
                              {"unstored", 0},
                              {"problem", ""}}));
  EXPECT_EQ(off["threads"][0]["cpu_samples"], 0);
  snapshot.functions[1].cpu_self_ns = 30'000'000;
  snapshot.functions[1].cpu_total_ns = 50'000'000;
  snapshot.threads[1].cpu_samples = 7;
  snapshot.cpu.hz = 100;
  snapshot.cpu.period_ns = 10'000'000;
  snapshot.cpu.samples = 12;
  snapshot.cpu.signals = 4;
  snapshot.cpu.lost = 1;
  snapshot.cpu.incomplete = 2;
  snapshot.cpu.unstored = 3;
  snapshot.cpu.problem = "stopped";
  const json j = stats(snapshot);
  expect_function(j["functions"][1], snapshot.functions[1]);
  EXPECT_EQ(j["functions"][1]["cpu_total_ns"], 50'000'000);
  EXPECT_EQ(j["threads"][1]["cpu_samples"], 7);
  EXPECT_EQ(j["cpu"], (json{{"hz", 100},
                            {"period_ns", 10'000'000},
                            {"samples", 12},
                            {"signals", 4},
                            {"lost", 1},
                            {"incomplete", 2},
                            {"unstored", 3},
                            {"problem", "stopped"}}));
}

TEST(ExportStatsJson, ExtremeValuesSurvive) {
  Snapshot snapshot = testing::known_snapshot();
  snapshot.counters[0].min = std::numeric_limits<std::int64_t>::min();
  snapshot.counters[0].max = std::numeric_limits<std::int64_t>::max();
  snapshot.functions[0].stats.max_ns = std::numeric_limits<std::uint64_t>::max();
  snapshot.functions[0].name = "bad \xFF utf-8";
  const json j = stats(snapshot);
  EXPECT_EQ(j["counters"][0]["min"].get<std::int64_t>(), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(j["counters"][0]["max"].get<std::int64_t>(), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(j["functions"][0]["max_ns"].get<std::uint64_t>(),
            std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(j["functions"][0]["name"], "bad \xEF\xBF\xBD utf-8");
}

} // namespace
} // namespace hotscope
