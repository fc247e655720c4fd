// Runs tasks_program (coroutine tasks waiting on Asio timers, two threads) with HOTSCOPE_OUT and
// checks the tasks in what it wrote: stats.json, report.txt, trace.txt and trace.json's flows.
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

const Json& task_named(const Json& tasks, const std::string& name) {
  for (const Json& task : tasks) {
    if (task.at("name") == name) {
      return task;
    }
  }
  throw std::runtime_error("no task " + name + " in " + tasks.dump(1));
}

TEST(TasksProgram, CoroutinesOnAsioTimersAreReportedAsTasks) {
  const hotscope::testing::ScratchDir scratch("tasks-program");
  const fs::path out = scratch.path() / "out";
  const std::string command = "timeout 60 env HOTSCOPE_OUT=" + out.string() + " " + TASKS_PROGRAM +
                              " 2>" + (scratch.path() / "stderr").string();
  ASSERT_EQ(std::system(command.c_str()), 0) << slurp(scratch.path() / "stderr");

  const Json stats = Json::parse(slurp(out / "stats.json"));
  const Json& tasks = stats.at("tasks");
  const Json& job = task_named(tasks, "job");
  EXPECT_EQ(job.at("kind"), "coroutine");
  EXPECT_EQ(job.at("created"), 20);
  EXPECT_EQ(job.at("completed"), 20);
  EXPECT_EQ(job.at("destroyed_unfinished"), 0);
  EXPECT_EQ(job.at("alive"), 0);
  EXPECT_EQ(job.at("resumes"), 80);
  EXPECT_EQ(job.at("running").at("count"), 80);
  EXPECT_GE(job.at("running").at("min_ns").get<double>(), 2e6) << job.dump(1);
  EXPECT_EQ(job.at("waiting").at("count"), 20);
  EXPECT_GE(job.at("waiting").at("min_ns").get<double>(), 30e6) << job.dump(1);
  EXPECT_GE(job.at("lifetime").at("min_ns").get<double>(), 38e6) << job.dump(1);
  const Json& forgotten = task_named(tasks, "forgotten");
  EXPECT_EQ(forgotten.at("created"), 1);
  EXPECT_EQ(forgotten.at("destroyed_unfinished"), 1);
  EXPECT_EQ(forgotten.at("alive"), 0);
  const Json& timers = task_named(tasks, "deadline_timer.async_wait");
  EXPECT_EQ(timers.at("kind"), "asio");
  EXPECT_EQ(timers.at("created"), 61);
  EXPECT_EQ(timers.at("completed"), 60);
  EXPECT_EQ(timers.at("destroyed_unfinished"), 1) << "the forgotten job's, never run";
  EXPECT_GE(timers.at("waiting").at("min_ns").get<double>(), 9.9e6) << timers.dump(1);

  const std::string report = slurp(out / "report.txt");
  EXPECT_NE(report.find("\nTasks (Running = resumption to suspension"), std::string::npos)
      << report;
  const std::string text = slurp(out / "trace.txt");
  EXPECT_NE(text.find("> job (task "), std::string::npos) << text;
  EXPECT_NE(text.find(" ends)\n"), std::string::npos);

  // A job's slices are linked: each `f` follows its `s`, 3 per finished job.
  const Json trace = Json::parse(slurp(out / "trace.json"));
  std::map<std::uint64_t, Json> started;
  std::size_t linked = 0;
  for (const Json& event : trace.at("traceEvents")) {
    if (event.value("cat", "") != "task") {
      continue;
    }
    if (event.at("ph") == "s") {
      started.emplace(event.at("id").get<std::uint64_t>(), event);
    } else if (event.at("ph") == "f") {
      EXPECT_EQ(started.count(event.at("id").get<std::uint64_t>()), 1u) << event.dump();
      EXPECT_EQ(event.at("name"), "job");
      ++linked;
    }
  }
  EXPECT_EQ(linked, 60u);
}

} // namespace
