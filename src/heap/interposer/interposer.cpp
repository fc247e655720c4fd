// The allocation interposer of both heap libraries (interposer.hpp): it interposes the C
// allocation functions, counts every block as valgrind DHAT does (or, in the sampled mode, a
// Poisson sample of them, scaled), writes $HOTSCOPE_OUT/heap.json and heap.pb.gz when the
// program ends, and builds the same profile on demand.
//
// Rules that keep it safe from the first allocation to the last:
// - Calls can arrive before this library's constructors ran (other libraries' constructors),
//   and dlsym(RTLD_NEXT) may itself allocate while the real functions are being looked up:
//   those requests are served from a static bootstrap arena, recognised by address later.
// - A thread inside the profiler (capturing a stack, updating tables, writing the report) has
//   `in_profiler` set: its allocations go straight to the real allocator, uncounted.
// - The state is built in static storage on first use and never destroyed, so it outlives every
//   static destructor; the report is written from this library's destructor, which runs after
//   the program's own destructors and atexit handlers.
// - Threads started from inside the profiler (libhotscope's collector and agent) are the
//   profiler's for their whole life: pthread_create is interposed to mark them.
#include "heap/interposer/interposer.hpp"

#include "atomic_file/atomic_file.hpp"
#include "export/export.hpp"
#include "heap/heap.hpp"
#include "signals/signals.hpp"
#include "symbols/symbols.hpp"
#include "threads/threads.hpp"

#include <dlfcn.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <mutex>
#include <new>
#include <optional>
#include <sstream>

namespace {

namespace heap = hotscope::heap;
using hotscope::heap::interposer::flavour;

// ---- The real allocator ----

struct RealAllocator {
  void* (*malloc)(std::size_t);
  void (*free)(void*);
  void* (*calloc)(std::size_t, std::size_t);
  void* (*realloc)(void*, std::size_t);
  void* (*memalign)(std::size_t, std::size_t);
  int (*pthread_create)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
};
RealAllocator real asm("hotscope_real");

enum : int { Unresolved, Resolving, Resolved };
std::atomic<int> real_state{Unresolved};

__thread int in_profiler __attribute__((tls_model("initial-exec"))) = 0;

struct Inside {
  Inside() { ++in_profiler; }
  ~Inside() { --in_profiler; }
  Inside(const Inside&) = delete;
  Inside& operator=(const Inside&) = delete;
};

// The bootstrap arena: bump allocation, never reused. Each block is preceded by its size.
constexpr std::size_t arena_size = 1 << 16;
alignas(4096) unsigned char arena[arena_size];
std::atomic<std::size_t> arena_used{0};
// Its blocks, in the order they were handed out (see enable_sampling_fast).
constexpr unsigned max_arena_blocks = 64;
std::atomic<std::uintptr_t> arena_blocks[max_arena_blocks];
std::atomic<unsigned> arena_block_count{0};
void note_arena_block(void* block);

bool in_arena(const void* pointer) {
  const auto* byte = static_cast<const unsigned char*>(pointer);
  return byte >= arena && byte < arena + arena_size;
}

void* arena_allocate(std::size_t size, std::size_t alignment) {
  alignment = std::max<std::size_t>(alignment, 16);
  std::size_t used = arena_used.load(std::memory_order_relaxed);
  for (;;) {
    const std::size_t start = (used + sizeof(std::size_t) + alignment - 1) & ~(alignment - 1);
    if (alignment > 4096 || start + size > arena_size || start + size < start) {
      return nullptr;
    }
    if (arena_used.compare_exchange_weak(used, start + size)) {
      std::memcpy(arena + start - sizeof(std::size_t), &size, sizeof(size));
      note_arena_block(arena + start);
      return arena + start;
    }
  }
}

std::size_t arena_block_size(const void* pointer) {
  std::size_t size = 0;
  std::memcpy(&size, static_cast<const unsigned char*>(pointer) - sizeof(size), sizeof(size));
  return size;
}

template <class F> void look_up(F& function, const char* name) {
  function = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

// This library's own code. The preload library carries a private, static copy of the C++
// runtime, whose start-up allocations (the exception emergency pool) must not count: a C program
// would not make them.
struct OwnCode {
  std::uintptr_t begin[8];
  std::uintptr_t end[8];
  int count;
};
OwnCode own_code;

int find_own_code(dl_phdr_info* info, std::size_t, void*) {
  const auto self = reinterpret_cast<std::uintptr_t>(&find_own_code);
  OwnCode found{};
  bool contains = false;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum && found.count < 8; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type == PT_LOAD && (header.p_flags & PF_X) != 0) {
      found.begin[found.count] = info->dlpi_addr + header.p_vaddr;
      found.end[found.count] = found.begin[found.count] + header.p_memsz;
      contains = contains || (self >= found.begin[found.count] && self < found.end[found.count]);
      ++found.count;
    }
  }
  if (contains) {
    own_code = found;
  }
  return contains ? 1 : 0;
}

// True when the hook was called from this library's own code (outside any Inside section).
inline bool called_by_self(const void* return_address) {
  const auto address = reinterpret_cast<std::uintptr_t>(return_address);
  for (int i = 0; i < own_code.count; ++i) {
    if (address >= own_code.begin[i] && address < own_code.end[i]) {
      return true;
    }
  }
  return false;
}

// Calls the profiler must not count: its own, made inside it or from its own code.
inline bool untracked(const void* caller) {
  return in_profiler != 0 || called_by_self(caller);
}

// True once the real functions are known. False while they are being looked up: the caller is
// then dlsym itself (or a thread racing with it at start-up) and uses the arena.
__attribute__((noinline)) bool resolve_real_slow() {
  int expected = Unresolved;
  if (!real_state.compare_exchange_strong(expected, Resolving)) {
    return false;
  }
  const Inside inside;
  look_up(real.malloc, "malloc");
  look_up(real.free, "free");
  look_up(real.calloc, "calloc");
  look_up(real.realloc, "realloc");
  look_up(real.memalign, "memalign");
  look_up(real.pthread_create, "pthread_create");
  dl_iterate_phdr(find_own_code, nullptr);
  real_state.store(Resolved, std::memory_order_release);
  return true;
}

inline bool resolve_real() {
  return __builtin_expect(real_state.load(std::memory_order_acquire) == Resolved, 1) ||
         resolve_real_slow();
}

// ---- The profiler's state ----

struct State {
  std::timed_mutex mutex;
  heap::Engine engine;         // full mode, fed through `events`
  heap::EventLog events;       // full mode: drained by whoever holds `mutex`
  heap::SampledEngine sampled; // sampled mode
  heap::Options options;
  heap::CodeRanges skip;
  bool tsc = false;                          // timestamps from the TSC, else CLOCK_MONOTONIC in ns
  std::uint64_t start_ticks = 0;             // in the timestamp unit
  std::uint64_t start_ns = 0;                // CLOCK_MONOTONIC at the same moment
  alignas(64) std::uint64_t latest_time = 0; // guarded by `mutex`; apart from what hooks read
};

