// What review and assistants read (docs/ci.md, docs/mcp.md) on hand-made profiles:
// `hotscope diff --format markdown`, policy files (reading, their errors with lines, judging one
// run and a comparison), and the MCP server's protocol side (no agent needed).
#include "diff/diff.hpp"
#include "hand_made_profiles.hpp"
#include "mcp/mcp.hpp"
#include "policy/policy.hpp"
#include "support/scratch_dir.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace {

using namespace hotscope::cli;
using namespace hotscope::cli::hand_made;
namespace fs = std::filesystem;

profiles::Profile before() {
  return stats({function("slow", 200, 1000), function("quick", 200, 2000),
                function("steady", 200, 1000), function("a|b`c", 200, 1000, 20)},
               "base/stats.json");
}

profiles::Profile after() {
  return stats({function("slow", 200, 2000), function("quick", 200, 1000),
                function("steady", 200, 1003), function("a|b`c", 200, 1000, 20)},
               "new/stats.json");
}

std::size_t at(const std::string& text, const std::string& part) {
  const std::size_t found = text.find(part);
  EXPECT_NE(found, std::string::npos) << "no '" << part << "' in\n" << text;
  return found;
}

TEST(Markdown, RegressionsThenImprovementsThenTheRestCollapsed) {
  const std::string text = diff::as_markdown(diff::compare(before(), after(), {}));
  EXPECT_EQ(text.rfind("**hotscope: passes** — 5 regressions beyond noise, 5 improvements.", 0), 0U)
      << text;
  const std::size_t regressions = at(text, "#### Regressions");
  const std::size_t improvements = at(text, "#### Improvements");
  const std::size_t details = at(text, "<details><summary>");
  EXPECT_LT(regressions, improvements);
  EXPECT_LT(improvements, details);
  // slow's mean doubled: a regression row, before → after, change, significance.
  const std::size_t slow = at(text, "| `slow` `w.cpp`:10 | mean | 1.00 µs → 2.00 µs | +100.0% | "
                                    "beyond noise |");
  EXPECT_LT(regressions, slow);
  EXPECT_LT(slow, improvements);
  EXPECT_GT(at(text, "| `quick` `w.cpp`:10 | mean | 2.00 µs → 1.00 µs | -50.0% |"), improvements);
  EXPECT_GT(
      at(text, "| `steady` `w.cpp`:10 | mean | 1.00 µs → 1.00 µs | (+0.30%) | within noise |"),
      details);
  // A pipe would end the cell, a backtick the code span.
  at(text, "`a\\|b'c`");
  EXPECT_EQ(text.find("a|b"), std::string::npos);
  at(text, "</details>\n");
}

TEST(Markdown, SameInputSameBytesAndRulesDecideTheVerdict) {
  const std::string once = diff::as_markdown(diff::compare(before(), after(), {"mean>+50%"}));
  EXPECT_EQ(once, diff::as_markdown(diff::compare(before(), after(), {"mean>+50%"})));
  EXPECT_EQ(once.rfind("**hotscope: fails**", 0), 0U) << once;
  at(once, "--fail-on: 1 row failing.");
}

TEST(Markdown, HeapSitesAndLongTablesAreCut) {
  std::vector<SiteSpec> base_sites, new_sites;
  for (int i = 0; i < 40; ++i) {
    const std::string name = fmt::format("site{}", i);
    base_sites.push_back({{{name, "s.cpp", i + 1}, {"main", "m.cpp", 3}}, 1000, 0});
    new_sites.push_back({{{name, "s.cpp", i + 1}, {"main", "m.cpp", 3}}, 2000, 64});
  }
  const std::string text =
      diff::as_markdown(diff::compare(heap(base_sites, 0x1000), heap(new_sites, 0x9000), {}));
  at(text, "| Heap site | Figure |");
  // 40 sites and the totals, each with its six figures grown: 30 lines shown.
  at(text, "216 more not shown (`hotscope diff --json` has every row).");
}

fs::path write(const fs::path& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir / name) << text;
  return dir / name;
}

// The message of the Failure `action` throws, and its code.
std::pair<int, std::string> failure_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Failure& failure) {
    return {failure.code, failure.what()};
  }
  return {0, ""};
}

