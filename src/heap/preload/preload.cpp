// libhotscope-preload.so: the heap profiler for unmodified binaries (LD_PRELOAD). It interposes
// the C allocation functions, counts every block as valgrind DHAT does (or, in the sampled mode,
// a Poisson sample of them, scaled), and writes $HOTSCOPE_OUT/heap.json and heap.pb.gz when the
// program ends.
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
#include "export/export.hpp"
#include "heap/heap.hpp"

#include <dlfcn.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
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
#include <mutex>
#include <new>
#include <sstream>

namespace {

namespace heap = hotscope::heap;

// ---- The real allocator ----

struct RealAllocator {
  void* (*malloc)(std::size_t);
  void (*free)(void*);
  void* (*calloc)(std::size_t, std::size_t);
  void* (*realloc)(void*, std::size_t);
  void* (*memalign)(std::size_t, std::size_t);
};
RealAllocator real;

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

// This library's own code. It carries a private, static copy of the C++ runtime, whose start-up
// allocations (the exception emergency pool) must not count: a C program would not make them.
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
  std::mutex mutex;
  heap::Engine engine;                      // full mode
  heap::SampledEngine sampled;              // sampled mode
  heap::SamplingPlan plan;                  // sampled mode
  heap::SampledAddresses sampled_addresses; // sampled mode: frees that need the lock
  heap::Options options;
  heap::CodeRanges skip;
  bool tsc = false;              // timestamps from the TSC, else CLOCK_MONOTONIC in ns
  std::uint64_t start_ticks = 0; // in the timestamp unit
  std::uint64_t start_ns = 0;    // CLOCK_MONOTONIC at the same moment
  std::uint64_t latest_time = 0; // guarded by `mutex`
};

enum : int { NotStarted, Starting, Recording, Off };
std::atomic<int> phase{NotStarted};
bool sampling = false; // set before phase becomes Recording, then constant
__thread heap::Sampler thread_sampler __attribute__((tls_model("initial-exec")));
alignas(State) unsigned char state_storage[sizeof(State)];
State* state_pointer = nullptr;

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

// Called with the mutex held. Another core's TSC may lag a little: time never goes back.
std::uint64_t now(State& state) {
  const std::uint64_t ticks = raw_ticks(state);
  const std::uint64_t time = ticks > state.start_ticks ? ticks - state.start_ticks : 0;
  state.latest_time = std::max(state.latest_time, time);
  return state.latest_time;
}

// µs per timestamp unit, measured against CLOCK_MONOTONIC over the whole run so far.
double microseconds_per_unit(const State& state, std::uint64_t end_time) {
  if (!state.tsc) {
    return 1e-3;
  }
  const double elapsed_us = static_cast<double>(monotonic_ns() - state.start_ns) / 1e3;
  return end_time == 0 ? 0.0 : elapsed_us / static_cast<double>(end_time);
}

void before_fork() {
  if (phase.load(std::memory_order_acquire) == Recording) {
    state_pointer->mutex.lock();
  }
}
void after_fork_in_parent() {
  if (phase.load(std::memory_order_acquire) == Recording) {
    state_pointer->mutex.unlock();
  }
}
// The child runs on unprofiled: its parent's report covers the blocks they share, and two
// processes must not write the same file.
void after_fork_in_child() {
  if (phase.load(std::memory_order_acquire) == Recording) {
    state_pointer->mutex.unlock();
    phase.store(Off, std::memory_order_release);
  }
}

void print_error(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
}

// Builds the state on first use. Called inside the profiler. Returns nullptr when profiling is
// off (after the report was written, or in a forked child).
State* recording_state() {
  int current = phase.load(std::memory_order_acquire);
  if (current == Recording) {
    return state_pointer;
  }
  if (current == NotStarted && phase.compare_exchange_strong(current, Starting)) {
    auto* state = new (state_storage) State;
    state->tsc = invariant_tsc();
    state->start_ns = monotonic_ns();
    state->start_ticks = raw_ticks(*state);
    heap::ParsedOptions parsed = heap::parse_options([](const char* name) { return getenv(name); });
    for (const std::string& error : parsed.errors) {
      print_error(error);
    }
    state->options = std::move(parsed.options);
    // Relative to the directory the program started in, whatever it changes to later.
    std::error_code error;
    const std::filesystem::path out_dir = std::filesystem::absolute(state->options.out_dir, error);
    if (!error) {
      state->options.out_dir = out_dir.string();
    }
    if (state->options.sampled) {
      const double mean = static_cast<double>(state->options.sample_bytes);
      state->plan.mean_bytes = mean;
      state->plan.seed = state->options.seed_set
                             ? state->options.seed
                             : state->start_ticks ^ (std::uint64_t(getpid()) << 32);
      state->sampled = heap::SampledEngine(mean);
      sampling = true;
    }
    state->skip = heap::own_and_allocator_code(reinterpret_cast<const void*>(&recording_state));
    pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
    state_pointer = state;
    phase.store(Recording, std::memory_order_release);
    return state;
  }
  // Another thread is building the state: it takes microseconds, once.
  while ((current = phase.load(std::memory_order_acquire)) == Starting) {
    sched_yield();
  }
  return current == Recording ? state_pointer : nullptr;
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
  return sampling && !thread_sampler.sample(size, state_pointer->plan);
}

