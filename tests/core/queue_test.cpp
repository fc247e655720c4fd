// Queues through the Aggregator, fed hand-made records with chosen timestamps: exact counts,
// waits, depths, and what happens to ids popped twice, never pushed, or never popped.
#include "support/manual_time.hpp"
#include "support/named.hpp"
#include "trace/trace.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace hotscope;
using test_support::manual_time_at;
using test_support::named;
using trace::Aggregator;

// Refs 1..9 are queue locations named "q<ref % 3>", so refs 1 and 4 both name queue "q1"; ref 10
// is a scope.
trace::Resolver queue_resolver() {
  return {[](std::uint64_t ref) {
            return trace::LocationText{ref == 10 ? "scope" : "q" + std::to_string(ref % 3), "q.cpp",
                                       static_cast<std::uint32_t>(ref)};
          },
          [](std::uint64_t) { return std::string(); }};
}

hotscope_record push(std::uint64_t ticks, std::uint64_t ref, std::uint64_t id) {
  return {ticks, ref, id, HOTSCOPE_RECORD_QUEUE_PUSH, 0};
}
hotscope_record pop(std::uint64_t ticks, std::uint64_t ref, std::uint64_t id) {
  return {ticks, ref, id, HOTSCOPE_RECORD_QUEUE_POP, 0};
}
hotscope_record capacity(std::uint64_t ticks, std::uint64_t ref, std::uint64_t n) {
  return {ticks, ref, n, HOTSCOPE_RECORD_QUEUE_CAPACITY, 0};
}

TEST(Queues, CountsWaitsAndDepthAreExact) {
  Aggregator aggregator(1 << 20, queue_resolver());
  const auto producer = aggregator.add_thread(1, "producer");
  const auto consumer = aggregator.add_thread(2, "");
  // Three items into q1 (from two places, refs 1 and 4), two of them popped: waits 300 and 50.
  aggregator.consume(
      producer, std::vector{capacity(0, 1, 8), push(100, 1, 7), push(200, 4, 8), push(300, 1, 9)});
  aggregator.consume(consumer, std::vector{pop(400, 2 * 3 + 1, 7), pop(250, 2 * 3 + 1, 8)});
  const Snapshot s = aggregator.snapshot(manual_time_at(1000));
  ASSERT_EQ(s.queues.size(), 1u);
  const QueueStats& q = s.queues[0];
  EXPECT_EQ(q.name, "q1");
  EXPECT_EQ(q.pushed, 3u);
  EXPECT_EQ(q.popped, 2u);
  EXPECT_EQ(q.depth, 1u);
  EXPECT_EQ(q.max_depth, 2u); // in time order: item 8 left (250) before item 9 came (300)
  EXPECT_EQ(q.capacity, 8u);
  EXPECT_EQ(q.wait.calls, 2u);
  EXPECT_EQ(q.wait.total_ns, 350u);
  EXPECT_EQ(q.wait.min_ns, 50u);
  EXPECT_EQ(q.wait.max_ns, 300u);
  EXPECT_DOUBLE_EQ(q.wait.mean_ns, 175.0);
  EXPECT_EQ(q.wait.p50_ns, 50u);
  EXPECT_EQ(q.wait.p99_ns, 300u);
  EXPECT_EQ(q.pending, 1u);
  EXPECT_EQ(q.oldest_pending_ns, 700u); // item 9, pushed at 300
  EXPECT_EQ(q.popped_never_pushed, 0u);
  EXPECT_EQ(q.pending_given_up, 0u);
  EXPECT_EQ(q.push_threads, std::vector<std::string>{"producer"});
  EXPECT_EQ(q.pop_threads, std::vector<std::string>{"thread 2"});
}

TEST(Queues, PushesAndPopsAreTraceEventsWithTheItemId) {
  Aggregator aggregator(1 << 20, queue_resolver());
  const auto t = aggregator.add_thread(1, "main");
  aggregator.consume(t, std::vector{push(100, 1, 42), pop(200, 1, 42)});
  const Snapshot s = aggregator.snapshot(manual_time_at(1000));
  ASSERT_EQ(s.trace.size(), 2u);
  EXPECT_EQ(s.trace[0].kind, EventKind::QueuePush);
  EXPECT_EQ(s.trace[0].ns, 100u);
  EXPECT_EQ(s.trace[0].value, 42);
  EXPECT_EQ(s.names.at(s.trace[0].name), "q1");
  EXPECT_EQ(s.trace[1].kind, EventKind::QueuePop);
  EXPECT_EQ(s.trace[1].value, 42);
}

TEST(Queues, APopDrainedBeforeItsPushStillFindsIt) {
  Aggregator aggregator(1 << 20, queue_resolver());
  const auto producer = aggregator.add_thread(1, "producer");
  const auto consumer = aggregator.add_thread(2, "consumer");
  // The consumer's ring is drained first, in the same pass, and in the next one.
  aggregator.consume(consumer, std::vector{pop(500, 1, 1)});
  aggregator.consume(producer, std::vector{push(100, 1, 1)});
  aggregator.finish_pass();
  aggregator.consume(consumer, std::vector{pop(900, 1, 2)});
  aggregator.finish_pass();
  aggregator.consume(producer, std::vector{push(800, 1, 2)});
  aggregator.finish_pass();
  const QueueStats q = named(aggregator.snapshot(manual_time_at(1000)).queues, "q1");
  EXPECT_EQ(q.wait.calls, 2u);
  EXPECT_EQ(q.wait.total_ns, 500u);
  EXPECT_EQ(q.popped_never_pushed, 0u);
  EXPECT_EQ(q.pending, 0u);
  EXPECT_EQ(q.depth, 0u);
}