enum : int { NotStarted, Starting, Recording, Off };
std::atomic<int> phase{NotStarted};
bool sampling = false; // set before phase becomes Recording, then constant
// True while phase is Recording in the sampled mode, with the real functions known: malloc and
// free then take the fast path (one flag, the countdown or the address counters, the real call).
std::atomic<bool> sampling_fast asm("hotscope_sampling_fast"){false};
// The same for the full mode: its hooks go straight to recording an event.
std::atomic<bool> full_fast{false};
__thread heap::Sampler thread_sampler asm("hotscope_thread_sampler")
    __attribute__((tls_model("initial-exec")));
// The sampled mode's; outside State, so the fast path reaches them without a pointer load.
heap::SamplingPlan plan;
heap::SampledAddresses
    sampled_addresses asm("hotscope_sampled_addresses"); // frees that need the lock
alignas(State) unsigned char state_storage[sizeof(State)];
State* state_pointer = nullptr;

// free's short path sends a block to the hooks only when its bit in sampled_addresses is set, so
// the bootstrap arena's blocks, which must never reach the real free, are added there (and
// never removed: the hooks do not pass them on) before the short path is enabled. Both sides
// are sequentially consistent: a block noted too late to be added sees the short path enabled,
// or the enabling thread sees it noted; either turns the short path off for good.
void note_arena_block(void* block) {
  const unsigned index = arena_block_count.fetch_add(1);
  if (index < max_arena_blocks) {
    arena_blocks[index].store(reinterpret_cast<std::uintptr_t>(block));
  }
  if (sampling_fast.load()) {
    sampling_fast.store(false);
  }
}

// Called once, while the state is built (nothing is recorded yet), with the real functions known.
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

std::uint64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(now.tv_nsec);
}

// Timestamps on every allocation and free: one instruction where the TSC runs at a constant rate
// in every power state (CPUID says "invariant"), else the system clock.
bool invariant_tsc() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx) != 0 && (edx & (1u << 8)) != 0;
#else
  return false;
#endif
}

std::uint64_t raw_ticks(const State& state) {
#if defined(__x86_64__)
  if (state.tsc) {
    return __rdtsc();
  }
#endif
  return monotonic_ns();
}

// The time of raw `ticks`, with the mutex held. Another core's TSC may lag a little, and events
// are applied after they happened: time never goes back.
std::uint64_t time_of(State& state, std::uint64_t ticks) {
  const std::uint64_t time = ticks > state.start_ticks ? ticks - state.start_ticks : 0;
  state.latest_time = std::max(state.latest_time, time);
  return state.latest_time;
}

std::uint64_t now(State& state) {
  return time_of(state, raw_ticks(state));
}

// µs per timestamp unit, measured against CLOCK_MONOTONIC over the whole run so far.
double microseconds_per_unit(const State& state, std::uint64_t end_time) {
  if (!state.tsc) {
    return 1e-3;
  }
  const double elapsed_us = static_cast<double>(monotonic_ns() - state.start_ns) / 1e3;
  return end_time == 0 ? 0.0 : elapsed_us / static_cast<double>(end_time);
}

// Whether before_fork took the mutex: the phase may change between the handlers (a fork while
// another thread starts recording).
bool mutex_held_for_fork = false;

