// The hooks: the interposed allocation functions and pthread_create, which only decide whether a
// call is recorded and hand it to the recorder (recording.hpp). On x86-64 malloc and free enter
// through a frameless assembly short path for the sampled mode's common case.
#include "heap/interposer/interposer.hpp"
#include "heap/interposer/real_allocator.hpp"
#include "heap/interposer/recording.hpp"
#include "threads/threads.hpp"
#include "unwind/unwind.hpp"

#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <mutex>

namespace heap = hotscope::heap;
// What the hooks use of the floors below (the names allocate, allocate_aligned and release are
// also interposer.hpp's, for operator new and delete, which call the hooks here).
using heap::interposer::arena_allocate;
using heap::interposer::arena_block_size;
using heap::interposer::end_library_loading;
using heap::interposer::full_fast;
using heap::interposer::in_arena;
using heap::interposer::in_profiler;
using heap::interposer::Inside;
using heap::interposer::keeping_own_blocks;
using heap::interposer::library_loading;
using heap::interposer::note_arena_block;
using heap::interposer::Off;
using heap::interposer::phase;
using heap::interposer::plan;
using heap::interposer::real;
using heap::interposer::RealAllocator;
using heap::interposer::record_alloc;
using heap::interposer::record_free;
using heap::interposer::record_full_free;
using heap::interposer::record_realloc_begin;
using heap::interposer::record_realloc_end;
using heap::interposer::recorder_pointer;
using heap::interposer::Recording;
using heap::interposer::recording_state;
using heap::interposer::resolve_real;
using heap::interposer::sampled_addresses;
using heap::interposer::sampling;
using heap::interposer::sampling_fast;
using heap::interposer::starting_report_thread;
using heap::interposer::thread_sampler;
using heap::interposer::untracked;