TEST(Queues, DoublePopsAndPopsNeverPushedAreCountedOnceAPassHasEnded) {
  Aggregator aggregator(1 << 20, queue_resolver());
  const auto t = aggregator.add_thread(1, "main");
  aggregator.consume(t, std::vector{push(100, 1, 1), pop(200, 1, 1), pop(300, 1, 1),
                                    pop(400, 1, 77), pop(450, 1, 77)});
  aggregator.finish_pass();
  // Still in the pass they arrived in: their push may be on its way.
  EXPECT_EQ(named(aggregator.snapshot(manual_time_at(1000)).queues, "q1").popped_never_pushed, 1u);
  aggregator.finish_pass();
  const QueueStats q = named(aggregator.snapshot(manual_time_at(1000)).queues, "q1");
  EXPECT_EQ(q.popped, 4u);
  EXPECT_EQ(q.popped_never_pushed, 3u); // the second pop of 1, and both pops of 77
  EXPECT_EQ(q.wait.calls, 1u);
  EXPECT_EQ(q.depth, 0u) << "never below zero";
  // A push arriving after that is an item of its own, waiting.
  aggregator.consume(t, std::vector{push(500, 1, 77)});
  EXPECT_EQ(named(aggregator.snapshot(manual_time_at(1000)).queues, "q1").pending, 1u);
}

TEST(Queues, AnIdPushedTwiceGivesUpItsFirstPush) {
  Aggregator aggregator(1 << 20, queue_resolver());
  const auto t = aggregator.add_thread(1, "main");
  aggregator.consume(t, std::vector{push(100, 1, 5), push(300, 1, 5), pop(400, 1, 5)});
  const QueueStats q = named(aggregator.snapshot(manual_time_at(1000)).queues, "q1");
  EXPECT_EQ(q.pending_given_up, 1u);
  EXPECT_EQ(q.wait.calls, 1u);
  EXPECT_EQ(q.wait.max_ns, 100u); // from the second push
  EXPECT_EQ(q.pending, 0u);
}

TEST(Queues, AQueueThatNeverPopsKeepsTheNewestIdsUpToTheCap) {
  Aggregator aggregator(1 << 20, queue_resolver());
  const auto t = aggregator.add_thread(1, "main");
  const std::size_t cap = trace::QueueTable::kPendingPerQueue;
  std::vector<hotscope_record> records;
  for (std::uint64_t id = 0; id < cap + 1000; ++id) {
    records.push_back(push(id, 1, id));
  }
  aggregator.consume(t, records);
  // The oldest 1000 were given up: popping one of them is a pop never pushed.
  aggregator.consume(t, std::vector{pop(cap + 2000, 1, 3), pop(cap + 2001, 1, 1000)});
  aggregator.finish_pass();
  aggregator.finish_pass();
  const QueueStats q = named(aggregator.snapshot(manual_time_at(cap + 3000)).queues, "q1");
  EXPECT_EQ(q.pushed, cap + 1000);
  EXPECT_EQ(q.pending_given_up, 1000u);
  EXPECT_EQ(q.pending, cap - 1);
  EXPECT_EQ(q.popped_never_pushed, 1u);
  EXPECT_EQ(q.wait.calls, 1u);
  EXPECT_EQ(q.wait.max_ns, cap + 1001);
  EXPECT_EQ(q.oldest_pending_ns, cap + 3000 - 1001); // item 1001 is the oldest kept
  EXPECT_EQ(q.depth, cap + 999);                     // a pop never pushed leaves the depth alone
}

TEST(Queues, ResetRestartsCountsButItemsStillWaitingStay) {
  Aggregator aggregator(1 << 20, queue_resolver());
  const auto t = aggregator.add_thread(1, "main");
  aggregator.consume(t, std::vector{push(100, 1, 1), push(110, 1, 2), pop(120, 1, 1)});
  aggregator.reset();
  aggregator.consume(t, std::vector{pop(500, 1, 2)});
  const QueueStats q = named(aggregator.snapshot(manual_time_at(1000)).queues, "q1");
  EXPECT_EQ(q.pushed, 0u);
  EXPECT_EQ(q.popped, 1u);
  EXPECT_EQ(q.wait.calls, 1u);
  EXPECT_EQ(q.wait.max_ns, 390u); // pushed before the reset, timed in full
  EXPECT_EQ(q.depth, 0u);
  EXPECT_EQ(q.max_depth, 1u);
}

TEST(Queues, EachNameIsOneQueueSortedByName) {
  Aggregator aggregator(1 << 20, queue_resolver());
  const auto t = aggregator.add_thread(1, "main");
  aggregator.consume(t, std::vector{push(1, 2, 1), push(2, 1, 1), push(3, 3, 1), push(4, 5, 2)});
  const Snapshot s = aggregator.snapshot(manual_time_at(1000));
  ASSERT_EQ(s.queues.size(), 3u);
  EXPECT_EQ(s.queues[0].name, "q0");
  EXPECT_EQ(s.queues[1].name, "q1");
  EXPECT_EQ(s.queues[2].name, "q2");
  EXPECT_EQ(s.queues[2].pushed, 2u);
}

} // namespace