void before_fork() {
  if (phase.load(std::memory_order_acquire) == Recording) {
    state_pointer->mutex.lock();
    mutex_held_for_fork = true;
  }
}
void release_after_fork() {
  if (mutex_held_for_fork) {
    mutex_held_for_fork = false;
    state_pointer->mutex.unlock();
  }
}
void after_fork_in_parent() {
  release_after_fork();
}
// From here on every call passes through.
void stop_recording() {
  sampling_fast.store(false, std::memory_order_relaxed);
  full_fast.store(false, std::memory_order_relaxed);
  phase.store(Off, std::memory_order_release);
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

void print_error(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
}

// Builds the state on first use. Called inside the profiler. Returns nullptr when profiling is
// off (after the report was written, or in a forked child).
__attribute__((noinline)) State* start_recording() {
  int current = phase.load(std::memory_order_acquire);
  if (current == NotStarted && phase.compare_exchange_strong(current, Starting)) {
    auto* state = new (state_storage) State;
    state->tsc = invariant_tsc();
    state->start_ns = monotonic_ns();
    state->start_ticks = raw_ticks(*state);
    heap::ParsedOptions parsed =
        heap::parse_options([](const char* name) { return getenv(name); },
                            flavour.default_mode == HOTSCOPE_HEAP_SAMPLED ? heap::Mode::Sampled
                            : flavour.default_mode == HOTSCOPE_HEAP_FULL  ? heap::Mode::Full
                                                                          : heap::Mode::Off);
    for (const std::string& error : parsed.errors) {
      print_error(error);
    }
    state->options = std::move(parsed.options);
    if (state->options.mode == heap::Mode::Off || hotscope::heap::interposer::preceded()) {
      state_pointer = state;
      phase.store(Off, std::memory_order_release);
      return nullptr;
    }
    // Relative to the directory the program started in, whatever it changes to later.
    std::error_code error;
    const std::filesystem::path out_dir = std::filesystem::absolute(state->options.out_dir, error);
    if (!error) {
      state->options.out_dir = out_dir.string();
    }
    if (state->options.mode == heap::Mode::Sampled) {
      const double mean = static_cast<double>(state->options.sample_bytes);
      plan.mean_bytes = mean;
      plan.seed = state->options.seed_set ? state->options.seed
                                          : state->start_ticks ^ (std::uint64_t(getpid()) << 32);
      state->sampled = heap::SampledEngine(mean);
      sampling = true;
    }
    state->skip = heap::own_and_allocator_code(reinterpret_cast<const void*>(&start_recording));
    pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
    state_pointer = state;
    // The fast path calls the real functions without resolving them.
    if (real_state.load(std::memory_order_acquire) == Resolved) {
      if (sampling) {
        enable_sampling_fast();
      } else {
        full_fast.store(true, std::memory_order_release);
      }
    }
    phase.store(Recording, std::memory_order_release);
    return state;
  }
  // Another thread is building the state: it takes microseconds, once.
  while ((current = phase.load(std::memory_order_acquire)) == Starting) {
    sched_yield();
  }
  return current == Recording ? state_pointer : nullptr;
}

// The state while recording, else as start_recording().
inline State* recording_state() {
  return __builtin_expect(phase.load(std::memory_order_acquire) == Recording, 1)
             ? state_pointer
             : start_recording();
}

// ---- Which calls are recorded ----

// True when an allocation of `size` is not to be recorded: profiling is off, or in the sampled
// mode it falls between sample points. That case is the sampled mode's fast path: one
// thread-local subtraction, no lock, no stack.
// The first calls (before the state exists) start profiling, so the mode is known.
__attribute__((noinline)) bool skipped_before_recording(std::size_t size) {
  {
    const Inside inside;
    if (recording_state() == nullptr) {
      return true;
    }
  }
  return sampling && !thread_sampler.sample(size, plan);
}

inline bool skipped(std::size_t size) {
  const int current = phase.load(std::memory_order_acquire);
  if (__builtin_expect(current != Recording, 0)) {
    return current == Off || skipped_before_recording(size);
  }
  return sampling && !thread_sampler.sample(size, plan);
}

// True when an allocation is passed on unrecorded. Off (a linked program's default) is checked
// first: then nothing else is.
inline bool passed_on(const void* caller, std::size_t size) {
  return phase.load(std::memory_order_acquire) == Off || untracked(caller) || skipped(size);
}

// True when a free of `pointer` must be looked at under the lock: always in the full mode; in
// the sampled mode only when it may be a live sampled block.
inline bool free_recorded(const void* pointer) {
  const int current = phase.load(std::memory_order_acquire);
  if (current == Off || !sampling) {
    return current != Off;
  }
  return sampled_addresses.may_contain(reinterpret_cast<std::uintptr_t>(pointer));
}

// ---- Recording (always called inside the profiler) ----

std::atomic<hotscope_heap_allocation_observer> allocation_observer{nullptr};

// The full mode's blocks, for memory per function (hotscope_heap_observe_allocations).
void observe_allocation(std::size_t size) {
  if (const hotscope_heap_allocation_observer observer =
          allocation_observer.load(std::memory_order_acquire)) {
    observer(size);
  }
}

// ---- The full mode's events ----

// Applies the full mode's events whose turn has come to the engine, with the mutex held. With
// `wait_ns`, waits that long at most for an event whose thread is between taking its number and
// making it visible (a profile on demand, the report at exit).
std::size_t drain_events(State& state, std::uint64_t wait_ns = 0) {
  return state.events.drain(
      [&state](const heap::HeapEvent& event, std::uintptr_t source) {
        const std::uint64_t time = time_of(state, event.time);
        switch (event.kind) {
        case heap::HeapEvent::Alloc:
          state.engine.alloc(event.address, event.size, event.stack, time);
          break;
        case heap::HeapEvent::Free:
          state.engine.free(event.address, time);
          break;
        case heap::HeapEvent::ReallocBegin:
          state.engine.realloc_begin(source, event.address);
          break;
        case heap::HeapEvent::ReallocEnd:
          state.engine.realloc_end(source, event.address, event.size, event.stack, time);
          break;
        }
      },
      wait_ns, [&state](const heap::HeapEvent& event) { state.engine.prefetch(event.address); });
}

// Events that could not be recorded: no memory for the thread's ring.
std::atomic<std::uint64_t> events_without_ring{0};

__thread heap::EventLog::Ring* thread_ring __attribute__((tls_model("initial-exec"))) = nullptr;
pthread_key_t ring_key;

// How long a drain waits for an event numbered before it but not visible yet (its thread is
// a few instructions from making it so, unless it was preempted, stopped or left that window by
// a signal handler's longjmp): beyond it the event is given up on and counted. Profiles and
// reports wait this long at once; the collector and a thread with a full ring after this long
// without progress. A second: on an overloaded machine a thread preempted in that window can
// wait for a core longer than 100 ms, and giving up its event would lose a real allocation.
constexpr std::uint64_t event_wait_ns = 1'000'000'000;

// The calling thread's ring, opened on its first event and closed when the thread ends (the key's
// destructor). An event after that (glibc frees its per-thread buffers after the destructors)
// gets a ring of its own, closed again at once. nullptr without memory.
__thread bool thread_ended __attribute__((tls_model("initial-exec"))) = false;

void close_thread_ring(void* ring) {
  state_pointer->events.close_ring(*static_cast<heap::EventLog::Ring*>(ring));
  thread_ring = nullptr;
  thread_ended = true;
}

__attribute__((noinline)) heap::EventLog::Ring* open_thread_ring(State& state) {
  static const bool keyed = [] { return pthread_key_create(&ring_key, close_thread_ring) == 0; }();
  heap::EventLog::Ring* ring = state.events.open_ring();
  if (ring != nullptr && !thread_ended && keyed) {
    thread_ring = ring;
    pthread_setspecific(ring_key, ring); // closed when the thread ends
  }
  return ring;
}

// The calling thread's ring is full: drains the rings here, unless another thread holds the mutex
// (then that one drains, or will). After event_wait_ns without room, a number that is never made
// visible is given up on.
__attribute__((noinline)) void make_room(State& state, std::uint64_t& waiting_since_ns) {
  const std::uint64_t now_ns = monotonic_ns();
  if (waiting_since_ns == 0) {
    waiting_since_ns = now_ns;
  }
  if (state.mutex.try_lock()) {
    drain_events(state, now_ns - waiting_since_ns >= event_wait_ns ? event_wait_ns : 0);
    state.mutex.unlock();
  } else {
    sched_yield();
  }
}

// Appends a full-mode event to the calling thread's ring (or counts it, without memory for one).
inline void append_event(State& state, heap::HeapEvent::Kind kind, std::uintptr_t address,
                         std::uint64_t size = 0, heap::StackId stack = 0) {
  heap::EventLog::Ring* ring = thread_ring;
  if (__builtin_expect(ring == nullptr, 0) && (ring = open_thread_ring(state)) == nullptr) {
    events_without_ring.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::uint64_t waiting_since_ns = 0;
  heap::HeapEvent& event = state.events.reserve(*ring, [&] { make_room(state, waiting_since_ns); });
  event.kind = kind;
  event.time = raw_ticks(state);
  event.address = address;
  event.size = size;
  event.stack = stack;
  state.events.commit(*ring);
  if (__builtin_expect(ring != thread_ring, 0)) {
    state.events.close_ring(*ring); // the thread has ended
  }
}

// The calling thread's stack above the hooks, interned: its id is kept with the thread's cached
// copy of the stack, so only a stack seen for the first time on this thread takes the mutex.
template <class Engine> heap::StackId current_stack(State& state, Engine& engine) {
  std::uintptr_t frames[256];
  heap::StackId* remembered = nullptr;
  const std::size_t depth = heap::capture_stack(state.options.unwinder, state.skip,
                                                {frames, state.options.depth}, &remembered);
  if (remembered != nullptr && *remembered != heap::unknown_stack) {
    return *remembered;
  }
  // Never unwind while holding the mutex: the unwinder takes the loader's lock, and a thread
  // holding that lock may be waiting in malloc for this mutex.
  const std::lock_guard lock(state.mutex);
  const heap::StackId id = engine.intern({frames, depth});
  if (remembered != nullptr) {
    *remembered = id;
  }
  return id;
}

void record_alloc(void* pointer, std::size_t size) {
  State* state = recording_state();
  if (state == nullptr) {
    return;
  }
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  if (sampling) {
    const heap::StackId stack = current_stack(*state, state->sampled);
    const std::lock_guard lock(state->mutex);
    state->sampled.alloc(address, size, stack, now(*state));
    sampled_addresses.add(address);
    return;
  }
  append_event(*state, heap::HeapEvent::Alloc, address, size, current_stack(*state, state->engine));
  observe_allocation(size);
}

// The sampled mode's, with the mutex held.
void forget_sampled(State& state, std::uintptr_t address) {
  if (state.sampled.free(address, now(state))) {
    sampled_addresses.remove(address);
  }
}

// Records the free before the real allocator may hand the address out again. Out of line: the
// free hook's common path stays small.
__attribute__((noinline)) void record_free(void* pointer) {
  const Inside inside;
  State* state = recording_state();
  if (state == nullptr) {
    return;
  }
  if (sampling) {
    const std::lock_guard lock(state->mutex);
    forget_sampled(*state, reinterpret_cast<std::uintptr_t>(pointer));
    return;
  }
  append_event(*state, heap::HeapEvent::Free, reinterpret_cast<std::uintptr_t>(pointer));
}

// The sampled mode's realloc: the old block is freed (under the lock only if it may have been
// sampled) and the new one is a new allocation, sampled or not on its own.
void* reallocate_sampled(void* old, std::size_t size) {
  void* pointer = nullptr;
  if (free_recorded(old)) {
    const Inside inside;
    State& state = *state_pointer;
    // Held across the real call: the old address may be handed out again as soon as it returns.
    const std::lock_guard lock(state.mutex);
    pointer = real.realloc(old, size);
    if (pointer != nullptr || size == 0) {
      forget_sampled(state, reinterpret_cast<std::uintptr_t>(old));
    }
  } else {
    pointer = real.realloc(old, size);
  }
  if (pointer != nullptr && !skipped(size)) {
    const Inside inside;
    record_alloc(pointer, size);
  }
  return pointer;
}

// ---- The hooks' bodies ----

// Out of line, so that what every call runs stays small enough to be inlined into the hook.
__attribute__((noinline)) void* allocate_recorded(std::size_t size) {
  const Inside inside;
  void* pointer = real.malloc(size);
  if (pointer != nullptr) {
    record_alloc(pointer, size);
  }
  return pointer;
}

// A sample point, or any allocation in the full mode (recording, the real functions known):
// recorded unless the call is the profiler's own.
__attribute__((noinline)) void* allocate_unless_own(std::size_t size, const void* caller) {
  return untracked(caller) ? real.malloc(size) : allocate_recorded(size);
}

// Every mode but the sampled mode's fast path.
__attribute__((noinline)) void* allocate_unsampled(std::size_t size, const void* caller) {
  if (!resolve_real()) {
    return arena_allocate(size, 16);
  }
  if (passed_on(caller, size)) {
    return real.malloc(size);
  }
  return allocate_recorded(size);
}

// malloc's body (on x86-64 behind its assembly short path) and operator new's: the common cases
// inline, the rest out of line.
inline void* allocate(std::size_t size, const void* caller) {
  // The sampled mode's common case first: the countdown, then (only at a sample point) whether
  // the call is the profiler's own. Counting the profiler's bytes too leaves the sample points
  // on the program's bytes a Poisson process of the same mean.
  if (__builtin_expect(sampling_fast.load(std::memory_order_acquire), 1)) {
    if (__builtin_expect(!thread_sampler.sample(size, plan), 1)) {
      return real.malloc(size);
    }
    return allocate_unless_own(size, caller);
  }
  if (__builtin_expect(full_fast.load(std::memory_order_acquire), 1)) {
    return allocate_unless_own(size, caller);
  }
  return allocate_unsampled(size, caller);
}

void* allocate_aligned(std::size_t alignment, std::size_t size, const void* caller) {
  if (!resolve_real()) {
    return arena_allocate(size, alignment);
  }
  if (passed_on(caller, size)) {
    return real.memalign(alignment, size);
  }
  const Inside inside;
  void* pointer = real.memalign(alignment, size);
  if (pointer != nullptr) {
    record_alloc(pointer, size);
  }
  return pointer;
}

void* reallocate(void* old, std::size_t size, const void* caller) {
  if (old == nullptr) {
    return allocate(size, caller);
  }
  if (in_arena(old)) {
    // Only the profiler's own start-up requests live there: move the block out, uncounted.
    const Inside inside;
    void* moved = resolve_real() ? real.malloc(size) : arena_allocate(size, 16);
    if (moved != nullptr) {
      std::memcpy(moved, old, std::min(size, arena_block_size(old)));
    }
    return moved;
  }
  if (!resolve_real()) {
    return nullptr;
  }
  if (untracked(caller)) {
    return real.realloc(old, size);
  }
  if (phase.load(std::memory_order_acquire) != Recording) {
    const Inside inside;
    recording_state(); // the mode is known from here on
  }
  if (phase.load(std::memory_order_acquire) == Recording && sampling) {
    return reallocate_sampled(old, size);
  }
  const Inside inside;
  State* state = recording_state();
  if (state == nullptr) {
    return real.realloc(old, size);
  }
  // Numbered before the real call (which may give the old address to another thread at once)
  // and after it (which may hand out an address another thread just freed).
  append_event(*state, heap::HeapEvent::ReallocBegin, reinterpret_cast<std::uintptr_t>(old));
  void* pointer = real.realloc(old, size);
  // The stack is recorded if the old block is unknown.
  append_event(*state, heap::HeapEvent::ReallocEnd, reinterpret_cast<std::uintptr_t>(pointer), size,
               current_stack(*state, state->engine));
  if (pointer != nullptr) {
    observe_allocation(size);
  }
  return pointer;
}

// The free hook's bodies: the full mode while recording, and every other case.
__attribute__((noinline)) void release_full(void* pointer, const void* caller) {
  if (in_arena(pointer)) {
    return; // the profiler's own start-up blocks: never the real allocator's
  }
  if (pointer != nullptr && !untracked(caller)) {
    const Inside inside;
    append_event(*state_pointer, heap::HeapEvent::Free, reinterpret_cast<std::uintptr_t>(pointer));
  }
  real.free(pointer);
}

__attribute__((noinline)) void release_unsampled(void* pointer, const void* caller);

// free's body (on x86-64 behind its assembly short path) and operator delete's.
inline void release_block(void* pointer, const void* caller) {
  // The sampled mode's common case first: a block whose bit is clear was not sampled, whoever
  // frees it (free(nullptr) included), and is not the arena's.
  if (__builtin_expect(sampling_fast.load(std::memory_order_acquire), 1) &&
      !sampled_addresses.may_contain(reinterpret_cast<std::uintptr_t>(pointer))) {
    real.free(pointer);
    return;
  }
  if (__builtin_expect(full_fast.load(std::memory_order_acquire), 1)) {
    release_full(pointer, caller);
    return;
  }
  release_unsampled(pointer, caller);
}

void release_unsampled(void* pointer, const void* caller) {
  if (pointer == nullptr || in_arena(pointer) || !resolve_real()) {
    return;
  }
  // Off first, as in passed_on; free_recorded only outside the profiler (which may be building
  // the state this very moment).
  if (phase.load(std::memory_order_acquire) != Off && !untracked(caller) &&
      free_recorded(pointer)) {
    record_free(pointer);
  }
  real.free(pointer);
}

// ---- Threads the profiler starts ----

struct Launch {
  void* (*start)(void*);
  void* argument;
};

// A thread started from inside the profiler stays inside it: nothing it allocates or frees is
// recorded, from its first allocation (libmicrohttpd's connections) to its last.
void* run_profiler_thread(void* pointer) {
  ++in_profiler;
  const Launch launch = *static_cast<Launch*>(pointer);
  real.free(pointer);
  return launch.start(launch.argument);
}

// ---- Profiles: at exit, and on demand ----

std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string command;
  std::string argument;
  while (std::getline(in, argument, '\0')) {
    command += (command.empty() ? "" : " ") + argument;
  }
  return command;
}

// heap.json (or heap.pb.gz, by `extension`) for the profiled program; a process it starts
// (exec) under the same preload writes heap.<pid>.json beside it. `hotscope run` names the
// program's pid in HOTSCOPE_HEAP_PID.
std::filesystem::path report_path(const heap::Options& options, const std::string& extension) {
  const char* profiled = getenv("HOTSCOPE_HEAP_PID");
  const std::string pid = std::to_string(getpid());
  const std::string name =
      profiled == nullptr || pid == profiled ? "heap" + extension : "heap." + pid + extension;
  return std::filesystem::path(options.out_dir) / name;
}

// Writes one file whole or not at all (an earlier profile stays intact); "" or one line naming
// the path and the reason.
std::string write_file(const std::filesystem::path& path, const std::string& bytes) {
  const std::string reason = hotscope::atomic_file::write_creating_directory(path.string(), bytes);
  return reason.empty()
             ? ""
             : "hotscope: cannot write the heap profile " + path.string() + ": " + reason;
}

// A profile's raw figures (times in µs), with what the report at exit also says.
struct Taken {
  heap::RawProfile raw;
  std::uint64_t sampled_allocations = 0;
  std::uint64_t lost_events = 0; // given up on, or without a ring to go to
};

// The raw figures now, the events drained first, under the lock only while they are copied.
// With `stop` (at exit), recording ends with the copy; then the lock is waited for a second at
// most: a signal handler may have called exit() on a thread that holds it.
std::optional<Taken> take_raw(State& state, bool stop) {
  std::unique_lock lock(state.mutex, std::defer_lock);
  if (!stop) {
    lock.lock();
  } else if (!lock.try_lock_for(std::chrono::seconds(1))) {
    stop_recording();
    return std::nullopt;
  }
  Taken taken;
  taken.sampled_allocations = state.sampled.sampled_allocations();
  drain_events(state, event_wait_ns);
  taken.lost_events = state.events.lost() + events_without_ring.load(std::memory_order_relaxed);
  const std::uint64_t end_time = now(state);
  taken.raw = sampling ? state.sampled.snapshot(end_time) : state.engine.snapshot(end_time);
  if (stop) {
    stop_recording();
  }
  const double microseconds = microseconds_per_unit(state, end_time);
  lock.unlock();
  taken.raw = heap::in_microseconds(std::move(taken.raw), microseconds);
  // Sites whose blocks all ended before a reset have nothing left in this window.
  std::erase_if(taken.raw.sites,
                [](const heap::RawSite& site) { return site.counts.total_blocks == 0; });
  return taken;
}

std::int64_t pprof_period(const State& state) {
  return sampling ? static_cast<std::int64_t>(state.options.sample_bytes) : std::int64_t{1};
}

// heap.pb.gz's bytes, from libhotscope-pprof.so in this library's directory (pprof_module.cpp
// says why it is separate). "" or the reason it could not.
std::string pprof_bytes(const hotscope::HeapProfile& profile, std::int64_t period,
                        std::string& out) {
  Dl_info self{};
  dladdr(reinterpret_cast<const void*>(&pprof_bytes), &self);
  const std::filesystem::path module =
      std::filesystem::path(self.dli_fname == nullptr ? "" : self.dli_fname).parent_path() /
      "libhotscope-pprof.so";
  void* handle = dlopen(module.c_str(), RTLD_NOW | RTLD_LOCAL);
  using Sink = void (*)(void*, const char*, std::size_t);
  using Writer = void (*)(const hotscope::HeapProfile*, std::int64_t, Sink, void*);
  const auto writer =
      handle == nullptr ? nullptr : reinterpret_cast<Writer>(dlsym(handle, "hotscope_pprof_heap"));
  if (writer == nullptr) {
    const char* reason = dlerror();
    return reason == nullptr ? "no pprof writer in " + module.string() : reason;
  }
  writer(
      &profile, period,
      [](void* text, const char* data, std::size_t size) {
        static_cast<std::string*>(text)->append(data, size);
      },
      &out);
  return "";
}

// The profile of `raw`, symbolized by one symbolizer kept for the process's life: repeated
// profiles resolve each address once. Its cache holds one entry per distinct return address of
// the interned stacks, which are never forgotten, so it grows no further than they do; after a
// dlopen or dlclose it forgets what they may have changed (build_profile). Its own mutex serializes
// profiles (agent threads, the library calls, the report at exit); the heap lock is never held with
// it. Called inside the profiler, which made the symbolizer and never destroys it (used by the
// report at exit).
std::mutex symbolizer_mutex;
// Profiles waiting for symbolizer_mutex: the collector, symbolizing ahead, gives way to them
// after the stack it is on, so a profile (the report at exit) never waits for a batch.
std::atomic<int> profiles_waiting{0};
// Set while this thread waits for or holds symbolizer_mutex for a profile: a signal handler that
// calls exit() there must not wait for the lock its own thread holds (write_report).
__thread bool building_profile __attribute__((tls_model("initial-exec"))) = false;

hotscope::symbols::Symbolizer& kept_symbolizer() {
  static auto* const symbolizer = new hotscope::symbols::Symbolizer;
  return *symbolizer;
}

// What a profile's symbolization took: the code addresses it resolved itself (the others were
// resolved ahead, or by an earlier profile), and the time it took to build.
struct Symbolized {
  std::size_t addresses = 0;
  std::size_t ahead = 0;
  double seconds = 0;
};

hotscope::HeapProfile profile_of(const heap::RawProfile& raw, Symbolized* symbolized = nullptr) {
  // Set before the lock is taken and cleared after it is released, so that no instant of holding
  // it goes unmarked for a signal handler that calls exit().
  building_profile = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  struct Done {
    ~Done() {
      std::atomic_signal_fence(std::memory_order_seq_cst);
      building_profile = false;
    }
  } done;
  profiles_waiting.fetch_add(1, std::memory_order_relaxed);
  const std::lock_guard lock(symbolizer_mutex);
  profiles_waiting.fetch_sub(1, std::memory_order_relaxed);
  hotscope::symbols::Symbolizer& symbolizer = kept_symbolizer();
  const std::uint64_t start_ns = monotonic_ns();
  symbolizer.refresh(); // before counting: it may forget addresses
  const std::size_t cached = symbolizer.cached();
  hotscope::HeapProfile profile = heap::build_profile(raw, command_line(), getpid(), symbolizer);
  if (symbolized != nullptr) {
    *symbolized = {symbolizer.cached() - cached, cached,
                   static_cast<double>(monotonic_ns() - start_ns) / 1e9};
  }
  return profile;
}

// The full mode's collector resolves new stacks as they appear, beside the program: the report
// at exit then finds most of its frames resolved (the first look into an object's debug
// information, which may be compressed, is the slow part).
void symbolize_ahead(const std::vector<std::vector<std::uintptr_t>>& stacks) {
  const std::lock_guard lock(symbolizer_mutex);
  if (phase.load(std::memory_order_acquire) != Recording) {
    return; // the report was written: other libraries' destructors may be running
  }
  hotscope::symbols::Symbolizer& symbolizer = kept_symbolizer();
  symbolizer.refresh();
  for (const std::vector<std::uintptr_t>& stack : stacks) {
    if (profiles_waiting.load(std::memory_order_relaxed) > 0) {
      return; // the rest is resolved by the profile, or on the collector's next round
    }
    heap::symbolize_ahead(stack, symbolizer);
  }
}

// ---- The full mode's collector ----

// Resolves the stacks interned since the first `done` of them were, outside the heap lock.
void symbolize_new_stacks(State& state, std::size_t& done) {
  std::vector<std::vector<std::uintptr_t>> stacks;
  {
    const std::lock_guard lock(state.mutex);
    for (; done < state.engine.stack_count(); ++done) {
      const auto stack = state.engine.stack(static_cast<heap::StackId>(done));
      stacks.emplace_back(stack.begin(), stack.end());
    }
  }
  if (!stacks.empty()) {
    symbolize_ahead(stacks);
  }
}

// Drains the full mode's events on a thread of its own, so that where a core is free the
// accounting runs beside the program instead of on its threads (which drain their own rings
// only when they find them full and the mutex free). It drains in batches, once a ring is a
// quarter full or 10 ms after it last drained: handing events over one by one would move a
// cache line between the two cores for each. It looks again sooner while it finds a ring a quarter
// full (down to every 20 µs), later while it finds them all less than a sixteenth full (up to
// every 10 ms): a program allocating steadily wakes it about once per quarter ring, not 50,000
// times a second. It ends with recording.
void* collect_events(void* pointer) {
  State& state = *static_cast<State*>(pointer);
  prctl(PR_SET_TIMERSLACK, 1000); // 1 µs: sleeps of 20 µs, not of the default slack's 50 µs
  constexpr std::uint64_t busy_pause_ns = 20'000;
  constexpr std::uint64_t idle_pause_ns = 10'000'000;
  std::uint64_t pause_ns = busy_pause_ns;
  std::uint64_t last_drain_ns = monotonic_ns();
  std::uint64_t last_progress_ns = last_drain_ns;
  std::uint64_t last_symbolized_ns = 0;
  std::size_t symbolized_stacks = 0;
  while (phase.load(std::memory_order_acquire) == Recording) {
    const heap::EventLog::Backlog backlog = state.events.backlog();
    const std::uint64_t now_ns = monotonic_ns();
    if (backlog.largest >= heap::EventLog::ring_capacity / 4 ||
        (backlog.total > 0 && now_ns - last_drain_ns >= idle_pause_ns)) {
      // Stuck for event_wait_ns at a number never made visible: give it up.
      const bool stuck = now_ns - last_progress_ns >= event_wait_ns;
      const std::lock_guard lock(state.mutex);
      if (drain_events(state, stuck ? event_wait_ns : 0) > 0 || stuck) {
        last_progress_ns = now_ns;
      }
      last_drain_ns = now_ns;
    }
    if (now_ns - last_symbolized_ns >= idle_pause_ns) {
      symbolize_new_stacks(state, symbolized_stacks);
      last_symbolized_ns = now_ns;
    }
    if (backlog.largest >= heap::EventLog::ring_capacity / 4) {
      pause_ns = std::max(pause_ns / 2, busy_pause_ns);
    } else if (backlog.largest < heap::EventLog::ring_capacity / 16) {
      pause_ns = std::min(pause_ns * 2, idle_pause_ns);
    }
    const timespec pause{0, static_cast<long>(pause_ns)};
    nanosleep(&pause, nullptr);
  }
  return nullptr;
}

// Starts the collector when the program's own code starts (the first allocations may come
// earlier, from inside the dynamic loader, where starting a thread is not safe). Without it
// (no thread could be started) the allocating threads drain the events themselves.
__attribute__((constructor)) void start_collector() {
  if (!resolve_real()) {
    return;
  }
  const Inside inside; // the thread is the profiler's (pthread_create above)
  State* state = recording_state();
  if (state == nullptr || sampling) {
    return;
  }
  const hotscope::threads::SignalsBlocked blocked;
  pthread_t thread;
  if (pthread_create(&thread, nullptr, collect_events, state) == 0) {
    pthread_detach(thread);
  }
}

__attribute__((destructor)) void write_report() {
  hotscope::signals::wait_for_signal_report(); // its reporter writes this report, then ends us
  if (phase.load(std::memory_order_acquire) != Recording) {
    return;
  }
  const Inside inside;
  State& state = *state_pointer;
  if (flavour.report_needs_out && !state.options.out_set) {
    return; // a linked program writes its reports only where HOTSCOPE_OUT says
  }
  if (building_profile) {
    print_error("hotscope heap: no heap profile: exit() was called (by a signal handler) while "
                "this thread was building one, whose lock it holds");
    return;
  }
  const std::optional<Taken> taken = take_raw(state, true);
  if (!taken) {
    print_error("hotscope heap: no heap profile: the profiler's lock stayed held at exit (a "
                "signal handler that called exit() interrupted a thread holding it)");
    return;
  }
  if (taken->lost_events > 0) {
    print_error("hotscope heap: " + std::to_string(taken->lost_events) +
                " allocation events could not be recorded (no memory for a thread's event ring, "
                "or a thread stopped while handing one over): the figures miss them");
  }
  const std::uint64_t sampled_allocations = taken->sampled_allocations;
  Symbolized symbolized;
  const hotscope::HeapProfile profile = profile_of(taken->raw, &symbolized);
  const std::filesystem::path path = report_path(state.options, ".json");
  const std::filesystem::path pprof_path = report_path(state.options, ".pb.gz");
  std::ostringstream dhat;
  hotscope::exporters::write_dhat_json(profile, dhat);
  if (const std::string problem = write_file(path, std::move(dhat).str()); !problem.empty()) {
    print_error(problem);
    return; // the directory is unusable: one line is enough
  }
  std::string pprof;
  std::string problem = pprof_bytes(profile, pprof_period(state), pprof);
  if (problem.empty()) {
    problem = write_file(pprof_path, pprof);
  } else {
    problem = "hotscope: cannot write the heap profile " + pprof_path.string() + ": " + problem;
  }
  if (!problem.empty()) {
    print_error(problem);
  }
  if (state.options.summary) {
    std::ostringstream summary;
    if (sampling) {
      summary << "==" << profile.pid << "== hotscope heap: sampled, one sample point per "
              << state.options.sample_bytes << " bytes on average (" << sampled_allocations
              << " allocations sampled): the figures are estimates\n";
    }
    hotscope::exporters::write_heap_summary(profile, summary);
    summary << "==" << profile.pid << "== hotscope heap: symbolized " << symbolized.addresses
            << " code addresses at exit (" << symbolized.ahead << " ahead), profile built in "
            << std::fixed << std::setprecision(3) << symbolized.seconds << " s\n";
    summary << "==" << profile.pid << "== hotscope heap: wrote " << path.string() << "\n";
    if (problem.empty()) {
      summary << "==" << profile.pid << "== hotscope heap: wrote " << pprof_path.string() << "\n";
    }
    std::fputs(summary.str().c_str(), stderr);
  }
}

// The outputs of one on-demand profile: built inside the profiler, handed out outside it.
struct Outputs {
  std::string dhat;
  std::string pprof;
  std::string error;
};

// Called inside the profiler.
void build_outputs(int formats, Outputs& outputs) {
  State* state = recording_state();
  if (state == nullptr) {
    outputs.error = "heap profiling is off in this process";
    return;
  }
  const hotscope::HeapProfile profile = profile_of(take_raw(*state, false)->raw);
  if ((formats & HOTSCOPE_HEAP_DHAT) != 0) {
    std::ostringstream dhat;
    hotscope::exporters::write_dhat_json(profile, dhat);
    outputs.dhat = std::move(dhat).str();
  }
  if ((formats & HOTSCOPE_HEAP_PPROF) != 0) {
    outputs.error = pprof_bytes(profile, pprof_period(*state), outputs.pprof);
  }
}

} // namespace

