// slow.txt, slow.json and the kept calls' tracks in trace.json, from a hand-built snapshot.
#include "export/export.hpp"
#include "snapshot_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

namespace hotscope {
namespace {

std::uint32_t name_id(Snapshot& s, const std::string& name) {
  for (std::uint32_t i = 0; i < s.names.size(); ++i) {
    if (s.names[i] == name) {
      return i;
    }
  }
  s.names.push_back(name);
  return static_cast<std::uint32_t>(s.names.size() - 1);
}

// known_snapshot() with two kept calls of Tree::insert on main, the slower one holding a message
// and a counter, and one call of load cut after 2 events. The window has none of them.
Snapshot snapshot_with_slow_calls() {
  Snapshot s = testing::known_snapshot();
  const std::uint32_t insert = name_id(s, "Tree::insert");
  const std::uint32_t message = name_id(s, "cache miss");
  const std::uint32_t counter = name_id(s, "depth");
  const std::uint32_t load = name_id(s, "load");
  const std::uint32_t parse = name_id(s, "parse");
  SlowCall slow;
  slow.id = 17;
  slow.function = insert;
  slow.thread = 0;
  slow.thread_name = "main";
  slow.os_tid = 4242;
  slow.start_ns = 100'000;
  slow.duration_ns = 2'500'000;
  slow.allocations = 3;
  slow.allocated_bytes = 2048;
  slow.events = {{100'000, 0, EventKind::Begin, insert, 0},
                 {600'000, 0, EventKind::Message, message, 0},
                 {700'000, 0, EventKind::Counter, counter, 12},
                 {2'600'000, 0, EventKind::End, insert, 0}};
  SlowCall fast = slow;
  fast.id = 18;
  fast.start_ns = 3'000'000;
  fast.duration_ns = 1'000'000;
  fast.allocations = 0;
  fast.allocated_bytes = 0;
  fast.events = {{3'000'000, 0, EventKind::Begin, insert, 0},
                 {4'000'000, 0, EventKind::End, insert, 0}};
  SlowCall cut;
  cut.id = 5;
  cut.function = load;
  cut.thread = 1;
  cut.thread_name = "thread 4243";
  cut.os_tid = 4243;
  cut.start_ns = 1'000'000;
  cut.duration_ns = 5'000'000;
  cut.cpu_samples = 2;
  cut.cut_events = 40;
  cut.cut_at_ns = 1'200'000;
  cut.events = {{1'000'000, 1, EventKind::Begin, load, 0},
                {1'200'000, 1, EventKind::Begin, parse, 0},
                {6'000'000, 1, EventKind::End, load, 0}};
  s.slow_calls = {slow, fast, cut};
  s.slow_call_figures = {4, 16u << 20, 3, 1, 1};
  s.memory.slow_calls = 3000;
  return s;
}

std::string written(void (*write)(const Snapshot&, std::ostream&), const Snapshot& s) {
  std::ostringstream out;
  write(s, out);
  return out.str();
}

TEST(ExportSlowCalls, SlowTxtListsEachCallAsTraceTxtsTree) {
  EXPECT_EQ(written(exporters::write_slow_text, snapshot_with_slow_calls()),
            "hotscope 0.1.0: demo (pid 4242), the slowest calls of each function: 4 per function "
            "(HOTSCOPE_SLOWEST), 3 kept, 1 evicted, 2.93 KiB of 16.00 MiB "
            "(HOTSCOPE_SLOWEST_MIB)\n"
            "\n"
            "Tree::insert: 2.50 ms on main (tid 4242) from 2023-11-14 22:13:20.000100 UTC, call "
            "17, 3 allocations (2.00 KiB)\n"
            "[0.000ms  ] > Tree::insert\n"
            "[0.500ms  ]   - cache miss\n"
            "[0.600ms  ]   # depth = 12\n"
            "[2.500ms  ] < Tree::insert\n"
            "\n"
            "Tree::insert: 1.00 ms on main (tid 4242) from 2023-11-14 22:13:20.003000 UTC, call "
            "18, 0 allocations\n"
            "[0.000ms  ] > Tree::insert\n"
            "[1.000ms  ] < Tree::insert\n"
            "\n"
            "load: 5.00 ms on thread 4243 (tid 4243) from 2023-11-14 22:13:20.001000 UTC, call 5, "
            "0 allocations, 2 CPU samples, cut: 40 events not kept\n"
            "[0.000ms  ] > load\n"
            "[0.200ms  ]   > parse\n"
            "[0.200ms  ]     … 40 events not kept (more than 4096 in this call)\n"
            "[5.000ms  ] < load\n");
  Snapshot off = testing::known_snapshot();
  EXPECT_NE(written(exporters::write_slow_text, off).find("(off: HOTSCOPE_SLOWEST=0)"),
            std::string::npos);
}

TEST(ExportSlowCalls, SlowJsonHasTheFiguresAndEachCallWithItsTreeAndEvents) {
  const Snapshot s = snapshot_with_slow_calls();
  const auto json = nlohmann::json::parse(written(exporters::write_slow_json, s));
  EXPECT_EQ(json.at("per_function"), 4);
  EXPECT_EQ(json.at("budget_bytes"), 16u << 20);
  EXPECT_EQ(json.at("bytes"), 3000);
  EXPECT_EQ(json.at("kept"), 3);
  EXPECT_EQ(json.at("evicted"), 1);
  EXPECT_EQ(json.at("cut"), 1);
  ASSERT_EQ(json.at("calls").size(), 3u);
  const auto& first = json.at("calls")[0];
  EXPECT_EQ(first.at("id"), "17");
  EXPECT_EQ(first.at("function"), "Tree::insert");
  EXPECT_EQ(first.at("thread"), "main");
  EXPECT_EQ(first.at("os_tid"), 4242);
  EXPECT_EQ(first.at("start_unix_ns"), s.start_unix_ns + 100'000);
  EXPECT_EQ(first.at("duration_ns"), 2'500'000);
  EXPECT_EQ(first.at("allocations"), 3);
  EXPECT_EQ(first.at("allocated_bytes"), 2048);
  EXPECT_EQ(first.at("cpu_samples"), 0);
  EXPECT_EQ(first.at("cut_events"), 0);
  EXPECT_EQ(first.at("tree"), exporters::slow_call_tree(s, s.slow_calls[0]));
  EXPECT_EQ(
      first.at("events")[2],
      (nlohmann::json{{"at_ns", 600'000}, {"kind", "counter"}, {"name", "depth"}, {"value", 12}}));
  EXPECT_EQ(json.at("calls")[2].at("cut_at_ns"), 200'000);
}

// /v1/slow's choices: one function's calls, at most `top` per function.
TEST(ExportSlowCalls, KeepSlowCallsChoosesByFunctionAndTop) {
  Snapshot s = snapshot_with_slow_calls();
  exporters::keep_slow_calls(s, nullptr, 1);
  ASSERT_EQ(s.slow_calls.size(), 2u);
  EXPECT_EQ(s.slow_calls[0].id, 17u);
  EXPECT_EQ(s.slow_calls[1].id, 5u);
  s = snapshot_with_slow_calls();
  const std::string load = "load";
  exporters::keep_slow_calls(s, &load, 0);
  ASSERT_EQ(s.slow_calls.size(), 1u);
  EXPECT_EQ(s.slow_calls[0].id, 5u);
  const std::string unknown = "Tree::inser";
  exporters::keep_slow_calls(s, &unknown, 0);
  EXPECT_TRUE(s.slow_calls.empty());
}

// trace.json: the kept calls on a process of their own, a track per thread, a call inside one
// already shown not repeated.
TEST(ExportSlowCalls, TraceJsonCarriesTheKeptCallsOnTracksOfTheirOwn) {
  Snapshot s = snapshot_with_slow_calls();
  SlowCall inner = s.slow_calls[0];
  inner.id = 30;
  inner.start_ns = 200'000;
  inner.duration_ns = 100'000;
  inner.events = {{200'000, 0, EventKind::Begin, inner.function, 0},
                  {300'000, 0, EventKind::End, inner.function, 0}};
  s.slow_calls.push_back(inner);
  const auto json = nlohmann::json::parse(written(exporters::write_chrome_json, s));
  const std::int64_t pid = (std::int64_t{1} << 30) - 1;
  std::vector<nlohmann::json> slow;
  for (const auto& event : json.at("traceEvents")) {
    if (event.at("pid") == pid) {
      slow.push_back(event);
    }
  }
  ASSERT_FALSE(slow.empty());
  EXPECT_EQ(slow[0].at("args").at("name"), "demo: slowest calls");
  std::vector<std::string> main_track;
  for (const auto& event : slow) {
    if (event.at("tid") == 1 && event.at("ph") != "M") {
      main_track.push_back(event.at("ph").get<std::string>() + " " +
                           event.at("name").get<std::string>() + " " + event.at("ts").dump());
    }
    if (event.at("tid") == 1 && event.at("ph") == "M") {
      EXPECT_EQ(event.at("args").at("name"), "slowest calls of main");
    }
  }
  // Each call's id on an instant at its start (the inner call, within the first, is not drawn
  // again); the slices carry no arguments, which speedscope would take into their frames' names.
  EXPECT_EQ(main_track, (std::vector<std::string>{
                            "i kept call 100.0", "B Tree::insert 100.0", "i cache miss 600.0",
                            "i depth 700.0", "E Tree::insert 2600.0", "i kept call 3000.0",
                            "B Tree::insert 3000.0", "E Tree::insert 4000.0"}));
  for (const auto& event : slow) {
    if (event.at("ph") == "B") {
      EXPECT_FALSE(event.contains("args")) << event.dump();
    }
    if (event.at("name") == "kept call" && event.at("tid") == 1 && event.at("ts") == 100.0) {
      EXPECT_EQ(event.at("args").at("call_id"), std::to_string(s.slow_calls[0].id));
    }
  }
  bool cut_marked = false;
  for (const auto& event : slow) {
    cut_marked = cut_marked || (event.at("name") == "… 40 events not kept" && event.at("tid") == 2);
  }
  EXPECT_TRUE(cut_marked);
  std::vector<std::string> load_track; // parse, open at the cut, ends there
  for (const auto& event : slow) {
    if (event.at("tid") == 2 && (event.at("ph") == "B" || event.at("ph") == "E")) {
      load_track.push_back(event.at("ph").get<std::string>() + " " +
                           event.at("name").get<std::string>() + " " + event.at("ts").dump());
    }
  }
  EXPECT_EQ(load_track, (std::vector<std::string>{"B load 1000.0", "B parse 1200.0",
                                                  "E parse 1200.0", "E load 6000.0"}));
}

TEST(ExportSlowCalls, StatsJsonReportsTheirMemoryAndFigures) {
  const auto json =
      nlohmann::json::parse(written(exporters::write_stats_json, snapshot_with_slow_calls()));
  EXPECT_EQ(json.at("memory").at("slow_calls_bytes"), 3000);
  EXPECT_EQ(json.at("slow_calls_figures"), (nlohmann::json{{"per_function", 4},
                                                           {"budget_bytes", 16u << 20},
                                                           {"kept", 3},
                                                           {"evicted", 1},
                                                           {"cut", 1}}));
}

} // namespace
} // namespace hotscope
