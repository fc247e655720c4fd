// The slowest calls kept whole (docs/slow.md), fed to an Aggregator as hand-made records: one
// tick per nanosecond, so every duration is chosen.
#include "support/hand_records.hpp"
#include "support/manual_time.hpp"
#include "trace/trace.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace {

using namespace hotscope;
using namespace test_support;
using trace::Aggregator;

std::string name_of(const Snapshot& s, std::uint32_t name) {
  return s.names.at(name);
}

std::vector<const SlowCall*> calls_of(const Snapshot& s, const std::string& function) {
  std::vector<const SlowCall*> calls;
  for (const SlowCall& call : s.slow_calls) {
    if (name_of(s, call.function) == function) {
      calls.push_back(&call);
    }
  }
  return calls;
}

bool has_event(const Snapshot& s, const std::vector<TraceEvent>& events, EventKind kind,
               const std::string& name) {
  for (const TraceEvent& event : events) {
    if (event.kind == kind && name_of(s, event.name) == name) {
      return true;
    }
  }
  return false;
}

// The case: 900,000 calls of f1 lasting 100 ns, 3 of them (1 in 300,000) 100 times
// longer with an inner scope, a message and an allocation of their own; a 1 MiB trace window
// has long evicted them by the end.
TEST(SlowCalls, OneCallIn300000IsKeptWholeLongAfterTheWindowMovedOn) {
  Aggregator aggregator(1 << 20, numbered_resolver());
  const auto t = aggregator.add_thread(7, "worker");
  std::uint64_t now = 0;
  std::vector<hotscope_record> batch;
  for (int call = 0; call < 900'000; ++call) {
    const bool slow = call % 300'000 == 150'000;
    batch.push_back(begin(now, 1));
    if (slow) {
      batch.push_back(begin(now + 10, 2));
      append_inline(batch, HOTSCOPE_RECORD_MESSAGE_INLINE, now + 20,
                    "slow request " + std::to_string(call));
      batch.push_back(alloc(4096));
      batch.push_back(end(now + 9'990, 2));
    }
    now += slow ? 10'000 : 100;
    batch.push_back(end(now, 1));
    now += 10;
    if (batch.size() > 60'000) {
      aggregator.consume(t, batch);
      batch.clear();
    }
  }
  aggregator.consume(t, batch);
  const Snapshot s = aggregator.snapshot(manual_time_at(now));
  EXPECT_GT(s.trace_evicted, 1'700'000u);
  EXPECT_FALSE(has_event(s, s.trace, EventKind::Begin, "f2")); // the window has none of them

  const auto kept = calls_of(s, "f1");
  ASSERT_EQ(kept.size(), 4u); // K = 4: the 3 slow ones, then one of the others
  for (int i = 0; i < 3; ++i) {
    const SlowCall& call = *kept[i];
    EXPECT_EQ(call.duration_ns, 10'000u);
    EXPECT_EQ(call.thread_name, "worker");
    EXPECT_EQ(call.os_tid, 7);
    EXPECT_EQ(call.allocations, 1u);
    EXPECT_EQ(call.allocated_bytes, 4096u);
    EXPECT_EQ(call.cut_events, 0u);
    ASSERT_EQ(call.events.size(), 5u);
    EXPECT_EQ(call.events.front().kind, EventKind::Begin);
    EXPECT_EQ(call.events.back().kind, EventKind::End);
    EXPECT_EQ(call.events.front().ns, call.start_ns);
    EXPECT_EQ(call.events.back().ns, call.start_ns + call.duration_ns);
    EXPECT_TRUE(has_event(s, call.events, EventKind::Begin, "f2"));
    EXPECT_EQ(name_of(s, call.events[2].name).rfind("slow request ", 0), 0u);
  }
  EXPECT_EQ(kept[3]->duration_ns, 100u);
  EXPECT_EQ(calls_of(s, "f2").size(), 3u);
  EXPECT_EQ(s.slow_call_figures.kept, 7u);
  EXPECT_EQ(s.slow_call_figures.per_function, 4u);
  EXPECT_GT(s.memory.slow_calls, 0u);
}

// Only a call slower than the K-th kept one enters; the lists are slowest first, and every
// call has its own id.
TEST(SlowCalls, KeepsTheKSlowestSlowestFirst) {
  Aggregator aggregator(1 << 20, numbered_resolver(), {2, 1 << 20});
  const auto t = aggregator.add_thread(1, "main");
  const std::vector<std::uint64_t> durations = {50, 70, 20, 90, 60, 10};
  std::vector<hotscope_record> records;
  std::uint64_t now = 0;
  for (const std::uint64_t duration : durations) {
    records.push_back(begin(now, 1));
    records.push_back(end(now + duration, 1));
    now += duration + 1;
  }
  aggregator.consume(t, records);
  const Snapshot s = aggregator.snapshot(manual_time_at(now), false);
  ASSERT_EQ(s.slow_calls.size(), 2u);
  EXPECT_EQ(s.slow_calls[0].duration_ns, 90u);
  EXPECT_EQ(s.slow_calls[1].duration_ns, 70u);
  EXPECT_NE(s.slow_calls[0].id, s.slow_calls[1].id);
  EXPECT_TRUE(s.slow_calls[0].events.empty()); // statistics only: no events
}

// A slow inner call inside a slow outer one: both kept, the inner's events are a part of the
// outer's storage rather than a copy.
TEST(SlowCalls, NestedKeptCallsShareStorage) {
  trace::SlowCalls slow({4, 1 << 20});
  trace::SlowThread thread;
  trace::SlowThreadFigures figures{3, nullptr, 33, {}, 0};
  const auto event = [&](std::uint64_t ticks, EventKind kind, std::uint32_t name) {
    thread.event({ticks, 3, kind, name, 0}, nullptr);
  };
  slow.begin(thread, 1, 0, figures);
  event(0, EventKind::Begin, 1);
  event(5, EventKind::Message, 9);
  slow.begin(thread, 2, 10, figures);
  event(10, EventKind::Begin, 2);
  event(20, EventKind::Message, 8);
  event(30, EventKind::End, 2);
  slow.end(thread, 30, figures);
  event(40, EventKind::End, 1);
  slow.end(thread, 40, figures);

  const std::vector<trace::KeptCall> kept = slow.kept();
  ASSERT_EQ(kept.size(), 2u);
  const trace::KeptCall& outer = kept[0].location == 1 ? kept[0] : kept[1];
  const trace::KeptCall& inner = kept[0].location == 2 ? kept[0] : kept[1];
  EXPECT_EQ(outer.storage, inner.storage); // stored once
  EXPECT_EQ(outer.first, 0u);
  EXPECT_EQ(outer.count, 6u);
  EXPECT_EQ(inner.first, 2u);
  EXPECT_EQ(inner.count, 3u);
  EXPECT_EQ(inner.storage->events[inner.first].kind, EventKind::Begin);
  EXPECT_EQ(inner.storage->events[inner.first + 2].kind, EventKind::End);
  EXPECT_EQ(inner.thread_name, "thread 33");
  // Two calls' records, one storage's events.
  EXPECT_EQ(slow.bytes(), outer.storage->bytes() + 2 * sizeof(trace::KeptCall) +
                              outer.thread_name.capacity() + inner.thread_name.capacity());
}

// Through the Aggregator, each nested kept call has its own events in the snapshot.
TEST(SlowCalls, NestedKeptCallsEachHaveTheirEventsInTheSnapshot) {
  Aggregator aggregator(1 << 20, numbered_resolver());
  const auto t = aggregator.add_thread(1, "main");
  aggregator.consume(t, std::vector{begin(0, 1), begin(10, 2),
                                    rec(HOTSCOPE_RECORD_MESSAGE_STATIC, 15, 5), end(20, 2),
                                    end(100, 1)});
  const Snapshot s = aggregator.snapshot(manual_time_at(100));
  ASSERT_EQ(calls_of(s, "f1").size(), 1u);
  ASSERT_EQ(calls_of(s, "f2").size(), 1u);
  const SlowCall& outer = *calls_of(s, "f1")[0];
  const SlowCall& inner = *calls_of(s, "f2")[0];
  EXPECT_EQ(outer.events.size(), 5u);
  ASSERT_EQ(inner.events.size(), 3u);
  EXPECT_EQ(inner.events[0].ns, 10u);
  EXPECT_EQ(name_of(s, inner.events[1].name), "text5");
  EXPECT_EQ(inner.events[2].ns, 20u);
  EXPECT_EQ(name_of(s, inner.events[2].name), "f2");
  // Functions in Snapshot::functions' order: f1 has the longer total.
  EXPECT_EQ(name_of(s, s.slow_calls[0].function), "f1");
}

// A call with more events than the cap keeps its first cap - 1 and its End, and says how many it
// lost and from when.
TEST(SlowCalls, ASubtreeLongerThanTheCapIsCut) {
  Aggregator aggregator(1 << 20, numbered_resolver(), {4, 1 << 20, 8});
  const auto t = aggregator.add_thread(1, "main");
  std::vector<hotscope_record> records{begin(0, 1)};
  for (std::uint64_t i = 0; i < 10; ++i) { // 20 inner events
    records.push_back(begin(10 + 10 * i, 2));
    records.push_back(end(15 + 10 * i, 2));
  }
  records.push_back(end(1000, 1));
  aggregator.consume(t, records);
  const Snapshot s = aggregator.snapshot(manual_time_at(1000));
  ASSERT_EQ(calls_of(s, "f1").size(), 1u);
  const SlowCall& call = *calls_of(s, "f1")[0];
  ASSERT_EQ(call.events.size(), 8u);
  EXPECT_EQ(call.events.back().kind, EventKind::End);
  EXPECT_EQ(call.events.back().ns, 1000u);
  EXPECT_EQ(name_of(s, call.events.back().name), "f1"); // not f2, open at the cut
  EXPECT_EQ(call.cut_events, 22u - 8u);
  EXPECT_EQ(call.cut_at_ns, 35u); // the last kept before the End: f2's third end
  EXPECT_EQ(call.duration_ns, 1000u);
  EXPECT_EQ(s.slow_call_figures.cut, 1u);
  // The inner calls are whole: those past the outer's cap were kept from the buffer as well.
  EXPECT_EQ(calls_of(s, "f2").size(), 4u);
  for (const SlowCall* inner : calls_of(s, "f2")) {
    EXPECT_EQ(inner->events.size(), 2u);
    EXPECT_EQ(inner->cut_events, 0u);
  }
}

// reset: a new window keeps its own calls; a call open across it is no candidate; ids go on.
TEST(SlowCalls, ResetStartsNewLists) {
  Aggregator aggregator(1 << 20, numbered_resolver());
  const auto t = aggregator.add_thread(1, "main");
  aggregator.consume(t, std::vector{begin(0, 1), end(500, 1), begin(600, 2)});
  const std::uint64_t first_id = aggregator.snapshot(manual_time_at(700)).slow_calls.at(0).id;
  aggregator.reset();
  EXPECT_TRUE(aggregator.snapshot(manual_time_at(700)).slow_calls.empty());
  EXPECT_EQ(aggregator.snapshot(manual_time_at(700)).memory.slow_calls, 0u);
  aggregator.consume(t, std::vector{begin(800, 3), end(850, 3), end(900, 2)});
  const Snapshot s = aggregator.snapshot(manual_time_at(900));
  ASSERT_EQ(s.slow_calls.size(), 1u); // f3; not f2, open since before the reset
  EXPECT_EQ(name_of(s, s.slow_calls[0].function), "f3");
  EXPECT_GT(s.slow_calls[0].id, first_id);
}

// 10,000 functions, 4 calls each of 40 events: far more than 1 MiB, so calls are evicted, the
// least slow of the functions with the most kept first, and memory stays within the budget.
TEST(SlowCalls, TheBudgetHoldsWith10000Functions) {
  constexpr std::size_t kBudget = 1 << 20;
  Aggregator aggregator(1 << 20, numbered_resolver(), {4, kBudget});
  const auto t = aggregator.add_thread(1, "main");
  std::uint64_t now = 0;
  for (std::uint64_t round = 0; round < 4; ++round) {
    std::vector<hotscope_record> records;
    for (std::uint64_t function = 1; function <= 10'000; ++function) {
      records.push_back(begin(now, function));
      for (int i = 0; i < 19; ++i) {
        records.push_back(begin(now + 1, 20'000 + function));
        records.push_back(end(now + 2, 20'000 + function));
      }
      now += 100 + round * 10;
      records.push_back(end(now, function));
    }
    aggregator.consume(t, records);
    const Snapshot s = aggregator.snapshot(manual_time_at(now), false);
    EXPECT_LE(s.memory.slow_calls, kBudget);
  }
  const Snapshot s = aggregator.snapshot(manual_time_at(now), false);
  EXPECT_GT(s.slow_call_figures.evicted, 0u);
  EXPECT_EQ(s.slow_call_figures.budget_bytes, kBudget);
  std::map<std::uint32_t, std::size_t> per_function;
  for (const SlowCall& call : s.slow_calls) {
    ++per_function[call.function];
  }
  // Evicting from the functions with the most kept leaves them evenly kept.
  std::size_t most = 0;
  std::size_t least = SIZE_MAX;
  for (const auto& [function, count] : per_function) {
    most = std::max(most, count);
    least = std::min(least, count);
  }
  EXPECT_LE(most - least, 1u);
  EXPECT_EQ(s.slow_call_figures.kept, s.slow_calls.size());
}

TEST(SlowCalls, ZeroTurnsThemOff) {
  Aggregator aggregator(1 << 20, numbered_resolver(), {0, 1 << 20});
  const auto t = aggregator.add_thread(1, "main");
  aggregator.consume(t, std::vector{begin(0, 1), end(500, 1)});
  const Snapshot s = aggregator.snapshot(manual_time_at(500));
  EXPECT_TRUE(s.slow_calls.empty());
  EXPECT_EQ(s.slow_call_figures.per_function, 0u);
}

} // namespace