// ---- For operator new and delete (interposer.hpp) ----

// This library's hotscope_heap_mode, whichever one the program's calls reach.
extern "C" int hotscope_own_heap_mode()
    __attribute__((alias("hotscope_heap_mode"), visibility("hidden")));

void hotscope::heap::interposer::write_report_now() {
  write_report();
}

bool hotscope::heap::interposer::preceded() {
  static const bool preceded = [] {
    const Inside inside;
    return dlsym(RTLD_DEFAULT, "hotscope_heap_mode") !=
           reinterpret_cast<void*>(&hotscope_own_heap_mode);
  }();
  return preceded;
}

void* hotscope::heap::interposer::allocate(std::size_t size, const void* caller) {
  return ::allocate(size, caller);
}

void* hotscope::heap::interposer::allocate_aligned(std::size_t alignment, std::size_t size,
                                                   const void* caller) {
  return ::allocate_aligned(alignment, size, caller);
}

void hotscope::heap::interposer::release(void* pointer, const void* caller) {
  release_block(pointer, caller);
}

#define HOTSCOPE_EXPORT extern "C" __attribute__((visibility("default")))

// ---- The C interface (interposer.hpp) ----

HOTSCOPE_EXPORT int hotscope_heap_mode(void) {
  const Inside inside;
  if (recording_state() == nullptr) {
    return HOTSCOPE_HEAP_OFF;
  }
  return sampling ? HOTSCOPE_HEAP_SAMPLED : HOTSCOPE_HEAP_FULL;
}

