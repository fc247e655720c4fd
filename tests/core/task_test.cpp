// Tasks through the Aggregator, fed hand-made records with chosen timestamps: exact counts,
// running and waiting time of a task resumed on two threads, tasks destroyed unfinished, the
// bound on the tasks followed, and their slices in the trace.
#include "support/manual_time.hpp"
#include "support/named.hpp"
#include "trace/trace.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using namespace hotscope;
using test_support::manual_time_at;
using test_support::named;
using trace::Aggregator;

// Ref 1 is the coroutine "fetch", ref 2 the Asio operation "timer.async_wait", ref 3 a scope.
trace::Resolver task_resolver() {
  return {[](std::uint64_t ref) {
            if (ref == 1) {
              return trace::LocationText{"fetch", "task.cpp", 1, 0};
            }
            if (ref == 2) {
              return trace::LocationText{"timer.async_wait", "asio.hpp", 2,
                                         HOTSCOPE_LOCATION_ASIO_OPERATION};
            }
            return trace::LocationText{"scope", "task.cpp", 3, 0};
          },
          [](std::uint64_t) { return std::string(); }};
}

hotscope_record task(std::uint32_t kind, std::uint64_t ticks, std::uint64_t id,
                     std::uint64_t ref = 1) {
  return {ticks, ref, id, kind, 0};
}

// Created at 100 on thread A and first run there 100-150; run on B 400-480; back on A 700-720,
// where it completes. B's ring is drained before A's.
void feed_task_on_two_threads(Aggregator& aggregator, std::uint32_t a, std::uint32_t b) {
  aggregator.consume(b, std::vector{task(HOTSCOPE_RECORD_TASK_RESUME, 400, 7),
                                    task(HOTSCOPE_RECORD_TASK_SUSPEND, 480, 7)});
  aggregator.consume(a, std::vector{task(HOTSCOPE_RECORD_TASK_CREATE, 100, 7),
                                    task(HOTSCOPE_RECORD_TASK_RESUME, 100, 7),
                                    task(HOTSCOPE_RECORD_TASK_SUSPEND, 150, 7),
                                    task(HOTSCOPE_RECORD_TASK_RESUME, 700, 7),
                                    task(HOTSCOPE_RECORD_TASK_COMPLETE, 720, 7)});
}

TEST(Tasks, RunningWaitingAndLifetimeAreExactAcrossThreads) {
  Aggregator aggregator(1 << 20, task_resolver());
  const auto a = aggregator.add_thread(1, "a");
  const auto b = aggregator.add_thread(2, "b");
  feed_task_on_two_threads(aggregator, a, b);
  aggregator.finish_pass();
  aggregator.finish_pass();
  const TaskStats t = named(aggregator.snapshot(manual_time_at(1000)).tasks, "fetch");
  EXPECT_EQ(t.kind, "coroutine");
  EXPECT_EQ(t.created, 1u);
  EXPECT_EQ(t.completed, 1u);
  EXPECT_EQ(t.destroyed_unfinished, 0u);
  EXPECT_EQ(t.alive, 0u);
  EXPECT_EQ(t.resumes, 3u);
  EXPECT_EQ(t.running.calls, 3u);
  EXPECT_EQ(t.running.total_ns, 150u); // 50 + 80 + 20
  EXPECT_EQ(t.running.min_ns, 20u);
  EXPECT_EQ(t.running.max_ns, 80u);
  EXPECT_EQ(t.lifetime.calls, 1u);
  EXPECT_EQ(t.lifetime.total_ns, 620u);
  EXPECT_EQ(t.waiting.calls, 1u);
  EXPECT_EQ(t.waiting.total_ns, 470u); // 620 - 150
  EXPECT_EQ(t.given_up, 0u);
}

TEST(Tasks, AnEndedTaskCountsBeforeItsLastPassEnds) {
  Aggregator aggregator(1 << 20, task_resolver());
  const auto a = aggregator.add_thread(1, "a");
  const auto b = aggregator.add_thread(2, "b");
  feed_task_on_two_threads(aggregator, a, b);
  const TaskStats t = named(aggregator.snapshot(manual_time_at(1000)).tasks, "fetch");
  EXPECT_EQ(t.lifetime.total_ns, 620u);
  EXPECT_EQ(t.waiting.total_ns, 470u);
}

