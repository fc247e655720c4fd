// The parts of `hotscope diff`, `report` and `flame` on hand-made profiles: the --fail-on
// grammar, significance, matching of functions and of allocation sites, the order by impact,
// folded stacks, the flame tree and its SVG.
#include "agent_client.hpp"
#include "diff/diff.hpp"
#include "hand_made_profiles.hpp"
#include "report/report.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <regex>

namespace {

using namespace hotscope::cli;
using namespace hotscope::cli::hand_made;
using Json = nlohmann::json;

// The flame graph of folded `text` (kept alive with it).
struct Graph {
  std::string text;
  profiles::StackLines stacks;
  report::FlameGraph graph;
  explicit Graph(std::string folded, std::size_t max_frames = report::kMaxFlameFrames)
      : text(std::move(folded)), stacks(profiles::folded_stacks(text, "t.folded")),
        graph(report::flame_graph(stacks, 0, max_frames)) {}
  const report::FlameFrame& frame(std::string_view name) const {
    for (const report::FlameFrame& frame : graph.frames) {
      if (frame.name == name) {
        return frame;
      }
    }
    throw std::runtime_error("no frame " + std::string(name));
  }
};

TEST(CompareUnit, RulesFollowTheGrammar) {
  const auto rules = diff::parse_rules({"p99>+10%", "mean>+2ms, calls<-50%", "self > 500us"},
                                       profiles::Kind::Stats);
  ASSERT_EQ(rules.size(), 4U);
  EXPECT_EQ(rules[0].column, column(profiles::Kind::Stats, "p99"));
  EXPECT_TRUE(rules[0].above);
  EXPECT_TRUE(rules[0].percent);
  EXPECT_DOUBLE_EQ(rules[0].amount, 10);
  EXPECT_DOUBLE_EQ(rules[1].amount, 2e6);
  EXPECT_FALSE(rules[1].percent);
  EXPECT_FALSE(rules[2].above);
  EXPECT_DOUBLE_EQ(rules[2].amount, -50);
  EXPECT_DOUBLE_EQ(rules[3].amount, 5e5);
  const auto heap_rules = diff::parse_rules({"end_bytes>+1MiB"}, profiles::Kind::Heap);
  EXPECT_DOUBLE_EQ(heap_rules.at(0).amount, 1024.0 * 1024);
  for (const char* bad :
       {"p99+10%", "bogus>+1%", "p99>+10KiB", "p99>abc", "", "p99>+10%,", "end_bytes>+1MiB"}) {
    EXPECT_EQ(failure_code([&] { diff::parse_rules({bad}, profiles::Kind::Stats); }), kUsage)
        << bad;
  }
}

TEST(CompareUnit, RulesMatchSignificantChangesOnly) {
  const auto rule = diff::parse_rules({"p99>+10%"}, profiles::Kind::Stats).at(0);
  EXPECT_TRUE(diff::matches(rule, diff::Cell{100.0, 120.0, true}));
  EXPECT_FALSE(diff::matches(rule, diff::Cell{100.0, 105.0, true}));
  EXPECT_FALSE(diff::matches(rule, diff::Cell{100.0, 200.0, false}));
  EXPECT_TRUE(diff::matches(rule, diff::Cell{0.0, 1.0, true})); // from nothing: +inf %
  const auto fall = diff::parse_rules({"mean<-1us"}, profiles::Kind::Stats).at(0);
  EXPECT_TRUE(diff::matches(fall, diff::Cell{5000.0, 3000.0, true}));
  EXPECT_FALSE(diff::matches(fall, diff::Cell{5000.0, 4500.0, true}));
}

TEST(CompareUnit, TimingRowsBySignificanceAndImpact) {
  const auto base = stats({function("slow", 100, 1000), function("steady", 100, 1000),
                           function("few", 5, 1000), function("gone", 100, 1000)},
                          "base.json");
  const auto now = stats({function("slow", 100, 2000), function("steady", 100, 1003),
                          function("few", 5, 3000), function("fresh", 10, 5000)},
                         "new.json");
  const diff::Comparison comparison = diff::compare(base, now, {"mean>+10%"});
  ASSERT_EQ(comparison.rows.size(), 5U);
  EXPECT_EQ(comparison.rows[0].name, "slow"); // +1000 ns per call x 100 calls
  EXPECT_DOUBLE_EQ(comparison.rows[0].impact, 100000);
  EXPECT_EQ(comparison.rows[0].failed, std::vector<std::string>{"mean>+10%"});
  EXPECT_EQ(comparison.rows[1].name, "fresh"); // 50,000 ns, only in NEW
  EXPECT_EQ(comparison.rows[1].side, diff::Side::NewOnly);
  EXPECT_EQ(comparison.rows.back().name, "gone");
  EXPECT_EQ(comparison.rows.back().side, diff::Side::BaseOnly);
  const std::size_t mean = column(profiles::Kind::Stats, "mean");
  // 0.3 % is within the histogram's resolution; 5 calls are too few.
  EXPECT_FALSE(row_named(comparison, "steady").cells[mean].significant);
  EXPECT_FALSE(row_named(comparison, "few").cells[mean].significant);
  EXPECT_TRUE(row_named(comparison, "few").failed.empty());
  EXPECT_TRUE(row_named(comparison, "fresh").failed.empty()); // one side: nothing to compare
  EXPECT_TRUE(comparison.failed());
  EXPECT_FALSE(diff::compare(base, now, {"mean>+150%"}).failed());

  const std::string text = diff::as_text(comparison);
  EXPECT_NE(text.find("! slow (w.cpp:10)"), std::string::npos) << text;
  EXPECT_NE(text.find("(+0.30%)"), std::string::npos) << text;
  EXPECT_NE(text.find("only in new"), std::string::npos) << text;
  const Json json = diff::as_json(comparison);
  EXPECT_EQ(json.at("rows").at(0).at("columns").at("mean").at("percent"), 100.0);
  EXPECT_EQ(json.at("failed"), true);
}

// The figures stats.json would give for calls lasting `durations` (ns): percentiles by rank.
diff::Spread spread_of(std::vector<double> durations) {
  std::sort(durations.begin(), durations.end());
  const auto rank = [&](double q) {
    const auto index = static_cast<std::size_t>(std::ceil(q * durations.size()));
    return durations[std::clamp<std::size_t>(index, 1, durations.size()) - 1];
  };
  diff::Spread spread;
  spread.calls = static_cast<double>(durations.size());
  spread.mean = std::accumulate(durations.begin(), durations.end(), 0.0) / spread.calls;
  spread.min = durations.front();
  spread.max = durations.back();
  spread.p50 = rank(0.5);
  spread.p90 = rank(0.9);
  spread.p95 = rank(0.95);
  spread.p99 = rank(0.99);
  spread.p999 = rank(0.999);
  return spread;
}

// `calls` durations around 10 us (log-normal), one in 500 stretched 20 times as a preemption
// would, all scaled by `factor`.
std::vector<double> durations(std::mt19937_64& random, std::size_t calls, double factor = 1) {
  std::lognormal_distribution<double> typical(std::log(10000.0), 0.4);
  std::uniform_real_distribution<double> chance(0, 1);
  std::vector<double> out;
  for (std::size_t i = 0; i < calls; ++i) {
    out.push_back(factor * typical(random) * (chance(random) < 0.002 ? 20 : 1));
  }
  return out;
}

double figure(const diff::Column& column, const diff::Spread& spread) {
  if (column.noise != diff::Noise::Percentile) {
    return spread.mean;
  }
  return column.quantile == 0.5 ? spread.p50 : column.quantile == 0.95 ? spread.p95 : spread.p99;
}

// Two runs of one program differ by their calls' spread only: no time column flags them, over
// many pairs of runs. A function 5 times slower is flagged on its mean and median every time; a
// P99 over fewer than about 900 calls never (its slowest 1 % is too few calls to bound it from
// above); P95 and P99 otherwise when the outliers leave them bounded.
TEST(CompareUnit, NoiseRuleFlagsRunsOfOneProgramNotASlowdown) {
  std::mt19937_64 random(30);
  int flagged = 0, missed = 0;
  for (int pair = 0; pair < 200; ++pair) {
    const std::size_t calls = pair % 2 == 0 ? 200 : 5000;
    const diff::Spread base = spread_of(durations(random, calls));
    const diff::Spread again = spread_of(durations(random, calls));
    const diff::Spread slower = spread_of(durations(random, calls, 5));
    for (const diff::Column& c : diff::columns(profiles::Kind::Stats)) {
      if (c.unit != diff::Unit::Nanoseconds || c.noise == diff::Noise::Self ||
          c.noise == diff::Noise::Samples) {
        continue;
      }
      flagged += diff::significant(c, base, again, figure(c, base), figure(c, again)) ? 1 : 0;
      const bool slowdown = diff::significant(c, base, slower, figure(c, base), figure(c, slower));
      if (c.quantile == 0.99 && calls < 900) {
        EXPECT_FALSE(slowdown) << pair;
      } else if (c.noise == diff::Noise::Mean || c.quantile == 0.5) {
        missed += slowdown ? 0 : 1;
      }
    }
  }
  EXPECT_EQ(flagged, 0);
  EXPECT_EQ(missed, 0);
}

// Few calls: wide noise. 30 % slower over 20 calls is within it, over 20,000 it is not.
TEST(CompareUnit, FewCallsWidenTheNoise) {
  std::mt19937_64 random(7);
  const diff::Column& mean =
      diff::columns(profiles::Kind::Stats)[column(profiles::Kind::Stats, "mean")];
  const diff::Column& p50 =
      diff::columns(profiles::Kind::Stats)[column(profiles::Kind::Stats, "p50")];
  for (const std::size_t calls : {std::size_t{20}, std::size_t{20000}}) {
    const diff::Spread base = spread_of(durations(random, calls));
    const diff::Spread now = spread_of(durations(random, calls, 1.3));
    EXPECT_EQ(diff::significant(mean, base, now, base.mean, now.mean), calls > 20) << calls;
    EXPECT_EQ(diff::significant(p50, base, now, base.p50, now.p50), calls > 20) << calls;
  }
}

// 200 calls of exactly 200 us, then the same with 3 of them preempted for 3 ms: the P99 is one
// of the 2 slowest calls, so its growth is within noise, as is the mean's.
TEST(CompareUnit, AFewPreemptedCallsAreNoise) {
  std::vector<double> steady(200, 200000);
  std::vector<double> preempted = steady;
  std::fill_n(preempted.begin(), 3, 3200000);
  const diff::Spread base = spread_of(steady);
  const diff::Spread now = spread_of(preempted);
  ASSERT_EQ(now.p99, 3200000);
  const auto& all = diff::columns(profiles::Kind::Stats);
  const diff::Column& p99 = all[column(profiles::Kind::Stats, "p99")];
  EXPECT_FALSE(diff::significant(p99, base, now, base.p99, now.p99));
  const diff::Column& mean = all[column(profiles::Kind::Stats, "mean")];
  EXPECT_FALSE(diff::significant(mean, base, now, base.mean, now.mean));
  // The noise of self time is the mean's, its floor 5 % of the mean: 2 us more self time in a
  // 500 us call is not significant; 100 us more is.
  const diff::Column& self = all[column(profiles::Kind::Stats, "self")];
  diff::Spread caller = spread_of(std::vector<double>(200, 500000));
  EXPECT_FALSE(diff::significant(self, caller, caller, 2000, 4000));
  EXPECT_TRUE(diff::significant(self, caller, caller, 2000, 102000));
}

// CPU per call is compared when both runs have samples, else its columns are not shown.
TEST(CompareUnit, CpuIsComparedWhenBothSidesHaveSamples) {
  const auto base =
      stats({sampled(function("f", 100, 1000), 100, 300)}, "base.json", cpu_object(1000));
  const auto now =
      stats({sampled(function("f", 100, 1000), 400, 310)}, "new.json", cpu_object(1000));
  const auto older = stats({function("f", 100, 1000)}, "old.json");
  const auto unsampled = stats({function("f", 100, 1000)}, "off.json", cpu_object(0));
  const diff::Comparison comparison = diff::compare(base, now, {"cpu_self>+50%"});
  ASSERT_TRUE(comparison.cpu);
  const std::size_t self = column(profiles::Kind::Stats, "cpu_self");
  const std::size_t total = column(profiles::Kind::Stats, "cpu_total");
  const diff::Row& f = comparison.rows.at(0);
  EXPECT_DOUBLE_EQ(*f.cells[self].base, 100 * kCpuPeriodNs / 100.0); // per call
  EXPECT_DOUBLE_EQ(*f.cells[self].now, 400 * kCpuPeriodNs / 100.0);
  EXPECT_TRUE(f.cells[self].significant);   // 100 -> 400 samples
  EXPECT_FALSE(f.cells[total].significant); // 300 -> 310: within sqrt(300)
  EXPECT_EQ(f.failed, std::vector<std::string>{"cpu_self>+50%"});
  const std::string text = diff::as_text(comparison);
  EXPECT_NE(text.find("CPU self/call"), std::string::npos) << text;
  EXPECT_NE(text.find("(+3.3%)"), std::string::npos) << text;
  EXPECT_TRUE(diff::as_json(comparison).at("rows").at(0).at("columns").contains("cpu_total"));
  for (const profiles::Profile* other : {&older, &unsampled}) {
    const diff::Comparison one_sided = diff::compare(base, *other, {"cpu_self>+1%"});
    EXPECT_FALSE(one_sided.cpu);
    EXPECT_FALSE(one_sided.failed());
    EXPECT_EQ(diff::as_text(one_sided).find("CPU"), std::string::npos);
    EXPECT_FALSE(diff::as_json(one_sided).at("rows").at(0).at("columns").contains("cpu_self"));
  }
}

// Two runs of one program whose function gets its samples at one rate (Poisson counts) are not
// flagged, over many pairs and sizes; twice the rate is flagged at 400 samples and more (at 40,
// 3 sigma of each side's count overlap: 40 + 19 against 80 - 27).
TEST(CompareUnit, CpuNoiseIsTheSamplesCounts) {
  std::mt19937_64 random(32);
  const diff::Column& self =
      diff::columns(profiles::Kind::Stats)[column(profiles::Kind::Stats, "cpu_self")];
  diff::Spread side;
  side.calls = 50;
  side.cpu_period_ns = kCpuPeriodNs;
  const auto per_call = [&](std::uint64_t samples) {
    return static_cast<double>(samples * kCpuPeriodNs) / side.calls;
  };
  int flagged = 0, missed = 0;
  for (int pair = 0; pair < 600; ++pair) {
    const double rate = std::vector<double>{3, 40, 400, 4000}[pair % 4];
    std::poisson_distribution<std::uint64_t> once(rate), twice(2 * rate);
    const double base = per_call(once(random));
    flagged += diff::significant(self, side, side, base, per_call(once(random))) ? 1 : 0;
    if (rate >= 400) {
      missed += diff::significant(self, side, side, base, per_call(twice(random))) ? 0 : 1;
    }
  }
  EXPECT_EQ(flagged, 0);
  EXPECT_EQ(missed, 0);
}

// A kernel that fires CPU timers on its tick merges finer expirations: each signal carries w
// periods, so a count of n periods varies as w n, not n. Drawn that way, two runs at one rate are
// not flagged when the side says how many periods a signal carries; counted as single samples,
// they would be.
TEST(CompareUnit, CpuNoiseCountsMergedExpirationsAsOneDraw) {
  std::mt19937_64 random(33);
  const diff::Column& total =
      diff::columns(profiles::Kind::Stats)[column(profiles::Kind::Stats, "cpu_total")];
  constexpr std::uint64_t kPerSignal = 4;
  diff::Spread merged;
  merged.calls = 50;
  merged.cpu_period_ns = kCpuPeriodNs;
  merged.samples_per_signal = kPerSignal;
  diff::Spread as_single = merged;
  as_single.samples_per_signal = 1;
  const auto per_call = [&](std::uint64_t signals) {
    return static_cast<double>(signals * kPerSignal * kCpuPeriodNs) / merged.calls;
  };
  int flagged = 0, flagged_as_single = 0, missed = 0;
  for (int pair = 0; pair < 600; ++pair) {
    const double rate = std::vector<double>{10, 100, 1000}[pair % 3];
    std::poisson_distribution<std::uint64_t> once(rate), twice(2 * rate);
    const double base = per_call(once(random));
    const double again = per_call(once(random));
    flagged += diff::significant(total, merged, merged, base, again) ? 1 : 0;
    flagged_as_single += diff::significant(total, as_single, as_single, base, again) ? 1 : 0;
    if (rate >= 1000) {
      missed += diff::significant(total, merged, merged, base, per_call(twice(random))) ? 0 : 1;
    }
  }
  EXPECT_EQ(flagged, 0);
  EXPECT_GT(flagged_as_single, 5);
  EXPECT_EQ(missed, 0);
}

TEST(CompareUnit, FunctionsMatchWhenTheirLineMoved) {
  const auto base = stats({function("f", 100, 1000, 10)}, "base.json");
  const auto now = stats({function("f", 100, 1000, 14)}, "new.json");
  const diff::Comparison comparison = diff::compare(base, now, {});
  ASSERT_EQ(comparison.rows.size(), 1U);
  EXPECT_EQ(comparison.rows[0].side, diff::Side::Both);
  EXPECT_EQ(comparison.rows[0].line, 14);
}

// An instrumented function's entry: its object and build id (docs/instrument.md).
Json instrumented(Json function, const std::string& module, const std::string& build_id) {
  function["module"] = module;
  function["build_id"] = build_id;
  return function;
}

TEST(CompareUnit, InstrumentedFunctionsMatchByObject) {
  // One inline function in two libraries: same name, file and line, told apart by the object
  // (by its file name: the runs may be from two build directories).
  const auto base = stats({instrumented(function("helper", 100, 1000), "/a/libone.so", "aa"),
                           instrumented(function("helper", 500, 1000), "/a/libtwo.so", "bb")},
                          "base.json");
  const auto now = stats({instrumented(function("helper", 500, 1000), "/b/libtwo.so", "bb"),
                          instrumented(function("helper", 100, 1000), "/b/libone.so", "aa")},
                         "new.json");
  const diff::Comparison comparison = diff::compare(base, now, {});
  ASSERT_EQ(comparison.rows.size(), 2U);
  const std::size_t calls = column(profiles::Kind::Stats, "calls");
  for (const diff::Row& row : comparison.rows) {
    EXPECT_EQ(row.side, diff::Side::Both);
    EXPECT_EQ(row.cells[calls].base, row.cells[calls].now);
  }
  EXPECT_TRUE(comparison.rebuilt.empty());
  EXPECT_EQ(diff::as_text(comparison).find("rebuilt"), std::string::npos);
  EXPECT_EQ(diff::as_json(comparison).at("rebuilt"), Json::array());
  // Their labels name the object, as nothing else tells the two rows apart.
  const std::string text = diff::as_text(comparison);
  EXPECT_NE(text.find("helper (w.cpp:10 in libone.so)"), std::string::npos) << text;
  EXPECT_NE(text.find("helper (w.cpp:10 in libtwo.so)"), std::string::npos) << text;
  EXPECT_NE(diff::as_markdown(comparison).find("`helper` `w.cpp`:10 in `libtwo.so`"),
            std::string::npos)
      << diff::as_markdown(comparison);
  EXPECT_EQ(diff::as_json(comparison).at("rows").at(0).at("module"), "libone.so");
}

TEST(CompareUnit, RebuiltObjectIsNamedAndItsFunctionsMatchByName) {
  const auto base = stats({instrumented(function("parse", 100, 1000, 10), "/x/server", "aaaa"),
                           instrumented(function("main", 1, 9000, 50), "/x/server", "aaaa"),
                           function("phase", 10, 5000, 20)},
                          "base.json");
  const auto now = stats({instrumented(function("parse", 100, 1000, 12), "/x/server", "bbbb"),
                          instrumented(function("main", 1, 9000, 52), "/x/server", "bbbb"),
                          function("phase", 10, 5000, 22)},
                         "new.json");
  const diff::Comparison comparison = diff::compare(base, now, {});
  ASSERT_EQ(comparison.rows.size(), 3U);
  for (const diff::Row& row : comparison.rows) {
    EXPECT_EQ(row.side, diff::Side::Both) << row.name;
  }
  ASSERT_EQ(comparison.rebuilt.size(), 1U);
  EXPECT_EQ(comparison.rebuilt[0].module, "server");
  EXPECT_EQ(comparison.rebuilt[0].base_build_id, "aaaa");
  EXPECT_EQ(comparison.rebuilt[0].new_build_id, "bbbb");
  EXPECT_NE(diff::as_text(comparison).find("rebuilt: server (build id aaaa in base, bbbb in new)"),
            std::string::npos);
  EXPECT_EQ(diff::as_json(comparison).at("rebuilt").at(0).at("new_build_id"), "bbbb");
  EXPECT_NE(diff::as_markdown(comparison).find("Rebuilt: `server`"), std::string::npos);
  EXPECT_EQ(diff::as_text(comparison).find(" in server"), std::string::npos)
      << "a function alone at its place is not labelled with its object";
}

TEST(CompareUnit, FileWithoutObjectsMatchesOneWithThem) {
  // A stats.json of a hotscope that wrote no "module" against one that does.
  const auto base = stats({function("parse", 100, 1000)}, "base.json");
  const auto now =
      stats({instrumented(function("parse", 100, 1000), "/x/server", "bbbb")}, "new.json");
  EXPECT_TRUE(base.stats.functions[0].module.empty());
  EXPECT_FALSE(base.stats.functions[0].has("build_id"));
  EXPECT_EQ(now.stats.functions[0].module, "/x/server");
  EXPECT_EQ(now.stats.functions[0].build_id, "bbbb");
  const diff::Comparison comparison = diff::compare(base, now, {});
  ASSERT_EQ(comparison.rows.size(), 1U);
  EXPECT_EQ(comparison.rows[0].side, diff::Side::Both);
  EXPECT_TRUE(comparison.rebuilt.empty());
}

TEST(CompareUnit, AgentColumnsCarryObjects) {
  profiles::Stats stats;
  profiles::read_stats(R"({"hotscope_version":"0.1.0","functions":{"name":["f","g"],)"
                       R"("module":["","/x/server"],"build_id":["","cc"],"calls":[1,2]}})",
                       "answer", stats);
  ASSERT_EQ(stats.functions.size(), 2U);
  EXPECT_EQ(stats.functions[0].module, "");
  EXPECT_EQ(stats.functions[1].module, "/x/server");
  EXPECT_EQ(stats.functions[1].build_id, "cc");
  // A refresh reuses the rows: an answer without objects leaves none behind.
  profiles::read_stats(R"({"hotscope_version":"0.1.0","functions":{"name":["f","g"]}})", "answer",
                       stats);
  EXPECT_EQ(stats.functions[1].module, "");
  EXPECT_EQ(stats.functions[1].build_id, "");
}

TEST(CompareUnit, HeapSitesMatchByFunctionAndFileNotAddress) {
  const auto base = heap({{{{"leak(int)", "w.cpp", 30}, {"main", "w.cpp", 90}}, 4096, 0},
                          {{{"cache()", "w.cpp", 40}, {"main", "w.cpp", 91}}, 1024, 0}},
                         0x1000);
  const auto now = heap({{{{"cache()", "w.cpp", 44}, {"main", "w.cpp", 95}}, 1024, 0},
                         {{{"leak(int)", "w.cpp", 33}, {"main", "w.cpp", 94}}, 4096, 204800},
                         {{{"fresh()", "w.cpp", 50}, {"main", "w.cpp", 96}}, 64, 64}},
                        0x9000);
  const diff::Comparison comparison = diff::compare(base, now, {"end_bytes>+64KiB"});
  ASSERT_EQ(comparison.rows.size(), 3U);
  EXPECT_EQ(comparison.rows[0].name, "leak (w.cpp:33)");
  EXPECT_EQ(comparison.rows[0].side, diff::Side::Both);
  EXPECT_EQ(comparison.rows[0].failed, std::vector<std::string>{"end_bytes>+64KiB"});
  EXPECT_EQ(row_named(comparison, "cache (w.cpp:44)").side, diff::Side::Both);
  EXPECT_FALSE(row_named(comparison, "cache (w.cpp:44)").significant());
  const diff::Row& fresh = row_named(comparison, "fresh (w.cpp:50)");
  EXPECT_EQ(fresh.side, diff::Side::NewOnly);
  EXPECT_TRUE(fresh.significant()); // from nothing
  ASSERT_TRUE(comparison.totals);
  const std::size_t end = column(profiles::Kind::Heap, "end_bytes");
  EXPECT_DOUBLE_EQ(comparison.totals->cells[end].change(), 204800 + 64);
  EXPECT_FALSE(comparison.totals->failed.empty());
}

TEST(CompareUnit, OnlyProfilesOfOneKindCompare) {
  const auto timing = stats({function("f", 100, 1000)}, "stats.json");
  const auto memory = heap({}, 0);
  EXPECT_EQ(failure_code([&] { diff::compare(timing, memory, {}); }), kUsage);
  EXPECT_EQ(failure_code([&] { profiles::classify(Json{{"a", 1}}, "x.json"); }), kUsage);
  EXPECT_EQ(failure_code([&] { profiles::classify(Json::array(), "x.json"); }), kUsage);
  EXPECT_EQ(failure_code([&] { profiles::read_profile("/nonexistent/stats.json"); }), kUsage);
  // A function entry without a name is malformed: one line, no crash.
  EXPECT_EQ(failure_code([&] {
              profiles::classify(Json{{"hotscope_version", "0.1.0"},
                                      {"functions", Json::array({Json{{"calls", 1}}})}},
                                 "b");
            }),
            kUsage);
}

TEST(CompareUnit, FoldedStacksAndDhatFrames) {
  const std::string text = "p;main;phase_2 5\np;main 7\r\n\np;x y 3\n# hotscope 0.1.0 clock=tsc\n";
  const profiles::StackLines stacks = profiles::folded_stacks(text, "t.folded");
  ASSERT_EQ(stacks.starts.size(), 3U);
  EXPECT_EQ(stacks.frames(0), "p;main;phase_2");
  EXPECT_EQ(stacks.count(0), 5U);
  EXPECT_EQ(stacks.count(1), 7U);
  EXPECT_EQ(stacks.frames(2), "p;x y"); // a space inside a frame stays
  EXPECT_EQ(stacks.total, 15U);
  const profiles::Frame frame =
      profiles::parse_frame("0x4011D6: ns::parse(std::string const&) const (service.cpp:40)");
  EXPECT_EQ(frame.function, "ns::parse(std::string const&) const");
  EXPECT_EQ(frame.file, "service.cpp");
  EXPECT_EQ(frame.line, 40);
  EXPECT_EQ(profiles::parse_frame("0x10: f (in /lib/libc.so.6)").file, "/lib/libc.so.6");
  EXPECT_EQ(profiles::short_frame("0x4011D6: ns::parse(std::string const&) (service.cpp:40)"),
            "ns::parse (service.cpp:40)");
  EXPECT_EQ(profiles::short_frame("0x10: (anonymous namespace)::f (w.cpp:3)"),
            "(anonymous namespace)::f (w.cpp:3)");
}

// report.html: a thread without OS figures (state "") and a function whose only call is still
// open show `-` where their figures are unknown, never `0 ns` or 0.
TEST(ReportUnit, UnknownFiguresAreDashes) {
  Json open_call = function("open_call", 0, 0);
  Json document{{"hotscope_version", "0.1.0"},
                {"pid", 1},
                {"process_name", "w"},
                {"duration_ns", 1000000},
                {"functions", Json::array({open_call})}};
  const auto thread = [&](const std::string& name, const std::string& state) {
    return Json{{"index", 0},
                {"os_tid", 7},
                {"name", name},
                {"exited", false},
                {"state", state},
                {"cpu_user_ns", 0},
                {"cpu_system_ns", 0},
                {"voluntary_switches", 0},
                {"involuntary_switches", 0},
                {"functions", Json::array({open_call})}};
  };
  document["threads"] = Json::array({thread("guest", ""), thread("idle", "S")});
  const std::string html = report::html_page(profiles::classify(document, "stats.json"),
                                             std::nullopt, {std::nullopt, "trace.folded"});
  const auto row_of = [&](const std::string& start) {
    const std::size_t at = html.find("<tr><td data-value=\"" + start + "\"");
    EXPECT_NE(at, std::string::npos) << start;
    return at == std::string::npos ? "" : html.substr(at, html.find("</tr>", at) - at);
  };
  const std::string dash = "<td data-value=\"-1\">-</td>";
  const auto count = [](const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count(row_of("guest"), dash), 4U) << row_of("guest"); // CPU user, system, switches
  EXPECT_EQ(count(row_of("idle"), dash), 0U) << row_of("idle");   // known to be 0
  EXPECT_NE(row_of("idle").find(">0 ns<"), std::string::npos) << row_of("idle");
  const std::string function_row = row_of("open_call");
  EXPECT_EQ(count(function_row, dash), 7U) << function_row; // mean, P50-P99, self, total, %
  EXPECT_EQ(function_row.find("0 ns"), std::string::npos) << function_row;
}

// report.html: CPU Self and CPU Total columns (and a thread's samples) when the run has CPU
// samples, a CPU flame graph of cpu.folded when given; neither for a run without samples.
TEST(ReportUnit, CpuColumnsAndFlameGraphWhenTheRunHasSamples) {
  Json document{
      {"hotscope_version", "0.1.0"},
      {"pid", 1},
      {"process_name", "w"},
      {"duration_ns", 1000000},
      {"functions", Json::array({sampled(function("hot", 10, 1000), 3, 7)})},
      {"threads", Json::array({{{"name", "main"}, {"cpu_samples", 7}}, {{"name", "older"}}})}};
  const std::string cpu_folded = "main;hot;memcpy 3\nmain;hot 4\n";
  const auto page = [&](const Json& cpu, const std::optional<std::string>& folded) {
    Json with = document;
    if (!cpu.is_null()) {
      with["cpu"] = cpu;
    }
    return report::html_page(profiles::classify(with, "stats.json"), std::nullopt,
                             {std::nullopt, "trace.folded"}, {folded, "cpu.folded"});
  };
  const std::string html = page(cpu_object(7), cpu_folded);
  EXPECT_NE(html.find("<th data-sort=\"number\">CPU Self</th><th data-sort=\"number\">CPU "
                      "Total</th>"),
            std::string::npos);
  const std::size_t hot = html.find("<tr><td data-value=\"hot\"");
  ASSERT_NE(hot, std::string::npos);
  const std::string row = html.substr(hot, html.find("</tr>", hot) - hot);
  EXPECT_NE(row.find("<td data-value=\"30000000\">30.00 ms</td><td "
                     "data-value=\"70000000\">70.00 ms</td>"),
            std::string::npos)
      << row;
  EXPECT_NE(html.find("<th data-sort=\"number\">CPU Samples</th>"), std::string::npos);
  EXPECT_NE(html.find("<td data-value=\"7\">7</td></tr>"), std::string::npos);  // main's
  EXPECT_NE(html.find("<td data-value=\"-1\">-</td></tr>"), std::string::npos); // older's
  EXPECT_NE(html.find("<section id=\"cpu-flame\">"), std::string::npos);
  EXPECT_NE(html.find("data-unit=\"samples\""), std::string::npos);
  EXPECT_NE(html.find("memcpy"), std::string::npos);
  EXPECT_NE(html.find("href=\"#cpu-flame\""), std::string::npos);

  for (const std::string& without :
       {page(cpu_object(0), std::nullopt), page(nullptr, std::nullopt)}) {
    EXPECT_EQ(without.find("CPU Self"), std::string::npos);
    EXPECT_EQ(without.find("CPU Samples"), std::string::npos);
    EXPECT_EQ(without.find("cpu-flame"), std::string::npos);
  }
}

TEST(FlameUnit, TreeHasInclusiveValuesAndNameOrder) {
  const Graph flame("p;main;b 30\np;main;a 10\np;main 5\np;t 1\n");
  const report::FlameGraph& graph = flame.graph;
  ASSERT_EQ(graph.frames.size(), 6U);
  EXPECT_EQ(graph.frames[0].name, "all");
  EXPECT_EQ(graph.frames[0].value, 46U);
  EXPECT_EQ(graph.total, 46U);
  const report::FlameFrame& main = flame.frame("main");
  EXPECT_EQ(main.value, 45U);
  EXPECT_EQ(main.depth, 2U);
  // Callees in name order from their caller's left edge, its own count right of them.
  EXPECT_EQ(flame.frame("a").start, main.start);
  EXPECT_EQ(flame.frame("a").value, 10U);
  EXPECT_EQ(flame.frame("b").start, main.start + 10);
  EXPECT_EQ(flame.frame("t").start, 45U);
  EXPECT_EQ(graph.merged, 0U);
  // Each frame before its callees.
  EXPECT_EQ(graph.frames[1].name, "p");
  EXPECT_EQ(graph.frames[2].name, "main");
  EXPECT_EQ(graph.frames[3].name, "a");
}

TEST(FlameUnit, DeepStacksNeedNoRecursion) {
  std::string deep = "p";
  for (int i = 0; i < 4000; ++i) {
    deep += ";f" + std::to_string(i % 7);
  }
  const Graph flame(deep + " 5\n" + deep + ";leaf 1\n");
  EXPECT_EQ(flame.graph.frames.size(), 4003U);
  EXPECT_EQ(flame.frame("leaf").depth, 4002U);
  const std::string svg = report::flame_svg(flame.graph, {"", "", report::FlameUnit::Bytes, true});
  EXPECT_NE(svg.find("data-depth=\"4002\""), std::string::npos);
}

TEST(FlameUnit, NarrowFramesAreMergedPastTheLimit) {
  std::string text;
  for (int i = 0; i < 1000; ++i) {
    text += fmt::format("p;wide;f{:04} 1\n", i);
  }
  text += "p;wider 5000\n";
  const Graph flame(text, 100);
  EXPECT_EQ(flame.graph.frames.size(), 100U);
  EXPECT_EQ(flame.graph.merged, 904U);
  EXPECT_EQ(flame.frame("wide").value, 1000U); // the merged ones' time stays in their caller
  EXPECT_EQ(flame.frame("wider").value, 5000U);
  EXPECT_EQ(flame.frame("f0000").start, flame.frame("wide").start);
  const std::string svg = report::flame_svg(flame.graph, {"", "", report::FlameUnit::Bytes, true});
  EXPECT_NE(svg.find("904 narrow frames merged"), std::string::npos);
  // A minimum width in pixels merges what is narrower: 1 of 6000 is 0.2 px of 1180.
  const profiles::StackLines stacks = profiles::folded_stacks(text, "t.folded");
  EXPECT_EQ(report::flame_graph(stacks, 0.5).frames.size(), 4U);
}

TEST(FlameUnit, SvgHasOneFramePerNodeAndEscapesNames) {
  const Graph flame("p;std::vector<int>::push_back 3\np;a&b \"c\" 1\n");
  const std::string svg =
      report::flame_svg(flame.graph, {"title <1>", "", report::FlameUnit::Nanoseconds, true});
  const std::regex frame("<g class=\"frame\" data-name=");
  EXPECT_EQ(
      std::distance(std::sregex_iterator(svg.begin(), svg.end(), frame), std::sregex_iterator()),
      4);
  EXPECT_NE(svg.find("data-name=\"std::vector&lt;int&gt;::push_back\""), std::string::npos);
  EXPECT_NE(svg.find("data-name=\"a&amp;b &quot;c&quot;\""), std::string::npos);
  EXPECT_NE(svg.find("title &lt;1&gt;"), std::string::npos);
  EXPECT_NE(svg.find("<script><![CDATA["), std::string::npos);
  // A name with invalid UTF-8 and a control character stays readable XML.
  const std::string odd =
      report::flame_svg(Graph("a\xff\x01z 1\n").graph, {"", "", report::FlameUnit::Bytes, false});
  EXPECT_NE(odd.find("a\xEF\xBF\xBD\xEF\xBF\xBDz"), std::string::npos);
  EXPECT_EQ(odd.find("<script"), std::string::npos);
}

TEST(FlameUnit, HeapStacksAreRootFirst) {
  const auto memory = heap({{{{"leak(int)", "w.cpp", 30}, {"main", "w.cpp", 90}}, 4096, 512}}, 0);
  const auto sites = profiles::heap_sites(memory);
  const std::string total = report::heap_stacks(sites, report::HeapBytes::Total);
  EXPECT_EQ(total, "main (w.cpp:90)\x1fleak (w.cpp:30) 4096\n");
  const profiles::StackLines stacks =
      profiles::folded_stacks(total, "heap.json", report::kHeapSeparator);
  ASSERT_EQ(stacks.starts.size(), 1U);
  EXPECT_EQ(stacks.count(0), 4096U);
  EXPECT_EQ(report::heap_stacks(sites, report::HeapBytes::AtEnd),
            "main (w.cpp:90)\x1fleak (w.cpp:30) 512\n");
}

} // namespace