HOTSCOPE_EXPORT void hotscope_heap_enter(void) {
  ++in_profiler;
}

HOTSCOPE_EXPORT void hotscope_heap_leave(void) {
  --in_profiler;
}

HOTSCOPE_EXPORT int hotscope_heap_profile(int formats, hotscope_heap_sink sink, void* context) {
  Outputs outputs;
  {
    const Inside inside;
    try {
      build_outputs(formats, outputs);
    } catch (const std::exception& error) {
      outputs.error = std::string("cannot build the heap profile: ") + error.what();
    }
  }
  if (outputs.error.empty()) {
    if ((formats & HOTSCOPE_HEAP_DHAT) != 0) {
      sink(context, HOTSCOPE_HEAP_DHAT, outputs.dhat.data(), outputs.dhat.size());
    }
    if ((formats & HOTSCOPE_HEAP_PPROF) != 0) {
      sink(context, HOTSCOPE_HEAP_PPROF, outputs.pprof.data(), outputs.pprof.size());
    }
  } else {
    sink(context, 0, outputs.error.data(), outputs.error.size());
  }
  const Inside inside; // the strings were allocated inside the profiler: freed there too
  const bool failed = !outputs.error.empty();
  outputs = Outputs{};
  return failed ? -1 : 0;
}

HOTSCOPE_EXPORT int hotscope_heap_read_totals(hotscope::HeapTotals* out) {
  const Inside inside;
  State* state = recording_state();
  if (state == nullptr) {
    return -1;
  }
  const std::lock_guard lock(state->mutex);
  drain_events(*state);
  *out = sampling ? state->sampled.totals() : state->engine.totals();
  return 0;
}