TEST(Tasks, SlicesThatArriveAfterTheEndStillCount) {
  Aggregator aggregator(1 << 20, task_resolver());
  const auto a = aggregator.add_thread(1, "a");
  const auto b = aggregator.add_thread(2, "b");
  // A's ring (creation, the end) is drained before B's slice arrives, in the same pass.
  aggregator.consume(a, std::vector{task(HOTSCOPE_RECORD_TASK_CREATE, 0, 9),
                                    task(HOTSCOPE_RECORD_TASK_RESUME, 500, 9),
                                    task(HOTSCOPE_RECORD_TASK_COMPLETE, 600, 9)});
  aggregator.consume(b, std::vector{task(HOTSCOPE_RECORD_TASK_RESUME, 100, 9),
                                    task(HOTSCOPE_RECORD_TASK_SUSPEND, 300, 9)});
  aggregator.finish_pass();
  aggregator.finish_pass();
  const TaskStats t = named(aggregator.snapshot(manual_time_at(1000)).tasks, "fetch");
  EXPECT_EQ(t.running.total_ns, 300u);
  EXPECT_EQ(t.lifetime.total_ns, 600u);
  EXPECT_EQ(t.waiting.total_ns, 300u);
}

TEST(Tasks, ATaskDestroyedWhileSuspendedIsCountedUnfinished) {
  Aggregator aggregator(1 << 20, task_resolver());
  const auto a = aggregator.add_thread(1, "a");
  aggregator.consume(
      a, std::vector{
             task(HOTSCOPE_RECORD_TASK_CREATE, 0, 1), task(HOTSCOPE_RECORD_TASK_RESUME, 0, 1),
             task(HOTSCOPE_RECORD_TASK_SUSPEND, 10, 1), task(HOTSCOPE_RECORD_TASK_CREATE, 20, 2),
             task(HOTSCOPE_RECORD_TASK_RESUME, 20, 2), task(HOTSCOPE_RECORD_TASK_SUSPEND, 30, 2),
             task(HOTSCOPE_RECORD_TASK_DESTROY, 100, 1)});
  aggregator.finish_pass();
  aggregator.finish_pass();
  const TaskStats t = named(aggregator.snapshot(manual_time_at(1000)).tasks, "fetch");
  EXPECT_EQ(t.created, 2u);
  EXPECT_EQ(t.completed, 0u);
  EXPECT_EQ(t.destroyed_unfinished, 1u);
  EXPECT_EQ(t.alive, 1u);
  EXPECT_EQ(t.lifetime.calls, 1u);
  EXPECT_EQ(t.lifetime.total_ns, 100u);
  EXPECT_EQ(t.waiting.total_ns, 90u);
}

TEST(Tasks, AsioOperationsAreTasksOfTheirOwnKind) {
  Aggregator aggregator(1 << 20, task_resolver());
  const auto a = aggregator.add_thread(1, "a");
  aggregator.consume(a, std::vector{task(HOTSCOPE_RECORD_TASK_CREATE, 0, 5, 2),
                                    task(HOTSCOPE_RECORD_TASK_RESUME, 1000, 5, 2),
                                    task(HOTSCOPE_RECORD_TASK_COMPLETE, 1030, 5, 2)});
  const Snapshot s = aggregator.snapshot(manual_time_at(2000));
  const TaskStats t = named(s.tasks, "timer.async_wait");
  EXPECT_EQ(t.kind, "asio");
  EXPECT_EQ(t.waiting.max_ns, 1000u); // the operation's latency
  EXPECT_EQ(t.running.max_ns, 30u);   // its handler
  // The handler is a frame like a scope: it is in the functions too.
  ASSERT_EQ(s.functions.size(), 1u);
  EXPECT_EQ(s.functions[0].name, "timer.async_wait");
}