TEST(Policy, BadInputIsNamedWithItsLine) {
  const hotscope::testing::ScratchDir dir("policy-bad");
  const auto refused = [&](const std::string& text, const std::string& message) {
    const fs::path file = write(dir.path(), "p.toml", text);
    const auto [code, what] = failure_of([&] { policy::read_policy(file); });
    EXPECT_EQ(code, kUsage) << text;
    EXPECT_NE(what.find(message), std::string::npos) << what;
  };
  refused("min_calls = 20\n[functions.\"f\"]\np99 = \"< 2 parsecs\"\n",
          "p.toml:3: p99 = \"< 2 parsecs\": 'parsecs' is not a unit of p99 (% or ns, us, ms, s)");
  refused("[functions.\"f\"]\n\np98 = \"< 2ms\"\n",
          "p.toml:3: unknown key 'p98' in [functions.\"f\"]");
  refused("ignore = [\"x\"]\nmin_call = 3\n", "p.toml:2: unknown key 'min_call'");
  refused("[functions.\"f\"]\np99 = \"2ms\"\n", "p.toml:2: p99 = \"2ms\": starts with none of");
  refused("[functions.\"f\"]\np99 = \"< +10%\"\n", "a percent is a change: write p99_change");
  refused("[queues.\"q\"]\nwait_p99_change = \"< +10%\"\nwait_max_change = \"< +10%\"\n",
          "p.toml:3: wait_max_change: a maximum is one item's, its change never beyond noise");
  refused("[locks.\"l\"]\nwaits_p99 = \"< 1ms\"\n", "p.toml:2: unknown key 'waits_p99' in [locks.");
  refused("[functions.\"f\"\np99 = \"< 2ms\"\n", "p.toml:1: ");
  refused("[functions.\"f\"]\np99 = 2\n", "p.toml:2: p99: a rule is a string");
}

TEST(Policy, CheckJudgesOneRunsBudgets) {
  const hotscope::testing::ScratchDir dir("policy-check");
  const fs::path file = write(dir.path(), "p.toml", R"(min_calls = 20
ignore = ["test_*"]
[functions."slow"]
mean = "< 1500ns"
mean_change = "< +10%"
[functions."quick"]
alloc_bytes_per_call = "== 0"
[functions."test_*"]
mean = "< 1ns"
[functions."few"]
mean = "< 1ns"
[functions."gone"]
warn = true
mean = "< 1ns"
)");
  const policy::Policy rules = policy::read_policy(file);
  const profiles::Profile now = stats({function("slow", 200, 2000), function("quick", 200, 1000),
                                       function("test_a", 200, 1000), function("few", 5, 1000)},
                                      "new/stats.json");
  diff::Comparison comparison = diff::one_run(now);
  policy::judge(rules, comparison);
  // slow's absolute budget breaks; its change has no base; test_a is ignored; few has too few
  // calls; gone is not in the run: a warning.
  ASSERT_EQ(comparison.judgements.size(), 3U) << diff::policy_text(comparison);
  EXPECT_TRUE(comparison.judgements[0].fails());
  EXPECT_EQ(comparison.judgements[0].subject, "function slow");
  EXPECT_EQ(comparison.judgements[0].line, 4);
  EXPECT_FALSE(comparison.judgements[1].broken);
  EXPECT_TRUE(comparison.judgements[2].broken && comparison.judgements[2].warn);
  EXPECT_TRUE(comparison.failed());
  EXPECT_EQ(diff::policy_text(comparison),
            "policy " + file.string() +
                ": 1 of 3 rules held\n"
                "FAILS function slow: mean = \"< 1500ns\" is 2.00 µs (line 4)\n"
                "warns function gone: mean = \"< 1ns\" is not in the run (line 14)\n");
}

