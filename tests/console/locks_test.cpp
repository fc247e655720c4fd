// The locks as the tools read and show them (docs/locks.md): stats.json's and GET /v1/locks'
// "locks", "deadlocks", "lock_inversions" and "lock_figures" read by profiles/ (checked key by
// key), the deadlocks of GET /v1/threads, `hotscope locks`' and `hotscope threads`' text, and the
// console's locks tab and threads banner.
#include "agent_client.hpp"
#include "agent_commands.hpp"
#include "console/model.hpp"
#include "console/view.hpp"
#include "locks_text.hpp"
#include "profiles/profiles.hpp"
#include "report/report.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace {

using namespace hotscope::cli;
using Json = nlohmann::json;

Json lock_thread(const char* name, std::int64_t tid, std::uint64_t for_ns) {
  return {{"thread", name}, {"os_tid", tid}, {"for_ns", for_ns}, {"shared", false}};
}

// The shape of docs/formats-output.md: two locks, a deadlock between locker-a and locker-b, an
// inversion of m1 and m2.
Json locks_answer() {
  Json m1 = {{"name", "m1"},
             {"kind", "mutex"},
             {"acquisitions", 120},
             {"contended", 7},
             {"try_failed", 2},
             {"waits", 7},
             {"wait_total_ns", 70'000'000},
             {"wait_mean_ns", 10'000'000.5},
             {"wait_p50_ns", 10'000'000},
             {"wait_p95_ns", 11'000'000},
             {"wait_p99_ns", 12'000'000},
             {"wait_max_ns", 13'000'000},
             {"holds", 0},
             {"top_waiters", {{{"thread", "locker-b"}, {"waits", 7}, {"wait_ns", 70'000'000}}}},
             {"contended_at",
              {{{"scopes", {"transfer", "lock both"}},
                {"stack", {"lock_both", "main"}},
                {"waits", 7},
                {"wait_ns", 70'000'000}}}},
             {"holders", {lock_thread("locker-a", 11, 12'500'000'000)}},
             {"waiters", {lock_thread("locker-b", 12, 12'300'000'000)}}};
  Json m2 = {{"name", "m2"},
             {"kind", "shared_mutex"},
             {"address", "0x55d0c0de1000"},
             {"acquisitions", 5},
             {"contended", 0},
             {"waits", 0},
             {"holds", 5},
             {"hold_p99_ns", 2'000},
             {"holders", {lock_thread("locker-b", 12, 12'300'000'000)}},
             {"waiters", Json::array()}};
  Json deadlock = {{"cycle",
                    {{{"waiter", lock_thread("locker-a", 11, 12'300'000'000)},
                      {"lock", "m2"},
                      {"holder", lock_thread("locker-b", 12, 12'300'000'000)},
                      {"waiter_scopes", {"transfer", "lock both"}}},
                     {{"waiter", lock_thread("locker-b", 12, 12'500'000'000)},
                      {"lock", "m1"},
                      {"holder", lock_thread("locker-a", 11, 12'500'000'000)},
                      {"waiter_scopes", Json::array()}}}}};
  Json inversion = {{"first", "m1"},
                    {"second", "m2"},
                    {"thread_one", "worker-1"},
                    {"site_one", {{"scopes", {"save"}}, {"stack", {"save_all", "main"}}}},
                    {"thread_two", "worker-2"},
                    {"site_two", {{"scopes", Json::array()}, {"stack", {"load_all"}}}},
                    {"found_ns", 5'000}};
  return {{"locks", {m1, m2}},
          {"deadlocks", {deadlock}},
          {"lock_inversions", {inversion}},
          {"lock_figures", {{"deadlocks_found", 1}, {"order_edges", 4}, {"given_up", 0}}}};
}

TEST(LocksReader, ReadsEveryKeyOfTheContract) {
  const profiles::LockReport report = profiles::read_locks(locks_answer(), "GET /v1/locks");
  ASSERT_TRUE(report.locks);
  ASSERT_EQ(report.locks->size(), 2u);
  const profiles::LockStats& m1 = (*report.locks)[0];
  EXPECT_EQ(m1.name, "m1");
  EXPECT_EQ(m1.kind, "mutex");
  EXPECT_EQ(m1.address, "");
  EXPECT_EQ(m1.acquisitions, 120u);
  EXPECT_EQ(m1.contended, 7u);
  EXPECT_EQ(m1.try_failed, 2u);
  EXPECT_EQ(m1.wait_p50_ns, 10'000'000u);
  EXPECT_EQ(m1.wait_p99_ns, 12'000'000u);
  EXPECT_EQ(m1.wait_max_ns, 13'000'000u);
  ASSERT_EQ(m1.top_waiters.size(), 1u);
  EXPECT_EQ(m1.top_waiters[0].thread, "locker-b");
  EXPECT_EQ(m1.top_waiters[0].wait_ns, 70'000'000u);
  ASSERT_EQ(m1.contended_at.size(), 1u);
  EXPECT_EQ(m1.contended_at[0].scopes, (std::vector<std::string>{"transfer", "lock both"}));
  EXPECT_EQ(m1.contended_at[0].stack, (std::vector<std::string>{"lock_both", "main"}));
  ASSERT_EQ(m1.holders.size(), 1u);
  EXPECT_EQ(m1.holders[0].os_tid, 11);
  EXPECT_EQ(m1.holders[0].for_ns, 12'500'000'000u);
  EXPECT_EQ((*report.locks)[1].address, "0x55d0c0de1000");
  EXPECT_EQ((*report.locks)[1].hold_p99_ns, 2'000u);
  ASSERT_EQ(report.deadlocks.size(), 1u);
  ASSERT_EQ(report.deadlocks[0].cycle.size(), 2u);
  EXPECT_EQ(report.deadlocks[0].cycle[0].lock, "m2");
  EXPECT_EQ(report.deadlocks[0].cycle[0].holder.thread, "locker-b");
  EXPECT_EQ(report.deadlocks[0].cycle[0].waiter_scopes.size(), 2u);
  ASSERT_EQ(report.inversions.size(), 1u);
  EXPECT_EQ(report.inversions[0].thread_two, "worker-2");
  EXPECT_EQ(report.inversions[0].site_one.stack[0], "save_all");
  EXPECT_EQ(report.inversions[0].found_ns, 5'000u);
  EXPECT_EQ(report.figures.deadlocks_found, 1u);
  EXPECT_EQ(report.figures.order_edges, 4u);

  // stats.json carries the same keys; a file without them (an older hotscope) has no locks.
  Json document = locks_answer();
  document["hotscope_version"] = "1.0";
  document["functions"] = Json::array();
  const profiles::Stats stats = profiles::read_stats(document, "stats.json");
  ASSERT_TRUE(stats.locks.locks);
  EXPECT_EQ(stats.locks.locks->size(), 2u);
  EXPECT_EQ(stats.locks.deadlocks.size(), 1u);
  EXPECT_FALSE(profiles::read_stats(Json{{"hotscope_version", "1.0"}, {"functions", Json::array()}},
                                    "stats.json")
                   .locks.locks);
  // The agent's /v1/stats answer, read as the console reads it.
  profiles::Stats answer;
  profiles::read_stats(document.dump(), "GET /v1/stats", answer);
  ASSERT_TRUE(answer.locks.locks);
  EXPECT_EQ(answer.locks.inversions.size(), 1u);
}

// A key of the wrong type or sign is refused in one line that names it, in a file, in the agent's
// /v1/stats answer, in /v1/locks and in /v1/threads' deadlocks.
TEST(LocksReader, MalformedKeysAreRefusedByName) {
  const std::vector<std::pair<std::string, std::function<void(Json&)>>> cases = {
      {"\"locks\"[0].\"wait_p99_ns\"", [](Json& j) { j["locks"][0]["wait_p99_ns"] = -1; }},
      {"\"locks\"[0].\"name\"", [](Json& j) { j["locks"][0].erase("name"); }},
      {"\"locks\"[0].\"contended\"", [](Json& j) { j["locks"][0]["contended"] = 1.5; }},
      {"\"locks\"[1].\"holders\"[0].\"shared\"",
       [](Json& j) { j["locks"][1]["holders"][0]["shared"] = 1; }},
      {"\"locks\"[0].\"contended_at\"[0].\"stack\"",
       [](Json& j) { j["locks"][0]["contended_at"][0]["stack"] = "main"; }},
      {"\"locks\"[0].\"top_waiters\"[0].\"waits\"",
       [](Json& j) { j["locks"][0]["top_waiters"][0]["waits"] = "7"; }},
      {"\"deadlocks\"[0].\"cycle\"[1].\"holder\".\"for_ns\"",
       [](Json& j) { j["deadlocks"][0]["cycle"][1]["holder"]["for_ns"] = -5; }},
      {"\"deadlocks\"[0].\"cycle\"[0].\"lock\"",
       [](Json& j) { j["deadlocks"][0]["cycle"][0]["lock"] = nullptr; }},
      {"\"lock_inversions\"[0].\"site_two\"",
       [](Json& j) { j["lock_inversions"][0]["site_two"] = Json::array(); }},
      {"\"lock_figures\".\"order_edges\"", [](Json& j) { j["lock_figures"]["order_edges"] = -1; }},
      {"\"lock_figures\"", [](Json& j) { j["lock_figures"] = 3; }},
  };
  for (const auto& [key, spoil] : cases) {
    Json bad = locks_answer();
    spoil(bad);
    Json file = bad;
    file["hotscope_version"] = "1.0";
    file["functions"] = Json::array();
    const std::vector<std::function<void()>> readers = {
        [&] { profiles::read_locks(bad, "GET /v1/locks"); },
        [&] { profiles::read_stats(file, "stats.json"); },
        [&] {
          profiles::Stats stats;
          profiles::read_stats(file.dump(), "GET /v1/stats", stats);
        }};
    for (const auto& read : readers) {
      try {
        read();
        ADD_FAILURE() << "no Failure for " << key;
      } catch (const Failure& failure) {
        const std::string what = failure.what();
        EXPECT_NE(what.find(key), std::string::npos) << what;
        EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      }
    }
  }
  Json threads = {{"now_ns", 1}, {"threads", Json::array()}, {"deadlocks", 3}};
  EXPECT_THROW(profiles::read_threads(threads, "GET /v1/threads"), Failure);
  threads["deadlocks"] = locks_answer()["deadlocks"];
  const profiles::ThreadsAnswer answer = profiles::read_threads(threads, "GET /v1/threads");
  ASSERT_EQ(answer.deadlocks.size(), 1u);
  EXPECT_EQ(answer.deadlocks[0].cycle[1].waiter.thread, "locker-b");
}

// report.html: a Locks section (and its link) when the run has locks: the deadlock, a row per
// lock sorted by its figures, the inversion with both sites; none without locks.
TEST(LocksText, ReportPageListsTheLocks) {
  Json document = locks_answer();
  document["hotscope_version"] = "1.0";
  document["functions"] = Json::array();
  const auto page = [](const Json& stats) {
    return report::html_page(profiles::classify(stats, "stats.json"), std::nullopt,
                             {std::nullopt, "trace.folded"});
  };
  const std::string html = page(document);
  const std::size_t section = html.find("<section id=\"locks\"><h2>Locks</h2>");
  ASSERT_NE(section, std::string::npos);
  EXPECT_NE(html.find("<a href=\"#locks\">Locks</a>"), std::string::npos);
  EXPECT_NE(html.find("<pre class=\"warning\">deadlock: locker-a waits for m2", section),
            std::string::npos);
  EXPECT_NE(html.find("<td data-value=\"12000000\">12.00 ms</td>", section), std::string::npos);
  EXPECT_NE(html.find("worker-2 took m1 holding m2:", section), std::string::npos);
  document.erase("locks");
  document.erase("deadlocks");
  document.erase("lock_inversions");
  EXPECT_EQ(page(document).find("id=\"locks\""), std::string::npos);
}

TEST(LocksText, DeadlockInTheIssuesWords) {
  const profiles::LockReport report = profiles::read_locks(locks_answer(), "GET /v1/locks");
  const std::vector<std::string> lines = deadlock_lines(report.deadlocks[0]);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "deadlock: locker-a waits for m2 (held by locker-b for 12.30 s) → locker-b "
                      "waits for m1 (held by locker-a for 12.50 s)");
  EXPECT_EQ(lines[1], "  locker-a in transfer > lock both");
  EXPECT_EQ(lines[2], "  locker-b in (no scope open)");
}

TEST(LocksText, LocksCommandPrintsDeadlocksFirstThenTheTable) {
  const profiles::LockReport report = profiles::read_locks(locks_answer(), "GET /v1/locks");
  const std::string text = locks_text(report, false);
  EXPECT_EQ(text.rfind("2 locks, 1 deadlock standing, 1 found in all; 1 lock-order inversion\n", 0),
            0u)
      << text;
  const std::size_t deadlock = text.find("deadlock: locker-a waits for m2");
  const std::size_t heading = text.find("Lock  ");
  ASSERT_NE(deadlock, std::string::npos) << text;
  ASSERT_NE(heading, std::string::npos) << text;
  EXPECT_LT(deadlock, heading);
  // m1: waits 10 ms p50, 12 ms p99, 13 ms max; no hold times measured; who holds, who waits.
  const std::size_t m1 = text.find("\n m1 ", heading) + 1;
  ASSERT_NE(m1, 0u) << text;
  const std::string row = text.substr(m1, text.find('\n', m1) - m1);
  for (const char* cell : {"mutex", "120", "7", "10.00 ms", "12.00 ms", "13.00 ms", "-",
                           "locker-a 12.50 s", "locker-b 12.30 s"}) {
    EXPECT_NE(row.find(cell), std::string::npos) << cell << " in " << row;
  }
  EXPECT_NE(text.find("lock-order inversion: m1 then m2 (worker-1), m2 then m1 (worker-2)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("save_all"), std::string::npos) << text;
  // --inversions: both sites, scopes and stacks.
  const std::string sites = locks_text(report, true);
  for (const char* line :
       {"  worker-1 took m2 holding m1:\n    scopes: save\n    stack: save_all\n"
        "           main\n",
        "  worker-2 took m1 holding m2:\n    scopes: -\n    stack: load_all\n"}) {
    EXPECT_NE(sites.find(line), std::string::npos) << sites;
  }
  // No locks: says how to get some.
  EXPECT_NE(locks_text(profiles::LockReport{}, false).find("HOTSCOPE_LOCKS=1"), std::string::npos);
}

} // namespace

namespace {

using console::Line;
using console::Page;

bool has_line(const std::vector<Line>& lines, const std::string& text, console::Style style) {
  for (const Line& line : lines) {
    if (line.text.find(text) != std::string::npos && line.style == style) {
      return true;
    }
  }
  return false;
}

// The locks tab: deadlocks first and the inversions as alerts, then the table; the threads tab's
// banner names the deadlocks of /v1/threads.
TEST(ConsoleLocks, LocksTabAndThreadsBanner) {
  Json document = locks_answer();
  document["hotscope_version"] = "1.0";
  document["functions"] = Json::array();
  profiles::Stats stats;
  profiles::read_stats(document.dump(), "GET /v1/stats", stats);
  console::Model model;
  model.update_stats(stats);
  console::ViewState state;
  state.tab = console::Tab::Locks;
  ASSERT_EQ(console::tab_name(console::Tab::Locks), "locks");
  const Page page = console::build_page(model, state, console::Glyphs{}, 160);
  ASSERT_FALSE(page.fixed.empty());
  EXPECT_EQ(page.fixed[0].text.rfind(" deadlock: locker-a waits for m2", 0), 0u)
      << page.fixed[0].text;
  EXPECT_EQ(page.fixed[0].style, console::Style::Alert);
  EXPECT_TRUE(has_line(page.fixed, "  locker-a in transfer > lock both", console::Style::Alert));
  EXPECT_TRUE(
      has_line(page.fixed, "lock-order inversion: m1 then m2 (worker-1)", console::Style::Alert));
  EXPECT_TRUE(has_line(page.fixed, "Holders now", console::Style::Heading));
  ASSERT_EQ(page.rows.size(), 2u);
  EXPECT_EQ(page.rows[0].text.rfind(" m1 ", 0), 0u) << page.rows[0].text;
  EXPECT_EQ(page.rows[0].style, console::Style::Alert); // locker-b waits for it
  EXPECT_EQ(page.rows[1].style, console::Style::Normal);
  EXPECT_EQ(page.selected, 0);

  // An agent without locks says so; one with none says how to get some.
  profiles::Stats older;
  profiles::read_stats(R"({"hotscope_version": "1.0", "functions": []})", "GET /v1/stats", older);
  console::Model without;
  without.update_stats(older);
  EXPECT_TRUE(has_line(console::build_page(without, state, console::Glyphs{}, 160).fixed,
                       "no locks (an older hotscope)", console::Style::Alert));

  // The threads tab: no banner without a deadlock, then the banner first.
  Json threads = {{"now_ns", 1'000'000'000},
                  {"stuck_threshold_ns", 1'000'000'000},
                  {"threads", Json::array()},
                  {"deadlocks", Json::array()}};
  model.update_threads(threads);
  state.tab = console::Tab::Threads;
  EXPECT_FALSE(has_line(console::build_page(model, state, console::Glyphs{}, 160).fixed,
                        "deadlock:", console::Style::Alert));
  threads["deadlocks"] = locks_answer()["deadlocks"];
  model.update_threads(threads);
  const Page banner = console::build_page(model, state, console::Glyphs{}, 160);
  ASSERT_GE(banner.fixed.size(), 4u);
  EXPECT_EQ(banner.fixed[0].text.rfind(" deadlock: locker-a waits for m2 (held by locker-b", 0), 0u)
      << banner.fixed[0].text;
  EXPECT_EQ(banner.fixed[2].text, "   locker-b in (no scope open)");
}

} // namespace
