#include "heap/interposer/recording.hpp"

#include "heap/interposer/interposer.hpp"
#include "heap/interposer/real_allocator.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <string>

namespace hotscope::heap::interposer {

std::atomic<int> phase{NotStarted};
bool sampling = false;
std::atomic<bool> sampling_fast{false};
std::atomic<bool> full_fast{false};
std::atomic<bool> library_loading{false};
bool loaded_for_attach() {
  static const bool requested = [] {
    const char* attach = getenv("HOTSCOPE_HEAP_ATTACH");
    return attach != nullptr && attach[0] == '1';
  }();
  return requested;
}
__thread Sampler thread_sampler;
SamplingPlan plan;
HOTSCOPE_LARGE_ZEROED SampledAddresses sampled_addresses;
Recorder* recorder_pointer = nullptr;

namespace {

alignas(Recorder) unsigned char recorder_storage[sizeof(Recorder)];

// The bootstrap arena's blocks, in the order they were handed out (see enable_sampling_fast).
constexpr unsigned max_arena_blocks = 64;
std::atomic<std::uintptr_t> arena_blocks[max_arena_blocks];
std::atomic<unsigned> arena_block_count{0};

// Called once, while the recorder is built (nothing is recorded yet), with the real functions
// known. free's short path sends a block to the hooks only when its bit in sampled_addresses is
// set, so the bootstrap arena's blocks, which must never reach the real free, are added there
// (and never removed: the hooks do not pass them on) before the short path is enabled. Both
// sides are sequentially consistent: a block noted too late to be added sees the short path
// enabled, or the enabling thread sees it noted; either turns the short path off for good.
void enable_sampling_fast() {
  const unsigned count = arena_block_count.load();
  if (count > max_arena_blocks) {
    return;
  }
  for (unsigned i = 0; i < count; ++i) {
    std::uintptr_t block = 0;
    while ((block = arena_blocks[i].load()) == 0) {
      sched_yield(); // noted, its address not stored yet
    }
    sampled_addresses.add(block);
  }
  sampling_fast.store(true);
  if (arena_block_count.load() != count) {
    sampling_fast.store(false);
  }
}

// Whether the fast paths were turned on, by whichever of start_recording and end_library_loading
// found both the recorder built and the library loaded (both store, then look: sequentially
// consistent, one of them sees the other's store).
std::atomic<bool> fast_paths_on{false};

void enable_fast_paths() {
  // The fast path calls the real functions without resolving them.
  if (real_state.load(std::memory_order_acquire) != Resolved || library_loading.load() ||
      phase.load() != Recording || fast_paths_on.exchange(true)) {
    return;
  }
  if (sampling) {
    enable_sampling_fast();
  } else {
    full_fast.store(true, std::memory_order_release);
  }
}

// The capture's one-time work (heap::prepare_capture) while this library loads, when what it
// allocates (the loader's records of libgcc_s, glibc's reading of /proc/self/maps) lands at the
// bottom of the heap. Done at the first sample instead, those blocks sat among the program's and
// changed where its heap grows and shrinks, by when that sample came: `git log -p` moved its
// heap's end 3,142 to 4,778 times, by the sampling period, against 3,751 natively (docs/heap.md).
__attribute__((constructor)) void prepare_capture_while_loading() {
  if (!resolve_real()) {
    return;
  }
  const Inside inside;
  if (const Recorder* recorder = recording_state()) {
    prepare_capture(recorder->options().unwinder, recorder->sampling());
  }
}

// Whether before_fork took the mutex: the phase may change between the handlers (a fork while
// another thread starts recording).
bool mutex_held_for_fork = false;

void before_fork() {
  if (phase.load(std::memory_order_acquire) == Recording) {
    recorder_pointer->mutex().lock();
    mutex_held_for_fork = true;
  }
}
void release_after_fork() {
  if (mutex_held_for_fork) {
    mutex_held_for_fork = false;
    recorder_pointer->mutex().unlock();
  }
}
void after_fork_in_parent() {
  release_after_fork();
}
// The child runs on unprofiled: its parent's report covers the blocks they share, and two
// processes must not write the same file. A start that another thread had under way never
// completes here.
void after_fork_in_child() {
  release_after_fork();
  if (phase.load(std::memory_order_acquire) != Off) {
    stop_recording();
  }
}

config::HeapMode default_mode() {
  return flavour.default_mode == HOTSCOPE_HEAP_SAMPLED ? config::HeapMode::Sampled
         : flavour.default_mode == HOTSCOPE_HEAP_FULL  ? config::HeapMode::Full
                                                       : config::HeapMode::Off;
}

std::atomic<hotscope_heap_allocation_observer> allocation_observer{nullptr};

// The full mode's blocks, for memory per function (hotscope_heap_observe_allocations).
void observe_allocation(std::size_t size) {
  if (const hotscope_heap_allocation_observer observer =
          allocation_observer.load(std::memory_order_acquire)) {
    observer(size);
  }
}

// ---- Each thread's event ring (the full mode) ----

__thread EventLog::Ring* thread_ring __attribute__((tls_model("initial-exec"))) = nullptr;
pthread_key_t ring_key;

// The calling thread's ring, opened on its first event and closed when the thread ends (the key's
// destructor). An event after that (glibc frees its per-thread buffers after the destructors)
// gets a ring of its own, closed again at once. nullptr without memory.
__thread bool thread_ended __attribute__((tls_model("initial-exec"))) = false;

// Which recorder the rings belong to: an attach after a detach builds a new one (its threads'
// rings of the old one are left behind, unclosed).
std::atomic<unsigned> recorder_generation{0};
__thread unsigned thread_ring_generation __attribute__((tls_model("initial-exec"))) = 0;

inline bool ring_is_current(const EventLog::Ring* ring) {
  return ring != nullptr &&
         thread_ring_generation == recorder_generation.load(std::memory_order_relaxed);
}

void close_thread_ring(void* ring) {
  if (thread_ring_generation == recorder_generation.load(std::memory_order_relaxed)) {
    recorder_pointer->close_ring(*static_cast<EventLog::Ring*>(ring));
  }
  thread_ring = nullptr;
  thread_ended = true;
}

__attribute__((noinline)) EventLog::Ring* open_thread_ring(Recorder& recorder) {
  static const bool keyed = [] { return pthread_key_create(&ring_key, close_thread_ring) == 0; }();
  EventLog::Ring* ring = recorder.open_ring();
  if (ring != nullptr && !thread_ended && keyed) {
    thread_ring = ring;
    thread_ring_generation = recorder_generation.load(std::memory_order_relaxed);
    pthread_setspecific(ring_key, ring); // closed when the thread ends
  }
  return ring;
}

enum class Stack { None, Captured }; // whether an event carries the calling thread's stack

// Appends a full-mode event to the calling thread's ring (or counts it, without memory for one).
inline void append_event(Recorder& recorder, HeapEvent::Kind kind, std::uintptr_t address,
                         std::uint64_t size = 0, Stack stack = Stack::None) {
  EventLog::Ring* ring = thread_ring;
  if (__builtin_expect(!ring_is_current(ring), 0) &&
      (ring = open_thread_ring(recorder)) == nullptr) {
    recorder.count_event_without_ring();
    return;
  }
  if (stack == Stack::Captured) {
    recorder.append_with_stack(*ring, kind, address, size);
  } else {
    recorder.append(*ring, kind, address, size);
  }
  if (__builtin_expect(ring != thread_ring, 0)) {
    recorder.close_ring(*ring); // the thread has ended
  }
}

// Set by start_attached_recording: until then a library loaded for an attach records nothing.
std::atomic<bool> attach_started{false};

} // namespace

__attribute__((noinline)) Recorder* start_recording() {
  if (loaded_for_attach() && !attach_started.load(std::memory_order_acquire)) {
    return nullptr;
  }
  int current = phase.load(std::memory_order_acquire);
  if (current == NotStarted && phase.compare_exchange_strong(current, Starting)) {
    config::ParsedHeap parsed =
        config::parse_heap([](const char* name) { return getenv(name); }, default_mode());
    for (const std::string& error : parsed.errors) {
      std::fprintf(stderr, "%s\n", error.c_str());
    }
    config::HeapOptions& options = parsed.options;
    if (options.mode == config::HeapMode::Off || preceded()) {
      phase.store(Off, std::memory_order_release);
      return nullptr;
    }
    // Relative to the directory the program started in, whatever it changes to later.
    if (options.out_dir.empty() || options.out_dir[0] != '/') {
      std::error_code error;
      const std::filesystem::path out_dir = std::filesystem::absolute(options.out_dir, error);
      if (!error) {
        options.out_dir = out_dir.string();
      }
    }
    auto* recorder = new (recorder_storage)
        Recorder(std::move(options), sampled_addresses,
                 own_and_allocator_code(reinterpret_cast<const void*>(&start_recording)));
    if (recorder->sampling()) {
      const config::HeapOptions& chosen = recorder->options();
      plan.mean_bytes = static_cast<double>(chosen.sample_bytes);
      plan.seed = chosen.seed_set
                      ? chosen.seed
                      : recorder->clock().start_ticks() ^ (std::uint64_t(getpid()) << 32);
      sampling = true;
    }
    pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
    recorder_pointer = recorder;
    phase.store(Recording);
    enable_fast_paths();
    return recorder;
  }
  // Another thread is building the recorder: it takes microseconds, once.
  while ((current = phase.load(std::memory_order_acquire)) == Starting) {
    sched_yield();
  }
  return current == Recording ? recorder_pointer : nullptr;
}

// Before this library's other constructors and its C++ runtime's (and those of
// libhotscope-run.so, hotscope_heap_own_object): a recorder built earlier (an allocation by the
// loader or another library) has its fast paths turned off until the end.
__attribute__((constructor(101))) void begin_library_loading() {
  library_loading.store(true);
  if (fast_paths_on.exchange(false)) {
    sampling_fast.store(false);
    full_fast.store(false);
  }
}

Recorder* start_attached_recording() {
  attach_started.store(true, std::memory_order_release);
  int current = phase.load(std::memory_order_acquire);
  if (current == Off) {
    // After a detach: a new recorder in the same storage (the old one's memory is left behind;
    // calls still inside it saw phase Off and touch it no more), the fast paths off until it is.
    fast_paths_on.store(false);
    sampling = false;
    recorder_generation.fetch_add(1, std::memory_order_relaxed);
    forget_remembered_stacks();
    phase.compare_exchange_strong(current, NotStarted);
  }
  Recorder* recorder = start_recording();
  if (recorder != nullptr) {
    prepare_capture(recorder->options().unwinder, recorder->sampling());
    start_collector();
  }
  return recorder;
}

void end_library_loading() {
  if (library_loading.exchange(false)) {
    enable_fast_paths();
  }
}

void stop_recording() {
  sampling_fast.store(false, std::memory_order_relaxed);
  full_fast.store(false, std::memory_order_relaxed);
  phase.store(Off, std::memory_order_release);
}

void note_arena_block(void* block) {
  const unsigned index = arena_block_count.fetch_add(1);
  if (index < max_arena_blocks) {
    arena_blocks[index].store(reinterpret_cast<std::uintptr_t>(block));
  }
  if (sampling_fast.load()) {
    sampling_fast.store(false);
  }
}

void set_allocation_observer(hotscope_heap_allocation_observer observer) {
  allocation_observer.store(observer, std::memory_order_release);
}

void record_alloc(void* pointer, std::size_t size) {
  Recorder* recorder = recording_state();
  if (recorder == nullptr) {
    return;
  }
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  if (sampling) {
    const StackId stack = recorder->current_stack();
    recorder->sampled_alloc(address, size, stack);
    start_signal_reporter_if_due();
    return;
  }
  append_event(*recorder, HeapEvent::Alloc, address, size, Stack::Captured);
  observe_allocation(size);
}

__attribute__((noinline)) void record_free(void* pointer) {
  const Inside inside;
  Recorder* recorder = recording_state();
  if (recorder == nullptr) {
    return;
  }
  if (sampling) {
    const std::lock_guard lock(recorder->mutex());
    recorder->forget_sampled(reinterpret_cast<std::uintptr_t>(pointer));
    return;
  }
  append_event(*recorder, HeapEvent::Free, reinterpret_cast<std::uintptr_t>(pointer));
}

void record_full_free(void* pointer) {
  append_event(*recorder_pointer, HeapEvent::Free, reinterpret_cast<std::uintptr_t>(pointer));
}

void record_realloc_begin(Recorder& recorder, void* old) {
  append_event(recorder, HeapEvent::ReallocBegin, reinterpret_cast<std::uintptr_t>(old));
}

void record_realloc_end(Recorder& recorder, void* pointer, std::size_t size) {
  // The stack is recorded if the old block is unknown.
  append_event(recorder, HeapEvent::ReallocEnd, reinterpret_cast<std::uintptr_t>(pointer), size,
               Stack::Captured);
  if (pointer != nullptr) {
    observe_allocation(size);
  }
}

} // namespace hotscope::heap::interposer