TEST(Policy, DiffJudgesSignificantChangesOnly) {
  const hotscope::testing::ScratchDir dir("policy-diff");
  const fs::path file = write(dir.path(), "p.toml", R"([functions."*"]
mean_change = "< +10%"
[functions."steady"]
warn = true
mean_change = "<= +0.1%"
)");
  diff::Comparison comparison = diff::compare(before(), after(), {});
  policy::judge(policy::read_policy(file), comparison);
  std::vector<std::string> broken;
  for (const diff::Judgement& judgement : comparison.judgements) {
    if (judgement.broken) {
      broken.push_back(judgement.subject + " " + judgement.value);
    }
  }
  // steady grew 0.3 %, within noise: its strict rule holds.
  EXPECT_EQ(broken, std::vector<std::string>{"function slow +100.0%"});
  EXPECT_TRUE(comparison.failed());
  const std::string text = diff::as_markdown(comparison);
  at(text, "; policy: 1 broken, 0 warnings.");
  at(text, "| **fails** | `function slow` | `mean_change = \"< +10%\"` | +100.0% | 2 |");
}

// Queues and locks beside the functions: `jobs` waits three times longer and its depth peaks
// four times higher, `cache` is held twice as long and waited for a quarter as long; `idle` and
// `calm` move within noise.
profiles::Profile queues_before() {
  return stats(
      {function("slow", 200, 1000)}, "base/stats.json", nullptr,
      {{"queues", {queue("jobs", 1000, 100000, 10), queue("idle", 1000, 50000, 4)}},
       {"locks", {lock("cache", 2000, 1000, 1000, 20000), lock("calm", 1000, 1000, 0, 0)}}});
}

profiles::Profile queues_after() {
  return stats(
      {function("slow", 200, 2000)}, "new/stats.json", nullptr,
      {{"queues", {queue("idle", 1000, 50500, 4), queue("jobs", 1000, 300000, 40)}},
       {"locks", {lock("cache", 2000, 2000, 1000, 5000), lock("calm", 1000, 1010, 0, 0)}}});
}

const diff::Row& named(const std::vector<diff::Row>& rows, const std::string& name) {
  const auto found = std::find_if(rows.begin(), rows.end(),
                                  [&](const diff::Row& row) { return row.name == name; });
  EXPECT_NE(found, rows.end()) << name;
  return *found;
}

TEST(QueuesAndLocks, ComparedAsFunctionsAreInEveryFormat) {
  const diff::Comparison comparison = diff::compare(queues_before(), queues_after(), {});
  // By impact, the added wait time: jobs first, cache (which waits less) last.
  ASSERT_EQ(comparison.queues.size(), 2U);
  EXPECT_EQ(comparison.queues.front().name, "jobs");
  ASSERT_EQ(comparison.locks.size(), 2U);
  EXPECT_EQ(comparison.locks.back().name, "cache");
  const auto cell = [](const diff::Row& row, const std::vector<diff::Column>& all,
                       const std::string& key) {
    const auto found =
        std::find_if(all.begin(), all.end(), [&](const diff::Column& c) { return key == c.key; });
    return row.cells.at(static_cast<std::size_t>(found - all.begin()));
  };
  const auto& queues = diff::queue_columns();
  const auto& locks = diff::lock_columns();
  EXPECT_TRUE(cell(named(comparison.queues, "jobs"), queues, "wait_p99").significant);
  EXPECT_TRUE(cell(named(comparison.queues, "jobs"), queues, "max_depth").significant);
  // One item's maximum is never beyond noise; 1 % is within the drift between runs.
  EXPECT_FALSE(cell(named(comparison.queues, "jobs"), queues, "wait_max").significant);
  EXPECT_FALSE(named(comparison.queues, "idle").significant());
  EXPECT_TRUE(cell(named(comparison.locks, "cache"), locks, "hold_p50").significant);
  EXPECT_TRUE(cell(named(comparison.locks, "cache"), locks, "wait_p99").significant);
  EXPECT_FALSE(named(comparison.locks, "calm").significant());

  const std::string text = diff::as_text(comparison);
  EXPECT_LT(at(text, "  Function"), at(text, "Queues by impact"));
  EXPECT_LT(at(text, "Queues by impact"), at(text, "Locks by impact"));
  at(text, "  jobs");

  const nlohmann::json json = diff::as_json(comparison);
  EXPECT_EQ(json["queues"][0]["name"], "jobs");
  EXPECT_EQ(json["queues"][0]["columns"]["wait_p99"]["percent"], 200.0);
  EXPECT_EQ(json["locks"][1]["columns"]["wait_p50"]["significant"], true);

  const std::string markdown = diff::as_markdown(comparison);
  EXPECT_EQ(markdown, diff::as_markdown(diff::compare(queues_before(), queues_after(), {})));
  const std::size_t regressions = at(markdown, "#### Regressions");
  const std::size_t improvements = at(markdown, "#### Improvements");
  // Regressions: the function's table, then the queue's, then the lock's.
  const std::size_t function = at(markdown, "| Function | Figure |");
  const std::size_t queue = at(markdown, "| Queue | Figure |");
  const std::size_t lock = at(markdown, "| Lock | Figure |");
  EXPECT_LT(regressions, function);
  EXPECT_LT(function, queue);
  EXPECT_LT(queue, lock);
  EXPECT_LT(lock, improvements);
  EXPECT_LT(at(markdown, "| `jobs` | wait_p99 |"), improvements);
  EXPECT_LT(at(markdown, "| `jobs` | max_depth | 10 → 40 | +300.0% | beyond noise |"),
            improvements);
  EXPECT_LT(at(markdown, "| `cache` | hold_p50 |"), improvements);
  EXPECT_GT(markdown.find("| `cache` | wait_p50 |", improvements), at(markdown, "| Lock |"));
  const std::size_t details = at(markdown, "<details>");
  EXPECT_GT(at(markdown, "| `idle` | wait_p99 |"), details);
  EXPECT_GT(at(markdown, "| `calm` | wait_p99 |"), details);
}