HOTSCOPE_EXPORT void hotscope_heap_observe_allocations(hotscope_heap_allocation_observer observer) {
  allocation_observer.store(observer, std::memory_order_release);
}

HOTSCOPE_EXPORT void hotscope_heap_reset(void) {
  const Inside inside;
  State* state = recording_state();
  if (state == nullptr) {
    return;
  }
  const std::lock_guard lock(state->mutex);
  if (sampling) {
    state->sampled.restart(now(*state));
  } else {
    drain_events(*state, event_wait_ns);
    state->engine.restart(now(*state));
  }
}

// ---- The interposed functions ----

HOTSCOPE_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attributes,
                                   void* (*start)(void*), void* argument) noexcept {
  if (!resolve_real()) {
    return EAGAIN; // only dlsym itself runs before this, and it starts no thread
  }
  if (in_profiler == 0) {
    return real.pthread_create(thread, attributes, start, argument);
  }
  auto* launch = static_cast<Launch*>(real.malloc(sizeof(Launch)));
  if (launch == nullptr) {
    return EAGAIN;
  }
  *launch = Launch{start, argument};
  const int result = real.pthread_create(thread, attributes, run_profiler_thread, launch);
  if (result != 0) {
    real.free(launch);
  }
  return result;
}

// The whole of malloc and free. Their own frames see the program's call site as their return
// address: on x86-64 the entries below jump here (no call) when their short path does not apply.
extern "C" __attribute__((visibility("hidden"))) void* hotscope_malloc(std::size_t size) noexcept {
  return allocate(size, __builtin_return_address(0));
}

