// The functions tab's kept calls without a terminal (docs/console.md, "1 functions"): the detail
// pane's line, the list Enter opens, one call's tree, Backspace back up, from the /v1/slow answer
// docs/slow.md describes.
#include "console/input.hpp"
#include "console/model.hpp"
#include "console/source.hpp"
#include "console/view.hpp"
#include "console_fixtures.hpp"

#include <curses.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace {

using namespace hotscope::cli::console;
using namespace hotscope::cli::console::testing;

Model model_of_one_function() {
  Model model;
  hotscope::cli::profiles::Stats answer;
  hotscope::cli::profiles::read_stats(
      Json{{"duration_ns", 1'000'000'000},
           {"records", {{"written", 1}, {"kept", 1}, {"dropped", 0}}},
           {"functions",
            {{{"name", "work"}, {"file", "a.cpp"}, {"line", 7}, {"calls", 10}, {"total_ns", 9}}}}}
          .dump(),
      "the agent's answer to GET /v1/stats", answer);
  model.update_stats(answer);
  return model;
}

Json kept_call(const std::string& id, const std::string& thread, std::uint64_t duration_ns,
               std::uint64_t cut_events, const std::string& tree) {
  return Json{{"id", id},
              {"function", "work"},
              {"thread", thread},
              {"os_tid", 4243},
              {"start_unix_ns", 1'700'000'000'250'000'000},
              {"duration_ns", duration_ns},
              {"allocations", 0},
              {"allocated_bytes", 0},
              {"cpu_samples", 0},
              {"cut_events", cut_events},
              {"tree", tree},
              {"events", Json::array()}};
}

Page page_of(const Model& model, UiState& ui) {
  return build_page(model, ui.view, Glyphs{}, 120);
}

TEST(ConsoleKeptCalls, EnterListsThemAndShowsOnesTreeBackspaceGoesBack) {
  Model model = model_of_one_function();
  UiState ui;
  Page page = page_of(model, ui);
  const std::string function_key = ui.view.selection();
  EXPECT_EQ(handle_key('\n', ui, page), Action::Refresh); // the pane, and its answers
  page = page_of(model, ui);
  EXPECT_TRUE(contains(page.detail, "  kept calls: (asking...)"));
  EXPECT_FALSE(page.detail_list);

  model.update_kept_calls(
      "work", Json{{"per_function", 4},
                   {"calls",
                    {kept_call("17", "worker-1", 12'000'000, 0, "work 12.00 ms\n  step 11.00 ms\n"),
                     kept_call("9", "worker-2", 3'000'000, 5, "work 3.00 ms\n  a\n  b\n  c\n")}}});
  page = page_of(model, ui);
  EXPECT_TRUE(contains(page.detail, "  kept calls: 2, the slowest 12.00 ms on worker-1 at "));
  EXPECT_TRUE(page.detail_list);

  EXPECT_EQ(handle_key('\n', ui, page), Action::None);
  EXPECT_EQ(ui.view.focus, DetailFocus::KeptCalls);
  page = page_of(model, ui);
  EXPECT_EQ(page.keys, (std::vector<std::string>{"17", "9"}));
  EXPECT_EQ(page.selected, 0);
  ASSERT_EQ(page.rows.size(), 2u);
  EXPECT_NE(page.rows[1].text.find("3.00 ms  worker-2  4243"), std::string::npos)
      << page.rows[1].text;
  EXPECT_NE(page.rows[1].text.find("5 events"), std::string::npos) << page.rows[1].text;

  handle_key(KEY_DOWN, ui, page);
  EXPECT_EQ(ui.view.kept_call, "9");
  page = page_of(model, ui);
  EXPECT_EQ(handle_key('\n', ui, page), Action::None);
  EXPECT_EQ(ui.view.focus, DetailFocus::Tree);
  page = page_of(model, ui);
  EXPECT_NE(page.fixed[0].text.find("work: 3.00 ms on worker-2 (tid 4243), started at "),
            std::string::npos)
      << page.fixed[0].text;
  EXPECT_TRUE(contains(page.fixed, "cut: the 5 events after the cap were not kept"));
  ASSERT_EQ(page.rows.size(), 4u);
  EXPECT_EQ(page.rows[3].text, "  c");
  for (int i = 0; i < 6; ++i) { // the cursor scrolls the tree and stops at its end
    handle_key(KEY_DOWN, ui, page);
  }
  EXPECT_EQ(ui.view.tree_line, 3u);
  EXPECT_EQ(page_of(model, ui).selected, 3);

  handle_key(KEY_BACKSPACE, ui, page);
  EXPECT_EQ(ui.view.focus, DetailFocus::KeptCalls);
  page = page_of(model, ui);
  EXPECT_EQ(page.selected, 1); // the call whose tree it was
  handle_key(KEY_LEFT, ui, page);
  EXPECT_EQ(ui.view.focus, DetailFocus::Functions);
  EXPECT_TRUE(ui.view.detail);
  EXPECT_EQ(ui.view.selection(), function_key); // the functions' selection never moved
  page = page_of(model, ui);
  handle_key(27, ui, page); // Esc closes the pane
  EXPECT_FALSE(ui.view.detail);
}

// An agent without /v1/slow, a process that keeps none, and one with none yet: one line each,
// and Enter closes the pane as it does without kept calls.
TEST(ConsoleKeptCalls, NoneKeptIsOneLine) {
  Model model = model_of_one_function();
  UiState ui;
  Page page = page_of(model, ui);
  handle_key('\n', ui, page);
  model.set_kept_calls_unsupported("work");
  EXPECT_TRUE(contains(page_of(model, ui).detail, "the agent has no /v1/slow"));
  model.update_kept_calls("work", Json{{"per_function", 0}, {"calls", Json::array()}});
  EXPECT_TRUE(contains(page_of(model, ui).detail, "HOTSCOPE_SLOWEST=0 keeps none"));
  model.update_kept_calls("work", Json{{"per_function", 4}, {"calls", Json::array()}});
  page = page_of(model, ui);
  EXPECT_TRUE(contains(page.detail, "no call ended yet"));
  EXPECT_EQ(handle_key('\n', ui, page), Action::None);
  EXPECT_FALSE(ui.view.detail);
  // Another function's calls are not this one's.
  model.update_kept_calls("other", Json{{"per_function", 4}, {"calls", Json::array()}});
  EXPECT_EQ(model.kept_calls("work"), nullptr);
}

TEST(ConsoleKeptCalls, MalformedAnswersAreRefusedInOneLine) {
  Model model;
  for (const Json& bad : {Json{{"calls", Json::array()}}, Json{{"per_function", 4}, {"calls", 3}},
                          Json{{"per_function", 4}, {"calls", {{{"id", 17}}}}}}) {
    try {
      read_answer("/v1/slow", [&] { model.update_kept_calls("work", bad); });
      ADD_FAILURE() << bad;
    } catch (const hotscope::cli::Failure& failure) {
      EXPECT_NE(std::string(failure.what()).find("GET /v1/slow"), std::string::npos);
    }
  }
}

} // namespace