TEST(QueuesAndLocks, PolicyChangesOnThemAreJudgedAgainstTheBase) {
  const hotscope::testing::ScratchDir dir("policy-queues");
  const fs::path file = write(dir.path(), "p.toml", R"([queues."jobs"]
wait_p99_change = "< +50%"
[queues."idle"]
wait_p99_change = "< +0.5%"
[locks."cache"]
hold_p99_change = "< +10%"
wait_p99_change = "< +10%"
[locks."calm"]
hold_p99_change = "< +0.5%"
)");
  const policy::Policy rules = policy::read_policy(file);
  diff::Comparison comparison = diff::compare(queues_before(), queues_after(), {});
  policy::judge(rules, comparison);
  std::vector<std::string> judged;
  for (const diff::Judgement& judgement : comparison.judgements) {
    judged.push_back(fmt::format("{} {} {}", judgement.subject, judgement.value,
                                 judgement.broken ? "broken" : "held"));
  }
  // idle's +1 % and calm's +1 % are within noise: their strict rules hold.
  EXPECT_EQ(judged,
            (std::vector<std::string>{"queue jobs +200.0% broken", "queue idle (+1.0%) held",
                                      "lock cache +100.0% broken", "lock cache -75.0% held",
                                      "lock calm (+1.0%) held"}));
  EXPECT_TRUE(comparison.failed());
  // One run has no base: its changes are not judged, and these rules have no budget.
  diff::Comparison one = diff::one_run(queues_after());
  policy::judge(rules, one);
  EXPECT_TRUE(one.judgements.empty()) << diff::policy_text(one);
  EXPECT_FALSE(one.failed());
}

mcp::Json rpc(const std::string& method, const mcp::Json& params, int id = 1) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
}

TEST(Mcp, InitializeListAndErrors) {
  const mcp::Json init = *mcp::handle(rpc("initialize", {{"protocolVersion", "2025-06-18"}}));
  EXPECT_EQ(init["result"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(init["result"]["serverInfo"]["name"], "hotscope");
  EXPECT_EQ(mcp::handle(rpc("initialize", {{"protocolVersion", "1999-01-01"}}))
                ->at("result")["protocolVersion"],
            mcp::kProtocolVersions[0]);
  EXPECT_FALSE(mcp::handle({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}));
  EXPECT_EQ((*mcp::handle(rpc("ping", mcp::Json::object())))["result"], mcp::Json::object());
  const mcp::Json list = *mcp::handle(rpc("tools/list", mcp::Json::object()));
  std::vector<std::string> names;
  for (const mcp::Json& tool : list["result"]["tools"]) {
    names.push_back(tool["name"]);
    EXPECT_EQ(tool["inputSchema"]["type"], "object");
    EXPECT_EQ(tool["annotations"]["readOnlyHint"], true);
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"list_processes", "function_stats", "threads", "heap_top",
                                      "cpu_top", "slowest_calls", "trace_summary", "diff"}));
  const mcp::Json unknown = *mcp::handle(rpc("tools/call", {{"name", "shell"}}));
  EXPECT_EQ(unknown["error"]["code"], -32602);
  EXPECT_NE(unknown["error"]["message"].get<std::string>().find("no tool 'shell' (tools: "),
            std::string::npos);
  const mcp::Json bad = *mcp::handle(
      rpc("tools/call", {{"name", "function_stats"}, {"arguments", {{"limit", 1000}}}}));
  EXPECT_EQ(bad["error"]["message"], "function_stats: 'limit' must be a number from 1 to 100");
  EXPECT_EQ((*mcp::handle(rpc("resources/list", mcp::Json::object())))["error"]["code"], -32601);
}