inline bool skipped(std::size_t size) {
  if (__builtin_expect(phase.load(std::memory_order_acquire) != Recording, 0)) {
    return skipped_before_recording(size);
  }
  return sampling && !thread_sampler.sample(size, state_pointer->plan);
}

// True when a free of `pointer` must be looked at under the lock: always in the full mode; in
// the sampled mode only when it may be a live sampled block.
inline bool free_recorded(const void* pointer) {
  const int current = phase.load(std::memory_order_acquire);
  if (current == Off || !sampling) {
    return current != Off;
  }
  return state_pointer->sampled_addresses.may_contain(reinterpret_cast<std::uintptr_t>(pointer));
}

// ---- Recording (always called inside the profiler) ----

void record_alloc(void* pointer, std::size_t size) {
  State* state = recording_state();
  if (state == nullptr) {
    return;
  }
  std::uintptr_t frames[256];
  heap::StackId* remembered = nullptr; // the id, kept with the thread's cached copy of the stack
  const std::size_t depth = heap::capture_stack(state->options.unwinder, state->skip,
                                                {frames, state->options.depth}, &remembered);
  // Never unwind while holding the mutex: the unwinder takes the loader's lock, and a thread
  // holding that lock may be waiting in malloc for this mutex.
  const std::lock_guard lock(state->mutex);
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  const auto intern = [&](auto& engine) {
    if (remembered == nullptr) {
      return engine.intern({frames, depth});
    }
    if (*remembered == heap::unknown_stack) {
      *remembered = engine.intern({frames, depth});
    }
    return *remembered;
  };
  if (sampling) {
    state->sampled.alloc(address, size, intern(state->sampled), now(*state));
    state->sampled_addresses.add(address);
  } else {
    state->engine.alloc(address, size, intern(state->engine), now(*state));
  }
}