extern "C" __attribute__((visibility("hidden"))) void hotscope_free(void* pointer) noexcept {
  release_block(pointer, __builtin_return_address(0));
}

#if defined(__x86_64__)
// malloc and free for the sampled mode's common case, as allocate() and release_block() do it,
// without a frame of their own: the compiler keeps one in any function that reads its return
// address, and cannot be made to tail-call the real allocator. Any other case jumps to the
// hooks above, which then see the program's call site as their return address.
static_assert(offsetof(RealAllocator, malloc) == 0 && offsetof(RealAllocator, free) == 8);
static_assert(sizeof(sampling_fast) == 1 && heap::Sampler::countdown_offset() == 0);
static_assert(heap::SampledAddresses::bits == 16 && heap::SampledAddresses::bits_offset() == 0 &&
              heap::SampledAddresses::multiplier == 0x9E3779B97F4A7C15ull);
#if defined(__CET__) && (__CET__ & 1)
#define HOTSCOPE_BRANCH_TARGET "endbr64\n"
#else
#define HOTSCOPE_BRANCH_TARGET ""
#endif
asm(R"(
  .pushsection .text
  .globl malloc
  .type malloc, @function
  .p2align 4
malloc:
  .cfi_startproc
  )" HOTSCOPE_BRANCH_TARGET R"(
  cmpb $0, hotscope_sampling_fast(%rip)
  je hotscope_malloc
  cmpq $1, %rdi
  movq %rdi, %rax
  adcq $0, %rax                       # bytes: a request of 0 counts as 1
  movq hotscope_thread_sampler@gottpoff(%rip), %rcx
  movq %fs:(%rcx), %rdx               # bytes to this thread's next sample point
  cmpq %rdx, %rax
  jae hotscope_malloc                 # a sample point
  subq %rax, %rdx
  movq %rdx, %fs:(%rcx)
  jmp *hotscope_real(%rip)            # the real malloc
  .cfi_endproc
  .size malloc, .-malloc

  .globl free
  .type free, @function
  .p2align 4
free:
  .cfi_startproc
  )" HOTSCOPE_BRANCH_TARGET R"(
  cmpb $0, hotscope_sampling_fast(%rip)
  je hotscope_free
  movabsq $0x9E3779B97F4A7C15, %rax
  imulq %rdi, %rax
  shrq $48, %rax                      # the bucket
  movq %rax, %rdx
  shrq $6, %rdx
  leaq hotscope_sampled_addresses(%rip), %rcx
  movq (%rcx,%rdx,8), %rdx            # the bucket's word of bits
  btq %rax, %rdx
  jc hotscope_free                    # maybe a live sampled block, or the arena's
  jmp *hotscope_real+8(%rip)          # the real free
  .cfi_endproc
  .size free, .-free
  .popsection
)");
#undef HOTSCOPE_BRANCH_TARGET
#else
HOTSCOPE_EXPORT void* malloc(std::size_t size) noexcept __attribute__((alias("hotscope_malloc")));
HOTSCOPE_EXPORT void free(void* pointer) noexcept __attribute__((alias("hotscope_free")));
#endif

