// The console's parts without a terminal or a process: rates from two answers, the threads tab
// from the /v1/threads answer docs/console.md describes (and from an agent without it), queues,
// heap sites and leak candidates, the keys, and the text helpers (the flame:
// console_flame_test.cpp).
#include "console/input.hpp"
#include "console/model.hpp"
#include "console/source.hpp"
#include "console/text.hpp"
#include "console/view.hpp"
#include "console_fixtures.hpp"

#include <curses.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

namespace {

using namespace hotscope::cli::console;
using namespace hotscope::cli::console::testing;

TEST(ConsoleModel, RatesComeFromTwoAnswers) {
  Model model;
  update(model, stats(1'000'000'000, 100, 500'000'000, 200'000'000));
  // Before a second answer: over the whole window.
  EXPECT_DOUBLE_EQ(model.functions().at(0).calls_rate, 100);
  update(model, stats(3'000'000'000, 500, 1'500'000'000, 600'000'000));
  const FunctionRow& row = model.functions().at(0);
  EXPECT_DOUBLE_EQ(row.calls_rate, 200);        // 400 calls in 2 s
  EXPECT_DOUBLE_EQ(row.time_rate, 500'000'000); // 1 s of total time in 2 s
  EXPECT_DOUBLE_EQ(row.core, 20);               // 0.4 s of self time in 2 s
  EXPECT_EQ(row.calls, 500u);
  const std::string key = row.key; // the rows are replaced at each answer
  // A reset: the window restarts, so the rate is over the new window.
  update(model, stats(500'000'000, 10, 1000, 1000));
  EXPECT_DOUBLE_EQ(model.functions().at(0).calls_rate, 20);
  ASSERT_NE(model.p99_history(key), nullptr);
  EXPECT_EQ(model.p99_history(key)->size(), 3u);
}

// GET /v1/stats?format=columns (one array per key) reads as the same rows as stats.json's
// objects, and a column shorter than the names reads as zeros.
TEST(ConsoleModel, TheColumnsLayoutGivesTheSameRows) {
  const Json objects = stats(1'000'000'000, 100, 500'000'000, 200'000'000);
  Json columns = objects;
  columns["functions"] = Json::object();
  for (const auto& [key, value] : objects["functions"][0].items()) {
    columns["functions"][key] = Json::array({value});
  }
  columns["functions"]["self_ns"] = Json::array();
  Model from_objects;
  update(from_objects, objects);
  Model from_columns;
  update(from_columns, columns);
  ASSERT_EQ(from_columns.functions().size(), 1u);
  const FunctionRow& expected = from_objects.functions().at(0);
  const FunctionRow& row = from_columns.functions().at(0);
  EXPECT_EQ(row.key, expected.key);
  EXPECT_EQ(row.name, "work");
  EXPECT_EQ(row.line, 7);
  EXPECT_EQ(row.calls, 100u);
  EXPECT_EQ(row.total_ns, 500'000'000u);
  EXPECT_EQ(row.p50_ns, 1000u);
  EXPECT_EQ(row.p99_ns, 5000u);
  EXPECT_DOUBLE_EQ(row.calls_rate, expected.calls_rate);
  EXPECT_EQ(row.self_ns, 0u);
}

// Functions that share name, file and line (template instantiations) are told apart by their
// order, and a function missing from the previous answer has its rate from 0, not from the
// answer before.
TEST(ConsoleModel, KeysOfTwinFunctionsAndRatesOfFunctionsThatComeBack) {
  const auto answer = [](std::uint64_t duration_ns, std::vector<std::uint64_t> calls) {
    Json functions = Json::array();
    for (std::size_t i = 0; i < calls.size(); ++i) {
      functions.push_back({{"name", i < 2 ? "twin" : "other"},
                           {"file", "a.cpp"},
                           {"line", 3},
                           {"calls", calls[i]}});
    }
    return Json{{"duration_ns", duration_ns}, {"functions", std::move(functions)}};
  };
  Model model;
  update(model, answer(1'000'000'000, {10, 20, 30}));
  ASSERT_EQ(model.functions().size(), 3u);
  EXPECT_EQ(model.functions()[0].key, "twin\ta.cpp:3");
  EXPECT_EQ(model.functions()[1].key, "twin\ta.cpp:3#1");
  EXPECT_EQ(model.functions()[2].key, "other\ta.cpp:3");
  update(model, answer(2'000'000'000, {15, 40}));
  EXPECT_DOUBLE_EQ(model.functions()[0].calls_rate, 5);
  EXPECT_DOUBLE_EQ(model.functions()[1].calls_rate, 20); // the second twin, from 20 to 40
  update(model, answer(3'000'000'000, {15, 40, 50}));
  ASSERT_EQ(model.functions().size(), 3u);
  EXPECT_DOUBLE_EQ(model.functions()[2].calls_rate, 50); // not in the previous answer
  EXPECT_EQ(model.p99_history("other\ta.cpp:3")->size(), 2u);
  EXPECT_EQ(model.function("twin\ta.cpp:3#1")->calls, 40u);
}

// Instrumented functions of one name, file and line in two objects are told apart by their
// object, whatever their order in each answer.
TEST(ConsoleModel, InstrumentedFunctionsAreKeyedByTheirObject) {
  const auto answer = [](std::uint64_t duration_ns, std::uint64_t one, std::uint64_t two,
                         bool swapped) {
    Json functions = Json::array();
    for (const auto& [module, calls] : {std::pair{"/a/libone.so", one}, {"/a/libtwo.so", two}}) {
      functions.push_back({{"name", "helper"},
                           {"file", "h.hpp"},
                           {"line", 3},
                           {"module", module},
                           {"build_id", "aa"},
                           {"calls", calls}});
    }
    if (swapped) {
      std::swap(functions[0], functions[1]);
    }
    return Json{{"duration_ns", duration_ns}, {"functions", std::move(functions)}};
  };
  Model model;
  update(model, answer(1'000'000'000, 10, 100, false));
  update(model, answer(2'000'000'000, 15, 200, true));
  const FunctionRow* one = model.function("helper\th.hpp:3\t/a/libone.so");
  const FunctionRow* two = model.function("helper\th.hpp:3\t/a/libtwo.so");
  ASSERT_NE(one, nullptr);
  ASSERT_NE(two, nullptr);
  EXPECT_DOUBLE_EQ(one->calls_rate, 5);
  EXPECT_DOUBLE_EQ(two->calls_rate, 100);
}

// The live screen formats only the rows it draws: those rows read as in the whole table (the
// columns' widths are those of the rows shown), every line as wide as the heading, and the
// rows not drawn stay without text.
TEST(ConsoleFunctions, AWindowOfRowsReadsAsTheWholeTable) {
  Json functions = Json::array();
  for (std::uint64_t i = 0; i < 60; ++i) {
    functions.push_back({{"name", std::string(1 + i % 17, 'f') + std::to_string(i)},
                         {"file", "a.cpp"},
                         {"line", i},
                         {"calls", 1 + i * i * i * 997},
                         {"total_ns", 1000 + i * 123'456'789},
                         {"self_ns", 10 + i * 1'000},
                         {"p50_ns", 100 + i},
                         {"p95_ns", 300 + i * 10},
                         {"p99_ns", 700 + i * 1000},
                         {"max_ns", 900 + i * 100'000}});
  }
  Model model;
  update(model, Json{{"duration_ns", 2'000'000'000}, {"functions", functions}});
  ViewState state;
  const Page whole = all_rows(functions_page(model, state, Glyphs{}, 0));
  ASSERT_EQ(whole.rows.size(), 60u);
  for (const auto& [first, count] : std::vector<std::pair<std::size_t, std::size_t>>{
           {0, 60}, {0, 10}, {23, 17}, {55, 5}, {59, 30}}) {
    Page window = functions_page(model, state, Glyphs{}, 0);
    format_rows(window, first, count);
    const std::size_t end = std::min<std::size_t>(first + count, 60);
    EXPECT_EQ(words(window.fixed[1].text), words(whole.fixed[1].text));
    for (std::size_t i = 0; i < 60; ++i) {
      if (i < first || i >= end) {
        EXPECT_TRUE(window.rows[i].text.empty()) << i;
        continue;
      }
      EXPECT_EQ(words(window.rows[i].text), words(whole.rows[i].text)) << i;
      EXPECT_EQ(columns(window.rows[i].text), columns(window.fixed[1].text)) << i;
    }
    if (first == 0 && count >= 60) {
      for (std::size_t i = 0; i < 60; ++i) {
        EXPECT_EQ(window.rows[i].text, whole.rows[i].text);
      }
      EXPECT_EQ(window.fixed[1].text, whole.fixed[1].text);
    }
  }
}

// The CPU column: a function's sampled CPU time (children included) when the process has CPU
// samples, sortable by its key; "-" when it has none, as other unknown figures.
TEST(ConsoleFunctions, TheCpuColumnIsADashWithoutSamples) {
  Json answer = stats(2'000'000'000, 10, 50'000'000, 40'000'000);
  answer["functions"][0]["cpu_total_ns"] = 30'000'000;
  answer["functions"].push_back({{"name", "idle"}, {"calls", 3}, {"cpu_total_ns", 0}});
  const auto cpu_cells = [&](const Json& cpu) {
    Json with = answer;
    if (!cpu.is_null()) {
      with["cpu"] = cpu;
    }
    Model model;
    update(model, with);
    ViewState state;
    state.sort = *column_of_key('u');
    const Page page = all_rows(functions_page(model, state, Glyphs{}, 0));
    const std::vector<std::string> heading = words(page.fixed[1].text);
    const auto at = std::find_if(heading.begin(), heading.end(),
                                 [](const std::string& word) { return word.rfind("CPU", 0) == 0; });
    EXPECT_EQ(at - heading.begin(), 11) << page.fixed[1].text; // after Total
    std::vector<std::string> cells;
    for (const Line& row : page.rows) {
      const std::vector<std::string> cell = words(row.text);
      // Name, rates (Time/s is two words), calls, then durations of two words each.
      const std::string& cpu = cell.at(18);
      cells.push_back(cell.at(0) + " " + cpu + (cpu == "-" ? "" : " " + cell.at(19)));
    }
    return cells;
  };
  EXPECT_EQ(cpu_cells(Json{{"hz", 99}, {"period_ns", 10'101'010}, {"samples", 3}}),
            (std::vector<std::string>{"work 30.00 ms", "idle 0 ns"}));
  for (const Json& none : {Json(nullptr), Json{{"hz", 0}, {"samples", 0}}}) {
    EXPECT_EQ(cpu_cells(none), (std::vector<std::string>{"work -", "idle -"})) << none;
  }
  EXPECT_EQ(column_heading(*column_of_key('u')), "CPU");

  // The detail pane: CPU self and with callees, and their share of the wall time.
  answer["functions"][0]["cpu_self_ns"] = 20'000'000;
  answer["cpu"] = Json{{"hz", 99}, {"period_ns", 10'101'010}, {"samples", 3}};
  Model model;
  update(model, answer);
  ViewState state;
  state.selected[0] = model.functions().front().key;
  EXPECT_TRUE(contains(function_detail(model, state, Glyphs{}, 120).detail,
                       "  CPU: self 20.00 ms, with callees 30.00 ms (60.0% of its wall time)"));
  answer.erase("cpu");
  update(model, answer);
  EXPECT_FALSE(contains(function_detail(model, state, Glyphs{}, 120).detail, "CPU:"));
}

// A guest track's batch figures from the statistics, its last rejection highlighted; threads
// that are not guest tracks are not listed.
TEST(ConsoleGuests, BatchesRepairsAndTheLastRejection) {
  Model model;
  update(model, Json::parse(R"({"duration_ns": 1000000000, "threads": [
    {"index": 0, "os_tid": 99, "name": "main", "records": {"written": 5}},
    {"index": 1, "os_tid": 4294967296, "name": "guest: sample", "exited": false,
     "records": {"written": 40, "kept": 30, "dropped": 10},
     "batches": {"accepted": 3, "rejected": 1, "records_rejected": 10, "nesting_repairs": 2,
                 "last_rejection": "guest batch rejected at record 4: time goes backwards"}}]})"));
  const Page page = guests_page(model);
  ASSERT_EQ(page.fixed.size(), 1u);
  EXPECT_NE(page.fixed[0].text.find("Batches rejected"), std::string::npos);
  ASSERT_EQ(page.rows.size(), 2u);
  EXPECT_NE(page.rows[0].text.find("guest: sample"), std::string::npos);
  EXPECT_EQ(page.rows[0].text.find("main"), std::string::npos);
  for (const char* figure : {" 40 ", " 30 ", " 10 ", " 3 ", " 1 ", " 2"}) {
    EXPECT_NE(page.rows[0].text.find(figure), std::string::npos) << figure << page.rows[0].text;
  }
  EXPECT_EQ(page.rows[1].style, Style::Alert);
  EXPECT_NE(page.rows[1].text.find("last rejected: guest batch rejected at record 4"),
            std::string::npos);
}

// The answer of GET /v1/threads (docs/console.md, "threads").
Json threads_answer(std::uint64_t now_ns, std::uint64_t cpu_user_ns) {
  return Json::parse(R"({
    "pid": 4242, "process_name": "demo", "now_ns": )" +
                     std::to_string(now_ns) + R"(, "stuck_threshold_ns": 1000000000,
    "threads": [
      { "index": 1, "os_tid": 4244, "name": "worker-2", "exited": false, "state": "S",
        "cpu_user_ns": )" +
                     std::to_string(cpu_user_ns) +
                     R"(, "cpu_system_ns": 0, "voluntary_switches": 1,
        "involuntary_switches": 0, "records": { "written": 10, "kept": 10, "dropped": 2 },
        "open_scopes": [
          { "name": "handle", "file": "service.cpp", "line": 40, "opened_ns": 1, "open_ns": 4000000000 },
          { "name": "take_lock", "file": "service.cpp", "line": 44, "opened_ns": 2, "open_ns": 3500000000 } ],
        "stuck": true },
      { "index": 0, "os_tid": 4243, "name": "", "exited": false, "state": "R",
        "cpu_user_ns": 0, "cpu_system_ns": 0, "voluntary_switches": 0, "involuntary_switches": 0,
        "records": { "written": 5, "kept": 5, "dropped": 0 }, "open_scopes": [], "stuck": false }
    ]})");
}

TEST(ConsoleThreads, StuckThreadsComeFirstHighlightedWithTheirOpenScopes) {
  Model model;
  model.update_threads(threads_answer(10'000'000'000, 1'000'000'000));
  model.update_threads(threads_answer(12'000'000'000, 2'000'000'000));
  const ThreadRow& stuck = model.threads().at(0);
  EXPECT_TRUE(stuck.stuck);
  ASSERT_TRUE(stuck.user_percent.has_value());
  EXPECT_DOUBLE_EQ(*stuck.user_percent, 50); // 1 s of CPU in 2 s
  ViewState state;
  const Page page = threads_page(model, state, 120);
  EXPECT_TRUE(contains(page.fixed, "2 threads, 1 stuck (inside one scope longer than 1.00 s)"));
  ASSERT_EQ(page.rows.size(), 2u);
  EXPECT_EQ(page.rows[0].style, Style::Alert);
  EXPECT_NE(page.rows[0].text.find("worker-2"), std::string::npos);
  EXPECT_NE(page.rows[0].text.find("STUCK 3.50 s in: handle > take_lock"), std::string::npos)
      << page.rows[0].text;
  EXPECT_NE(page.rows[0].text.find("50.0%"), std::string::npos) << page.rows[0].text;
  EXPECT_EQ(page.rows[1].style, Style::Normal);
  EXPECT_NE(page.rows[1].text.find("thread 4243"), std::string::npos) << page.rows[1].text;
}

TEST(ConsoleThreads, OlderExitedThreadsAreOneRowWithoutAThreadId) {
  Json answer = threads_answer(10'000'000'000, 1'000'000'000);
  answer["threads"].push_back(Json::parse(R"json({
      "index": 900, "os_tid": 0, "name": "(19744 ended threads)", "exited": true,
      "state": "", "cpu_user_ns": 0, "cpu_system_ns": 0, "voluntary_switches": 0,
      "involuntary_switches": 0, "records": { "written": 39488, "kept": 39488, "dropped": 0 },
      "open_scopes": [], "stuck": false })json"));
  Model model;
  model.update_threads(answer);
  ViewState state;
  const Page page = threads_page(model, state, 120);
  EXPECT_TRUE(contains(page.fixed, "2 threads, 1 stuck")) << page.fixed[0].text;
  ASSERT_EQ(page.rows.size(), 3u);
  const std::string& merged = page.rows[2].text;
  EXPECT_NE(merged.find("(19744 ended threads)"), std::string::npos) << merged;
  EXPECT_NE(merged.find(" -  exited"), std::string::npos) << merged; // no thread id 0
}

TEST(ConsoleThreads, AnAgentWithoutThreadsGetsOneLine) {
  Model model;
  update(model, Json{{"duration_ns", 1'000'000'000},
                     {"threads",
                      {{{"index", 0},
                        {"os_tid", 99},
                        {"name", "main"},
                        {"records", {{"written", 3}, {"dropped", 0}}}}}}});
  model.set_threads_unsupported();
  ViewState state;
  const Page page = threads_page(model, state, 120);
  ASSERT_EQ(page.fixed.size(), 2u); // the line, then the column headings
  EXPECT_NE(page.fixed[0].text.find("has no /v1/threads"), std::string::npos);
  ASSERT_EQ(page.rows.size(), 1u);
  EXPECT_NE(page.rows[0].text.find("main"), std::string::npos);
}

TEST(ConsoleQueues, RatesAndAFullQueue) {
  const auto answer = [](std::uint64_t duration_ns, std::uint64_t pushed) {
    return Json{{"duration_ns", duration_ns},
                {"queues",
                 {{{"name", "parse_queue"},
                   {"pushed", pushed},
                   {"popped", pushed - 64},
                   {"depth", 64},
                   {"capacity", 64},
                   {"wait_p50_ns", 100},
                   {"wait_p99_ns", 500},
                   {"wait_max_ns", 900},
                   {"push_threads", {"acceptor"}},
                   {"pop_threads", {"parser"}}}}}};
  };
  Model model;
  ViewState state;
  EXPECT_TRUE(contains(queues_page(model).fixed, "reports no queues"));
  update(model, answer(1'000'000'000, 1000));
  update(model, answer(2'000'000'000, 3000));
  EXPECT_DOUBLE_EQ(model.queues().at(0).push_rate, 2000);
  const Page page = queues_page(model);
  ASSERT_EQ(page.rows.size(), 1u);
  EXPECT_EQ(page.rows[0].style, Style::Alert); // depth == capacity
  EXPECT_NE(page.rows[0].text.find("parse_queue"), std::string::npos);
  EXPECT_NE(page.rows[0].text.find("acceptor"), std::string::npos);
  update(model, Json{{"duration_ns", 3'000'000'000}, {"queues", Json::array()}});
  EXPECT_TRUE(contains(queues_page(model).fixed, "no queue in this process"));
}

// Oldest is the age of the oldest item waiting: "-" when none waits, as in report.txt.
TEST(ConsoleQueues, OldestIsADashWhenNothingWaits) {
  const auto answer = [](std::uint64_t pending, std::uint64_t oldest_ns) {
    return Json{{"duration_ns", 1'000'000'000},
                {"queues",
                 {{{"name", "jobs"},
                   {"pushed", 10},
                   {"popped", 10 - pending},
                   {"depth", pending},
                   {"pending", pending},
                   {"oldest_pending_ns", oldest_ns},
                   {"push_threads", {"main"}},
                   {"pop_threads", {"worker"}}}}}};
  };
  Model model;
  update(model, answer(0, 0));
  Page page = queues_page(model);
  ASSERT_EQ(page.rows.size(), 1u);
  EXPECT_NE(page.rows[0].text.find(" -  main -> worker"), std::string::npos) << page.rows[0].text;
  update(model, answer(2, 3'000'000));
  page = queues_page(model);
  EXPECT_NE(page.rows[0].text.find("3.00 ms  main -> worker"), std::string::npos)
      << page.rows[0].text;
}

TEST(ConsoleTasks, RatesAndTheTasksFigures) {
  const auto answer = [](std::uint64_t duration_ns, std::uint64_t created,
                         std::uint64_t unfinished) {
    return Json{{"duration_ns", duration_ns},
                {"tasks",
                 {{{"name", "fetch"},
                   {"kind", "coroutine"},
                   {"created", created},
                   {"completed", created - 3 - unfinished},
                   {"destroyed_unfinished", unfinished},
                   {"alive", 3},
                   {"resumes", 2 * created},
                   {"running", {{"p50_ns", 1500}, {"p99_ns", 4000}}},
                   {"waiting", {{"p50_ns", 2'000'000}, {"p99_ns", 9'000'000}}},
                   {"lifetime", {{"p99_ns", 12'000'000}}}}}}};
  };
  Model model;
  EXPECT_TRUE(contains(tasks_page(model).fixed, "reports no tasks"));
  update(model, answer(1'000'000'000, 100, 0));
  update(model, answer(2'000'000'000, 600, 0));
  ASSERT_EQ(model.tasks().size(), 1u);
  EXPECT_DOUBLE_EQ(model.tasks()[0].created_rate, 500);
  EXPECT_DOUBLE_EQ(model.tasks()[0].resume_rate, 1000);
  Page page = tasks_page(model);
  ASSERT_EQ(page.rows.size(), 1u);
  EXPECT_EQ(page.rows[0].style, Style::Normal);
  for (const char* figure :
       {"fetch", "coroutine", "500", "1.00k", "1.50 µs", "9.00 ms", "12.00 ms"}) {
    EXPECT_NE(page.rows[0].text.find(figure), std::string::npos)
        << figure << " in " << page.rows[0].text;
  }
  update(model, answer(3'000'000'000, 700, 2));
  EXPECT_EQ(tasks_page(model).rows.at(0).style, Style::Alert); // destroyed unfinished
  update(model, Json{{"duration_ns", 4'000'000'000}, {"tasks", Json::array()}});
  EXPECT_TRUE(contains(tasks_page(model).fixed, "no task in this process"));
}

Json heap(std::uint64_t end_us, std::uint64_t live, std::uint64_t total) {
  return Json{{"mode", "cpp-heap"},
              {"te", end_us},
              {"ftbl",
               {"[root]", "0x1: operator new(unsigned long) (new_op.cc:50)",
                "0x2: cache::grow(std::string const&) (cache.cpp:12)"}},
              {"pps",
               {{{"tb", total},
                 {"tbk", 2},
                 {"eb", live},
                 {"ebk", 1},
                 {"gb", live},
                 {"gbk", 1},
                 {"fs", {1, 2}}}}}};
}

TEST(ConsoleMemory, SitesRatesAndLeakCandidates) {
  Model model;
  ViewState state;
  const Glyphs glyphs;
  for (std::uint64_t i = 1; i <= 4; ++i) {
    model.update_heap(heap(i * 1'000'000, i * 1000, i * 4000));
  }
  const Memory& memory = model.memory();
  ASSERT_EQ(memory.sites.size(), 1u);
  EXPECT_EQ(memory.sites[0].where, "cache::grow (cache.cpp:12)"); // past the allocator
  EXPECT_DOUBLE_EQ(memory.sites[0].bytes_rate, 4000);             // 4000 B in 1 s
  EXPECT_EQ(memory.sites[0].growing, 3);
  const Page page = memory_page(model, state, glyphs, 120);
  EXPECT_TRUE(contains(page.fixed, "live 3.91 KiB in 1 blocks"));
  // Listed under the top sites and under the leak candidates.
  std::size_t listed = 0;
  for (const Line& line : page.rows) {
    listed += line.text.find("cache::grow") != std::string::npos ? 1 : 0;
  }
  EXPECT_EQ(listed, 3u);
  model.set_heap_unavailable("turn it on");
  EXPECT_TRUE(contains(memory_page(model, state, glyphs, 120).fixed, "turn it on"));
}

// `update` refuses `answer` with one line that names `request`, leaving no abort behind.
template <typename Update>
void refused(const Json& answer, const std::string& request, Update update) {
  try {
    update(answer);
    ADD_FAILURE() << "no Failure for " << answer.dump();
  } catch (const hotscope::cli::Failure& failure) {
    const std::string what = failure.what();
    EXPECT_NE(what.find("GET " + request), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(ConsoleThreads, MalformedAnswersAreRefusedInOneLine) {
  const Json good = threads_answer(10'000'000'000, 1'000'000'000);
  std::vector<Json> bad(10, good);
  bad[0]["threads"][0]["index"] = "1";
  bad[1]["threads"][0]["os_tid"] = nullptr;
  bad[2]["threads"][0]["name"] = 7;
  bad[3]["threads"][0]["records"] = "many";
  bad[4]["threads"][0]["open_scopes"][0]["line"] = "40";
  bad[5]["threads"][0]["stuck"] = "yes";
  bad[6]["now_ns"] = "10";
  bad[7]["threads"] = Json::object();
  bad[8] = Json::array();
  bad[9]["threads"] = Json::parse(std::string(60, '[') + std::string(60, ']'));
  for (const Json& answer : bad) {
    Model model;
    refused(answer, "/v1/threads", [&](const Json& a) { model.update_threads(a); });
  }
  // The statistics' threads, shown without /v1/threads, are checked the same way.
  hotscope::cli::profiles::Stats stats;
  refused(Json(), "/v1/stats", [&](const Json&) {
    hotscope::cli::profiles::read_stats(
        R"({"duration_ns": 1, "functions": [], "threads": [{"index": "0"}]})", kStatsAnswer, stats);
  });
}

// One answer (`console --once --tab memory`): the rates are over the whole profile, not 0.
TEST(ConsoleMemory, TheFirstAnswersRatesAreOverTheWholeProfile) {
  Model model;
  model.update_heap(heap(2'000'000, 1000, 8000)); // 8000 B in 2 s
  ASSERT_EQ(model.memory().sites.size(), 1u);
  EXPECT_DOUBLE_EQ(model.memory().sites[0].bytes_rate, 4000);
}

TEST(ConsoleMemory, MalformedAnswersAreRefusedInOneLine) {
  const Json good = heap(1'000'000, 1000, 4000);
  std::vector<Json> bad(8, good);
  bad[0]["pps"][0]["tb"] = "4000";
  bad[1]["pps"][0]["eb"] = nullptr;
  bad[2]["pps"][0]["fs"] = {1, 9};
  bad[3]["pps"][0]["fs"] = {"1"};
  bad[4]["ftbl"][1] = 5;
  bad[5]["pps"] = Json::object();
  bad[6].erase("ftbl");
  bad[7]["pps"][0]["gbk"] = -1;
  for (const Json& answer : bad) {
    Model model;
    refused(answer, "/v1/heap", [&](const Json& a) { model.update_heap(a); });
  }
}

// Every tab's name, key and help entry come from one table: a name finds its tab, the help
// names every tab and the number keys reach each one.
TEST(ConsoleTabs, OneTableGivesNamesKeysAndHelp) {
  const std::vector<std::string> help = help_lines();
  ASSERT_GE(help.size(), 2u);
  EXPECT_EQ(tab_keys(), "1-" + std::to_string(kTabCount));
  EXPECT_EQ(tab_list().size(), static_cast<std::size_t>(kTabCount));
  UiState ui;
  for (int index = 0; index < kTabCount; ++index) {
    const auto tab = static_cast<Tab>(index);
    EXPECT_EQ(tab_by_name(tab_name(tab)), tab);
    EXPECT_NE(help[1].find(std::string(tab_name(tab))), std::string::npos) << help[1];
    EXPECT_EQ(handle_key('1' + index, ui, Page{}), Action::Refresh);
    EXPECT_EQ(ui.view.tab, tab);
  }
  EXPECT_FALSE(tab_by_name("nonsense"));
  EXPECT_EQ(handle_key('1' + kTabCount, ui, Page{}), Action::None);
}

TEST(ConsoleKeys, SortFilterTabsAndQuit) {
  Model model;
  Json answer = stats(1'000'000'000, 10, 100, 100);
  answer["functions"].push_back({{"name", "other"}, {"file", "b.cpp"}, {"line", 1}, {"calls", 50}});
  update(model, answer);
  UiState ui;
  Page page = all_rows(functions_page(model, ui.view, Glyphs{}, 0));
  ASSERT_EQ(page.keys.size(), 2u);

  EXPECT_EQ(handle_key('a', ui, page), Action::None); // by calls, most first
  page = all_rows(functions_page(model, ui.view, Glyphs{}, 0));
  EXPECT_NE(page.rows[0].text.find("other"), std::string::npos);
  handle_key('a', ui, page); // again: fewest first
  page = all_rows(functions_page(model, ui.view, Glyphs{}, 0));
  EXPECT_NE(page.rows[0].text.find("work"), std::string::npos);

  for (const int key : std::initializer_list<int>{'/', 'O', 't', 'h', 'x', KEY_BACKSPACE, '\r'}) {
    handle_key(key, ui, page);
  }
  EXPECT_EQ(ui.view.filter, "Oth");
  EXPECT_EQ(ui.prompt, Prompt::None);
  page = all_rows(functions_page(model, ui.view, Glyphs{}, 0));
  ASSERT_EQ(page.rows.size(), 1u); // the filter ignores case
  EXPECT_NE(page.rows[0].text.find("other"), std::string::npos);

  EXPECT_EQ(handle_key('3', ui, page), Action::Refresh);
  EXPECT_EQ(ui.view.tab, Tab::Memory);
  EXPECT_EQ(handle_key(KEY_BTAB, ui, page), Action::Refresh);
  EXPECT_EQ(ui.view.tab, Tab::Threads);
  EXPECT_EQ(handle_key('r', ui, page), Action::None); // asks first
  EXPECT_EQ(handle_key('n', ui, page), Action::None); // not confirmed
  handle_key('r', ui, page);
  EXPECT_EQ(handle_key('y', ui, page), Action::Reset);
  EXPECT_EQ(handle_key('q', ui, page), Action::Quit);
}

TEST(ConsoleText, ClipsSparklinesAndBars) {
  const Glyphs unicode{true};
  EXPECT_EQ(clip("abcdef", 4, unicode), "abc…");
  EXPECT_EQ(clip("abcdef", 4, Glyphs{}), "abc~");
  EXPECT_EQ(clip("ab", 4, unicode), "ab");
  EXPECT_EQ(columns("a…b"), 3u);
  EXPECT_EQ(sparkline({0, 7, 14}, 10, Glyphs{}), "_=@");
  EXPECT_EQ(sparkline({0, 7, 14}, 2, unicode), "▅█"); // the last values only
  EXPECT_EQ(bar(0.5, 4, Glyphs{}), "##");
  EXPECT_EQ(per_second(1234), "1.23k");
}

} // namespace
