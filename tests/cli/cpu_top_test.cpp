// `hotscope cpu --top`'s figures from two GET /v1/stats answers (cpu_command.hpp): what each
// function gained in the window, a reset in between, and the table.
#include "cpu_command.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using namespace hotscope::cli;
using Json = nlohmann::json;

profiles::Stats answer(double duration_ns, std::uint64_t samples, const Json& functions) {
  profiles::Stats stats;
  profiles::read_stats(Json{{"duration_ns", duration_ns},
                            {"cpu", {{"hz", 100}, {"period_ns", 10'000'000}, {"samples", samples}}},
                            {"functions", functions}}
                           .dump(),
                       "GET /v1/stats", stats);
  return stats;
}

Json function(const std::string& name, std::uint64_t self_ms, std::uint64_t total_ms) {
  return Json{{"name", name},
              {"file", "w.cpp"},
              {"line", 3},
              {"cpu_self_ns", self_ms * 1'000'000},
              {"cpu_total_ns", total_ms * 1'000'000}};
}

TEST(CpuTop, TheWindowIsWhatEachFunctionGained) {
  const profiles::Stats before =
      answer(1e9, 10, {function("parse", 50, 50), function("idle", 0, 30)});
  const profiles::Stats after = answer(
      3e9, 40, {function("parse", 80, 80), function("idle", 0, 30), function("handle", 20, 200)});
  const CpuWindow window = cpu_window(before, after);
  EXPECT_EQ(window.samples, 30u);
  EXPECT_EQ(window.period_ns, 10'000'000u);
  ASSERT_EQ(window.rows.size(), 2u); // idle gained nothing
  EXPECT_EQ(window.rows[0].name, "parse");
  EXPECT_EQ(window.rows[0].self_ns, 30'000'000u);
  EXPECT_EQ(window.rows[1].name, "handle"); // new in the window: all of it
  EXPECT_EQ(window.rows[1].total_ns, 200'000'000u);

  const std::vector<std::string> table = cpu_top(window, 1);
  ASSERT_EQ(table.size(), 3u);
  EXPECT_EQ(table[0], "30 CPU samples, 300.00 ms of CPU");
  EXPECT_EQ(table[2], "  30.00 ms  10.0%    30.00 ms  10.0%  parse (w.cpp:3)");

  // A reset in between (a shorter window): the later answer is all new.
  const CpuWindow reset =
      cpu_window(after, answer(1e8, 5, Json::array({function("parse", 10, 10)})));
  EXPECT_EQ(reset.samples, 5u);
  ASSERT_EQ(reset.rows.size(), 1u);
  EXPECT_EQ(reset.rows[0].self_ns, 10'000'000u);

  const CpuWindow none = cpu_window(after, after);
  EXPECT_EQ(cpu_top(none, 5).back(), "(no function had CPU samples)");
}

} // namespace
