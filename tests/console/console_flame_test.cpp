// The console's flame tab without a terminal: folded stacks made a tree with callers and callees,
// zoom, malformed answers refused, and the CPU flame of the samples gained between two answers.
#include "console/input.hpp"
#include "console/model.hpp"
#include "console/view.hpp"
#include "console_fixtures.hpp"

#include <curses.h>
#include <gtest/gtest.h>

namespace {

using namespace hotscope::cli::console;
using namespace hotscope::cli::console::testing;

TEST(ConsoleFlame, MalformedStacksAreRefusedInOneLine) {
  Model model;
  for (const char* folded : {"proc;t1;a -5\n", "proc;t1;a\n", "{\"a\": 1}"}) {
    try {
      model.update_flame(folded, 5);
      ADD_FAILURE() << "no Failure for " << folded;
    } catch (const hotscope::cli::Failure& failure) {
      EXPECT_EQ(failure.code, hotscope::cli::kUsage);
      EXPECT_NE(std::string(failure.what()).find("GET /v1/trace"), std::string::npos);
    }
  }
}

TEST(ConsoleFlame, FoldedStacksMakeATreeWithCallersAndCallees) {
  Model model;
  model.update_flame("proc;t1;a;b 100\nproc;t1;a;c 50\nproc;t2;a 10\n# a comment\n", 5);
  const FlameNode& root = model.flame();
  EXPECT_EQ(root.total_ns, 160u);
  ASSERT_EQ(root.children.size(), 1u);
  EXPECT_EQ(root.children[0].name, "a");
  EXPECT_EQ(root.children[0].self_ns, 10u);
  ASSERT_EQ(root.children[0].children.size(), 2u);
  EXPECT_EQ(root.children[0].children[0].name, "b"); // widest first
  const auto callees = model.callees("a");
  ASSERT_EQ(callees.size(), 2u);
  EXPECT_EQ(callees[0], (std::pair<std::string, std::uint64_t>{"b", 100}));
  EXPECT_EQ(model.callers("c").at(0).first, "a");

  ViewState state;
  state.tab = Tab::Flame;
  Page page = flame_page(model, state, 100);
  ASSERT_EQ(page.keys, std::vector<std::string>{"a"});
  UiState ui;
  ui.view = state;
  handle_key('\n', ui, page); // zoom into a
  EXPECT_EQ(ui.view.flame_zoom, std::vector<std::string>{"a"});
  page = flame_page(model, ui.view, 100);
  EXPECT_EQ(page.keys, (std::vector<std::string>{"b", "c"}));
  handle_key(KEY_BACKSPACE, ui, page);
  EXPECT_TRUE(ui.view.flame_zoom.empty());
}

// The CPU flame shows what each stack gained since the previous answer, each sample a period of
// CPU time; the first answer and one after a reset (counts went down) show all of the window.
TEST(ConsoleFlame, CpuFlameIsTheSamplesGainedSinceThePreviousAnswer) {
  Model model;
  Json answer = stats(1'000'000'000, 10, 100, 100);
  answer["cpu"] = {{"hz", 100}, {"period_ns", 10'000'000}, {"samples", 12}};
  update(model, answer);
  ViewState state;
  state.tab = Tab::Flame;
  state.flame_cpu = true;
  EXPECT_NE(flame_page(model, state, 100).fixed.at(0).text.find("asking for the CPU samples"),
            std::string::npos);
  model.update_cpu_flame("main;a;b 10\nmain;c 2\n", 10'000'000);
  EXPECT_EQ(model.cpu_flame().total_ns, 120'000'000u);
  EXPECT_EQ(model.cpu_flame_seconds(), 0); // all of the window
  Page page = flame_page(model, state, 100);
  EXPECT_NE(page.fixed.at(0).text.find("CPU time in the measuring window"), std::string::npos)
      << page.fixed.at(0).text;
  EXPECT_EQ(page.keys, std::vector<std::string>{"main"});

  answer["duration_ns"] = 3'000'000'000;
  update(model, answer);
  model.update_cpu_flame("main;a;b 13\nmain;c 2\nmain;d 1\n", 10'000'000);
  const FlameNode& main_frame = model.cpu_flame().children.at(0);
  EXPECT_EQ(main_frame.total_ns, 40'000'000u); // b gained 3, d 1, c nothing
  ASSERT_EQ(main_frame.children.size(), 2u);
  EXPECT_EQ(main_frame.children[0].name, "a");
  EXPECT_EQ(model.cpu_flame_seconds(), 2);
  EXPECT_NE(flame_page(model, state, 100).fixed.at(0).text.find("the last 2.0 s"),
            std::string::npos);

  answer["duration_ns"] = 500'000'000; // reset
  update(model, answer);
  model.update_cpu_flame("main;c 1\n", 10'000'000);
  EXPECT_EQ(model.cpu_flame().total_ns, 10'000'000u);
  EXPECT_EQ(model.cpu_flame_seconds(), 0);

  // The sampler off: how to start it; `c` goes back to wall time.
  answer["cpu"] = {{"hz", 0}, {"period_ns", 0}, {"samples", 0}, {"problem", ""}};
  update(model, answer);
  EXPECT_NE(flame_page(model, state, 100).fixed.at(0).text.find("HOTSCOPE_CPU_HZ=99"),
            std::string::npos);
  UiState ui;
  ui.view = state;
  EXPECT_EQ(handle_key('c', ui, Page{}), Action::Refresh);
  EXPECT_FALSE(ui.view.flame_cpu);
}

} // namespace