TEST(Tasks, SlicesAreTraceEventsNestedInTheirThreadsScopes) {
  Aggregator aggregator(1 << 20, task_resolver());
  const auto a = aggregator.add_thread(1, "a");
  aggregator.consume(
      a, std::vector{
             task(HOTSCOPE_RECORD_BEGIN, 0, 0, 3), task(HOTSCOPE_RECORD_TASK_CREATE, 5, 4),
             task(HOTSCOPE_RECORD_TASK_RESUME, 10, 4), task(HOTSCOPE_RECORD_TASK_SUSPEND, 20, 4),
             task(HOTSCOPE_RECORD_TASK_RESUME, 30, 4), task(HOTSCOPE_RECORD_TASK_COMPLETE, 40, 4),
             task(HOTSCOPE_RECORD_END, 50, 0, 3)});
  const Snapshot s = aggregator.snapshot(manual_time_at(100));
  std::vector<EventKind> kinds;
  for (const TraceEvent& event : s.trace) {
    kinds.push_back(event.kind);
    if (event.kind == EventKind::TaskResume) {
      EXPECT_EQ(event.value, 4);
      EXPECT_EQ(s.names.at(event.name), "fetch");
    }
  }
  EXPECT_EQ(kinds, (std::vector{EventKind::Begin, EventKind::TaskResume, EventKind::TaskSuspend,
                                EventKind::TaskResume, EventKind::TaskComplete, EventKind::End}));
  // The scope's self time leaves out the task's slices.
  for (const FunctionStats& function : s.functions) {
    if (function.name == "scope") {
      EXPECT_EQ(function.stats.self_ns, 30u);
    }
  }
}

TEST(Tasks, FollowedTasksAreCappedAndTheOldestGivenUp) {
  trace::TaskTable table(100);
  const std::uint32_t fetch = table.task(0, "fetch", false);
  for (std::uint64_t id = 1; id <= 1000; ++id) {
    table.create(fetch, id, id);
  }
  const std::size_t capped = table.bytes();
  for (std::uint64_t id = 1001; id <= 11'000; ++id) {
    table.create(fetch, id, id);
  }
  EXPECT_LE(table.bytes(), capped) << "ten thousand more tasks alive: still the cap's worth";
  // The newest tasks are followed: their lifetime is known.
  table.end(fetch, 11'000, 12'000, true);
  table.end(fetch, 1, 12'000, true); // given up long ago: counted, no lifetime
  table.finish_pass();
  table.finish_pass();
  trace::SnapshotConversion conversion;
  conversion.durations = [](const trace::Durations& durations) {
    DurationStats d;
    d.calls = durations.calls;
    d.total_ns = durations.total;
    d.min_ns = durations.min;
    d.max_ns = durations.max;
    return d;
  };
  const std::vector<TaskStats> stats = table.snapshot(conversion);
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].created, 11'000u);
  EXPECT_EQ(stats[0].completed, 2u);
  EXPECT_EQ(stats[0].alive, 10'998u);
  EXPECT_EQ(stats[0].given_up, 10'901u); // past the cap, then 1's return pushed out one more
  EXPECT_EQ(stats[0].lifetime.calls, 1u);
  EXPECT_EQ(stats[0].lifetime.total_ns, 1000u);
}

TEST(Tasks, TenThousandShortLivedTasksLeaveNothingFollowed) {
  Aggregator aggregator(1 << 20, task_resolver());
  const auto a = aggregator.add_thread(1, "a");
  const auto run = [&](std::uint64_t first, std::uint64_t count) {
    std::vector<hotscope_record> records;
    for (std::uint64_t id = first; id < first + count; ++id) {
      const std::uint64_t t = id * 100;
      records.push_back(task(HOTSCOPE_RECORD_TASK_CREATE, t, id));
      records.push_back(task(HOTSCOPE_RECORD_TASK_RESUME, t + 10, id));
      records.push_back(task(HOTSCOPE_RECORD_TASK_COMPLETE, t + 30, id));
    }
    aggregator.consume(a, records);
    aggregator.finish_pass();
    aggregator.finish_pass();
  };
  run(1, 100);
  const std::uint64_t after_hundred =
      aggregator.snapshot(manual_time_at(1), false).memory.statistics;
  run(101, 10'000);
  const Snapshot s = aggregator.snapshot(manual_time_at(2'000'000), false);
  const TaskStats t = named(s.tasks, "fetch");
  EXPECT_EQ(t.created, 10'100u);
  EXPECT_EQ(t.completed, 10'100u);
  EXPECT_EQ(t.alive, 0u);
  EXPECT_EQ(t.lifetime.max_ns, 30u);
  EXPECT_EQ(t.waiting.max_ns, 10u);
  EXPECT_LE(s.memory.statistics, after_hundred + 4096);
}

} // namespace