HOTSCOPE_EXPORT void* calloc(std::size_t count, std::size_t size) noexcept {
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  if (!resolve_real()) {
    return arena_allocate(bytes, 16); // static storage: already zero
  }
  if (passed_on(__builtin_return_address(0), bytes)) {
    return real.calloc(count, size);
  }
  const Inside inside;
  void* pointer = real.calloc(count, size);
  if (pointer != nullptr) {
    record_alloc(pointer, bytes);
  }
  return pointer;
}

HOTSCOPE_EXPORT void* realloc(void* pointer, std::size_t size) noexcept {
  return reallocate(pointer, size, __builtin_return_address(0));
}

HOTSCOPE_EXPORT void* reallocarray(void* pointer, std::size_t count, std::size_t size) noexcept {
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  return reallocate(pointer, bytes, __builtin_return_address(0));
}

HOTSCOPE_EXPORT void* memalign(std::size_t alignment, std::size_t size) noexcept {
  return allocate_aligned(alignment, size, __builtin_return_address(0));
}

HOTSCOPE_EXPORT void* aligned_alloc(std::size_t alignment, std::size_t size) noexcept {
  return allocate_aligned(alignment, size, __builtin_return_address(0));
}

HOTSCOPE_EXPORT int posix_memalign(void** out, std::size_t alignment, std::size_t size) noexcept {
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) {
    return EINVAL;
  }
  void* pointer = allocate_aligned(alignment, size, __builtin_return_address(0));
  if (pointer == nullptr) {
    return ENOMEM;
  }
  *out = pointer;
  return 0;
}

HOTSCOPE_EXPORT void* valloc(std::size_t size) noexcept {
  return allocate_aligned(static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), size,
                          __builtin_return_address(0));
}

// pvalloc rounds the size up to whole pages; the rounded size is what the program gets.
HOTSCOPE_EXPORT void* pvalloc(std::size_t size) noexcept {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::size_t rounded = 0;
  if (__builtin_add_overflow(size, page - 1, &rounded)) {
    errno = ENOMEM;
    return nullptr;
  }
  return allocate_aligned(page, rounded & ~(page - 1), __builtin_return_address(0));
}
