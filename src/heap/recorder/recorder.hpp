// The heap libraries' recorder: what the hooks record goes here, and profiles come out of it.
// In the full mode the allocating threads hand their events over through the EventLog, without a
// lock, and whoever holds the mutex applies them to the Engine in one order, interning the stacks
// they carry: a thread never interns, nor waits for a lock to (it is the costly part of a new
// stack, after the unwinding: the table's lines are rarely in a cache). In the sampled mode
// the sample points go to the SampledEngine under the mutex. It keeps the timestamps' clock, and
// gives the raw profile, the totals and a restart. One per process in the heap libraries
// (src/heap/interposer owns it, its modes and its threads); it needs no hooks, so tests drive it
// from plain threads.
#pragma once

#include "clock/clock.hpp"
#include "config/config.hpp"
#include "heap/capture.hpp"
#include "heap/engine.hpp"
#include "heap/events/events.hpp"
#include "heap/sampling.hpp"
#include "threads/threads.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

namespace hotscope::heap {

class Recorder {
public:
  // How long a drain waits for an event numbered before it but not visible yet (its thread is
  // a few instructions from making it so, unless it was preempted, stopped or left that window by
  // a signal handler's longjmp): beyond it the event is given up on and counted. Profiles and
  // reports wait this long at once; the collector and a thread with a full ring after this long
  // without progress. A second: on an overloaded machine a thread preempted in that window can
  // wait for a core longer than 100 ms, and giving up its event would lose a real allocation.
  static constexpr std::uint64_t event_wait_ns = 1'000'000'000;

  // `addresses`: the sampled blocks' filter that the free hooks read without the mutex, kept up
  // to date here. `skip`: the code whose leading frames captured stacks drop (the profiler's own
  // and the allocator's).
  Recorder(config::HeapOptions options, SampledAddresses& addresses, CodeRanges skip);
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  const config::HeapOptions& options() const { return options_; }
  bool sampling() const { return options_.mode == config::HeapMode::Sampled; }
  const clock::FreeRunningClock& clock() const { return clock_; }
  // Serializes the engines and their stack tables. Held only for short copies and drains: never
  // while unwinding.
  std::mutex& mutex() { return mutex_; }

  // The calling thread's stack above the hooks, interned under the mutex (the sampled mode's
  // way): its id is kept with the thread's cached copy of the stack, so only a stack the thread's
  // cache does not know the id of takes the lock.
  StackId current_stack();

  // ---- The full mode: any thread, no lock ----

  EventLog::Ring* open_ring() { return events_.open_ring(); } // nullptr without memory
  void close_ring(EventLog::Ring& ring) { events_.close_ring(ring); }
  // Appends one event to the calling thread's `ring`. While the ring is full, wakes the collector
  // (collector_running()) and waits for room, or drains the rings on this thread: without a
  // collector, or when it made no room for collector_grace_ns (it may wait for a core), and only
  // while no other thread holds the mutex (that one drains, or will).
  void append(EventLog::Ring& ring, HeapEvent::Kind kind, std::uintptr_t address,
              std::uint64_t size = 0, StackId stack = 0) {
    append_words(ring, kind, address, size, stack, 0, [] {});
  }
  // As append(), with the calling thread's stack above the hooks: its id when the thread's cache
  // of stacks knows it, else its frames, which the drainer interns (and tells the cache the id).
  void append_with_stack(EventLog::Ring& ring, HeapEvent::Kind kind, std::uintptr_t address,
                         std::uint64_t size);
  // An event that could not be recorded: no memory for its thread's ring.
  void count_event_without_ring() { events_without_ring_.fetch_add(1, std::memory_order_relaxed); }

  // ---- The sampled mode ----

  // A sampled block; takes the mutex.
  void sampled_alloc(std::uintptr_t address, std::size_t size, StackId stack);
  // The block at `address` is freed, if it was sampled. With the mutex held.
  void forget_sampled(std::uintptr_t address);

  // Applies the full mode's events whose turn has come to the engine, with the mutex held. With
  // `wait_ns`, waits that long at most for an event whose thread is between taking its number and
  // making it visible. Returns how many it applied.
  std::size_t drain(std::uint64_t wait_ns = 0);