// A result past the limit: JSON stays JSON, its longest list cut to fit and the cut said; other
// text is cut and says by how much.
TEST(Mcp, ResultsPastTheLimitAreCutToFitAndStayJson) {
  mcp::Json result{{"window", "the 1 s just sampled"},
                   {"top_stacks", mcp::Json::array()},
                   {"top_functions_self", mcp::Json::array()}};
  for (int i = 0; i < 15; ++i) {
    result["top_stacks"].push_back({{"stack_root_first", std::string(2000, 'a' + i % 26)}});
    result["top_functions_self"].push_back({{"function", std::string(100, 'f')}});
  }
  ASSERT_GT(result.dump().size(), mcp::kMaxResultChars);
  const std::string text = mcp::bounded(result.dump());
  EXPECT_LE(text.size(), mcp::kMaxResultChars);
  const mcp::Json cut = mcp::Json::parse(text);
  EXPECT_EQ(cut["window"], "the 1 s just sampled");
  const std::size_t stacks = cut["top_stacks"].size();
  EXPECT_GE(stacks, 6u);
  EXPECT_LT(stacks, 15u);
  EXPECT_EQ(cut["top_functions_self"].size(), 15u); // the longest list went first
  EXPECT_EQ(cut["cut"], std::to_string(15 - stacks) +
                            " more rows left out to stay within 16000 characters; ask for fewer "
                            "rows (limit)");
  const std::string plain = mcp::bounded(std::string(mcp::kMaxResultChars + 10, 'x'));
  EXPECT_EQ(plain, std::string(mcp::kMaxResultChars, 'x') +
                       "\n[cut: 10 more characters; ask for fewer rows (limit)]");
  EXPECT_EQ(mcp::bounded("{\"small\":1}"), "{\"small\":1}");
}

TEST(Mcp, ServesALineAMessageAndToolFailuresAreToolErrors) {
  const hotscope::testing::ScratchDir dir("mcp-serve");
  // No agent in an empty runtime directory: a tool error saying what to do.
  setenv("HOTSCOPE_RUNTIME_DIR", dir.path().c_str(), 1);
  std::istringstream in(
      rpc("tools/call", {{"name", "threads"}}).dump() + "\n\nnot json\n" +
      rpc("tools/call",
          {{"name", "diff"}, {"arguments", {{"base", (dir.path() / "none.json").string()}}}}, 2)
          .dump() +
      "\n");
  std::ostringstream out;
  EXPECT_EQ(mcp::serve(in, out), 0);
  const std::vector<std::string> lines = [&] {
    std::vector<std::string> all;
    std::istringstream text(out.str());
    for (std::string line; std::getline(text, line);) {
      all.push_back(line);
    }
    return all;
  }();
  ASSERT_EQ(lines.size(), 3U) << out.str();
  const mcp::Json none = mcp::Json::parse(lines[0]);
  EXPECT_EQ(none["result"]["isError"], true);
  EXPECT_NE(none["result"]["content"][0]["text"].get<std::string>().find(
                "no process runs a hotscope agent in " + dir.path().string()),
            std::string::npos)
      << lines[0];
  EXPECT_EQ(mcp::Json::parse(lines[1])["error"]["code"], -32700);
  const mcp::Json missing = mcp::Json::parse(lines[2]);
  EXPECT_EQ(missing["id"], 2);
  EXPECT_EQ(missing["result"]["isError"], true);
  unsetenv("HOTSCOPE_RUNTIME_DIR");
}

} // namespace
