// Runs queue_program (two threads, a known delay in the queue) with HOTSCOPE_OUT and checks the
// queue in what it wrote: stats.json, report.txt, trace.txt and the flow events of trace.json.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/files.hpp"
#include "support/scratch_dir.hpp"
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

namespace {

namespace fs = std::filesystem;
using hotscope::test_support::slurp;
using Json = nlohmann::json;

constexpr int kDelayMs = 100;

TEST(QueueProgram, ItemsWaitTheDelayTheConsumerInserts) {
  const hotscope::testing::ScratchDir scratch("queue-program");
  const fs::path out = scratch.path() / "out";
  const std::string command = "timeout 60 env HOTSCOPE_OUT=" + out.string() + " " + QUEUE_PROGRAM +
                              " " + std::to_string(kDelayMs) + " 2>" +
                              (scratch.path() / "stderr").string();
  ASSERT_EQ(std::system(command.c_str()), 0) << slurp(scratch.path() / "stderr");

  const Json queues = Json::parse(slurp(out / "stats.json")).at("queues");
  ASSERT_EQ(queues.size(), 1u) << queues.dump(1);
  const Json& handoff = queues[0];
  EXPECT_EQ(handoff.at("name"), "handoff");
  EXPECT_EQ(handoff.at("pushed"), 11);
  EXPECT_EQ(handoff.at("popped"), 11);
  EXPECT_EQ(handoff.at("waits"), 11);
  EXPECT_EQ(handoff.at("depth"), 0);
  EXPECT_EQ(handoff.at("max_depth"), 1) << "depth in time order, whatever order rings drain in";
  EXPECT_EQ(handoff.at("capacity"), 1);
  EXPECT_EQ(handoff.at("pending"), 0);
  EXPECT_EQ(handoff.at("popped_never_pushed"), 0);
  EXPECT_EQ(handoff.at("push_threads"), Json::array({"producer"}));
  EXPECT_EQ(handoff.at("pop_threads"), Json::array({"consumer"}));
  const double p50_ms = handoff.at("wait_p50_ns").get<double>() / 1e6;
  EXPECT_NEAR(p50_ms, kDelayMs, kDelayMs * 0.10) << handoff.dump(1);
  EXPECT_GE(handoff.at("wait_min_ns").get<double>() / 1e6, kDelayMs * 0.99) << handoff.dump(1);

  const std::string report = slurp(out / "report.txt");
  EXPECT_NE(report.find("\nQueues (Wait = time in the queue"), std::string::npos) << report;
  EXPECT_NE(report.find("  handoff: pushed by producer; popped by consumer\n"), std::string::npos);
  const std::string text = slurp(out / "trace.txt");
  EXPECT_NE(text.find("  → handoff #1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  ← handoff #11\n"), std::string::npos) << text;

  // Every `f` follows its `s`, from the producer's thread to the consumer's: one per item.
  const Json trace = Json::parse(slurp(out / "trace.json"));
  std::map<std::uint64_t, Json> started;
  std::size_t finished = 0;
  for (const Json& event : trace.at("traceEvents")) {
    if (event.at("ph") == "s") {
      EXPECT_TRUE(started.emplace(event.at("id").get<std::uint64_t>(), event).second);
    } else if (event.at("ph") == "f") {
      const auto start = started.find(event.at("id").get<std::uint64_t>());
      ASSERT_NE(start, started.end()) << event.dump();
      EXPECT_EQ(event.at("name"), start->second.at("name"));
      EXPECT_EQ(event.at("cat"), start->second.at("cat"));
      EXPECT_NE(event.at("tid"), start->second.at("tid"));
      EXPECT_GE(event.at("ts").get<double>() - start->second.at("ts").get<double>(),
                kDelayMs * 1000 * 0.99);
      ++finished;
    }
  }
  EXPECT_EQ(started.size(), 11u);
  EXPECT_EQ(finished, 11u);
}

} // namespace