namespace {

// The arena, for requests made while the real functions are being looked up; its blocks are
// noted for the sampled mode's free short path.
void* bootstrap_allocate(std::size_t size, std::size_t alignment) {
  void* block = arena_allocate(size, alignment);
  if (block != nullptr) {
    note_arena_block(block);
  }
  return block;
}

// ---- Which calls are recorded ----

// True when an allocation of `size` is not to be recorded: profiling is off, or in the sampled
// mode it falls between sample points. That case is the sampled mode's fast path: one
// thread-local subtraction, no lock, no stack.
// The first calls (before the recorder exists) start profiling, so the mode is known.
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
  if (__builtin_expect(library_loading.load(std::memory_order_relaxed), 0) && !untracked(caller)) {
    end_library_loading(); // the program's, or another library's: this one has loaded
  }
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

// The sampled mode's realloc: the old block is freed (under the lock only if it may have been
// sampled) and the new one is a new allocation, sampled or not on its own.
void* reallocate_sampled(void* old, std::size_t size) {
  void* pointer = nullptr;
  if (free_recorded(old)) {
    const Inside inside;
    heap::Recorder& recorder = *recorder_pointer;
    // Held across the real call: the old address may be handed out again as soon as it returns.
    const std::lock_guard lock(recorder.mutex());
    pointer = real.realloc(old, size);
    if (pointer != nullptr || size == 0) {
      recorder.forget_sampled(reinterpret_cast<std::uintptr_t>(old));
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

// A recorded allocation of `bytes`: the real call (`allocate_real`) inside the profiler, then the
// record of its block.
template <class AllocateReal> void* recorded(std::size_t bytes, AllocateReal allocate_real) {
  const Inside inside;
  void* pointer = allocate_real();
  if (pointer != nullptr) {
    record_alloc(pointer, bytes);
  }
  return pointer;
}

// Out of line, so that what every call runs stays small enough to be inlined into the hook.
__attribute__((noinline)) void* allocate_recorded(std::size_t size) {
  return recorded(size, [size] { return real.malloc(size); });
}

__attribute__((noinline)) void* allocate_zeroed_recorded(std::size_t count, std::size_t size,
                                                         std::size_t bytes) {
  return recorded(bytes, [count, size] { return real.calloc(count, size); });
}

// A sample point, or any allocation in the full mode (recording, the real functions known):
// recorded unless the call is the profiler's own.
__attribute__((noinline)) void* allocate_unless_own(std::size_t size, const void* caller) {
  return untracked(caller) ? real.malloc(size) : allocate_recorded(size);
}

// Every mode but the sampled mode's fast path.
__attribute__((noinline)) void* allocate_unsampled(std::size_t size, const void* caller) {
  if (!resolve_real()) {
    return bootstrap_allocate(size, 16);
  }
  // This library's large start-up blocks (library_loading), while the arena has room.
  constexpr std::size_t startup_block_bytes = 16 * 1024;
  if (size >= startup_block_bytes && library_loading.load(std::memory_order_relaxed) &&
      untracked(caller)) {
    if (void* block = bootstrap_allocate(size, 16)) {
      return block;
    }
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
    return bootstrap_allocate(size, alignment);
  }
  if (passed_on(caller, size)) {
    return real.memalign(alignment, size);
  }
  return recorded(size, [alignment, size] { return real.memalign(alignment, size); });
}

void* reallocate(void* old, std::size_t size, const void* caller) {
  if (old == nullptr) {
    return allocate(size, caller);
  }
  if (in_arena(old)) {
    // Only the profiler's own start-up requests live there: move the block out, uncounted.
    const Inside inside;
    void* moved = resolve_real() ? real.malloc(size) : bootstrap_allocate(size, 16);
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
  heap::Recorder* recorder = recording_state();
  if (recorder == nullptr) {
    return real.realloc(old, size);
  }
  record_realloc_begin(*recorder, old);
  void* pointer = real.realloc(old, size);
  record_realloc_end(*recorder, pointer, size);
  return pointer;
}

// The free hook's bodies: the full mode while recording, and every other case.
__attribute__((noinline)) void release_full(void* pointer, const void* caller) {
  if (in_arena(pointer)) {
    return; // the profiler's own start-up blocks: never the real allocator's
  }
  if (pointer != nullptr && !untracked(caller)) {
    const Inside inside;
    record_full_free(pointer);
  } else if (keeping_own_blocks.load(std::memory_order_relaxed)) {
    return;
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
  const bool own = untracked(caller);
  if (own && keeping_own_blocks.load(std::memory_order_relaxed)) {
    return;
  }
  // Off first, as in passed_on; free_recorded only outside the profiler (which may be building
  // the recorder this very moment).
  if (phase.load(std::memory_order_acquire) != Off && !own && free_recorded(pointer)) {
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
// recorded, from its first allocation (the agent's connections) to its last.
void* run_profiler_thread(void* pointer) {
  ++in_profiler;
  const hotscope::threads::OwnThread own;
  const Launch launch = *static_cast<Launch*>(pointer);
  real.free(pointer);
  return launch.start(launch.argument);
}

} // namespace

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

// Once an object is unloaded, the stack walk forgets the unwind rules it cached for return
// addresses (unwind::walk_by_rules): an object loaded later may take the same addresses. After
// the unload, so that no walk caches the going object's rules again.
HOTSCOPE_EXPORT int dlclose(void* handle) noexcept {
  using Close = int (*)(void*);
  static const auto real_dlclose = reinterpret_cast<Close>(dlsym(RTLD_NEXT, "dlclose"));
  const int result = real_dlclose(handle);
  hotscope::unwind::forget_rules();
  return result;
}

// The whole of malloc, free and calloc. Their own frames see the program's call site as their
// return address: on x86-64 the entries below jump here (no call) when their short path does not
// apply.
extern "C" __attribute__((visibility("hidden"))) void* hotscope_malloc(std::size_t size) noexcept {
  return allocate(size, __builtin_return_address(0));
}

extern "C" __attribute__((visibility("hidden"))) void hotscope_free(void* pointer) noexcept {
  release_block(pointer, __builtin_return_address(0));
}

extern "C" __attribute__((visibility("hidden"))) void* hotscope_calloc(std::size_t count,
                                                                       std::size_t size) noexcept {
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  // The sampled mode's common case first, as in allocate(): compilers and interpreters calloc
  // nearly as often as they malloc.
  if (__builtin_expect(sampling_fast.load(std::memory_order_acquire), 1)) {
    if (__builtin_expect(!thread_sampler.sample(bytes, plan), 1) ||
        untracked(__builtin_return_address(0))) {
      return real.calloc(count, size);
    }
    return allocate_zeroed_recorded(count, size, bytes);
  }
  if (!resolve_real()) {
    return bootstrap_allocate(bytes, 16); // static storage: already zero
  }
  if (passed_on(__builtin_return_address(0), bytes)) {
    // glibc's pthread_create takes the new thread's TLS vector with calloc.
    if (__builtin_expect(starting_report_thread, 0)) {
      return bootstrap_allocate(bytes, 16);
    }
    return real.calloc(count, size);
  }
  return allocate_zeroed_recorded(count, size, bytes);
}

#if defined(__x86_64__)
// malloc, free and calloc for the sampled mode's common case, as allocate(), release_block() and
// hotscope_calloc do it, without a frame of their own: the compiler keeps one in any function that
// reads its return address, and cannot be made to tail-call the real allocator. Any other case
// jumps to the hooks above, which then see the program's call site as their return address.
static_assert(offsetof(RealAllocator, malloc) == 0 && offsetof(RealAllocator, free) == 8 &&
              offsetof(RealAllocator, calloc) == 16);
static_assert(sizeof(sampling_fast) == 1 && heap::Sampler::countdown_offset() == 0);
static_assert(heap::SampledAddresses::bits == 16 && heap::SampledAddresses::summary_shift == 10 &&
              heap::SampledAddresses::summary_offset() == 0 &&
              heap::SampledAddresses::bits_offset() == 8 &&
              heap::SampledAddresses::multiplier == 0x9E3779B97F4A7C15ull);
#if defined(__CET__) && (__CET__ & 1)
#define HOTSCOPE_BRANCH_TARGET "endbr64\n"
#else
#define HOTSCOPE_BRANCH_TARGET ""
#endif
asm(R"(
  # The sampled mode's countdown of %rax bytes: to `hook` when the mode is off or at a sample
  # point, else on to the real function through `real`.
  .macro hotscope_count_down hook, real
  cmpb $0, hotscope_sampling_fast(%rip)
  je \hook
  cmpq $1, %rax
  adcq $0, %rax                       # a request of 0 counts as 1 byte
  movq hotscope_thread_sampler@gottpoff(%rip), %rcx
  movq %fs:(%rcx), %rdx               # bytes to this thread's next sample point
  cmpq %rdx, %rax
  jae \hook                           # a sample point
  subq %rax, %rdx
  movq %rdx, %fs:(%rcx)
  jmp *\real
  .endm

  .pushsection .text
  .globl malloc
  .type malloc, @function
  .p2align 4
malloc:
  .cfi_startproc
  )" HOTSCOPE_BRANCH_TARGET R"(
  movq %rdi, %rax                     # bytes
  hotscope_count_down hotscope_malloc, hotscope_real(%rip)
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
  leaq hotscope_sampled_addresses(%rip), %rcx
  movq %rax, %rdx
  shrq $10, %rdx
  movq (%rcx), %r8                    # the summary
  btq %rdx, %r8
  jnc 1f                              # no live sampled block in the bucket's thousand
  movq %rax, %rdx
  shrq $6, %rdx
  movq 8(%rcx,%rdx,8), %rdx           # the bucket's word of bits
  btq %rax, %rdx
  jc hotscope_free                    # maybe a live sampled block, or the arena's
1:
  jmp *hotscope_real+8(%rip)          # the real free
  .cfi_endproc
  .size free, .-free

  .globl calloc
  .type calloc, @function
  .p2align 4
calloc:
  .cfi_startproc
  )" HOTSCOPE_BRANCH_TARGET R"(
  movq %rdi, %rax
  mulq %rsi                           # bytes
  jo hotscope_calloc                  # too many: the hook fails the call
  hotscope_count_down hotscope_calloc, hotscope_real+16(%rip)
  .cfi_endproc
  .size calloc, .-calloc
  .popsection
)");
#undef HOTSCOPE_BRANCH_TARGET
#else
HOTSCOPE_EXPORT void* malloc(std::size_t size) noexcept __attribute__((alias("hotscope_malloc")));
HOTSCOPE_EXPORT void free(void* pointer) noexcept __attribute__((alias("hotscope_free")));
HOTSCOPE_EXPORT void* calloc(std::size_t count, std::size_t size) noexcept
    __attribute__((alias("hotscope_calloc")));
#endif

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
