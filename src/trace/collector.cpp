// The process-wide collector: registers each thread's ring on its first record, drains all
// rings on one thread of its own, and feeds the Aggregator. Measured threads never take a lock
// here after registration.
#include "clock/clock.hpp"
#include "instrument/instrument.hpp"
#include "locks/locks.hpp"
#include "names/names.hpp"
#include "objects/objects.hpp"
#include "threads/threads.hpp"
#include "trace/trace.hpp"

#include <hotscope/hotscope.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <new>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace hotscope::detail {
__thread Ring* tls_ring __attribute__((tls_model("initial-exec"))) = nullptr;
} // namespace hotscope::detail

namespace hotscope::trace {
namespace {

using detail::Ring;

constexpr std::uint32_t kUnassigned = UINT32_MAX;

// The collector sleeps on it for at most its period; a ring passing its wake mark, or stop(),
// rings it. The collector answers before each drain, so a mark passed during a drain wakes it
// again.
threads::Doorbell doorbell;

// Rings of threads that ended, not yet freed by a drain; past kEndedRingsKept a thread that
// starts drains them itself.
std::atomic<std::size_t> rings_of_ended_threads{0};
constexpr std::size_t kEndedRingsKept = 4;

// Ring storage is mapped, not allocated: it starts on a page, so no 32-byte record straddles two
// cache lines, and it goes back to the system when its thread's slot is freed instead of leaving
// a megabyte-sized hole in the program's heap.
struct RingUnmap {
  std::size_t bytes = 0;
  void operator()(hotscope_record* records) const { munmap(records, bytes); }
};
using RingStorage = std::unique_ptr<hotscope_record[], RingUnmap>;

RingStorage map_ring(std::size_t records) {
  const std::size_t bytes = records * sizeof(hotscope_record);
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    return RingStorage(nullptr, RingUnmap{});
  }
  return RingStorage(static_cast<hotscope_record*>(memory), RingUnmap{bytes});
}

// A pass that drains at most this share of a ring gives its whole pages back to the system: a
// slow thread's ring then stays a few pages resident, however large it is mapped. A fast ring
// keeps its pages, which its thread would otherwise fault in again within milliseconds.
constexpr std::uint64_t kSlowRingShare = 256;

// Hands back the whole pages inside `count` drained records (they read as zeros when next touched).
void release_pages(hotscope_record* records, std::uint64_t count) {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<std::uintptr_t>(records) + page - 1) & ~(page - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(records + count) & ~(page - 1);
  if (end > begin) {
    madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
  }
}

// Tries `mutex` until `patience_ns` has passed, never waiting on it (a crash report's).
bool try_lock_within(std::mutex& mutex, std::uint64_t patience_ns) noexcept {
  const std::uint64_t start = clock::monotonic_ns();
  while (!mutex.try_lock()) {
    if (clock::monotonic_ns() - start >= patience_ns) {
      return false;
    }
    const timespec pause{0, 1'000'000};
    nanosleep(&pause, nullptr);
  }
  return true;
}

struct ThreadSlot {
  Ring ring;
  RingStorage storage;
  std::int64_t os_tid = 0;
  std::atomic<bool> exited{false};
  OsThreadFigures at_exit;           // written by the thread as it ends, before `exited`
  std::uint32_t index = kUnassigned; // the Aggregator's thread index, set by the collector
  bool drained_last = false;         // exited and drained for the last time: to be freed
};

// In-process refs are addresses of the program's own static data.
Resolver in_process_resolver() {
  return Resolver{
      [](std::uint64_t ref) {
        const auto* location = reinterpret_cast<const hotscope_source_location*>(ref);
        LocationText text{location->name, location->file, location->line, location->flags};
        if (location->flags & HOTSCOPE_LOCATION_FUNCTION_SIGNATURE) {
          text.name = names::short_function_name(text.name);
        }
        return text;
      },
      [](std::uint64_t ref) { return std::string(reinterpret_cast<const char*>(ref)); },
      [](std::uint64_t address) {
        objects::FunctionName function = objects::function_at(address);
        return LocationText{
            std::move(function.name),   std::move(function.file),    function.line, 0,
            std::move(function.module), std::move(function.build_id)};
      }};
}

// Instrumented functions are filtered in instrument's table (docs/instrument.md).
FunctionFilter function_filter(std::uint64_t min_ns) {
  return {min_ns, 1000, instrument::filter, instrument::skipped_calls,
          [] { return clock::info().ticks_per_second; }};
}

class Collector {
public:
  explicit Collector(const Settings& settings)
      : settings_(settings), aggregator_(settings.window_bytes, in_process_resolver(),
                                         settings.slow, function_filter(settings.function_min_ns)),
        start_ticks_(clock::now_ticks()),
        start_unix_ns_(
            static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                           std::chrono::system_clock::now().time_since_epoch())
                                           .count())),
        process_name_(read_process_name()) {
    pthread_key_create(&exit_key_, &Collector::on_thread_exit);
    if (settings.thread_at_start) {
      start_thread();
    } else {
      thread_runs_here_.store(false, std::memory_order_relaxed);
      thread_wanted_.store(true, std::memory_order_relaxed);
    }
  }

  Ring* register_current_thread() noexcept {
    // A new thread drains the rings first when the collector lags behind ending threads (a
    // loaded machine) or does not run (a forked child that could not start it): the rings of
    // ended threads, mapped at their full size each, never pile up.
    if (!thread_runs_here_.load(std::memory_order_acquire) ||
        rings_of_ended_threads.load(std::memory_order_relaxed) >= kEndedRingsKept) {
      try {
        collect();
      } catch (...) {
        // Out of memory: the records stay in their rings for a later drain.
      }
    }
    RingStorage storage = map_ring(settings_.ring_records);
    const int map_error = errno;
    auto* slot = new (std::nothrow) ThreadSlot;
    if (slot == nullptr) {
      // The thread's records are dropped and counted in a ring of its own that nothing reports.
      detail::tls_ring = &out_of_memory_ring_;
      return &out_of_memory_ring_;
    }
    if (storage == nullptr) {
      // A ring of capacity 0 drops every record and counts it; its slot reports the count.
      warn_ring_unmapped(map_error);
    } else {
      slot->ring.slots = storage.get();
      slot->storage = std::move(storage);
      slot->ring.capacity = settings_.ring_records;
    }
    slot->os_tid = static_cast<std::int64_t>(syscall(SYS_gettid));
    {
      std::lock_guard lock(registry_mutex_);
      slots_.push_back(slot);
      // Task ids unique in the process: 2^40 per thread, 2^24 threads over the process's life.
      slot->ring.task_ids = ++rings_registered_ << 40;
    }
    pthread_setspecific(exit_key_, slot);
    detail::tls_ring = &slot->ring;
    return &slot->ring;
  }

  // Once per process: a thread whose ring cannot be mapped runs on, its records counted dropped.
  void warn_ring_unmapped(int error) {
    if (!warned_ring_unmapped_.exchange(true, std::memory_order_relaxed)) {
      std::fprintf(stderr,
                   "hotscope: cannot map a ring of %zu records (%zu MiB) for a thread: %s; its "
                   "records are dropped and counted (HOTSCOPE_RING_RECORDS sets the size)\n",
                   settings_.ring_records, settings_.ring_records * sizeof(hotscope_record) >> 20,
                   std::strerror(error));
    }
  }

  void collect() {
    std::lock_guard lock(state_mutex_);
    drain_all();
  }

  Snapshot snapshot(Contents contents) {
    CapturedSnapshot captured;
    {
      std::lock_guard lock(state_mutex_);
      drain_all();
      const TimeBase time{clock::info(), start_ticks_, clock::now_ticks()};
      captured = aggregator_.capture(time, contents);
      captured.snapshot.memory.rings = rings_bytes();
    }
    // The trace is converted without the lock: the collector drains meanwhile.
    Snapshot snapshot = complete(std::move(captured));
    snapshot.hotscope_version = HOTSCOPE_VERSION;
    snapshot.process_name = process_name_;
    snapshot.start_unix_ns = start_unix_ns_;
    return snapshot;
  }

  void reset() {
    std::lock_guard lock(state_mutex_);
    drain_all();
    aggregator_.reset();
    start_ticks_ = clock::now_ticks();
    start_unix_ns_ =
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count());
  }

  void stop() {
    // Only a thread this process started is woken and joined (see after_fork_in_child).
    if (thread_runs_here_.load(std::memory_order_acquire) && thread_.joinable()) {
      stopping_.store(true, std::memory_order_release);
      doorbell.ring();
      thread_.join();
    }
    collect();
  }

  // fork(): no lock may be held mid-operation at the fork (the collector thread holds
  // state_mutex_ while it drains), and the child must never wait for its parent's thread. The order
  // is every other path's: drain_all takes registry_mutex_ inside state_mutex_.
  void before_fork() {
    state_mutex_.lock();
    registry_mutex_.lock();
  }
  void after_fork_in_parent() {
    registry_mutex_.unlock();
    state_mutex_.unlock();
  }
  // The child has no collector thread: fork+exec children never need one. One that keeps
  // recording (a daemon) gets it from start_wanted_thread().
  void after_fork_in_child() {
    registry_mutex_.unlock();
    state_mutex_.unlock();
    stopping_.store(false, std::memory_order_relaxed);
    // The parent's thread does not exist here: its handle is dropped, never joined.
    new (&thread_) std::thread;
    thread_runs_here_.store(false, std::memory_order_release);
    forked_child_ = true;
    thread_wanted_.store(true, std::memory_order_release);
  }

  // The first time one of the rings passes its wake mark or is full, in a forked child or where
  // the thread was not started at once (Settings::thread_at_start; a process that records little
  // has its rings drained by each thread it starts, register_current_thread, and by every
  // snapshot), or when asked (start_collector_thread): starts the collector thread once, outside
  // fork()'s handlers (where a sanitizer's or the C library's locks may still be held), as safely
  // as the program starts its own. Under TSan, which does not support threads started in a child
  // of a multi-threaded process, a forked child's new threads drain instead.
  void start_wanted_thread() noexcept {
#ifdef __SANITIZE_THREAD__
    if (forked_child_) {
      return;
    }
#endif
    if (!thread_wanted_.load(std::memory_order_relaxed) ||
        !thread_wanted_.exchange(false, std::memory_order_acq_rel)) {
      return;
    }
    std::lock_guard lock(state_mutex_);
    try {
      start_thread();
      thread_runs_here_.store(true, std::memory_order_release);
    } catch (const std::system_error&) {
      // No thread: the fallback in register_current_thread.
    }
  }

  std::uint32_t add_external_track(std::string name) {
    std::lock_guard lock(state_mutex_);
    return aggregator_.add_thread(kExternalTidBase + external_tracks_++, std::move(name));
  }
  void consume_external(std::uint32_t track, std::span<const hotscope_record> records) {
    std::lock_guard lock(state_mutex_);
    aggregator_.consume(track, records);
  }
  void set_external_batches(std::uint32_t track, const BatchCounts& batches) {
    std::lock_guard lock(state_mutex_);
    aggregator_.set_batches(track, batches);
  }
  void close_external_track(std::uint32_t track) {
    std::lock_guard lock(state_mutex_);
    aggregator_.mark_exited(track);
  }

  const Settings& settings() const {
    return settings_;
  }

  std::uint64_t early_wakes() const {
    return early_wakes_.load(std::memory_order_relaxed);
  }

  // Under state_mutex_: a periodic drain under way when pausing is finished before this returns,
  // and none starts after it.
  void pause(bool paused) {
    std::lock_guard lock(state_mutex_);
    paused_ = paused;
  }

  bool read_for_crash(CrashVisitor& visitor, std::uint64_t patience_ns) noexcept {
    if (!try_lock_within(state_mutex_, patience_ns)) {
      return false;
    }
    const bool registry = try_lock_within(registry_mutex_, patience_ns);
    if (registry) {
      for (const ThreadSlot* slot : slots_) {
        if (slot->index == kUnassigned) {
          visitor.thread(slot->os_tid, "", slot->ring);
        } else {
          aggregator_.crash_thread(slot->index, slot->ring, slot->os_tid, visitor);
        }
      }
      aggregator_.crash_series(visitor);
      registry_mutex_.unlock();
    }
    state_mutex_.unlock();
    return registry;
  }

