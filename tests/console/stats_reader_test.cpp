// The stats.json reader (profiles/) on the agent's /v1/stats answer, as the console reads it: both
// layouts (objects and columns) give the same rows, the same as a file's document gives, and the
// rest is read too.
#include "console/source.hpp"
#include "profiles/profiles.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace {

using namespace hotscope::cli::console;
using hotscope::cli::profiles::FunctionStats;
using hotscope::cli::profiles::Stats;
using Json = nlohmann::json;

void read_stats(std::string_view text, Stats& stats) {
  hotscope::cli::profiles::read_stats(text, "the agent's answer to GET /v1/stats", stats);
}

// The reader fills rows straight from the answer's text: every figure of both layouts, the rest
// of the answer (a thread's own functions included), and nothing left over from the previous
// answer in the rows it reuses. A file's document gives the same rows.
TEST(ConsoleStatsReader, BothLayoutsGiveEveryFigureAndTheRest) {
  const std::vector<std::string> keys = {"calls",
                                         "total_ns",
                                         "self_ns",
                                         "min_ns",
                                         "max_ns",
                                         "p50_ns",
                                         "p90_ns",
                                         "p95_ns",
                                         "p99_ns",
                                         "p999_ns",
                                         "alloc_bytes_self",
                                         "alloc_blocks_self",
                                         "alloc_bytes_total",
                                         "alloc_blocks_total",
                                         "cpu_self_ns",
                                         "cpu_total_ns"};
  Json objects = Json::array();
  for (std::uint64_t f = 0; f < 3; ++f) {
    Json function = {{"name", "f" + std::to_string(f)},
                     {"file", "x.cpp"},
                     {"line", 10 + f},
                     {"mean_ns", 2.5 * static_cast<double>(f)}};
    for (std::size_t k = 0; k < keys.size(); ++k) {
      function[keys[k]] = 1000 * f + k + 1;
    }
    objects.push_back(function);
  }
  Json columns = Json::object();
  for (const Json& function : objects) {
    for (const auto& [key, value] : function.items()) {
      columns[key].push_back(value);
    }
  }
  const Json threads = Json::array({{{"name", "main"}, {"functions", objects}}});
  Stats from_objects;
  read_stats(Json{{"duration_ns", 5}, {"functions", objects}, {"threads", threads}}.dump(),
             from_objects);
  Stats from_columns;
  read_stats(Json{{"functions", columns}, {"duration_ns", 5}, {"threads", threads}}.dump(),
             from_columns);
  const Stats from_file = hotscope::cli::profiles::read_stats(
      Json{{"hotscope_version", "0.1.0"}, {"functions", objects}, {"threads", threads}},
      "stats.json");
  for (const Stats* answer : {&from_objects, &from_columns}) {
    EXPECT_FALSE(answer->cpu); // no "cpu": an older agent, not a run without samples
    EXPECT_DOUBLE_EQ(answer->duration_ns, 5);
    ASSERT_EQ(answer->threads.size(), 1u);
    EXPECT_EQ(answer->threads[0].name, "main");
    EXPECT_FALSE(answer->queues);
  }
  for (const std::vector<FunctionStats>* rows :
       std::initializer_list<const std::vector<FunctionStats>*>{
           &from_objects.functions, &from_columns.functions, &from_objects.threads[0].functions,
           &from_file.functions}) {
    ASSERT_EQ(rows->size(), 3u);
    for (std::uint64_t f = 0; f < 3; ++f) {
      const FunctionStats& row = (*rows)[f];
      EXPECT_TRUE(row.has("p999_ns"));
      EXPECT_EQ(row.name, "f" + std::to_string(f));
      EXPECT_EQ(row.file, "x.cpp");
      EXPECT_EQ(row.line, static_cast<int>(10 + f));
      EXPECT_DOUBLE_EQ(row.mean_ns, 2.5 * static_cast<double>(f));
      const std::vector<std::uint64_t> figures = {row.calls,
                                                  row.total_ns,
                                                  row.self_ns,
                                                  row.min_ns,
                                                  row.max_ns,
                                                  row.p50_ns,
                                                  row.p90_ns,
                                                  row.p95_ns,
                                                  row.p99_ns,
                                                  row.p999_ns,
                                                  row.alloc_bytes_self,
                                                  row.alloc_blocks_self,
                                                  row.alloc_bytes_total,
                                                  row.alloc_blocks_total,
                                                  row.cpu_self_ns,
                                                  row.cpu_total_ns};
      for (std::size_t k = 0; k < keys.size(); ++k) {
        EXPECT_EQ(figures[k], 1000 * f + k + 1) << keys[k];
      }
    }
  }

  // Reused for an answer with fewer functions and figures: nothing of the previous one stays.
  read_stats(R"({"functions": {"name": ["g", "h"], "calls": [7], "line": 3, "p50_ns": [1, 2, 3],
                 "other": [[1], {"a": 2}], "file": [{"nested": ["x"]}, "y.cpp"]}})",
             from_objects);
  ASSERT_EQ(from_objects.functions.size(), 2u);
  EXPECT_TRUE(from_objects.threads.empty());
  EXPECT_DOUBLE_EQ(from_objects.duration_ns, 0);
  const FunctionStats& g = from_objects.functions[0];
  const FunctionStats& h = from_objects.functions[1];
  EXPECT_EQ(g.name, "g");
  EXPECT_EQ(g.calls, 7u);
  EXPECT_EQ(g.file, ""); // the cell was no string
  EXPECT_EQ(g.line, 0);  // the column was no array
  EXPECT_EQ(h.file, "y.cpp");
  EXPECT_EQ(h.calls, 0u);  // the column was shorter
  EXPECT_EQ(h.p50_ns, 2u); // the column was longer: its third value belongs to no function
  EXPECT_EQ(h.alloc_bytes_total, 0u);
  EXPECT_DOUBLE_EQ(h.mean_ns, 0);
  EXPECT_FALSE(h.has("calls"));
  EXPECT_FALSE(h.has("p999_ns"));

  // Keys of no figure are skipped, in either layout.
  read_stats(R"({"functions": [{"name": "k", "newer": 1, "calls": 2, "also_newer": "x"}]})",
             from_objects);
  ASSERT_EQ(from_objects.functions.size(), 1u);
  EXPECT_EQ(from_objects.functions[0].calls, 2u);

  // Queues and tasks, typed: a thread name that is no string reads as "?".
  read_stats(R"({"queues": [{"name": "q", "pushed": 5, "wait_p99_ns": 9, "push_threads": ["a", 1]}],
                 "tasks": [{"name": "t", "kind": "coroutine", "running": {"p99_ns": 7}}]})",
             from_objects);
  ASSERT_TRUE(from_objects.queues && from_objects.queues->size() == 1);
  const hotscope::cli::profiles::QueueStats& queue = from_objects.queues->front();
  EXPECT_EQ(queue.name, "q");
  EXPECT_EQ(queue.pushed, 5u);
  EXPECT_EQ(queue.wait_p99_ns, 9u);
  EXPECT_EQ(queue.push_threads, (std::vector<std::string>{"a", "?"}));
  ASSERT_TRUE(from_objects.tasks && from_objects.tasks->size() == 1);
  EXPECT_EQ(from_objects.tasks->front().kind, "coroutine");
  EXPECT_EQ(from_objects.tasks->front().running_p99_ns, 7u);

  // The CPU sampler's figures, and a thread's samples; a thread without the key has none known.
  read_stats(R"({"cpu": {"hz": 99, "period_ns": 10101010, "samples": 40, "signals": 10, "lost": 2,
                         "incomplete": 1, "unstored": 3, "problem": "no timer"},
                 "threads": [{"name": "a", "cpu_samples": 40}, {"name": "b"}]})",
             from_objects);
  ASSERT_TRUE(from_objects.cpu);
  EXPECT_TRUE(from_objects.has_cpu_samples());
  const hotscope::cli::profiles::CpuSampling& cpu = *from_objects.cpu;
  EXPECT_EQ(std::vector<std::uint64_t>({cpu.hz, cpu.period_ns, cpu.samples, cpu.signals, cpu.lost,
                                        cpu.incomplete, cpu.unstored}),
            std::vector<std::uint64_t>({99, 10101010, 40, 10, 2, 1, 3}));
  EXPECT_EQ(cpu.problem, "no timer");
  ASSERT_EQ(from_objects.threads.size(), 2u);
  EXPECT_EQ(from_objects.threads[0].cpu_samples, 40u);
  EXPECT_FALSE(from_objects.threads[1].cpu_samples);
  read_stats(R"({"cpu": {"hz": 0, "samples": 0}})", from_objects);
  EXPECT_TRUE(from_objects.cpu);
  EXPECT_FALSE(from_objects.has_cpu_samples());
  // A file from before signals were written: one signal per sample.
  read_stats(R"({"cpu": {"hz": 99, "samples": 7}})", from_objects);
  EXPECT_EQ(from_objects.cpu->signals, 7u);

  read_stats(R"({"functions": {"calls": [1, 2]}, "pid": 3})", from_objects);
  EXPECT_TRUE(from_objects.functions.empty()); // no names, no functions
  EXPECT_EQ(from_objects.pid, 3);
  read_stats(R"({"functions": null, "pid": 4})", from_objects);
  EXPECT_TRUE(from_objects.functions.empty());
  EXPECT_EQ(from_objects.pid, 4);
  EXPECT_THROW(read_stats(R"({"functions": {"name": ["a")", from_objects),
               nlohmann::json::parse_error);
  EXPECT_THROW(read_stats(R"({"functions": {"calls": [1e400]}})", from_objects),
               nlohmann::json::out_of_range);
  // Nesting is bounded, in the functions and in the rest (docs/diff-and-report.md, "Limits").
  EXPECT_THROW(read_stats("{\"functions\": " + std::string(100000, '[') + "]}", from_objects),
               nlohmann::json::other_error);
  EXPECT_THROW(read_stats("{\"x\": " + std::string(100000, '[') + "]}", from_objects),
               nlohmann::json::other_error);
  // The console reads through read_answer: one line naming the request, which it survives.
  try {
    read_answer("/v1/stats?format=columns",
                [&] { read_stats(R"({"pid": 1, "functions": {"name": [)", from_objects); });
    ADD_FAILURE() << "no Failure";
  } catch (const hotscope::cli::Failure& failure) {
    EXPECT_EQ(failure.code, hotscope::cli::kFailed);
    EXPECT_NE(std::string(failure.what()).find("answer to GET /v1/stats?format=columns: "),
              std::string::npos)
        << failure.what();
  }
}

// A pid in an agent's answer written as a fraction past what an integer holds (a fuzzer's find)
// reads as none, not as an undefined conversion.
TEST(ConsoleStatsReader, OutOfRangeIdsReadAsNone) {
  Stats stats;
  read_stats(Json{{"pid", 4.3e95}, {"functions", Json::array()}}.dump(), stats);
  EXPECT_EQ(stats.pid, 0);
  read_stats(Json{{"pid", 1234.0}, {"functions", Json::array()}}.dump(), stats);
  EXPECT_EQ(stats.pid, 1234);
}

} // namespace