// Called with the mutex held.
void record_free_locked(State& state, std::uintptr_t address) {
  if (!sampling) {
    state.engine.free(address, now(state));
  } else if (state.sampled.free(address, now(state))) {
    state.sampled_addresses.remove(address);
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
  const std::lock_guard lock(state->mutex);
  record_free_locked(*state, reinterpret_cast<std::uintptr_t>(pointer));
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
      record_free_locked(state, reinterpret_cast<std::uintptr_t>(old));
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

inline void* allocate(std::size_t size, const void* caller) {
  if (!resolve_real()) {
    return arena_allocate(size, 16);
  }
  if (untracked(caller) || skipped(size)) {
    return real.malloc(size);
  }
  return allocate_recorded(size);
}

void* allocate_aligned(std::size_t alignment, std::size_t size, const void* caller) {
  if (!resolve_real()) {
    return arena_allocate(size, alignment);
  }
  if (untracked(caller) || skipped(size)) {
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
  bool known = true;
  void* pointer = nullptr;
  {
    // Held across the real call: the old address may be handed out again as soon as it returns.
    const std::lock_guard lock(state->mutex);
    pointer = real.realloc(old, size);
    const auto old_address = reinterpret_cast<std::uintptr_t>(old);
    if (pointer != nullptr) {
      known = state->engine.realloc(old_address, reinterpret_cast<std::uintptr_t>(pointer), size,
                                    now(*state));
    } else if (size == 0) {
      // realloc(p, 0) freed the block (glibc's behaviour, and valgrind's count of it).
      state->engine.free(old_address, now(*state));
    }
  }
  if (!known) {
    record_alloc(pointer, size);
  }
  return pointer;
}

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

// Writes one file; false, after one line naming the path and the reason, if it could not.
template <class Write> bool write_file(const std::filesystem::path& path, Write&& write) {
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  std::ofstream out(path);
  if (out) {
    write(out);
    out.close();
  }
  if (!out) {
    print_error("hotscope: cannot write the heap profile " + path.string() + ": " +
                std::strerror(errno));
    return false;
  }
  return true;
}

// heap.pb.gz, through libhotscope-pprof.so from this library's directory (see pprof_module.cpp).
bool write_pprof(const hotscope::HeapProfile& profile, std::int64_t period,
                 const std::filesystem::path& path) {
  Dl_info self{};
  dladdr(reinterpret_cast<const void*>(&write_pprof), &self);
  const std::filesystem::path module =
      std::filesystem::path(self.dli_fname == nullptr ? "" : self.dli_fname).parent_path() /
      "libhotscope-pprof.so";
  void* handle = dlopen(module.c_str(), RTLD_NOW | RTLD_LOCAL);
  using Writer = bool (*)(const hotscope::HeapProfile*, std::int64_t, const char*);
  const auto writer = handle == nullptr
                          ? nullptr
                          : reinterpret_cast<Writer>(dlsym(handle, "hotscope_write_pprof_heap"));
  if (writer == nullptr) {
    const char* reason = dlerror();
    print_error("hotscope: cannot write the heap profile " + path.string() + ": " +
                (reason == nullptr ? "no pprof writer" : reason));
    return false;
  }
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  if (!writer(&profile, period, path.c_str())) {
    print_error("hotscope: cannot write the heap profile " + path.string() + ": " +
                std::strerror(errno));
    return false;
  }
  return true;
}

__attribute__((destructor)) void write_report() {
  if (phase.load(std::memory_order_acquire) != Recording) {
    return;
  }
  const Inside inside;
  State& state = *state_pointer;
  heap::RawProfile raw;
  std::uint64_t sampled_allocations = 0;
  {
    const std::lock_guard lock(state.mutex);
    sampled_allocations = state.sampled.sampled_allocations();
    const std::uint64_t end_time = now(state);
    raw = heap::in_microseconds(sampling ? state.sampled.snapshot(end_time)
                                         : state.engine.snapshot(end_time),
                                microseconds_per_unit(state, end_time));
    phase.store(Off, std::memory_order_release); // from here on every call passes through
  }
  const hotscope::HeapProfile profile = heap::build_profile(raw, command_line(), getpid());
  const std::filesystem::path path = report_path(state.options, ".json");
  const std::filesystem::path pprof_path = report_path(state.options, ".pb.gz");
  const bool written = write_file(
      path, [&](std::ostream& out) { hotscope::exporters::write_dhat_json(profile, out); });
  if (!written) {
    return; // the directory is unusable: one line is enough
  }
  const std::int64_t period =
      sampling ? static_cast<std::int64_t>(state.options.sample_bytes) : std::int64_t{1};
  const bool pprof_written = write_pprof(profile, period, pprof_path);
  if (state.options.summary) {
    std::ostringstream summary;
    if (sampling) {
      summary << "==" << profile.pid << "== hotscope heap: sampled, one sample point per "
              << state.options.sample_bytes << " bytes on average (" << sampled_allocations
              << " allocations sampled): the figures are estimates\n";
    }
    hotscope::exporters::write_heap_summary(profile, summary);
    summary << "==" << profile.pid << "== hotscope heap: wrote " << path.string() << "\n";
    if (pprof_written) {
      summary << "==" << profile.pid << "== hotscope heap: wrote " << pprof_path.string() << "\n";
    }
    std::fputs(summary.str().c_str(), stderr);
  }
}

} // namespace

// ---- The interposed functions ----

#define HOTSCOPE_EXPORT extern "C" __attribute__((visibility("default")))

HOTSCOPE_EXPORT void* malloc(std::size_t size) noexcept {
  return allocate(size, __builtin_return_address(0));
}

HOTSCOPE_EXPORT void free(void* pointer) noexcept {
  if (pointer == nullptr || in_arena(pointer) || !resolve_real()) {
    return;
  }
  if (!untracked(__builtin_return_address(0)) && free_recorded(pointer)) {
    record_free(pointer);
  }
  real.free(pointer);
}

HOTSCOPE_EXPORT void* calloc(std::size_t count, std::size_t size) noexcept {
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  if (!resolve_real()) {
    return arena_allocate(bytes, 16); // static storage: already zero
  }
  if (untracked(__builtin_return_address(0)) || skipped(bytes)) {
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
