// Locks in the outputs written inside the process (docs/locks.md, "Outputs"): stats.json's and
// /v1/locks's keys, /v1/threads's deadlocks, report.txt's Locks section, the flow from a release
// to the wait it ended in trace.json, and the waits as frames of trace.folded.
#include "export/export.hpp"
#include "snapshot_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

namespace hotscope {
namespace {

using nlohmann::json;

json stats_json(const Snapshot& snapshot) {
  std::ostringstream out;
  exporters::write_stats_json(snapshot, out);
  return json::parse(out.str());
}

// An object's keys in the order written.
std::vector<std::string> keys_of(const std::string& text, const std::string& pointer) {
  const nlohmann::ordered_json document = nlohmann::ordered_json::parse(text);
  std::vector<std::string> keys;
  for (const auto& [key, value] :
       document.at(nlohmann::ordered_json::json_pointer(pointer)).items()) {
    keys.push_back(key);
  }
  return keys;
}

TEST(ExportLocks, StatsJsonHasEveryLockKeyInOrder) {
  std::ostringstream out;
  exporters::write_stats_json(testing::known_snapshot_with_locks(), out);
  const json stats = json::parse(out.str());
  // The keys in the contract's order, after the tasks.
  const std::vector<std::string> keys = keys_of(out.str(), "");
  const auto tasks = std::find(keys.begin(), keys.end(), "tasks");
  ASSERT_LT(tasks + 4, keys.end());
  EXPECT_EQ(std::vector<std::string>(tasks + 1, tasks + 5),
            (std::vector<std::string>{"locks", "deadlocks", "lock_inversions", "lock_figures"}));
  EXPECT_EQ(keys_of(out.str(), "/locks/0"),
            (std::vector<std::string>{
                "name",        "kind",          "acquisitions", "contended",    "try_failed",
                "waits",       "wait_total_ns", "wait_mean_ns", "wait_min_ns",  "wait_p50_ns",
                "wait_p90_ns", "wait_p95_ns",   "wait_p99_ns",  "wait_p999_ns", "wait_max_ns",
                "holds",       "hold_total_ns", "hold_mean_ns", "hold_min_ns",  "hold_p50_ns",
                "hold_p90_ns", "hold_p95_ns",   "hold_p99_ns",  "hold_p999_ns", "hold_max_ns",
                "top_waiters", "contended_at",  "holders",      "waiters"}));
  EXPECT_EQ(keys_of(out.str(), "/locks/1").at(2), "address");
  const json& cache = stats.at("locks").at(0);
  EXPECT_EQ(cache.at("waits"), 2);
  EXPECT_EQ(cache.at("wait_total_ns"), 700);
  EXPECT_EQ(cache.at("wait_p50_ns"), 200);
  EXPECT_EQ(cache.at("wait_max_ns"), 500);
  EXPECT_EQ(cache.at("holds"), 10);
  EXPECT_EQ(cache.at("hold_p99_ns"), 1'400'000);
  EXPECT_EQ(cache.at("top_waiters"),
            (json::array({{{"thread", "locker-b"}, {"waits", 2}, {"wait_ns", 700}}})));
  // The stack's return address named after its call.
  EXPECT_EQ(cache.at("contended_at").at(0), (json{{"scopes", {"update"}},
                                                  {"stack", {"std::terminate()"}},
                                                  {"waits", 1},
                                                  {"wait_ns", 500}}));
  EXPECT_EQ(
      cache.at("holders"),
      (json::array(
          {{{"thread", "locker-a"}, {"os_tid", 100}, {"for_ns", 5'000'000}, {"shared", false}}})));
  EXPECT_EQ(cache.at("waiters").at(0).at("os_tid"), 101);

  const json& m2 = stats.at("locks").at(1);
  EXPECT_EQ(m2.at("address"), "0x55d0c0de1000");
  EXPECT_EQ(m2.at("kind"), "pthread_mutex");
  EXPECT_EQ(m2.at("try_failed"), 1);
  EXPECT_EQ(m2.at("waits"), 0);
  EXPECT_EQ(m2.at("contended_at").at(0).at("stack"), json::array({"0x10"}));
  EXPECT_EQ(m2.at("holders").at(0).at("shared"), true);
  EXPECT_FALSE(cache.contains("address")); // a named lock: all its instances

  EXPECT_EQ(stats.at("lock_figures"),
            (json{{"deadlocks_found", 1}, {"order_edges", 4}, {"given_up", 5}}));
  const json& inversion = stats.at("lock_inversions").at(0);
  EXPECT_EQ(inversion, (json{{"first", "cache_mutex"},
                             {"second", "m2"},
                             {"thread_one", "locker-a"},
                             {"site_one", {{"scopes", {"flush"}}, {"stack", json::array()}}},
                             {"thread_two", "locker-b"},
                             {"site_two",
                              {{"scopes", json::array()}, {"stack", {"std::terminate()", "0x10"}}}},
                             {"found_ns", 1234}}));
}

// The same members as stats.json in /v1/locks, and the deadlocks in /v1/threads.
TEST(ExportLocks, LocksAnswerAndThreadsCarryTheDeadlocks) {
  const Snapshot snapshot = testing::known_snapshot_with_locks();
  const json stats = stats_json(snapshot);
  std::ostringstream locks_out;
  exporters::write_locks_json(snapshot, locks_out);
  const json locks = json::parse(locks_out.str());
  EXPECT_EQ(locks, (json{{"locks", stats.at("locks")},
                         {"deadlocks", stats.at("deadlocks")},
                         {"lock_inversions", stats.at("lock_inversions")},
                         {"lock_figures", stats.at("lock_figures")}}));

  std::ostringstream threads_out;
  exporters::write_threads_json(snapshot, 1'000'000'000, threads_out);
  const json deadlocks = json::parse(threads_out.str()).at("deadlocks");
  EXPECT_EQ(deadlocks, stats.at("deadlocks"));
  ASSERT_EQ(deadlocks.size(), 1u);
  ASSERT_EQ(deadlocks[0].at("cycle").size(), 2u);
  EXPECT_EQ(
      deadlocks[0].at("cycle").at(0),
      (json{
          {"waiter",
           {{"thread", "locker-a"}, {"os_tid", 100}, {"for_ns", 3'000'000}, {"shared", false}}},
          {"lock", "m2"},
          {"holder",
           {{"thread", "locker-b"}, {"os_tid", 101}, {"for_ns", 12'300'000'000}, {"shared", true}}},
          {"waiter_scopes", {"flush"}}}));
  EXPECT_EQ(deadlocks[0].at("cycle").at(1).at("waiter_scopes"), (json{"update", "inner"}));
}

// `hotscope threads` prints the deadlocks before the threads.
TEST(ExportLocks, ThreadsTextBeginsWithTheDeadlocks) {
  std::ostringstream out;
  exporters::write_threads_text(testing::known_snapshot_with_locks(), 1'000'000'000, out);
  const std::string text = out.str();
  const std::string deadlock =
      "\ndeadlock: locker-a waits for m2 (held by locker-b for 12.30 s) → locker-b waits for "
      "cache_mutex (held by locker-a for 12.50 s)\n"
      "  locker-a in flush\n"
      "  locker-b in update > inner\n";
  const auto found = text.find(deadlock);
  ASSERT_NE(found, std::string::npos) << text;
  EXPECT_LT(found, text.find("== locker-a")) << text;
  std::ostringstream without;
  exporters::write_threads_text(testing::known_snapshot(), 1'000'000'000, without);
  EXPECT_EQ(without.str().find("deadlock"), std::string::npos);
}

TEST(ExportLocks, NoLocksNoEntriesButTheKeys) {
  const json stats = stats_json(testing::known_snapshot());
  EXPECT_EQ(stats.at("locks"), json::array());
  EXPECT_EQ(stats.at("deadlocks"), json::array());
  EXPECT_EQ(stats.at("lock_inversions"), json::array());
  EXPECT_EQ(stats.at("lock_figures").at("deadlocks_found"), 0);
}

TEST(ExportLocks, ReportHasALocksSectionThenDeadlocksThenInversions) {
  std::ostringstream out;
  exporters::write_table(testing::known_snapshot_with_locks(), out);
  const std::string text = out.str();
  const auto locks = text.find("\nLocks (");
  const auto deadlocks = text.find("\nDeadlocks standing: 1\n");
  const auto inversions = text.find("\nLock-order inversions: 1\n");
  ASSERT_NE(locks, std::string::npos) << text;
  ASSERT_NE(deadlocks, std::string::npos) << text;
  ASSERT_NE(inversions, std::string::npos) << text;
  EXPECT_LT(locks, deadlocks);
  EXPECT_LT(deadlocks, inversions);
  for (const char* line :
       {"  Lock                  Kind  Acquisitions  Contended  Try Failed  Wait P50  Wait P99  "
        "Wait Max  Wait Total  Hold P50  Hold P99  Hold Max  Top Waiter\n",
        "  cache_mutex          mutex            10          2           0    200 ns    500 ns    "
        "500 ns      700 ns   1.00 ms   1.40 ms   1.50 ms    locker-b\n",
        "  m2           pthread_mutex             3          0           1         -         -     "
        "  "
        "  -           -         -         -         -           -\n",
        "  cache_mutex: 1 waits, 500 ns at update, in std::terminate()\n",
        "  cache_mutex: 1 waits, 200 ns at (no scope, no stack)\n",
        "  cache_mutex: held by locker-a (tid 100) for 5.00 ms\n",
        "  cache_mutex: waited for by locker-b (tid 101) for 2.00 ms\n",
        "  m2: held by locker-b (tid 101) for 7.00 ms (shared)\n",
        "  deadlock: locker-a waits for m2 (held by locker-b for 12.30 s) → locker-b waits for "
        "cache_mutex (held by locker-a for 12.50 s)\n",
        "    locker-a in flush\n", "    locker-b in update > inner\n",
        "  cache_mutex then m2 by locker-a at flush\n",
        "    m2 then cache_mutex by locker-b at std::terminate() < 0x10\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << text;
  }
}

TEST(ExportLocks, ReportWithoutLocksHasNoLocksSection) {
  std::ostringstream out;
  exporters::write_table(testing::known_snapshot(), out);
  EXPECT_EQ(out.str().find("Locks"), std::string::npos);
}

// A wait is a complete slice on the waiting thread. The release that let a waiter in starts a
// flow (inside the releasing thread's scope, or a zero-length "release" slice of its own) that
// the waiter's acquisition finishes (inside its scope, or an "acquire" slice of its own); a wait
// given up ends none.
TEST(ExportLocks, ChromeFlowFromTheReleaseToTheWaitersAcquisition) {
  std::ostringstream out;
  exporters::write_chrome_json(testing::known_snapshot_with_locks(), out);
  const json trace = json::parse(out.str());
  std::vector<std::string> lines;
  for (const json& event : trace.at("traceEvents")) {
    if (event.value("cat", "") == "lock") {
      lines.push_back(event.at("ph").get<std::string>() + " " +
                      event.at("name").get<std::string>() + " " +
                      std::to_string(event.at("tid").get<int>()) + " " + event.at("ts").dump() +
                      (event.contains("dur") ? " dur " + event.at("dur").dump() : "") +
                      (event.contains("id") ? " id " + event.at("id").dump() : "") +
                      (event.contains("bp") ? " bp " + event.at("bp").get<std::string>() : ""));
    }
  }
  EXPECT_EQ(lines, (std::vector<std::string>{
                       "s cache_mutex 100 1.5 id 1",
                       "X wait for cache_mutex 101 1.1 dur 0.5",
                       "f cache_mutex 101 1.6 id 1 bp e",
                       "B release cache_mutex 100 2.5",
                       "s cache_mutex 100 2.5 id 2",
                       "E release cache_mutex 100 2.5",
                       "X wait for cache_mutex 101 2.4 dur 0.2",
                       "B acquire cache_mutex 101 2.6",
                       "f cache_mutex 101 2.6 id 2 bp e",
                       "E acquire cache_mutex 101 2.6",
                       "X wait for m2 101 3.0 dur 0.5",
                   }));
}

// A wait is a frame of its own, "wait for NAME", above the scope it was in.
TEST(ExportLocks, FoldedStacksNameTheWait) {
  std::ostringstream out;
  exporters::write_folded(testing::known_snapshot_with_locks(), out);
  const std::string text = out.str();
  for (const char* line :
       {"demo;locker-b;update;wait for cache_mutex 500\n", "demo;locker-b;update 500\n",
        "demo;locker-b;wait for cache_mutex 200\n", "demo;locker-b;wait for m2 500\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << text;
  }
}

} // namespace
} // namespace hotscope