private:
  static void on_thread_exit(void* slot) {
    detail::tls_ring = nullptr; // a record after this point registers a fresh ring
    rings_of_ended_threads.fetch_add(1, std::memory_order_relaxed);
    auto* ending = static_cast<ThreadSlot*>(slot);
    ending->at_exit = read_own_figures();
    ending->exited.store(true, std::memory_order_release);
    // Its ring (mapped at its full size) is unmapped at the collector's next pass, now rather
    // than a period later: under thread churn rings would pile up otherwise.
    doorbell.ring();
  }

  // The collector's thread, with every signal blocked (the program's are for its own threads).
  void start_thread() {
    const threads::SignalsBlocked blocked;
    thread_ = std::thread([this] {
      locks::own_thread();
      run();
    });
  }

  // Drains every period, or sooner when a ring passes its wake mark (has_room_slow).
  void run() {
    pthread_setname_np(pthread_self(), "hotscope-drain"); // for top -H and the benchmarks
    const threads::OwnThread own;
    while (!stopping_.load(std::memory_order_acquire)) {
      const bool woken = doorbell.wait_for(std::uint64_t{settings_.period_ms} * 1'000'000);
      if (stopping_.load(std::memory_order_acquire)) {
        break;
      }
      if (woken) {
        early_wakes_.fetch_add(1, std::memory_order_relaxed);
      }
      std::lock_guard state_lock(state_mutex_);
      if (!paused_) {
        drain_all();
      }
    }
  }

  // Caller holds state_mutex_. The rings as mapped, and the collector's copy of one.
  std::uint64_t rings_bytes() {
    std::lock_guard lock(registry_mutex_);
    return (slots_.size() * settings_.ring_records + scratch_.capacity()) * sizeof(hotscope_record);
  }

  // Caller holds state_mutex_. Allocates nothing while no thread starts or ends and no record
  // is new: a child forked meanwhile cannot find an allocator lock held by this thread.
  void drain_all() {
    std::vector<ThreadSlot*>& slots = drained_slots_;
    {
      std::lock_guard lock(registry_mutex_);
      slots.assign(slots_.begin(), slots_.end());
    }
    take_cpu_samples();
    std::vector<ThreadSlot*>& finished = finished_slots_;
    finished.clear();
    for (ThreadSlot* slot : slots) {
      if (slot->index == kUnassigned) {
        slot->index = aggregator_.add_thread(slot->os_tid, read_thread_name(slot->os_tid));
      }
      // Seen before draining: every record of an exited thread is then already published.
      const bool exited = slot->exited.load(std::memory_order_acquire);
      drain(*slot, samples_of(*slot));
      aggregator_.set_dropped(slot->index, slot->ring.dropped.load(std::memory_order_relaxed));
      if (exited) {
        aggregator_.mark_exited(slot->index, slot->at_exit);
        slot->drained_last = true;
        finished.push_back(slot);
      }
    }
    if (!finished.empty()) {
      std::lock_guard lock(registry_mutex_);
      std::erase_if(slots_, [](const ThreadSlot* slot) { return slot->drained_last; });
    }
    for (ThreadSlot* slot : finished) {
      delete slot;
    }
    rings_of_ended_threads.fetch_sub(finished.size(), std::memory_order_relaxed);
    for (std::size_t i = 0; i < cpu_order_.size(); ++i) {
      if (!cpu_consumed_[i]) { // its thread has no ring
        aggregator_.consume_cpu_sample(*cpu_order_[i]);
      }
    }
    aggregator_.finish_pass();
  }

  // Taken before the rings are drained, so each sample's ring_head is within what they give.
  void take_cpu_samples() {
    aggregator_.set_cpu_figures(cpu::figures());
    cpu_samples_.clear();
    cpu::take(cpu_samples_);
    cpu_order_.clear();
    for (const cpu::Sample& sample : cpu_samples_) {
      cpu_order_.push_back(&sample);
    }
    // By ring, then in the order of its records: each ring's samples are one run.
    std::sort(cpu_order_.begin(), cpu_order_.end(), [](const auto* a, const auto* b) {
      return a->ring != b->ring ? std::less<>()(a->ring, b->ring) : a->ring_head < b->ring_head;
    });
    cpu_consumed_.assign(cpu_order_.size(), false);
  }

  // The samples taken on `slot`'s thread (marked consumed in cpu_consumed_).
  std::span<const cpu::Sample* const> samples_of(const ThreadSlot& slot) {
    const void* ring = &slot.ring;
    const auto before = [](const cpu::Sample* sample, const void* r) {
      return std::less<>()(sample->ring, r);
    };
    auto it = std::lower_bound(cpu_order_.begin(), cpu_order_.end(), ring, before);
    slot_samples_.clear();
    for (; it != cpu_order_.end() && (*it)->ring == ring; ++it) {
      if ((*it)->tid == slot.os_tid) { // not a thread whose ended ring's memory this one reuses
        slot_samples_.push_back(*it);
        cpu_consumed_[static_cast<std::size_t>(it - cpu_order_.begin())] = true;
      }
    }
    return slot_samples_;
  }

  void drain(ThreadSlot& slot, std::span<const cpu::Sample* const> samples) {
    Ring& ring = slot.ring;
    const std::uint64_t head = ring.head.load(std::memory_order_acquire);
    const std::uint64_t tail = ring.tail.load(std::memory_order_relaxed);
    if (head == tail) {
      if (!samples.empty()) {
        aggregator_.consume(slot.index, {}, tail, samples);
      }
      return;
    }
    // Copy out first (in at most two pieces around the wrap) so the producer gets the space
    // back at once and payload records that straddle the wrap arrive contiguous.
    scratch_.resize(head - tail);
    const std::uint64_t mask = ring.capacity - 1;
    const std::uint64_t first = std::min<std::uint64_t>(head - tail, ring.capacity - (tail & mask));
    std::memcpy(scratch_.data(), ring.slots + (tail & mask), first * sizeof(hotscope_record));
    std::memcpy(scratch_.data() + first, ring.slots,
                (head - tail - first) * sizeof(hotscope_record));
    if (head - tail <= ring.capacity / kSlowRingShare) {
      // Before the tail moves: until then the producer cannot write these slots again.
      release_pages(ring.slots + (tail & mask), first);
      release_pages(ring.slots, head - tail - first);
    }
    ring.tail.store(head, std::memory_order_release);
    // After the copy: a library unloaded before these records were written is counted by now,
    // so a library loaded at its address since gets names of its own.
    if (const std::uint64_t unloaded = objects_unloaded(); unloaded != objects_unloaded_) {
      objects_unloaded_ = unloaded;
      aggregator_.forget_addresses();
    }
    aggregator_.consume(slot.index, scratch_, tail, samples);
  }

  const Settings settings_;
  std::mutex state_mutex_; // guards the aggregator and the time base
  Aggregator aggregator_;
  std::uint64_t start_ticks_;
  std::uint64_t start_unix_ns_;
  std::string process_name_;
  std::vector<hotscope_record> scratch_;
  std::uint64_t objects_unloaded_ = objects_unloaded(); // as of the latest drain
  std::vector<ThreadSlot*> drained_slots_;              // drain_all's, kept for their capacity
  std::vector<ThreadSlot*> finished_slots_;             // drain_all's, kept for their capacity
  std::vector<cpu::Sample> cpu_samples_;                // a pass's, kept for their capacity
  std::vector<const cpu::Sample*> cpu_order_;           // by ring, then ring_head
  std::vector<bool> cpu_consumed_;                      // by cpu_order_'s index
  std::vector<const cpu::Sample*> slot_samples_;
  std::int64_t external_tracks_ = 0;

  std::mutex registry_mutex_; // guards slots_; taken once per thread by the thread itself
  std::vector<ThreadSlot*> slots_;
  std::uint64_t rings_registered_ = 0; // guarded by registry_mutex_
  pthread_key_t exit_key_{};
  // Handed out when not even a slot can be allocated: capacity 0, so every record is dropped.
  static thread_local Ring out_of_memory_ring_;
  std::atomic<bool> warned_ring_unmapped_{false};

  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> early_wakes_{0};
  bool paused_ = false; // guarded by state_mutex_: the periodic drain's, for tests
  std::thread thread_;
  std::atomic<bool> thread_runs_here_{true}; // false until start_wanted_thread() where wanted
  std::atomic<bool> thread_wanted_{false};   // not started yet: a forked child's, or deferred
  bool forked_child_ = false;
};

