// The Aggregator fed with hand-made records: every timestamp is chosen, so self and inclusive
// times are exact.
#include "support/hand_records.hpp"
#include "support/manual_time.hpp"
#include "trace/trace.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace hotscope {
// How gtest shows allocation figures in a failure (found by argument-dependent lookup).
static void PrintTo(const AllocationCounts& counts, std::ostream* out) {
  *out << counts.bytes << " bytes in " << counts.blocks << " blocks";
}
} // namespace hotscope

namespace {

using namespace hotscope;
using namespace test_support;
using trace::Aggregator;

const FunctionStats& find(const std::vector<FunctionStats>& functions, const std::string& name) {
  for (const auto& f : functions) {
    if (f.name == name) {
      return f;
    }
  }
  throw std::runtime_error("no function " + name);
}

TEST(Aggregator, NestedScopesGiveExactSelfAndInclusiveTimes) {
  Aggregator aggregator(1 << 20, numbered_resolver());
  const auto t = aggregator.add_thread(42, "main");
  // f1 [0, 200] contains f2 [100, 130] and f2 [150, 200] which contains f3 [160, 170].
  const std::vector<hotscope_record> records = {begin(0, 1),   begin(100, 2), end(130, 2),
                                                begin(150, 2), begin(160, 3), end(170, 3),
                                                end(200, 2),   end(200, 1)};
  aggregator.consume(t, records);
  const Snapshot s = aggregator.snapshot(manual_time_at(1000));
  const auto& f1 = find(s.functions, "f1").stats;
  const auto& f2 = find(s.functions, "f2").stats;
  const auto& f3 = find(s.functions, "f3").stats;
  EXPECT_EQ(f1.calls, 1u);
  EXPECT_EQ(f1.total_ns, 200u);
  EXPECT_EQ(f1.self_ns, 120u);
  EXPECT_EQ(f2.calls, 2u);
  EXPECT_EQ(f2.total_ns, 80u);
  EXPECT_EQ(f2.self_ns, 70u);
  EXPECT_EQ(f2.min_ns, 30u);
  EXPECT_EQ(f2.max_ns, 50u);
  EXPECT_DOUBLE_EQ(f2.mean_ns, 40.0);
  EXPECT_EQ(f3.total_ns, 10u);
  EXPECT_EQ(f3.self_ns, 10u);
  EXPECT_EQ(s.functions.front().name, "f1"); // sorted by total
  ASSERT_EQ(s.threads.size(), 1u);
  EXPECT_EQ(s.threads[0].name, "main");
  EXPECT_EQ(s.threads[0].os_tid, 42);
  EXPECT_EQ(s.records.kept, records.size());
  EXPECT_EQ(s.duration_ns, 1000u);
  EXPECT_EQ(s.trace.size(), records.size());
  EXPECT_EQ(s.trace_open_scopes, 0u);
}

// The Prometheus histogram's fixed buckets, in ns whatever the clock: calls of 90 ns, 240 ns and
// 3 µs on a 2 GHz clock.
TEST(Aggregator, DurationBucketsCountCallsAtMostEachFixedBound) {
  Aggregator aggregator(1 << 20, numbered_resolver());
  const auto t = aggregator.add_thread(42, "main");
  aggregator.consume(t, std::vector{begin(0, 1), end(180, 1), begin(1000, 1), end(1480, 1),
                                    begin(2000, 1), end(8000, 1)});
  trace::TimeBase time = manual_time_at(10'000);
  time.clock.ticks_per_second = 2e9;
  const DurationStats f1 = find(aggregator.snapshot(time).functions, "f1").stats;
  ASSERT_EQ(f1.at_most_bucket.size(), kDurationBucketsNs.size());
  for (std::size_t i = 0; i < kDurationBucketsNs.size(); ++i) {
    const std::uint64_t bound = kDurationBucketsNs[i];
    const std::uint64_t expected = (bound >= 90) + (bound >= 240) + (bound >= 3000);
    EXPECT_EQ(f1.at_most_bucket[i], expected) << "le " << bound << " ns";
  }
}

TEST(Aggregator, SameFunctionOnTwoThreadsIsSummedAndKeptPerThread) {
  Aggregator aggregator(1 << 20, numbered_resolver());
  const auto a = aggregator.add_thread(1, "a");
  const auto b = aggregator.add_thread(2, "b");
  aggregator.consume(a, std::vector{begin(10, 7), end(20, 7)});
  aggregator.consume(b, std::vector{begin(10, 7), end(40, 7)});
  const Snapshot s = aggregator.snapshot(manual_time_at(100));
  EXPECT_EQ(find(s.functions, "f7").stats.calls, 2u);
  EXPECT_EQ(find(s.functions, "f7").stats.total_ns, 40u);
  EXPECT_EQ(find(s.threads[0].functions, "f7").stats.total_ns, 10u);
  EXPECT_EQ(find(s.threads[1].functions, "f7").stats.total_ns, 30u);
}

TEST(Aggregator, MessagesCountersAndThreadNames) {
  Aggregator aggregator(1 << 20, numbered_resolver());
  const auto t = aggregator.add_thread(5, "");
  std::vector<hotscope_record> records;
  append_inline(records, HOTSCOPE_RECORD_THREAD_NAME, 1, "worker-3");
  records.push_back(rec(HOTSCOPE_RECORD_MESSAGE_STATIC, 2, 9));
  const std::string long_text(100, 'x');
  append_inline(records, HOTSCOPE_RECORD_MESSAGE_INLINE, 3, long_text);
  records.push_back(rec(HOTSCOPE_RECORD_COUNTER, 4, 11, static_cast<std::uint64_t>(-5)));
  records.push_back(rec(HOTSCOPE_RECORD_COUNTER, 5, 11, 8));
  aggregator.consume(t, records);
  const Snapshot s = aggregator.snapshot(manual_time_at(10));
  EXPECT_EQ(s.threads[0].name, "worker-3");
  ASSERT_EQ(s.trace.size(), 4u);
  EXPECT_EQ(s.names[s.trace[0].name], "text9");
  EXPECT_EQ(s.names[s.trace[1].name], long_text);
  EXPECT_EQ(s.trace[3].value, 8);
  ASSERT_EQ(s.counters.size(), 1u);
  EXPECT_EQ(s.counters[0].name, "f11");
  EXPECT_EQ(s.counters[0].updates, 2u);
  EXPECT_EQ(s.counters[0].min, -5);
  EXPECT_EQ(s.counters[0].max, 8);
  EXPECT_EQ(s.counters[0].last, 8);
  EXPECT_EQ(s.records.kept, records.size());
}

TEST(Aggregator, OpenScopesOfEachThreadWithWhenTheyOpenedAndForHowLong) {
  Aggregator aggregator(1 << 20, numbered_resolver());
  const auto a = aggregator.add_thread(42, "a");
  const auto b = aggregator.add_thread(43, "b");
  aggregator.consume(a, std::vector{begin(100, 1), begin(200, 2), begin(300, 3), end(350, 3)});
  aggregator.consume(b, std::vector{begin(10, 4), end(20, 4)});
  trace::TimeBase time = manual_time_at(1000);
  time.start_ticks = 150; // f1 opened before the window: opened_ns 0, open_ns in full
  const Snapshot s = aggregator.snapshot(time);
  ASSERT_EQ(s.threads.size(), 2u);
  ASSERT_EQ(s.threads[0].open_scopes.size(), 2u);
  const OpenScope& outer = s.threads[0].open_scopes[0];
  const OpenScope& inner = s.threads[0].open_scopes[1];
  EXPECT_EQ(outer.name, "f1");
  EXPECT_EQ(outer.file, "x.cpp");
  EXPECT_EQ(outer.line, 1u);
  EXPECT_EQ(outer.opened_ns, 0u);
  EXPECT_EQ(outer.open_ns, 900u);
  EXPECT_EQ(inner.name, "f2");
  EXPECT_EQ(inner.opened_ns, 50u);
  EXPECT_EQ(inner.open_ns, 800u);
  EXPECT_TRUE(s.threads[1].open_scopes.empty());
}

TEST(Aggregator, BoundedWindowKeepsEachThreadBalanced) {
  // Room for a few events only: the begins of the outer scopes are evicted.
  Aggregator aggregator(6 * 64, numbered_resolver());
  const auto t = aggregator.add_thread(1, "t");
  std::vector<hotscope_record> records = {begin(0, 1), begin(10, 2)};
  for (std::uint64_t i = 0; i < 10; ++i) {
    records.push_back(begin(20 + 10 * i, 3));
    records.push_back(end(25 + 10 * i, 3));
  }
  records.push_back(end(200, 2)); // f1 stays open
  aggregator.consume(t, records);
  const Snapshot s = aggregator.snapshot(manual_time_at(300));
  EXPECT_GT(s.trace_evicted, 0u);
  EXPECT_EQ(s.trace_open_scopes, 1u);
  std::vector<std::uint32_t> stack;
  for (const TraceEvent& e : s.trace) {
    if (e.kind == EventKind::Begin) {
      stack.push_back(e.name);
    } else if (e.kind == EventKind::End) {
      ASSERT_FALSE(stack.empty());
      EXPECT_EQ(stack.back(), e.name);
      stack.pop_back();
    }
  }
  EXPECT_TRUE(stack.empty());
  EXPECT_EQ(s.names[s.trace.front().name], "f1"); // outermost synthetic begin first
  EXPECT_EQ(s.trace.front().ns, s.trace_start_ns);
  EXPECT_EQ(s.trace.back().ns, 300u); // the open scope ends at the snapshot
  // Statistics are not bounded by the window: all ten f3 calls are counted.
  EXPECT_EQ(find(s.functions, "f3").stats.calls, 10u);
}

TEST(Aggregator, WindowStartIsItsEarliestEventNotItsFirst) {
  // Threads are drained one after another: here thread a's newer events enter the window
  // before thread b's older ones, and eviction takes the begins of both outer scopes.
  Aggregator aggregator(4 * 64, numbered_resolver());
  const auto a = aggregator.add_thread(1, "a");
  const auto b = aggregator.add_thread(2, "b");
  aggregator.consume(a, std::vector{begin(100, 1)});
  aggregator.consume(b, std::vector{begin(10, 2)});
  aggregator.consume(a, std::vector{end(110, 1)});
  aggregator.consume(b, std::vector{begin(20, 3), end(30, 3), end(40, 2)});
  const Snapshot s = aggregator.snapshot(manual_time_at(200));
  ASSERT_GT(s.trace_evicted, 0u);
  EXPECT_EQ(s.trace_start_ns, 20u);
  std::map<std::uint32_t, std::vector<std::uint32_t>> open;
  for (const TraceEvent& e : s.trace) {
    if (e.kind == EventKind::Begin) {
      open[e.thread].push_back(e.name);
    } else if (e.kind == EventKind::End) {
      ASSERT_FALSE(open[e.thread].empty()) << "an end before its begin on thread " << e.thread;
      EXPECT_EQ(open[e.thread].back(), e.name);
      open[e.thread].pop_back();
    }
  }
  for (const auto& [thread, stack] : open) {
    EXPECT_TRUE(stack.empty()) << thread;
  }
}

TEST(Aggregator, StatisticsOnlySnapshotsSkipTheTrace) {
  Aggregator aggregator(1 << 20, numbered_resolver());
  const auto t = aggregator.add_thread(1, "t");
  aggregator.consume(t, std::vector{begin(0, 1), begin(5, 2), end(10, 2)});
  const Snapshot s = aggregator.snapshot(manual_time_at(20), false);
  EXPECT_TRUE(s.trace.empty());
  EXPECT_EQ(s.trace_window_events, 3u);
  EXPECT_EQ(s.trace_open_scopes, 1u);
  EXPECT_EQ(find(s.functions, "f2").stats.calls, 1u);
}

// The live views' snapshot: the same process totals, without the threads' own function lists
// or the trace's names.
TEST(Aggregator, ProcessTotalsLeaveOutPerThreadFunctionsAndTraceNames) {
  Aggregator aggregator(1 << 20, numbered_resolver());
  const auto a = aggregator.add_thread(1, "a");
  const auto b = aggregator.add_thread(2, "b");
  aggregator.consume(a, std::vector{begin(10, 7), end(20, 7), begin(30, 8), end(90, 8)});
  aggregator.consume(b, std::vector{begin(10, 7), end(40, 7)});
  const Snapshot all = aggregator.snapshot(manual_time_at(100), false);
  const Snapshot totals =
      trace::complete(aggregator.capture(manual_time_at(100), trace::Contents::ProcessTotals));
  EXPECT_FALSE(all.names.empty());
  EXPECT_TRUE(totals.names.empty());
  ASSERT_EQ(totals.threads.size(), 2u);
  EXPECT_TRUE(totals.threads[0].functions.empty());
  EXPECT_FALSE(all.threads[0].functions.empty());
  ASSERT_EQ(totals.functions.size(), all.functions.size());
  for (std::size_t i = 0; i < all.functions.size(); ++i) {
    EXPECT_EQ(totals.functions[i].name, all.functions[i].name);
    EXPECT_EQ(totals.functions[i].stats.calls, all.functions[i].stats.calls);
    EXPECT_EQ(totals.functions[i].stats.p50_ns, all.functions[i].stats.p50_ns);
    EXPECT_EQ(totals.functions[i].stats.p999_ns, all.functions[i].stats.p999_ns);
  }
  EXPECT_EQ(find(totals.functions, "f7").stats.p50_ns, 10u);
  EXPECT_EQ(find(totals.functions, "f7").stats.max_ns, 30u);
}

TEST(Aggregator, ThreadChurnIsFoldedToBoundMemory) {
  Aggregator aggregator(0, numbered_resolver()); // no trace window at all
  const std::size_t threads = Aggregator::kExitedThreadsKept + 100;
  for (std::size_t i = 0; i < threads; ++i) {
    const auto t = aggregator.add_thread(static_cast<std::int64_t>(i), "");
    aggregator.consume(t, std::vector{begin(i, 1), end(i + 3, 1)});
    aggregator.mark_exited(t);
  }
  const Snapshot s = aggregator.snapshot(manual_time_at(10'000));
  EXPECT_EQ(s.threads_folded, 100u);
  EXPECT_EQ(s.threads.size(), Aggregator::kExitedThreadsKept + 1);
  EXPECT_EQ(find(s.functions, "f1").stats.calls, threads);
  EXPECT_EQ(s.records.kept, 2 * threads); // nothing is lost from the totals
  EXPECT_EQ(find(s.threads.back().functions, "f1").stats.calls, 100u);
}

TEST(Aggregator, MergedThreadsNameTheirTraceEventsButLeaveTheThreadList) {
  Aggregator aggregator(1 << 20, numbered_resolver()); // holds every event
  const std::size_t threads = Aggregator::kExitedThreadsKept + 44;
  for (std::size_t i = 0; i < threads; ++i) {
    const auto t = aggregator.add_thread(static_cast<std::int64_t>(1000 + i), "");
    aggregator.consume(t, std::vector{begin(10 * i, 1), end(10 * i + 3, 1)});
    aggregator.mark_exited(t);
  }
  const Snapshot s = aggregator.snapshot(manual_time_at(100'000));
  EXPECT_EQ(s.threads.size(), Aggregator::kExitedThreadsKept + 1);
  EXPECT_EQ(s.threads.back().name, "(44 ended threads)");
  ASSERT_EQ(s.trace_threads.size(), 44u);
  EXPECT_EQ(s.trace_threads.front().os_tid, 1000); // the oldest are merged
  std::set<std::uint32_t> named;
  for (const auto* list : {&s.threads, &s.trace_threads}) {
    for (const ThreadInfo& thread : *list) {
      named.insert(thread.index);
    }
  }
  ASSERT_EQ(s.trace.size(), 2 * threads);
  for (const TraceEvent& event : s.trace) {
    EXPECT_EQ(named.count(event.thread), 1u) << event.thread;
  }
}

// A shared library unloaded, and another loaded at its address: the same refs, other texts.
TEST(Aggregator, AfterForgetAddressesARefIsReadAgain) {
  std::string prefix = "alpha";
  trace::Resolver resolver{
      [&](std::uint64_t ref) {
        return trace::LocationText{prefix + std::to_string(ref), "x.cpp", 1};
      },
      [&](std::uint64_t ref) { return prefix + " text" + std::to_string(ref); }};
  Aggregator aggregator(1 << 20, resolver);
  const auto t = aggregator.add_thread(1, "t");
  aggregator.consume(t, std::vector{begin(0, 1), end(2, 1), begin(3, 2), end(4, 2)});
  aggregator.forget_addresses();                              // nothing unloaded...
  aggregator.consume(t, std::vector{begin(5, 1), end(7, 1)}); // ...keeps its id
  prefix = "bravo";
  aggregator.forget_addresses();
  aggregator.consume(t, std::vector{begin(8, 1), end(9, 1), begin(10, 1), end(11, 1)});
  const Snapshot s = aggregator.snapshot(manual_time_at(100));
  EXPECT_EQ(find(s.functions, "alpha1").stats.calls, 2u);
  EXPECT_EQ(find(s.functions, "alpha2").stats.calls, 1u);
  EXPECT_EQ(find(s.functions, "bravo1").stats.calls, 2u);
}

TEST(Aggregator, ResetStartsANewWindowButOpenScopesStayOpen) {
  Aggregator aggregator(1 << 20, numbered_resolver());
  const auto t = aggregator.add_thread(1, "t");
  aggregator.consume(t, std::vector{begin(0, 1), begin(5, 2), end(10, 2)});
  aggregator.set_dropped(t, 4);
  aggregator.reset();
  aggregator.consume(t, std::vector{end(50, 1)});
  aggregator.set_dropped(t, 6);
  const Snapshot s = aggregator.snapshot(manual_time_at(60));
  ASSERT_EQ(s.functions.size(), 1u);
  EXPECT_EQ(s.functions[0].name, "f1");
  EXPECT_EQ(s.functions[0].stats.total_ns, 50u);
  EXPECT_EQ(s.records.kept, 1u);
  EXPECT_EQ(s.records.dropped, 2u);
  ASSERT_EQ(s.trace.size(), 2u); // synthetic begin + the end
  EXPECT_EQ(s.trace[0].kind, EventKind::Begin);
}

AllocationCounts counts(std::uint64_t bytes, std::uint64_t blocks) {
  return {bytes, blocks};
}

// Every allocation is either some function's exclusive share or outside any scope.
void expect_allocations_add_up(const Allocations& allocations,
                               const std::vector<FunctionStats>& functions) {
  AllocationCounts sum = allocations.outside_scopes;
  for (const FunctionStats& f : functions) {
    sum += f.allocated_self;
  }
  EXPECT_EQ(sum, allocations.all);
}

TEST(Aggregator, AllocationsGoToTheInnermostScopeAndItsCallers) {
  Aggregator aggregator(1 << 20, numbered_resolver());
  const auto t = aggregator.add_thread(1, "t");
  // 100 outside; f1 { 10; f2 { 20; 30 } f3 { 5 } 1 }
  const std::vector<hotscope_record> records = {alloc(100), begin(0, 1), alloc(10),  begin(10, 2),
                                                alloc(20),  alloc(30),   end(20, 2), begin(30, 3),
                                                alloc(5),   end(40, 3),  alloc(1),   end(50, 1)};
  aggregator.consume(t, records);
  const Snapshot s = aggregator.snapshot(manual_time_at(100));
  EXPECT_EQ(find(s.functions, "f1").allocated_self, counts(11, 2));
  EXPECT_EQ(find(s.functions, "f1").allocated_total, counts(66, 5));
  EXPECT_EQ(find(s.functions, "f2").allocated_self, counts(50, 2));
  EXPECT_EQ(find(s.functions, "f2").allocated_total, counts(50, 2));
  EXPECT_EQ(find(s.functions, "f3").allocated_self, counts(5, 1));
  EXPECT_EQ(find(s.functions, "f3").allocated_total, counts(5, 1));
  EXPECT_EQ(s.allocations.all, counts(166, 6));
  EXPECT_EQ(s.allocations.outside_scopes, counts(100, 1));
  EXPECT_EQ(s.threads[0].allocations.all, counts(166, 6));
  EXPECT_EQ(find(s.threads[0].functions, "f1").allocated_total, counts(66, 5));
  expect_allocations_add_up(s.allocations, s.functions);
  // Allocations are records, but not trace events, and they leave the timings alone.
  EXPECT_EQ(s.records.kept, records.size());
  EXPECT_EQ(s.trace.size(), 6u);
  EXPECT_EQ(find(s.functions, "f1").stats.total_ns, 50u);
  EXPECT_EQ(find(s.functions, "f1").stats.self_ns, 30u);
}

TEST(Aggregator, ARecursiveFunctionCountsEachAllocationOnceInclusively) {
  Aggregator aggregator(1 << 20, numbered_resolver());
  const auto t = aggregator.add_thread(1, "t");
  // f1 { f2 { f1 { 8 } 4 } 2 }: the inner f1 is a recursive call through f2.
  aggregator.consume(t, std::vector{begin(0, 1), begin(1, 2), begin(2, 1), alloc(8)});
  const auto check = [](const Snapshot& s, const std::vector<FunctionStats>& functions) {
    EXPECT_EQ(find(functions, "f1").allocated_self, counts(10, 2));
    EXPECT_EQ(find(functions, "f1").allocated_total, counts(14, 3));
    EXPECT_EQ(find(functions, "f2").allocated_self, counts(4, 1));
    EXPECT_EQ(find(functions, "f2").allocated_total, counts(12, 2));
    expect_allocations_add_up(s.allocations, functions);
  };
  // While every call is open, the snapshot counts what they allocated so far.
  Snapshot s = aggregator.snapshot(manual_time_at(10));
  EXPECT_EQ(find(s.functions, "f1").allocated_total, counts(8, 1));
  EXPECT_EQ(find(s.functions, "f2").allocated_total, counts(8, 1));
  EXPECT_EQ(find(s.functions, "f1").stats.calls, 0u);
  aggregator.consume(t, std::vector{end(3, 1), alloc(4)});
  s = aggregator.snapshot(manual_time_at(10));
  EXPECT_EQ(find(s.functions, "f1").allocated_total, counts(12, 2)); // not 20: 8 counted once
  EXPECT_EQ(find(s.functions, "f2").allocated_total, counts(12, 2));
  aggregator.consume(t, std::vector{end(4, 2), alloc(2)});
  s = aggregator.snapshot(manual_time_at(10));
  check(s, s.functions); // the outer f1 is still open
  aggregator.consume(t, std::vector{end(5, 1)});
  s = aggregator.snapshot(manual_time_at(10));
  check(s, s.functions);
  check(s, s.threads[0].functions);
  EXPECT_EQ(find(s.functions, "f1").stats.calls, 2u);
}

TEST(Aggregator, AScopeStillOpenShowsItsAllocationsWithoutTimings) {
  Aggregator aggregator(1 << 20, numbered_resolver());
  const auto t = aggregator.add_thread(1, "t");
  aggregator.consume(t, std::vector{begin(0, 1), alloc(7), alloc(0)});
  const Snapshot s = aggregator.snapshot(manual_time_at(10), false);
  ASSERT_EQ(s.functions.size(), 1u);
  const FunctionStats& f1 = s.functions[0];
  EXPECT_EQ(f1.allocated_self, counts(7, 2)); // malloc(0) is a block too
  EXPECT_EQ(f1.allocated_total, counts(7, 2));
  EXPECT_EQ(f1.stats.calls, 0u);
  EXPECT_EQ(f1.stats.min_ns, 0u);
  EXPECT_EQ(f1.stats.max_ns, 0u);
  EXPECT_EQ(f1.stats.mean_ns, 0.0);
  EXPECT_EQ(f1.stats.p99_ns, 0u);
  ASSERT_EQ(s.threads[0].functions.size(), 1u);
  EXPECT_EQ(s.threads[0].functions[0].allocated_self, counts(7, 2));
}

TEST(Aggregator, AllocationsAreKeptPerThreadAndSummed) {
  Aggregator aggregator(1 << 20, numbered_resolver());
  const auto a = aggregator.add_thread(1, "a");
  const auto b = aggregator.add_thread(2, "b");
  aggregator.consume(a, std::vector{begin(0, 7), alloc(3), end(1, 7)});
  aggregator.consume(b, std::vector{alloc(1), begin(0, 7), alloc(5), alloc(5)});
  const Snapshot s = aggregator.snapshot(manual_time_at(10));
  EXPECT_EQ(find(s.functions, "f7").allocated_self, counts(13, 3));
  EXPECT_EQ(find(s.threads[0].functions, "f7").allocated_self, counts(3, 1));
  EXPECT_EQ(find(s.threads[1].functions, "f7").allocated_total, counts(10, 2));
  EXPECT_EQ(s.threads[1].allocations.outside_scopes, counts(1, 1));
  EXPECT_EQ(s.allocations.all, counts(14, 4));
  expect_allocations_add_up(s.allocations, s.functions);
  for (const ThreadInfo& thread : s.threads) {
    expect_allocations_add_up(thread.allocations, thread.functions);
  }
}

TEST(Aggregator, ResetRestartsAllocationsEvenOfOpenScopes) {
  Aggregator aggregator(1 << 20, numbered_resolver());
  const auto t = aggregator.add_thread(1, "t");
  aggregator.consume(t, std::vector{alloc(1), begin(0, 1), begin(1, 2), alloc(10)});
  aggregator.reset();
  aggregator.consume(t, std::vector{alloc(5), end(2, 2), alloc(6), end(3, 1), alloc(2)});
  const Snapshot s = aggregator.snapshot(manual_time_at(10));
  EXPECT_EQ(find(s.functions, "f2").allocated_self, counts(5, 1));
  EXPECT_EQ(find(s.functions, "f1").allocated_self, counts(6, 1));
  EXPECT_EQ(find(s.functions, "f1").allocated_total, counts(11, 2));
  EXPECT_EQ(s.allocations.all, counts(13, 3));
  EXPECT_EQ(s.allocations.outside_scopes, counts(2, 1));
  expect_allocations_add_up(s.allocations, s.functions);
}

TEST(Aggregator, FoldedThreadsKeepTheirAllocations) {
  Aggregator aggregator(0, numbered_resolver());
  const std::size_t threads = Aggregator::kExitedThreadsKept + 100;
  for (std::size_t i = 0; i < threads; ++i) {
    const auto t = aggregator.add_thread(static_cast<std::int64_t>(i), "");
    // f2 is left open: the thread ended inside it, as far as the records tell.
    aggregator.consume(
        t, std::vector{alloc(2), begin(i, 1), alloc(3), end(i + 1, 1), begin(i + 2, 2), alloc(4)});
    aggregator.mark_exited(t);
  }
  const Snapshot s = aggregator.snapshot(manual_time_at(10'000));
  ASSERT_EQ(s.threads_folded, 100u);
  EXPECT_EQ(find(s.functions, "f1").allocated_self, counts(3 * threads, threads));
  EXPECT_EQ(find(s.functions, "f2").allocated_self, counts(4 * threads, threads));
  EXPECT_EQ(find(s.functions, "f2").allocated_total, counts(4 * threads, threads));
  EXPECT_EQ(s.allocations.all, counts(9 * threads, 3 * threads));
  EXPECT_EQ(s.allocations.outside_scopes, counts(2 * threads, threads));
  expect_allocations_add_up(s.allocations, s.functions);
  const ThreadInfo& folded = s.threads.back();
  EXPECT_EQ(folded.allocations.all, counts(900, 300));
  EXPECT_EQ(find(folded.functions, "f2").allocated_self, counts(400, 100));
  expect_allocations_add_up(folded.allocations, folded.functions);
}

} // namespace

TEST(Aggregator, ACapturedSnapshotIsCompletedWhileRecordsArriveAndEvictItsWindow) {
  // What the collector does while the agent converts a trace: it keeps consuming records,
  // which push every captured event out of the (small) window.
  Aggregator aggregator(8 * 64, numbered_resolver());
  const auto t = aggregator.add_thread(1, "t");
  std::vector<hotscope_record> records = {begin(0, 1), begin(10, 2), end(20, 2)};
  append_inline(records, HOTSCOPE_RECORD_MESSAGE_INLINE, 25, std::string(100, 'm'));
  aggregator.consume(t, records);
  const Snapshot expected = aggregator.snapshot(manual_time_at(30));
  trace::CapturedSnapshot captured = aggregator.capture(manual_time_at(30));

  for (std::uint64_t i = 0; i < 100; ++i) {
    std::vector<hotscope_record> later = {begin(100 + 10 * i, 3), end(105 + 10 * i, 3)};
    append_inline(later, HOTSCOPE_RECORD_MESSAGE_INLINE, 106 + 10 * i, std::string(90, 'x'));
    aggregator.consume(t, later);
  }
  ASSERT_GT(aggregator.snapshot(manual_time_at(2000), false).trace_evicted, 4u);

  const Snapshot completed = trace::complete(std::move(captured));
  EXPECT_EQ(completed.names, expected.names);
  ASSERT_EQ(completed.trace.size(), expected.trace.size());
  for (std::size_t i = 0; i < expected.trace.size(); ++i) {
    const TraceEvent& a = completed.trace[i];
    const TraceEvent& b = expected.trace[i];
    EXPECT_EQ(std::tie(a.ns, a.thread, a.kind, a.name, a.value),
              std::tie(b.ns, b.thread, b.kind, b.name, b.value))
        << "event " << i;
  }
  EXPECT_EQ(completed.names[completed.trace.back().name], "f1"); // the open scope's end
}

TEST(Aggregator, ItsMemoryIsReportedAndTheWindowStaysWithinItsLimit) {
  constexpr std::size_t kLimit = 64 << 10;
  Aggregator aggregator(kLimit, numbered_resolver());
  const auto t = aggregator.add_thread(1, "t");
  const Snapshot empty = aggregator.snapshot(manual_time_at(0), false);
  EXPECT_EQ(empty.memory.trace_window, 0u);
  for (std::uint64_t i = 0; i < 20'000; ++i) {
    std::vector<hotscope_record> records = {begin(10 * i, 1 + i % 50), end(10 * i + 5, 1 + i % 50)};
    if (i % 100 == 0) {
      append_inline(records, HOTSCOPE_RECORD_MESSAGE_INLINE, 10 * i + 6, std::string(120, 'x'));
    }
    aggregator.consume(t, records);
  }
  const Snapshot s = aggregator.snapshot(manual_time_at(300'000), false);
  EXPECT_GT(s.trace_evicted, 0u);
  EXPECT_GT(s.memory.trace_window, kLimit / 2);
  EXPECT_LE(s.memory.trace_window, kLimit);
  // 50 functions, each with a histogram block: more than their 50 histogram blocks.
  EXPECT_GT(s.memory.statistics, 50 * trace::Histogram::kSubBuckets * sizeof(std::uint64_t));
  EXPECT_GT(s.memory.statistics, empty.memory.statistics);
}

// An instrumented function's records (docs/instrument.md): named once through the resolver's
// `function`, nested with the macros' scopes.
TEST(Aggregator, FunctionRecordsAreNamedByAddressOnceAndNestWithScopes) {
  int named = 0;
  trace::Resolver resolver = numbered_resolver();
  resolver.function = [&named](std::uint64_t address) {
    ++named;
    return trace::LocationText{"fn" + std::to_string(address), "code.cpp", 7};
  };
  Aggregator aggregator(1 << 20, resolver);
  const auto t = aggregator.add_thread(1, "t");
  constexpr std::uint64_t kCode = 0x401000;
  aggregator.consume(t, std::vector{rec(HOTSCOPE_RECORD_FUNCTION_BEGIN, 0, kCode), begin(2, 1),
                                    end(5, 1), rec(HOTSCOPE_RECORD_FUNCTION_END, 10, kCode),
                                    rec(HOTSCOPE_RECORD_FUNCTION_BEGIN, 20, kCode),
                                    rec(HOTSCOPE_RECORD_FUNCTION_END, 24, kCode)});
  const Snapshot s = aggregator.snapshot(manual_time_at(100));
  EXPECT_EQ(named, 1);
  const FunctionStats& function = find(s.functions, "fn" + std::to_string(kCode));
  EXPECT_EQ(function.file, "code.cpp");
  EXPECT_EQ(function.line, 7u);
  EXPECT_EQ(function.stats.calls, 2u);
  EXPECT_EQ(function.stats.total_ns, 14u);
  EXPECT_EQ(function.stats.self_ns, 11u) << "the macro scope inside is its child";
  EXPECT_EQ(find(s.functions, "f1").stats.calls, 1u);
  EXPECT_TRUE(s.filtered_functions.empty());
}

// The threshold is converted to ticks when a function first reaches `after_calls`, not when the
// Aggregator is made (at the program's start, where asking a calibrated clock waits 10 ms), and
// once.
TEST(Aggregator, TheFiltersThresholdIsConvertedWhenFirstNeeded) {
  int conversions = 0;
  trace::FunctionFilter filter{10, 3, [](std::uint64_t) { return true; },
                               [](std::uint64_t) { return std::uint64_t{0}; },
                               [&conversions] {
                                 ++conversions;
                                 return 1e9;
                               }};
  trace::Resolver resolver = numbered_resolver();
  resolver.function = [](std::uint64_t address) {
    return trace::LocationText{"fn" + std::to_string(address), "", 0};
  };
  Aggregator aggregator(1 << 20, resolver, {}, filter);
  const auto t = aggregator.add_thread(1, "t");
  std::uint64_t ticks = 0;
  for (int call = 0; call < 5; ++call) {
    const std::vector<hotscope_record> one_call{
        rec(HOTSCOPE_RECORD_FUNCTION_BEGIN, ticks, 0x500),
        rec(HOTSCOPE_RECORD_FUNCTION_END, ticks + 50, 0x500)};
    aggregator.consume(t, one_call);
    ticks += 100;
    EXPECT_EQ(conversions, call < 2 ? 0 : 1) << "after call " << call + 1;
  }
}

// A function whose first calls were all shorter than the threshold is handed to the filter once;
// one with a longer call never is.
TEST(Aggregator, FunctionsWhoseFirstCallsAreAllShortAreFiltered) {
  std::vector<std::uint64_t> applied;
  trace::FunctionFilter filter{10, 3,
                               [&applied](std::uint64_t entry) {
                                 applied.push_back(entry);
                                 return true;
                               },
                               [](std::uint64_t entry) { return entry == 0x500 ? 42 : 0; }};
  trace::Resolver resolver = numbered_resolver();
  resolver.function = [](std::uint64_t address) {
    return trace::LocationText{"fn" + std::to_string(address), "", 0};
  };
  Aggregator aggregator(1 << 20, resolver, {}, filter);
  const auto t = aggregator.add_thread(1, "t");
  std::vector<hotscope_record> records;
  std::uint64_t ticks = 0;
  for (int call = 0; call < 4; ++call) {
    records.push_back(rec(HOTSCOPE_RECORD_FUNCTION_BEGIN, ticks, 0x500));
    records.push_back(rec(HOTSCOPE_RECORD_FUNCTION_END, ticks + 9, 0x500)); // short
    records.push_back(rec(HOTSCOPE_RECORD_FUNCTION_BEGIN, ticks + 20, 0x600));
    records.push_back(rec(HOTSCOPE_RECORD_FUNCTION_END, ticks + 20 + (call == 1 ? 10 : 1), 0x600));
    ticks += 100;
  }
  aggregator.consume(t, records);
  EXPECT_EQ(applied, std::vector<std::uint64_t>{0x500});
  const Snapshot s = aggregator.snapshot(manual_time_at(1000));
  ASSERT_EQ(s.filtered_functions.size(), 1u);
  EXPECT_EQ(s.filtered_functions[0].name, "fn" + std::to_string(0x500));
  EXPECT_EQ(s.filtered_functions[0].recorded_calls, 4u);
  EXPECT_EQ(s.filtered_functions[0].skipped_calls, 42u);
  EXPECT_EQ(s.filtered_functions[0].max_ns, 9u);
}