  // A profile's raw figures (times in µs), with what the report at exit also says.
  struct Taken {
    RawProfile raw;
    std::uint64_t sampled_allocations = 0;
    std::uint64_t lost_events = 0; // given up on, or without a ring to go to
  };
  // The raw figures now, the events drained first, under the mutex only while they are copied.
  // With `stop` (at exit), `stop` is called with the copy, under the mutex, so that nothing is
  // recorded after it; the mutex is then waited for a second at most (a signal handler may have
  // called exit() on a thread that holds it): nothing when it stayed held.
  std::optional<Taken> take(void (*stop)() = nullptr);
  // The process-wide figures now, the events drained first.
  HeapTotals totals();
  // The figures as the last drain or sample left them, and the events waiting in the rings:
  // without the mutex, async-signal-safe, for a reader that may interrupt its holder (a crash
  // report, docs/crash.md). Each figure is read alone: two of them may be of two drains.
  LiveFigures published_figures() const noexcept;
  std::uint64_t events_waiting() const noexcept { return events_.backlog().total; }
  // A new measuring window (Engine::restart), the events drained first.
  void restart();

  // ---- For the collector ----

  // A thread whose ring is full wakes a running collector and waits this long for room before it
  // drains the rings itself: draining them is the collector's work, beside the program's thread.
  static constexpr std::uint64_t collector_grace_ns = 1'000'000;
  // Said by the collector thread when it starts and ends.
  void set_collector_running(bool running) {
    collector_running_.store(running, std::memory_order_relaxed);
  }
  // Where the collector sleeps between its looks; a thread whose ring is full rings it.
  threads::Doorbell& collector_doorbell() { return collector_doorbell_; }

  EventLog::Backlog backlog() const { return events_.backlog(); }
  std::uint64_t events_appended() const { return events_.appended(); }
  // The stacks interned since the first `done` of them were; `done` moves on. Not copies: the
  // stack table keeps each stack where it is for as long as the recorder lives. Takes the mutex.
  std::vector<std::span<const std::uintptr_t>> stacks_since(std::size_t& done);
  // How many stacks the full mode has interned.
  std::size_t stacks_interned();
  // pprof's sampling period: the mean interval in bytes, or 1 when every block is recorded.
  std::int64_t pprof_period() const;

private:
  // The calling thread's stack above the hooks, and what its cache remembers of it.
  struct Captured {
    std::array<std::uintptr_t, 256> frames; // the deepest HOTSCOPE_HEAP_DEPTH
    std::size_t depth = 0;
    RememberedStack remembered;
    std::span<const std::uintptr_t> stack() const { return {frames.data(), depth}; }
  };
  Captured capture() const;
  // As append(), the event carrying `words` words, which `write_words()` writes (at
  // events_.words_of(ring)) before the event is made visible.
  template <class WriteWords>
  void append_words(EventLog::Ring& ring, HeapEvent::Kind kind, std::uintptr_t address,
                    std::uint64_t size, StackId stack, std::size_t words,
                    WriteWords&& write_words) {
    std::uint64_t waiting_since_ns = 0;
    HeapEvent& event = events_.reserve(
        ring, [&] { make_room(waiting_since_ns); }, words);
    write_words();
    event.kind = kind;
    event.time = clock_.ticks();
    event.address = address;
    event.size = size;
    event.stack = stack;
    events_.commit(ring);
  }
  // The time of raw `ticks`, with the mutex held. Another core's TSC may lag a little, and events
  // are applied after they happened: time never goes back.
  std::uint64_t time_of(std::uint64_t ticks);
  std::uint64_t now() { return time_of(clock_.ticks()); }
  // The calling thread's ring is full. After event_wait_ns without room, a number that is never
  // made visible is given up on.
  void make_room(std::uint64_t& waiting_since_ns);
  // Copies the engine's live figures for published_figures(), with the mutex held: once per
  // drain, sample or restart, never per event.
  void publish_figures() noexcept;

  std::mutex mutex_;
  Engine engine_;         // full mode, fed through events_
  EventLog events_;       // full mode: drained by whoever holds mutex_
  SampledEngine sampled_; // sampled mode
  config::HeapOptions options_;
  SampledAddresses& sampled_addresses_;
  CodeRanges skip_;
  clock::FreeRunningClock clock_;
  std::atomic<std::uint64_t> events_without_ring_{0};
  // published_figures()'s: LiveFigures's four, in its order.
  std::array<std::atomic<std::uint64_t>, 4> published_{};
  std::atomic<bool> collector_running_{false};
  threads::Doorbell collector_doorbell_;
  alignas(64) std::uint64_t latest_time_ = 0; // guarded by mutex_; apart from what hooks read
  // The hashes of the stacks of the events a drain has seen ahead (their interning's first cache
  // miss fetched meanwhile), by event number: the drain looks a few events ahead. Guarded by
  // mutex_.
  struct AheadHash {
    std::uint64_t sequence = ~std::uint64_t{0};
    std::uint64_t hash = 0;
  };
  std::array<AheadHash, 16> ahead_hashes_;
};

} // namespace hotscope::heap
