// The full mode's collector: a thread of the profiler's that applies the allocating threads'
// events to the engine beside the program, and adds new stacks to the profiles' builder ahead of
// the report.
#include "heap/interposer/real_allocator.hpp"
#include "heap/interposer/recording.hpp"
#include "heap/interposer/reports.hpp"
#include "threads/threads.hpp"

#include <pthread.h>
#include <sys/prctl.h>

#include <algorithm>
#include <ctime>

namespace hotscope::heap::interposer {
namespace {

// Drains the full mode's events on a thread of its own, so that where a core is free the
// accounting runs beside the program instead of on its threads (a thread drains the rings itself
// only when the collector makes no room for it, Recorder::collector_grace_ns). It drains in
// batches, once a ring is a quarter full or 10 ms after it last drained: handing events over one by
// one would move a cache line between the two cores for each. It sleeps until the fullest ring, at
// the rate events came since it last looked, would be half full (between 20 µs and 10 ms): a
// program allocating steadily wakes it about once per half ring, not 50,000 times a second (on a
// virtual machine a sleep and a wake-up cost some 20 µs of CPU). A thread whose ring fills sooner
// (a burst) wakes it at once and waits for room, rather than doing the accounting itself. It ends
// with recording.
void* collect_events(void* pointer) {
  ++in_profiler; // started by the C library's pthread_create when the library was attached
  const threads::OwnThread own;
  Recorder& recorder = *static_cast<Recorder*>(pointer);
  recorder.set_collector_running(true);
  prctl(PR_SET_TIMERSLACK, 1000); // 1 µs: sleeps of 20 µs, not of the default slack's 50 µs
  pthread_setname_np(pthread_self(), "hotscope-heap"); // not one of the program's in top -H
  constexpr std::uint64_t busy_pause_ns = 20'000;
  constexpr std::uint64_t idle_pause_ns = 10'000'000;
  std::uint64_t pause_ns = busy_pause_ns;
  std::uint64_t last_drain_ns = clock::monotonic_ns();
  std::uint64_t last_progress_ns = last_drain_ns;
  std::uint64_t last_look_ns = last_drain_ns;
  std::uint64_t appended_at_last_look = recorder.events_appended();
  std::uint64_t last_built_ns = 0;
  std::size_t built = 0; // the stacks the profiles' builder holds
  constexpr std::uint64_t half_ring = EventLog::ring_capacity / 2;
  while (phase.load(std::memory_order_acquire) == Recording) {
    const EventLog::Backlog backlog = recorder.backlog();
    const std::uint64_t now_ns = clock::monotonic_ns();
    const std::uint64_t appended = recorder.events_appended();
    const bool draining = backlog.largest >= EventLog::ring_capacity / 4 ||
                          (backlog.total > 0 && now_ns - last_drain_ns >= idle_pause_ns);
    if (draining) {
      // Stuck for event_wait_ns at a number never made visible: give it up.
      const bool stuck = now_ns - last_progress_ns >= Recorder::event_wait_ns;
      const std::lock_guard lock(recorder.mutex());
      if (recorder.drain(stuck ? Recorder::event_wait_ns : 0) > 0 || stuck) {
        last_progress_ns = now_ns;
      }
      last_drain_ns = now_ns;
    }
    if (now_ns - last_built_ns >= idle_pause_ns && recorder.stacks_interned() != built) {
      built = build_ahead(recorder); // outside the heap lock
      last_built_ns = now_ns;
    }
    // All threads' events, as if one ring took them: with several threads the pause is shorter
    // than their own rings need.
    const std::uint64_t arrived = appended - appended_at_last_look;
    if (arrived == 0) {
      pause_ns = std::min(pause_ns * 2, idle_pause_ns);
    } else {
      const std::uint64_t waiting = draining ? 0 : std::min(backlog.largest, half_ring);
      pause_ns = std::clamp((now_ns - last_look_ns) * (half_ring - waiting) / arrived,
                            busy_pause_ns, idle_pause_ns);
    }
    appended_at_last_look = appended;
    last_look_ns = now_ns;
    recorder.collector_doorbell().wait_for(pause_ns);
  }
  recorder.set_collector_running(false);
  return nullptr;
}

// When the program's own code starts (the first allocations may come earlier, from inside the
// dynamic loader, where starting a thread is not safe).
__attribute__((constructor)) void start_collector_at_load() {
  start_collector();
}

} // namespace

// Without it (no thread could be started) the allocating threads drain the events themselves.
void start_collector() {
  if (!resolve_real()) {
    return;
  }
  const Inside inside; // the thread is the profiler's (the interposed pthread_create)
  Recorder* recorder = recording_state();
  if (recorder == nullptr || sampling) {
    return;
  }
  const threads::SignalsBlocked blocked;
  pthread_t thread;
  if (pthread_create(&thread, nullptr, collect_events, recorder) == 0) {
    pthread_detach(thread);
  }
}
} // namespace hotscope::heap::interposer