thread_local Ring Collector::out_of_memory_ring_;

Collector* collector = nullptr; // set once by start(), never destroyed (exit handlers use it)
std::once_flag started;

} // namespace

void start(const Settings& settings) {
  std::call_once(started, [&] {
    collector = new Collector(settings);
    pthread_atfork([] { collector->before_fork(); }, [] { collector->after_fork_in_parent(); },
                   [] { collector->after_fork_in_child(); });
  });
}

Ring* register_current_thread() noexcept {
  return collector->register_current_thread();
}

void collect_now() {
  collector->collect();
}
void start_collector_thread() noexcept {
  if (collector != nullptr) {
    collector->start_wanted_thread();
  }
}
void before_unload() noexcept {
  if (collector == nullptr) {
    return;
  }
  try {
    collector->collect();
  } catch (...) {
    // Out of memory: the records stay in their rings, and are named when drained if the
    // library is still mapped then.
  }
}
Snapshot snapshot(Contents contents) {
  Snapshot taken = collector->snapshot(contents);
  if (collector->settings().profiler_thread != nullptr) {
    add_program_threads(taken, collector->settings().profiler_thread);
  }
  read_os_thread_figures(taken.threads);
  name_interposed_locks(taken);
  return taken;
}
void reset() {
  collector->reset();
}
void stop() {
  collector->stop();
}
bool read_for_crash(CrashVisitor& visitor, std::uint64_t patience_ns) noexcept {
  return collector != nullptr && collector->read_for_crash(visitor, patience_ns);
}
void pause_collector_for_testing(bool paused) {
  collector->pause(paused);
}
std::uint64_t early_wakes() {
  return collector->early_wakes();
}
std::uint32_t add_external_track(std::string name) {
  return collector->add_external_track(std::move(name));
}
void consume_external(std::uint32_t track, std::span<const hotscope_record> records) {
  collector->consume_external(track, records);
}
void set_external_batches(std::uint32_t track, const BatchCounts& batches) {
  collector->set_external_batches(track, batches);
}
void close_external_track(std::uint32_t track) {
  collector->close_external_track(track);
}

} // namespace hotscope::trace

bool hotscope::detail::has_room_slow(Ring* ring, std::uint64_t head,
                                     std::uint64_t needed) noexcept {
  ring->cached_tail = ring->tail.load(std::memory_order_acquire);
  const std::uint64_t used = head - ring->cached_tail + ring->reserved_ends + needed;
  if (used > ring->capacity) {
    // A ring inherited across fork() may be full already, without passing its mark again.
    hotscope::trace::start_collector_thread();
    return false;
  }
  const std::uint64_t wake_mark = ring->capacity / 4;
  if (used <= wake_mark) {
    ring->fast_limit = wake_mark;
    return true;
  }
  // Past the mark: the fast check now runs up to the capacity, and the collector is woken.
  // Each later slow call (the ring looks full) wakes it again if it has not drained since.
  ring->fast_limit = ring->capacity;
  hotscope::trace::doorbell.ring();
  hotscope::trace::start_collector_thread();
  return true;
}
