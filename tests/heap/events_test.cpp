// EventLog: events from many threads, applied once each, in one order that keeps every thread's
// own order and every hand-over between threads.
#include "heap/events/events.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace hotscope::heap {
namespace {

// Each event's words (its stack, for the Recorder): `count` of them, each telling its event.
std::uintptr_t word_of(std::uint64_t thread, std::uint64_t event) {
  return thread << 32 | event;
}
std::size_t words_of_event(std::uint64_t event) {
  return event % 3 == 0 ? 0 : event % 41; // many buffers' worth, with events that carry none
}

TEST(HeapEvents, EveryEventIsAppliedOnceInNumberOrderKeepingEachThreadsOrder) {
  constexpr int threads = 4;
  constexpr std::uint64_t per_thread = 20000; // many times a ring: producers wait for room
  EventLog log;
  std::mutex drainer; // one drainer at a time, as the engine's owner serializes it
  std::vector<std::uint64_t> next_of_thread(threads, 0);
  std::uint64_t applied = 0;
  std::uint64_t last_sequence = 0;
  bool in_order = true;
  bool words_kept = true;
  const auto apply = [&](const HeapEvent& event, std::uintptr_t,
                         std::span<const std::uintptr_t> words) {
    const auto thread = static_cast<std::size_t>(event.address);
    in_order = in_order && event.size == next_of_thread[thread] &&
               (applied == 0 ? event.sequence == 0 : event.sequence == last_sequence + 1);
    words_kept = words_kept && words.size() == words_of_event(event.size) &&
                 std::all_of(words.begin(), words.end(), [&](std::uintptr_t word) {
                   return word == word_of(thread, event.size);
                 });
    ++next_of_thread[thread];
    last_sequence = event.sequence;
    ++applied;
  };
  // The events a drain shows ahead come with their words too.
  bool ahead_words_kept = true;
  std::uint64_t shown_ahead = 0;
  const auto ahead = [&](const HeapEvent& event, std::span<const std::uintptr_t> words) {
    ++shown_ahead;
    ahead_words_kept = ahead_words_kept && words.size() == words_of_event(event.size) &&
                       std::all_of(words.begin(), words.end(), [&](std::uintptr_t word) {
                         return word == word_of(event.address, event.size);
                       });
  };
  const auto drain = [&](std::uint64_t wait_ns = 0) {
    const std::lock_guard lock(drainer);
    return log.drain(apply, wait_ns, ahead);
  };
  std::atomic<bool> done{false};
  std::thread collector([&] {
    while (!done.load()) {
      if (drain() == 0) {
        std::this_thread::yield();
      }
    }
  });
  std::vector<std::thread> producers;
  for (int t = 0; t < threads; ++t) {
    producers.emplace_back([&, t] {
      EventLog::Ring* ring = log.open_ring();
      ASSERT_NE(ring, nullptr);
      for (std::uint64_t i = 0; i < per_thread; ++i) {
        // Half the threads drain themselves when full, half wait for the collector.
        HeapEvent& event = log.reserve(
            *ring,
            [&] {
              if (t % 2 == 0) {
                drain();
              }
              std::this_thread::yield();
            },
            words_of_event(i));
        std::fill_n(log.words_of(*ring), words_of_event(i), word_of(t, i));
        event.address = static_cast<std::uintptr_t>(t);
        event.size = i;
        log.commit(*ring);
      }
      log.close_ring(*ring);
    });
  }
  for (std::thread& producer : producers) {
    producer.join();
  }
  done.store(true);
  collector.join();
  drain(1'000'000'000);
  EXPECT_TRUE(in_order);
  EXPECT_TRUE(words_kept);
  EXPECT_TRUE(ahead_words_kept);
  EXPECT_GT(shown_ahead, 0u);
  EXPECT_EQ(applied, threads * per_thread);
  EXPECT_EQ(log.lost(), 0u);
}

// A block freed on one thread and then allocated on another: the free's event comes first.
TEST(HeapEvents, AHandOverBetweenThreadsKeepsItsOrder) {
  EventLog log;
  std::atomic<int> turn{0};
  constexpr int rounds = 5000;
  std::vector<std::thread> players;
  for (int player = 0; player < 2; ++player) {
    players.emplace_back([&, player] {
      EventLog::Ring* ring = log.open_ring();
      for (int round = player; round < rounds; round += 2) {
        while (turn.load(std::memory_order_acquire) != round) {
          std::this_thread::yield();
        }
        log.reserve(*ring, [] { std::this_thread::yield(); }).size =
            static_cast<std::uint64_t>(round);
        log.commit(*ring);
        turn.store(round + 1, std::memory_order_release); // the hand-over
      }
      log.close_ring(*ring);
    });
  }
  std::vector<std::uint64_t> order;
  std::thread collector([&] {
    while (order.size() < rounds) {
      log.drain([&](const HeapEvent& event, std::uintptr_t, std::span<const std::uintptr_t>) {
        order.push_back(event.size);
      });
      std::this_thread::yield();
    }
  });
  for (std::thread& player : players) {
    player.join();
  }
  collector.join();
  ASSERT_EQ(order.size(), static_cast<std::size_t>(rounds));
  for (std::size_t i = 0; i < order.size(); ++i) {
    ASSERT_EQ(order[i], i);
  }
}

// A closed ring is reused once empty; one with events left waits for the drainer.
TEST(HeapEvents, ClosedRingsAreReusedOnlyWhenEmpty) {
  EventLog log;
  EventLog::Ring* first = log.open_ring();
  log.reserve(*first, [] {});
  log.commit(*first);
  log.close_ring(*first);
  EventLog::Ring* second = log.open_ring();
  EXPECT_NE(second, first);
  std::size_t applied =
      log.drain([](const HeapEvent&, std::uintptr_t, std::span<const std::uintptr_t>) {});
  EXPECT_EQ(applied, 1u);
  log.close_ring(*second);
  EventLog::Ring* third = log.open_ring();
  EXPECT_TRUE(third == first || third == second);
}

} // namespace
} // namespace hotscope::heap
