// The heap libraries' recorder without the hooks (no LD_PRELOAD): events from plain threads in
// the full mode, sample points in the sampled mode, full rings drained by the appending thread,
// the totals, a restart, and the report's stop under the mutex.
#include "heap/recorder/recorder.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

namespace hotscope::heap {
namespace {

config::HeapOptions options_for(config::HeapMode mode) {
  config::HeapOptions options;
  options.mode = mode;
  options.sample_bytes = 4096;
  return options;
}

// A recorder in static-like storage: the sampled addresses are 264 KiB, too much for a stack.
struct Recorded {
  explicit Recorded(config::HeapMode mode)
      : addresses(std::make_unique<SampledAddresses>()),
        recorder(std::make_unique<Recorder>(options_for(mode), *addresses, CodeRanges{})) {}
  std::unique_ptr<SampledAddresses> addresses;
  std::unique_ptr<Recorder> recorder;
};

// A block freed on one thread and allocated again at the same address on another is applied in
// that order, whoever drains: no unknown free, and the second block is the live one.
TEST(HeapRecorder, EventsFromTwoThreadsAreAppliedInTheOrderTheyHappened) {
  Recorded recorded(config::HeapMode::Full);
  Recorder& recorder = *recorded.recorder;
  const StackId stack = recorder.current_stack();
  std::atomic<bool> freed{false};
  std::thread first([&] {
    EventLog::Ring* ring = recorder.open_ring();
    ASSERT_NE(ring, nullptr);
    for (std::uintptr_t i = 0; i < 100; ++i) {
      recorder.append(*ring, HeapEvent::Alloc, 0x10000 + i * 64, 10, stack);
    }
    recorder.append(*ring, HeapEvent::Free, 0x10000);
    freed.store(true);
    recorder.close_ring(*ring);
  });
  std::thread second([&] {
    EventLog::Ring* ring = recorder.open_ring();
    ASSERT_NE(ring, nullptr);
    while (!freed.load()) {
      std::this_thread::yield();
    }
    recorder.append(*ring, HeapEvent::Alloc, 0x10000, 1000, stack);
    recorder.close_ring(*ring);
  });
  first.join();
  second.join();
  const HeapTotals totals = recorder.totals();
  EXPECT_EQ(totals.total_blocks, 101u);
  EXPECT_EQ(totals.total_bytes, 100u * 10 + 1000);
  EXPECT_EQ(totals.live_blocks, 100u);
  EXPECT_EQ(totals.live_bytes, 99u * 10 + 1000);
  const std::optional<Recorder::Taken> taken = recorder.take();
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->raw.unknown_frees, 0u);
  EXPECT_EQ(taken->lost_events, 0u);
  ASSERT_EQ(taken->raw.sites.size(), 1u);
  EXPECT_EQ(taken->raw.sites[0].counts.total_blocks, 101u);
}

// Nobody else drains: a thread whose ring fills drains it itself, so nothing is lost.
TEST(HeapRecorder, AThreadWithAFullRingDrainsItItself) {
  Recorded recorded(config::HeapMode::Full);
  Recorder& recorder = *recorded.recorder;
  const StackId stack = recorder.current_stack();
  EventLog::Ring* ring = recorder.open_ring();
  ASSERT_NE(ring, nullptr);
  const std::uintptr_t blocks = 3 * EventLog::ring_capacity;
  for (std::uintptr_t i = 0; i < blocks; ++i) {
    recorder.append(*ring, HeapEvent::Alloc, 0x100000 + i * 16, 8, stack);
    if (i % 2 == 1) {
      recorder.append(*ring, HeapEvent::Free, 0x100000 + i * 16);
    }
  }
  recorder.close_ring(*ring);
  const HeapTotals totals = recorder.totals();
  EXPECT_EQ(totals.total_blocks, blocks);
  EXPECT_EQ(totals.live_blocks, blocks / 2);
  EXPECT_EQ(recorder.take()->lost_events, 0u);
}

// A realloc's two events, with the real call between them, move the block and count it again.
TEST(HeapRecorder, AReallocKeepsItsSiteAndCountsTheNewSize) {
  Recorded recorded(config::HeapMode::Full);
  Recorder& recorder = *recorded.recorder;
  const StackId stack = recorder.current_stack();
  EventLog::Ring* ring = recorder.open_ring();
  ASSERT_NE(ring, nullptr);
  recorder.append(*ring, HeapEvent::Alloc, 0x2000, 100, stack);
  recorder.append(*ring, HeapEvent::ReallocBegin, 0x2000);
  recorder.append(*ring, HeapEvent::ReallocEnd, 0x3000, 300, stack);
  recorder.close_ring(*ring);
  const HeapTotals totals = recorder.totals();
  EXPECT_EQ(totals.total_blocks, 2u);
  EXPECT_EQ(totals.total_bytes, 400u);
  EXPECT_EQ(totals.live_blocks, 1u);
  EXPECT_EQ(totals.live_bytes, 300u);
}

// Events without a ring (no memory for one) are counted with the report.
TEST(HeapRecorder, EventsWithoutARingAreCounted) {
  Recorded recorded(config::HeapMode::Full);
  recorded.recorder->count_event_without_ring();
  recorded.recorder->count_event_without_ring();
  EXPECT_EQ(recorded.recorder->take()->lost_events, 2u);
}

// A restart keeps the live blocks and starts the totals again from them.
TEST(HeapRecorder, ARestartKeepsTheLiveBlocks) {
  Recorded recorded(config::HeapMode::Full);
  Recorder& recorder = *recorded.recorder;
  const StackId stack = recorder.current_stack();
  EventLog::Ring* ring = recorder.open_ring();
  ASSERT_NE(ring, nullptr);
  recorder.append(*ring, HeapEvent::Alloc, 0x4000, 50, stack);
  recorder.append(*ring, HeapEvent::Alloc, 0x5000, 70, stack);
  recorder.append(*ring, HeapEvent::Free, 0x5000);
  recorder.restart();
  recorder.append(*ring, HeapEvent::Alloc, 0x6000, 5, stack);
  recorder.close_ring(*ring);
  const HeapTotals totals = recorder.totals();
  EXPECT_EQ(totals.live_blocks, 2u);
  EXPECT_EQ(totals.live_bytes, 55u);
  // The window starts with the block live at the restart, as if allocated then; the one freed
  // before it is gone.
  EXPECT_EQ(totals.total_blocks, 2u);
  EXPECT_EQ(totals.total_bytes, 55u);
}

// The sampled mode: a sample point is weighted, and the free hooks' filter knows the block
// until it is freed.
TEST(HeapRecorder, SampledBlocksAreWeightedAndKnownToTheFreeFilter) {
  Recorded recorded(config::HeapMode::Sampled);
  Recorder& recorder = *recorded.recorder;
  ASSERT_TRUE(recorder.sampling());
  EXPECT_EQ(recorder.pprof_period(), 4096);
  const StackId stack = recorder.current_stack();
  recorder.sampled_alloc(0x7000, 1024, stack);
  EXPECT_TRUE(recorded.addresses->may_contain(0x7000));
  const double weight = 1.0 / (1.0 - std::exp(-1024.0 / 4096.0));
  EXPECT_EQ(recorder.totals().total_blocks, static_cast<std::uint64_t>(std::llround(weight)));
  {
    const std::lock_guard lock(recorder.mutex());
    recorder.forget_sampled(0x7000);
  }
  EXPECT_FALSE(recorded.addresses->may_contain(0x7000));
  EXPECT_EQ(recorder.totals().live_blocks, 0u);
}

// The figures a crash report reads without the mutex (docs/crash.md): as the last drain left
// them, the events appended since counted as waiting; in the sampled mode as the last sample or
// free left them.
TEST(HeapRecorder, PublishedFiguresAreTheLastDrainsAndTheWaitingEvents) {
  Recorded recorded(config::HeapMode::Full);
  Recorder& recorder = *recorded.recorder;
  const StackId stack = recorder.current_stack();
  EventLog::Ring* ring = recorder.open_ring();
  ASSERT_NE(ring, nullptr);
  recorder.append(*ring, HeapEvent::Alloc, 0x4000, 50, stack);
  recorder.append(*ring, HeapEvent::Alloc, 0x5000, 70, stack);
  recorder.append(*ring, HeapEvent::Free, 0x5000);
  EXPECT_EQ(recorder.published_figures().live_blocks, 0u); // nothing drained yet
  EXPECT_EQ(recorder.events_waiting(), 3u);
  recorder.totals(); // drains
  LiveFigures live = recorder.published_figures();
  EXPECT_EQ(live.live_bytes, 50u);
  EXPECT_EQ(live.live_blocks, 1u);
  EXPECT_EQ(live.peak_bytes, 120u);
  EXPECT_EQ(live.peak_blocks, 2u);
  EXPECT_EQ(recorder.events_waiting(), 0u);
  recorder.append(*ring, HeapEvent::Alloc, 0x6000, 5, stack);
  EXPECT_EQ(recorder.published_figures().live_bytes, 50u);
  EXPECT_EQ(recorder.events_waiting(), 1u);
  recorder.close_ring(*ring);

  Recorded sampled(config::HeapMode::Sampled);
  sampled.recorder->sampled_alloc(0x7000, 1024, sampled.recorder->current_stack());
  live = sampled.recorder->published_figures();
  EXPECT_EQ(live.live_bytes, sampled.recorder->totals().live_bytes);
  EXPECT_GE(live.live_bytes, 1024u);
  {
    const std::lock_guard lock(sampled.recorder->mutex());
    sampled.recorder->forget_sampled(0x7000);
  }
  EXPECT_EQ(sampled.recorder->published_figures().live_bytes, 0u);
}

// Equal stacks get one id, from wherever they are captured.
TEST(HeapRecorder, TheSameCallSiteIsOneStack) {
  Recorded recorded(config::HeapMode::Full);
  Recorder& recorder = *recorded.recorder;
  std::vector<StackId> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(recorder.current_stack());
  }
  EXPECT_EQ(ids[0], ids[1]);
  EXPECT_EQ(ids[1], ids[2]);
  std::size_t done = 0;
  EXPECT_EQ(recorder.stacks_since(done).size(), 1u);
  EXPECT_EQ(done, 1u);
  EXPECT_TRUE(recorder.stacks_since(done).empty());
}

