// Queues in every output: flow events in trace.json (every `f` after its `s`, both inside a
// slice), arrows in trace.txt, `queues` in stats.json, the Queues section of report.txt.
#include "export/export.hpp"
#include "snapshot_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

namespace hotscope {
namespace {

using nlohmann::json;

// Thread 0 "producer" pushes items 1 and 2 into "jobs" inside "produce", and item 3 outside
// any scope; thread 1 "consumer" pops 1 inside "consume", 2 outside any scope, 3 inside
// "consume", and 9, never pushed, inside it too.
Snapshot queue_snapshot() {
  testing::SnapshotBuilder b;
  const std::uint32_t producer = b.thread(100, "producer");
  const std::uint32_t consumer = b.thread(101, "consumer");
  b.begin(producer, 1000, "produce")
      .push(producer, 1100, "jobs", 1)
      .push(producer, 1200, "jobs", 2)
      .end(producer, 1300, "produce")
      .push(producer, 1400, "jobs", 3)
      .begin(consumer, 2000, "consume")
      .pop(consumer, 2100, "jobs", 1)
      .end(consumer, 2200, "consume")
      .pop(consumer, 2300, "jobs", 2)
      .begin(consumer, 2400, "consume")
      .pop(consumer, 2500, "jobs", 3)
      .pop(consumer, 2600, "jobs", 9)
      .end(consumer, 2700, "consume");
  Snapshot& s = b.snapshot();
  QueueStats jobs;
  jobs.name = "jobs";
  jobs.pushed = 3;
  jobs.popped = 4;
  jobs.depth = 0;
  jobs.max_depth = 3;
  jobs.capacity = 64;
  jobs.wait = {3, 3'300, 0, 1'000, 1'100, 1'100.0, 1'100, 1'100, 1'100, 1'100, 1'100, {}};
  jobs.popped_never_pushed = 1;
  jobs.pending_given_up = 2;
  jobs.pending = 1;
  jobs.oldest_pending_ns = 5'000'000;
  jobs.push_threads = {"producer"};
  jobs.pop_threads = {"consumer", "thread 102"};
  s.queues = {jobs};
  return b.build();
}

std::vector<json> events_of(const json& trace, const std::string& phase) {
  std::vector<json> events;
  for (const json& event : trace.at("traceEvents")) {
    if (event.at("ph") == phase) {
      events.push_back(event);
    }
  }
  return events;
}

TEST(ExportQueues, ChromeFlowsGoFromThePushingScopeToThePoppingScope) {
  std::ostringstream out;
  exporters::write_chrome_json(queue_snapshot(), out);
  const json trace = json::parse(out.str());
  const std::vector<json> starts = events_of(trace, "s");
  const std::vector<json> finishes = events_of(trace, "f");
  // Items 1, 2 and 3 start flows and finish them; item 9 was never pushed.
  ASSERT_EQ(starts.size(), 3u) << out.str();
  ASSERT_EQ(finishes.size(), 3u) << out.str();
  EXPECT_EQ(starts[0], (json{{"ph", "s"},
                             {"id", 1},
                             {"name", "jobs"},
                             {"cat", "queue"},
                             {"pid", 4242},
                             {"tid", 100},
                             {"ts", 1.1}}));
  EXPECT_EQ(finishes[0], (json{{"ph", "f"},
                               {"bp", "e"},
                               {"id", 1},
                               {"name", "jobs"},
                               {"cat", "queue"},
                               {"pid", 4242},
                               {"tid", 101},
                               {"ts", 2.1}}));
  EXPECT_EQ(starts[1].at("id"), 2);
  EXPECT_EQ(finishes[1].at("id"), 2);
  EXPECT_EQ(finishes[1].at("ts"), 2.3);
  EXPECT_EQ(finishes[1].at("bp"), "e");
  EXPECT_EQ(starts[2].at("id"), 3);
  EXPECT_EQ(starts[2].at("ts"), 1.4);
  EXPECT_EQ(finishes[2].at("id"), 3);
}

// A push or pop outside any scope (item 3's push, item 2's pop) binds its flow to a zero-length
// slice of its own, named after the operation; inside a scope there is none.
TEST(ExportQueues, ChromeFlowsOutsideAnyScopeGetASliceOfTheirOwn) {
  std::ostringstream out;
  exporters::write_chrome_json(queue_snapshot(), out);
  const json trace = json::parse(out.str());
  std::vector<std::string> lines;
  for (const json& event : trace.at("traceEvents")) {
    if (event.value("cat", "") == "queue") {
      lines.push_back(event.at("ph").get<std::string>() + " " +
                      event.at("name").get<std::string>() + " " +
                      std::to_string(event.at("tid").get<int>()) + " " + event.at("ts").dump());
    }
  }
  EXPECT_EQ(lines, (std::vector<std::string>{
                       "s jobs 100 1.1", "s jobs 100 1.2", "B push jobs 100 1.4", "s jobs 100 1.4",
                       "E push jobs 100 1.4", "f jobs 101 2.1", "B pop jobs 101 2.3",
                       "f jobs 101 2.3", "E pop jobs 101 2.3", "f jobs 101 2.5"}));
}

TEST(ExportQueues, TextTreeShowsArrowsWithTheItemId) {
  std::ostringstream out;
  exporters::write_text_tree(queue_snapshot(), out);
  const std::string text = out.str();
  EXPECT_NE(text.find("[0.001ms  ]   → jobs #1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("[0.001ms  ] → jobs #3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("[0.002ms  ]   ← jobs #1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("[0.002ms  ] ← jobs #2\n"), std::string::npos) << text;
}

TEST(ExportQueues, StatsJsonHasOneEntryPerQueue) {
  std::ostringstream out;
  exporters::write_stats_json(queue_snapshot(), out);
  const json queues = json::parse(out.str()).at("queues");
  ASSERT_EQ(queues.size(), 1u);
  EXPECT_EQ(queues[0], (json{{"name", "jobs"},
                             {"pushed", 3},
                             {"popped", 4},
                             {"depth", 0},
                             {"max_depth", 3},
                             {"capacity", 64},
                             {"waits", 3},
                             {"wait_total_ns", 3'300},
                             {"wait_mean_ns", 1'100.0},
                             {"wait_min_ns", 1'000},
                             {"wait_p50_ns", 1'100},
                             {"wait_p90_ns", 1'100},
                             {"wait_p95_ns", 1'100},
                             {"wait_p99_ns", 1'100},
                             {"wait_p999_ns", 1'100},
                             {"wait_max_ns", 1'100},
                             {"popped_never_pushed", 1},
                             {"pending", 1},
                             {"pending_given_up", 2},
                             {"oldest_pending_ns", 5'000'000},
                             {"push_threads", {"producer"}},
                             {"pop_threads", {"consumer", "thread 102"}}}));
  std::ostringstream none;
  exporters::write_stats_json(testing::known_snapshot(), none);
  EXPECT_EQ(json::parse(none.str()).at("queues"), json::array());
}

TEST(ExportQueues, ReportHasAQueuesSection) {
  std::ostringstream out;
  exporters::write_table(queue_snapshot(), out);
  const std::string text = out.str();
  EXPECT_NE(text.find("\nQueues (Wait = time in the queue"), std::string::npos) << text;
  EXPECT_NE(text.find("  Queue  Pushed  Popped  Push/s  Pop/s  Depth  Max  Capacity  Wait P50  "
                      "Wait P95  Wait P99  Wait Max  Pending   Oldest  Never Pushed  Given Up\n"
                      "  jobs        3       4   300.0  400.0      0    3        64   1.10 µs   "
                      "1.10 µs   1.10 µs   1.10 µs        1  5.00 ms             1         2\n"
                      "  jobs: pushed by producer; popped by consumer, thread 102\n"),
            std::string::npos)
      << text;
  std::ostringstream none;
  exporters::write_table(testing::known_snapshot(), none);
  EXPECT_EQ(none.str().find("Queues"), std::string::npos);
}

} // namespace
} // namespace hotscope
