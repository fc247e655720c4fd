// What every thread is doing now (/v1/threads, `hotscope threads`), from a hand-built snapshot,
// and the CPU column of report.txt's threads.
#include "export/export.hpp"
#include "snapshot_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

namespace hotscope {
namespace {

using nlohmann::json;

// main has been inside serve > wait for 2 s (stuck at 1 s), the loader inside load for 1.5 s,
// a third thread "idle" has no scope open, a fourth has exited.
Snapshot threads_snapshot() {
  Snapshot s = testing::known_snapshot();
  s.duration_ns = 3'000'000'000;
  s.threads[0].open_scopes = {{"serve", "main.cpp", 10, 500'000'000, 2'500'000'000},
                              {"wait", "main.cpp", 20, 1'000'000'000, 2'000'000'000}};
  s.threads[0].os = {"S", 1'200'000, 300'000, 12, 3};
  s.threads[1].open_scopes = {{"load", "io.cpp", 5, 1'500'000'000, 1'500'000'000}};
  s.threads[1].os = {"R", 900'000'000, 0, 1, 40};
  ThreadInfo idle;
  idle.index = 2;
  idle.os_tid = 4244;
  idle.name = "idle";
  s.threads.push_back(idle);
  ThreadInfo gone;
  gone.index = 3;
  gone.os_tid = 4245;
  gone.exited = true;
  s.threads.push_back(gone);
  return s;
}

json threads(const Snapshot& snapshot, std::uint64_t stuck_ns) {
  std::ostringstream out;
  exporters::write_threads_json(snapshot, stuck_ns, out);
  return json::parse(out.str());
}

std::vector<std::string> order(const json& answer) {
  std::vector<std::string> names;
  for (const json& thread : answer.at("threads")) {
    names.push_back(thread.at("name"));
  }
  return names;
}

TEST(ExportThreads, JsonHasTheSeamsFields) {
  const json answer = threads(threads_snapshot(), 1'000'000'000);
  EXPECT_EQ(answer.at("pid"), 4242);
  EXPECT_EQ(answer.at("process_name"), "demo");
  EXPECT_EQ(answer.at("now_ns"), 3'000'000'000);
  EXPECT_EQ(answer.at("stuck_threshold_ns"), 1'000'000'000);
  const json& main_thread = answer.at("threads").at(0);
  EXPECT_EQ(main_thread, (json{{"index", 0},
                               {"os_tid", 4242},
                               {"name", "main"},
                               {"exited", false},
                               {"state", "S"},
                               {"cpu_user_ns", 1'200'000},
                               {"cpu_system_ns", 300'000},
                               {"voluntary_switches", 12},
                               {"involuntary_switches", 3},
                               {"records", {{"written", 12}, {"kept", 11}, {"dropped", 1}}},
                               {"open_scopes",
                                {{{"name", "serve"},
                                  {"file", "main.cpp"},
                                  {"line", 10},
                                  {"opened_ns", 500'000'000},
                                  {"open_ns", 2'500'000'000}},
                                 {{"name", "wait"},
                                  {"file", "main.cpp"},
                                  {"line", 20},
                                  {"opened_ns", 1'000'000'000},
                                  {"open_ns", 2'000'000'000}}}},
                               {"stuck", true}}));
}

TEST(ExportThreads, StuckThreadsFirstLongestOpenFirstThenByIndex) {
  // At 1 s both are stuck, main's innermost scope the longer; then idle and the exited one.
  const json at_one_second = threads(threads_snapshot(), 1'000'000'000);
  EXPECT_EQ(order(at_one_second), (std::vector<std::string>{"main", "", "idle", ""}));
  EXPECT_TRUE(at_one_second.at("threads").at(1).at("stuck"));
  // At 1.8 s only main; the loader goes back to its place by index.
  const json later = threads(threads_snapshot(), 1'800'000'000);
  EXPECT_EQ(later.at("threads").at(1).at("os_tid"), 4243);
  EXPECT_FALSE(later.at("threads").at(1).at("stuck"));
  // The loader's inner scope is the longer-open one only if main's is shorter: swap them.
  Snapshot swapped = threads_snapshot();
  swapped.threads[1].open_scopes.back().open_ns = 2'900'000'000;
  EXPECT_EQ(threads(swapped, 1'000'000'000).at("threads").at(0).at("os_tid"), 4243);
  // Nothing stuck: index order.
  const json none = threads(threads_snapshot(), 10'000'000'000);
  EXPECT_EQ(order(none), (std::vector<std::string>{"main", "", "idle", ""}));
  EXPECT_EQ(none.at("threads").at(3).at("exited"), true);
  EXPECT_EQ(none.at("threads").at(3).at("state"), "");
}

TEST(ExportThreads, TextIndentsTheStackAndMarksStuckThreads) {
  std::ostringstream out;
  exporters::write_threads_text(threads_snapshot(), 1'800'000'000, out);
  const std::string text = out.str();
  EXPECT_NE(text.find("hotscope 0.1.0: demo (pid 4242), 3.00 s into the window\n"
                      "1 of 4 threads stuck (innermost scope open longer than 1.80 s)\n\n"
                      "== main (tid 4242) == STUCK for 2.00 s in wait\n"
                      "state S, CPU 1.20 ms user + 300.00 µs system, context switches 12 voluntary "
                      "+ 3 involuntary\n"
                      "records: written=12 kept=11 dropped=1\n"
                      "serve (main.cpp:10)  open 2.50 s\n"
                      "  wait (main.cpp:20)  open 2.00 s\n\n"
                      "== thread 4243 (tid 4243) ==\n"),
            std::string::npos)
      << text;
  // No figures from /proc (as for a thread that ended meanwhile): no state line.
  EXPECT_NE(text.find("== idle (tid 4244) ==\nrecords:"), std::string::npos) << text;
  EXPECT_NE(text.find("== thread 4245 (tid 4245, exited) ==\nrecords: written=0 kept=0 "
                      "dropped=0\n(no scope open)\n"),
            std::string::npos)
      << text;
}

TEST(ExportThreads, ReportHasACpuColumnPerThread) {
  std::ostringstream out;
  exporters::write_table(threads_snapshot(), out);
  const std::string text = out.str();
  EXPECT_NE(text.find("  Thread        TID  State   CPU User  CPU System  Voluntary Sw  "
                      "Involuntary Sw  Records  Dropped\n"
                      "  main         4242      S    1.20 ms   300.00 µs            12        "
                      "       3       12        1\n"
                      "  thread 4243  4243      R  900.00 ms        0 ns             1        "
                      "      40        8        1\n"
                      "  idle         4244      -          -           -             -        "
                      "       -        0        0\n"),
            std::string::npos)
      << text;
}

TEST(ExportThreads, StatsJsonCarriesTheCpuFigures) {
  std::ostringstream out;
  exporters::write_stats_json(threads_snapshot(), out);
  const json thread = json::parse(out.str()).at("threads").at(1);
  EXPECT_EQ(thread.at("state"), "R");
  EXPECT_EQ(thread.at("cpu_user_ns"), 900'000'000);
  EXPECT_EQ(thread.at("cpu_system_ns"), 0);
  EXPECT_EQ(thread.at("voluntary_switches"), 1);
  EXPECT_EQ(thread.at("involuntary_switches"), 40);
}

} // namespace
} // namespace hotscope