int stops = 0;
void count_stop() {
  ++stops;
}

// At exit the report stops recording with its copy, under the mutex; a mutex that stays held
// (a signal handler called exit() on a thread holding it) gives no copy, and recording stops.
TEST(HeapRecorder, TheReportStopsRecordingWithItsCopyOrWithoutOne) {
  Recorded recorded(config::HeapMode::Full);
  Recorder& recorder = *recorded.recorder;
  stops = 0;
  EXPECT_TRUE(recorder.take(count_stop));
  EXPECT_EQ(stops, 1);
  std::atomic<bool> held{false};
  std::atomic<bool> done{false};
  std::thread holder([&] {
    const std::lock_guard lock(recorder.mutex());
    held.store(true);
    while (!done.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  while (!held.load()) {
    std::this_thread::yield();
  }
  EXPECT_FALSE(recorder.take(count_stop));
  EXPECT_EQ(stops, 2);
  done.store(true);
  holder.join();
}

// An allocation `depth` calls deeper than the caller: each depth is a stack of its own.
__attribute__((noinline)) void allocate_at_depth(Recorder& recorder, EventLog::Ring& ring,
                                                 std::uintptr_t address, int depth) {
  if (depth == 0) {
    recorder.append_with_stack(ring, HeapEvent::Alloc, address, 8);
  } else {
    allocate_at_depth(recorder, ring, address, depth - 1);
  }
  asm volatile("" ::: "memory"); // not a tail call: each level keeps its frame
}

// The allocating thread hands its stacks over with its events, and the drainer interns them
// (telling the thread's cache their ids) while it reads the new stacks and takes profiles under
// the mutex: every block still lands on its own stack.
TEST(HeapRecorder, StacksHandedOverWithTheEventsAreInternedByTheDrainer) {
  Recorded recorded(config::HeapMode::Full);
  Recorder& recorder = *recorded.recorder;
  constexpr int depths = 20; // stacks are cut at 32 frames: deeper ones would look alike
  constexpr int rounds = 200;
  std::atomic<bool> done{false};
  std::thread allocating([&] {
    EventLog::Ring* ring = recorder.open_ring();
    ASSERT_NE(ring, nullptr);
    std::uintptr_t address = 0x100000;
    for (int round = 0; round < rounds; ++round) {
      for (int depth = 0; depth < depths; ++depth) {
        allocate_at_depth(recorder, *ring, address += 64, depth);
      }
    }
    recorder.close_ring(*ring);
    done.store(true);
  });
  std::size_t stacks_seen = 0;
  while (!done.load()) {
    {
      const std::lock_guard lock(recorder.mutex());
      recorder.drain();
    }
    for (const auto& stack : recorder.stacks_since(stacks_seen)) {
      EXPECT_FALSE(stack.empty());
    }
    ASSERT_TRUE(recorder.take());
  }
  allocating.join();
  const std::optional<Recorder::Taken> taken = recorder.take();
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->lost_events, 0u);
  ASSERT_EQ(taken->raw.sites.size(), std::size_t{depths});
  for (const RawSite& site : taken->raw.sites) {
    EXPECT_EQ(site.counts.total_blocks, std::uint64_t{rounds});
  }
  EXPECT_EQ(recorder.stacks_interned(), std::size_t{depths});
}

// Once the drainer has interned a stack, the thread's cache knows its id: the events of a stack
// the thread repeats carry its id, not its frames.
TEST(HeapRecorder, AnInternedStackIsHandedOverByItsIdOnceTheCacheKnowsIt) {
  Recorded recorded(config::HeapMode::Full);
  Recorder& recorder = *recorded.recorder;
  std::thread allocating([&] { // a cache of its own, free to learn
    EventLog::Ring* ring = recorder.open_ring();
    ASSERT_NE(ring, nullptr);
    std::uintptr_t address = 0x100000;
    for (int i = 0; i < 110; ++i) { // one call site: one stack
      if (i == 100) {               // the cache has learned the stack by now
        const std::lock_guard lock(recorder.mutex());
        recorder.drain();
      }
      allocate_at_depth(recorder, *ring, address += 64, 3);
    }
    // A backlog counts a ring's words as events where they fill it faster: a stack's frames would
    // count for several events.
    EXPECT_EQ(recorder.backlog().total, 10u) << "the events carry no words";
    recorder.close_ring(*ring);
  });
  allocating.join();
  const std::optional<Recorder::Taken> taken = recorder.take();
  ASSERT_TRUE(taken);
  ASSERT_EQ(taken->raw.sites.size(), 1u);
  EXPECT_EQ(taken->raw.sites[0].counts.total_blocks, 110u);
  EXPECT_EQ(recorder.stacks_interned(), 1u);
}

// With a collector running, a thread whose ring is full wakes it and waits for room rather than
// doing the accounting itself: here the collector sleeps until it is woken, and every event is
// still applied, in order, once.
TEST(HeapRecorder, AThreadWithAFullRingWakesTheCollector) {
  Recorded recorded(config::HeapMode::Full);
  Recorder& recorder = *recorded.recorder;
  const StackId stack = recorder.current_stack();
  std::atomic<bool> done{false};
  std::atomic<int> rung{0};
  recorder.set_collector_running(true);
  std::thread collector([&] {
    while (!done.load()) {
      if (recorder.collector_doorbell().wait_for(1'000'000'000)) {
        rung.fetch_add(1);
      }
      const std::lock_guard lock(recorder.mutex());
      recorder.drain();
    }
  });
  EventLog::Ring* ring = recorder.open_ring();
  ASSERT_NE(ring, nullptr);
  constexpr std::uintptr_t blocks = 3 * EventLog::ring_capacity;
  for (std::uintptr_t i = 0; i < blocks; ++i) {
    recorder.append(*ring, HeapEvent::Alloc, 0x100000 + i * 64, 16, stack);
  }
  recorder.close_ring(*ring);
  done.store(true);
  recorder.collector_doorbell().ring();
  collector.join();
  recorder.set_collector_running(false);
  EXPECT_GE(rung.load(), 1) << "the full ring woke the collector";
  const HeapTotals totals = recorder.totals();
  EXPECT_EQ(totals.total_blocks, blocks);
  EXPECT_EQ(totals.live_blocks, blocks);
}

} // namespace
} // namespace hotscope::heap
