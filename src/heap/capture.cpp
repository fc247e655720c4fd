// Stack capture for allocation hooks. Called with the thread marked "inside the profiler", so
// any allocation libunwind or the loader makes here is passed straight to the real allocator.
#include "heap/capture.hpp"

#include "unwind/unwind.hpp"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <unwind.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <new>
#include <type_traits>

namespace hotscope::heap {
namespace {

struct SegmentSearch {
  std::uintptr_t address;
  CodeRanges* out;
};

int add_executable_segments(dl_phdr_info* info, std::size_t, void* data) {
  auto* search = static_cast<SegmentSearch*>(data);
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> segments;
  bool contains = false;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type != PT_LOAD || (header.p_flags & PF_X) == 0) {
      continue;
    }
    const std::uintptr_t begin = info->dlpi_addr + header.p_vaddr;
    const std::uintptr_t end = begin + header.p_memsz;
    segments.emplace_back(begin, end);
    contains = contains || (search->address >= begin && search->address < end);
  }
  if (!contains) {
    return 0;
  }
  search->out->ranges.insert(search->out->ranges.end(), segments.begin(), segments.end());
  return 1;
}

// Every operator new form, as the Itanium ABI mangles it on LP64.
constexpr std::array operator_new_symbols = {"_Znwm",
                                             "_Znam",
                                             "_ZnwmRKSt9nothrow_t",
                                             "_ZnamRKSt9nothrow_t",
                                             "_ZnwmSt11align_val_t",
                                             "_ZnamSt11align_val_t",
                                             "_ZnwmSt11align_val_tRKSt9nothrow_t",
                                             "_ZnamSt11align_val_tRKSt9nothrow_t"};

using unwind::stack_word;
using unwind::StackBounds;

// The calling thread's stack, found once per thread: frames outside it are not followed.
__thread StackBounds thread_stack __attribute__((tls_model("initial-exec"))) = {0, 0};

// The main thread's stack pointer at the program's start, kept by ld.so: no frame lies above it.
extern "C" void* __libc_stack_end;

// The main thread's stack, from its start down as far as its size limit lets it grow (the kernel
// maps nothing else there: it keeps at least 128 MiB below the stack free). pthread_getattr_np
// finds it by reading /proc/self/maps with stdio, at every preloaded program's start.
StackBounds main_thread_stack() {
  constexpr std::uintptr_t unlimited = std::uintptr_t{128} << 20;
  const auto high = reinterpret_cast<std::uintptr_t>(__libc_stack_end);
  rlimit limit{};
  const std::uintptr_t size =
      getrlimit(RLIMIT_STACK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY ? limit.rlim_cur
                                                                              : unlimited;
  return {high - std::min(size, high), high};
}

StackBounds current_stack_bounds() {
  if (thread_stack.high == 0 && getpid() == gettid()) {
    thread_stack = main_thread_stack();
  }
  if (thread_stack.high == 0) {
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) == 0) {
      void* base = nullptr;
      std::size_t size = 0;
      if (pthread_attr_getstack(&attributes, &base, &size) == 0) {
        const auto low = reinterpret_cast<std::uintptr_t>(base);
        thread_stack = {low, low + size};
      }
      pthread_attr_destroy(&attributes);
    }
  }
  return thread_stack;
}

std::size_t walk_frame_pointers(std::span<std::uintptr_t> out) {
  const StackBounds bounds = current_stack_bounds();
  auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  std::size_t count = 0;
  // A frame is [saved frame pointer, return address]; the chain must climb the stack.
  while (count < out.size() && frame >= bounds.low && frame + 16 <= bounds.high &&
         frame % sizeof(void*) == 0) {
    const auto* words = reinterpret_cast<const std::uintptr_t*>(frame);
    const std::uintptr_t return_address = words[1];
    if (return_address == 0) {
      break;
    }
    out[count++] = return_address;
    if (words[0] <= frame) {
      break;
    }
    frame = words[0];
  }
  return count;
}

std::size_t rules_backtrace(std::span<std::uintptr_t> out);

// unw_backtrace where the full mode loaded libunwind (prepare_capture), else the walk by the
// frames' rules.
std::size_t backtrace(std::span<std::uintptr_t> out) {
  const unwind::Libunwind* libunwind = unwind::libunwind_if_found();
  if (libunwind == nullptr) {
    return rules_backtrace(out);
  }
  const int got =
      libunwind->backtrace(reinterpret_cast<void**>(out.data()), static_cast<int>(out.size()));
  return got > 0 ? static_cast<std::size_t>(got) : 0;
}

// Copies `frames` after their leading frames inside `skip` (the first `first` of them) into `out`,
// as many as fit.
std::size_t keep(std::span<const std::uintptr_t> frames, std::size_t first,
                 std::span<std::uintptr_t> out) {
  const std::size_t kept = std::min(frames.size() - first, out.size());
  std::copy_n(frames.begin() + static_cast<std::ptrdiff_t>(first), kept, out.begin());
  return kept;
}

// The most leading frames inside `skip` seen on a capture (the hook, the capture, the unwinder,
// operator new): a few, the same few every time. Only they and the frames kept are unwound, where
// unwinding all the room left for them walked a dozen frames more of every deep stack.
std::atomic<std::size_t> most_leading_frames{0};

// How many of `room` frames to unwind to keep `wanted`.
std::size_t frames_to_unwind(std::size_t wanted, std::size_t room) {
  return std::min(wanted + most_leading_frames.load(std::memory_order_relaxed), room);
}

// The leading frames of an unwound stack that are inside `skip`, counted into
// most_leading_frames.
std::size_t leading_frames_in(const CodeRanges& skip, std::span<const std::uintptr_t> frames) {
  // libunwind's own frames sit on top of ours when it is the unwinder.
  const unwind::Libunwind* libunwind = unwind::libunwind_if_found();
  std::size_t first = 0;
  while (first < frames.size() && (skip.contains(frames[first]) ||
                                   (libunwind != nullptr && libunwind->contains(frames[first])))) {
    ++first;
  }
  std::size_t most = most_leading_frames.load(std::memory_order_relaxed);
  while (first > most &&
         !most_leading_frames.compare_exchange_weak(most, first, std::memory_order_relaxed)) {
  }
  return first;
}

// True when `count` frames unwound of `requested` (of `room`), `first` of them leading, leave
// fewer than `wanted` of a stack that goes on (more leading frames than seen before): the stack is
// then unwound again, with all the room.
bool unwound_too_few(std::size_t count, std::size_t requested, std::size_t room, std::size_t first,
                     std::size_t wanted) {
  return count == requested && requested < room && count - first < wanted;
}

// Unwinds into `raw` (room for `out` and the frames that get dropped) with `unwind`, and keeps
// the frames after the leading ones inside `skip` in `out`.
std::size_t unwind_and_keep(std::size_t (*unwind)(std::span<std::uintptr_t>),
                            const CodeRanges& skip, std::span<std::uintptr_t> raw,
                            std::span<std::uintptr_t> out) {
  const std::size_t requested = frames_to_unwind(out.size(), raw.size());
  std::size_t count = unwind(raw.first(requested));
  std::size_t first = leading_frames_in(skip, raw.first(count));
  if (unwound_too_few(count, requested, raw.size(), first, out.size())) {
    count = unwind(raw);
    first = leading_frames_in(skip, raw.first(count));
  }
  return keep(raw.first(count), first, out);
}

// The stack cache learns where each return address sits from the walk by the frames' rules
// (unwind.hpp), which reads each from its slot; where those rules do not reach (a signal frame),
// from libgcc's walk, which reports each frame's CFA. libunwind's unw_step would tell the same,
// but blocks signals (two system calls) each time its small cache of unwind rules misses. libgcc's
// is looked up by the first thread that needs it; the others never wait for it (they walk by the
// rules alone meanwhile).
bool libgcc_usable() {
  return unwind::find_libgcc() != nullptr;
}

// The validated stack cache. A program allocates from the same few call paths over and over, at
// the same stack depth: then capture_stack runs with the same frame address and return address,
// and the stack above it is the same if every return address still sits where it was found.
// Checking that takes one load per frame; libunwind takes a cache lookup and a CFI rule per
// frame. Entries are per thread: their addresses are in the thread's own stack.
constexpr std::size_t cached_frames = 48; // the default depth of 32, plus the dropped frames
constexpr std::size_t cache_sets = 16;
constexpr std::size_t cache_ways = 8; // the stacks of one call site at one depth share a set

// What a lookup compares first, for the ways of a set side by side (two cache lines): the
// stacks themselves are 576 bytes each.
struct StackTag {
  std::uintptr_t frame = 0;  // capture_stack's frame address; 0: empty
  std::uintptr_t caller = 0; // the return address into capture_stack's caller
};

// Left uninitialized until it is learned (its tag says so): a new cache's 75 KiB take a page
// only where an entry is filled, 20 page faults fewer for a short program's thread.
struct CachedStack {
  std::uint32_t count;      // frames, from the return into capture_stack's caller
  std::uint32_t first;      // the leading frames inside `skip`
  std::uint64_t remembered; // RememberedStack's slot
  std::array<std::uintptr_t, cached_frames> frames;
  std::array<std::uint32_t, cached_frames> slots; // where each was read, minus `frame`
};
static_assert(std::is_trivially_default_constructible_v<CachedStack>);

struct StackCache {
  std::array<std::array<StackTag, cache_ways>, cache_sets> tags;
  std::array<std::array<CachedStack, cache_ways>, cache_sets> sets;
  std::array<std::uint8_t, cache_sets> next_victim{};
  // Learning a stack writes an entry of some 600 bytes (a new page of the cache's at times) over
  // one that may still repeat. So stacks are learned only as long as the cache pays for it: a
  // program whose stacks rarely repeat (deep recursion at many depths) soon just walks them,
  // learning one stack in 256 unwound, so that a later phase of the program whose stacks do repeat
  // (a start-up, then a loop) gets them cached.
  std::uint64_t hits = 0;
  std::uint64_t learned = 0;
  std::uint64_t unwound = 0; // stacks unwound without learning them
  std::uint64_t walked = 0;  // stacks not found in the cache nor learned: uncached_walk's
  bool may_learn() const { return learned < 64 + hits / 32 + unwound / 256; }
  // Of the entries replaced, across the threads that used this cache (RememberedStack).
  std::uint32_t generation = 0;
  std::uint32_t table = 0;           // the stack table its remembered ids are of (stack_table)
  StackCache* next_unused = nullptr; // in unused_caches

  // Empty, for a new thread; the generations go on.
  void clear() {
    tags = {};
    next_victim = {};
    hits = learned = unwound = walked = 0;
  }
};

// Bumped by forget_remembered_stacks: every cache is emptied before its next use.
std::atomic<std::uint32_t> stack_table{0};

__thread StackCache* thread_cache __attribute__((tls_model("initial-exec"))) = nullptr;
pthread_key_t cache_key;
pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;

// The caches of ended threads. Never unmapped: a drainer may still remember an id in one
// (RememberedStack). Mapped, not allocated, and so never freed, which outside the profiler (the
// key's destructor, when a thread ends) would count as the program's.
std::mutex unused_caches_mutex;
StackCache* unused_caches = nullptr;

void keep_unused(void* cache) {
  // An allocation after this (another key's destructor) takes a cache again, and gives it back
  // in the next round of destructors.
  thread_cache = nullptr;
  const std::lock_guard lock(unused_caches_mutex);
  static_cast<StackCache*>(cache)->next_unused = unused_caches;
  unused_caches = static_cast<StackCache*>(cache);
}

StackCache* unused_or_new_cache() {
  {
    const std::lock_guard lock(unused_caches_mutex);
    if (StackCache* cache = unused_caches) {
      unused_caches = cache->next_unused;
      cache->clear();
      return cache;
    }
  }
  try {
    return new (map_table(sizeof(StackCache))) StackCache;
  } catch (const std::bad_alloc&) {
    return nullptr; // stacks are then unwound, not cached
  }
}

StackCache* current_cache() {
  if (thread_cache == nullptr) {
    pthread_once(&cache_key_once, [] { pthread_key_create(&cache_key, keep_unused); });
    thread_cache = unused_or_new_cache();
    if (thread_cache != nullptr) {
      pthread_setspecific(cache_key, thread_cache); // kept for reuse when the thread ends
    }
  }
  const std::uint32_t table = stack_table.load(std::memory_order_relaxed);
  if (thread_cache != nullptr && thread_cache->table != table) {
    thread_cache->clear(); // its ids are of another table
    thread_cache->table = table;
  }
  return thread_cache;
}

struct SlotWalk {
  const unwind::Libgcc& libgcc;
  std::uintptr_t capture_frame;
  StackBounds bounds;
  std::span<std::uintptr_t> frames;
  std::span<std::uintptr_t> slots;
  std::size_t count = 0;
  bool started = false; // frames start at the return into capture_stack's caller
  bool cacheable = true;
};

_Unwind_Reason_Code note_frame(_Unwind_Context* context, void* data) {
  auto& walk = *static_cast<SlotWalk*>(data);
  int signal_frame = 0; // its address comes from the signal context, not from a slot
  const std::uintptr_t ip = walk.libgcc.ip_info(context, &signal_frame);
  if (ip == 0) {
    return _URC_END_OF_STACK; // the outermost frame's: unw_backtrace ends before it too
  }
  // The context's CFA is that of the frame the return address `ip` leaves: it lies just below.
  const std::uintptr_t slot = walk.libgcc.cfa(context) - sizeof(std::uintptr_t);
  if (!walk.started) {
    walk.started = slot == walk.capture_frame + sizeof(std::uintptr_t);
    if (!walk.started) {
      return _URC_NO_REASON; // the frames of the capture itself
    }
  }
  // Only the thread's own stack: a coroutine's stack may be unmapped by the time the same
  // address comes back.
  walk.cacheable = walk.cacheable && signal_frame == 0 && walk.capture_frame >= walk.bounds.low &&
                   slot > walk.capture_frame && slot - walk.capture_frame <= UINT32_MAX &&
                   slot + sizeof(std::uintptr_t) <= walk.bounds.high && stack_word(slot) == ip;
  walk.frames[walk.count] = ip;
  walk.slots[walk.count] = slot;
  ++walk.count;
  return walk.count < walk.frames.size() ? _URC_NO_REASON : _URC_END_OF_STACK;
}

// Unwinds from capture_stack's caller noting where each return address was read: by the frames'
// rules, else with libgcc's walk. Returns false when the stack must not be cached: a signal
// frame, a frame whose address is not in its slot, or neither walk.
__attribute__((noinline)) bool unwind_noting_slots(std::uintptr_t capture_frame,
                                                   std::span<std::uintptr_t> frames,
                                                   std::span<std::uintptr_t> slots,
                                                   std::size_t& count) {
  const StackBounds bounds = current_stack_bounds();
  if (const auto walked = unwind::walk_by_rules(unwind::caller_registers(capture_frame), bounds,
                                                frames, slots.first(frames.size()))) {
    count = *walked;
    return count > 0 && slots[count - 1] - capture_frame <= UINT32_MAX;
  }
  count = 0;
  if (!libgcc_usable()) {
    return false;
  }
  SlotWalk walk{*unwind::libgcc_if_found(), capture_frame, bounds, frames, slots};
  walk.libgcc.backtrace(note_frame, &walk);
  count = walk.count;
  return walk.cacheable && walk.started;
}

// The walk by the frames' rules from the return into this function's caller (as unw_backtrace's),
// else libgcc's.
__attribute__((noinline)) std::size_t rules_backtrace(std::span<std::uintptr_t> out) {
  const auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  if (const auto walked =
          unwind::walk_by_rules(unwind::caller_registers(frame), current_stack_bounds(), out)) {
    return *walked;
  }
  return libgcc_usable() ? unwind::backtrace(*unwind::libgcc_if_found(), out) : 0;
}

// libunwind's unw_backtrace keeps a trace cache of its own for each thread that calls it: 256 KiB,
// all written at the thread's first call (64 page faults), which a program of a thousand such
// threads would carry a thousand times. A thread walks the stacks its cache does not hold by the
// frames' rules (one cache of rules for the whole process, a sixth slower than unw_backtrace:
// bench/stack_walk_bench.cpp) until it has walked rules_walks_per_thread of them: a thread that
// allocates from ever new stacks then gets unw_backtrace's speed, and the sampled mode's threads
// (one stack in hundreds of thousands of bytes allocated) never pay for its cache.
constexpr std::uint64_t rules_walks_per_thread = 1024;

using Walk = std::size_t (*)(std::span<std::uintptr_t>);

Walk uncached_walk(StackCache* cache) {
  if (cache == nullptr) {
    return backtrace;
  }
  ++cache->walked;
  return cache->walked <= rules_walks_per_thread ? rules_backtrace : backtrace;
}

// The stack above capture_stack (whose frame is at `capture_frame`) into `out`, without the
// leading frames inside `skip`: from the thread's cache when every slot still holds its return
// address, else unwound into `raw` (room for `out` and the frames that get dropped).
std::size_t cached_unwind(std::uintptr_t capture_frame, const CodeRanges& skip,
                          std::span<std::uintptr_t> raw, std::span<std::uintptr_t> out,
                          RememberedStack& remembered) {
  StackCache* cache = current_cache();
  const auto caller = stack_word(capture_frame + sizeof(void*));
  const std::size_t set =
      static_cast<std::size_t>(((capture_frame >> 4) ^ caller) * 0x9E3779B97F4A7C15ull >> 60);
  if (cache != nullptr) {
    for (std::size_t way = 0; way < cache_ways; ++way) {
      const StackTag& tag = cache->tags[set][way];
      CachedStack& entry = cache->sets[set][way];
      if (tag.frame != capture_frame || tag.caller != caller || entry.count > raw.size()) {
        continue;
      }
      bool same = true;
      for (std::uint32_t i = 1; i < entry.count && same; ++i) {
        same = stack_word(capture_frame + entry.slots[i]) == entry.frames[i];
      }
      if (same) {
        ++cache->hits;
        remembered = RememberedStack(entry.remembered);
        // The caller knows this stack by its id: the frames need not be copied out.
        return remembered.known() ? 0 : keep({entry.frames.data(), entry.count}, entry.first, out);
      }
    }
  }
  if (cache == nullptr || !cache->may_learn()) {
    if (cache != nullptr) {
      ++cache->unwound;
    }
    return unwind_and_keep(uncached_walk(cache), skip, raw, out);
  }
  ++cache->learned;
  std::array<std::uintptr_t, cached_frames> slots;
  std::size_t count = 0;
  const std::size_t requested = frames_to_unwind(out.size(), raw.size());
  const bool cacheable = unwind_noting_slots(capture_frame, raw.first(requested), slots, count);
  const std::size_t first = leading_frames_in(skip, raw.first(count));
  // capture_stack's frame not found (unw_backtrace still finds the stack), or too few frames
  if (count == 0 || unwound_too_few(count, requested, raw.size(), first, out.size())) {
    return unwind_and_keep(uncached_walk(cache), skip, raw, out);
  }
  if (cacheable) {
    const std::size_t way = cache->next_victim[set];
    cache->next_victim[set] = static_cast<std::uint8_t>((way + 1) % cache_ways);
    cache->tags[set][way] = StackTag{capture_frame, raw[0]};
    CachedStack& entry = cache->sets[set][way];
    entry.count = static_cast<std::uint32_t>(count);
    entry.first = static_cast<std::uint32_t>(first);
    std::atomic_ref(entry.remembered)
        .store(std::uint64_t{++cache->generation} << 32 | unknown_stack, std::memory_order_relaxed);
    remembered = RememberedStack(entry.remembered);
    for (std::size_t i = 0; i < count; ++i) {
      entry.frames[i] = raw[i];
      entry.slots[i] = static_cast<std::uint32_t>(slots[i] - capture_frame);
    }
  }
  return keep(raw.first(count), first, out);
}

} // namespace

bool CodeRanges::contains(std::uintptr_t address) const {
  return std::any_of(ranges.begin(), ranges.end(), [address](const auto& range) {
    return address >= range.first && address < range.second;
  });
}

CodeRanges own_and_allocator_code(const void* address_in_own_object) {
  CodeRanges code;
  SegmentSearch search{reinterpret_cast<std::uintptr_t>(address_in_own_object), &code};
  dl_iterate_phdr(add_executable_segments, &search);
  for (const char* name : operator_new_symbols) {
    void* function = dlsym(RTLD_DEFAULT, name);
    Dl_info info;
    void* symbol_entry = nullptr;
    if (function != nullptr && dladdr1(function, &info, &symbol_entry, RTLD_DL_SYMENT) != 0 &&
        symbol_entry != nullptr) {
      const auto* symbol = static_cast<const ElfW(Sym)*>(symbol_entry);
      const auto begin = reinterpret_cast<std::uintptr_t>(function);
      code.ranges.emplace_back(begin, begin + std::max<ElfW(Xword)>(symbol->st_size, 1));
    }
  }
  return code;
}

std::size_t capture_stack(Unwinder unwinder, const CodeRanges& skip, std::span<std::uintptr_t> out,
                          RememberedStack* remembered) {
  // Room for the frames that get dropped: the hook, the capture, the unwinder, operator new.
  constexpr std::size_t extra = 16;
  std::array<std::uintptr_t, 256 + extra> raw;
  const std::size_t wanted = std::min(out.size() + extra, raw.size());
  RememberedStack cached;
  std::size_t kept = 0;
  if (unwinder == Unwinder::Libunwind && wanted <= cached_frames) {
    const auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
    kept = cached_unwind(frame, skip, {raw.data(), wanted}, out, cached);
  } else {
    kept = unwind_and_keep(unwinder == Unwinder::FramePointers ? walk_frame_pointers : backtrace,
                           skip, {raw.data(), wanted}, out);
  }
  if (remembered != nullptr) {
    *remembered = cached;
  }
  return kept;
}

bool in_signal_handler() noexcept {
  // By the frames' rules first, which take no lock and allocate nothing: a walk that reaches the
  // stack's end met no signal frame (a signal frame's rule is beyond them). Only with the
  // thread's stack already known (finding it may allocate), and a few frames' room (a handler's
  // stack may be small); any other stack is searched with libgcc's walk.
  std::array<std::uintptr_t, 64> frames;
  const auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  if (const auto walked =
          unwind::walk_by_rules(unwind::caller_registers(frame), thread_stack, frames);
      walked && *walked < frames.size()) {
    return false;
  }
  struct SignalFrameSearch {
    _Unwind_Ptr (*ip_info)(_Unwind_Context*, int*);
    bool found = false;
  };
  const auto note = [](_Unwind_Context* context, void* data) {
    auto& walk = *static_cast<SignalFrameSearch*>(data);
    int interrupted = 0;
    walk.ip_info(context, &interrupted);
    walk.found = interrupted != 0;
    return walk.found ? _URC_END_OF_STACK : _URC_NO_REASON;
  };
  // Never looked up here: a signal handler may have interrupted the loader, which dlopen waits for.
  if (const unwind::Libgcc* libgcc = unwind::libgcc_if_found(); libgcc != nullptr) {
    SignalFrameSearch walk{libgcc->ip_info};
    libgcc->backtrace(note, &walk);
    return walk.found;
  }
  SignalFrameSearch walk{_Unwind_GetIPInfo};
  _Unwind_Backtrace(note, &walk);
  return walk.found;
}

void forget_remembered_stacks() {
  stack_table.fetch_add(1, std::memory_order_relaxed);
}

void prepare_capture(Unwinder unwinder, bool sampling) {
  current_stack_bounds();
  if (unwinder == Unwinder::Libunwind) {
    libgcc_usable();
  }
  // libunwind walks many stacks a little faster; a sampled profile walks one in hundreds of
  // thousands of bytes allocated, by the frames' rules alone, and never loads it.
  if (unwinder == Unwinder::LibunwindUncached || (unwinder == Unwinder::Libunwind && !sampling)) {
    unwind::find_libunwind();
  }
}

} // namespace hotscope::heap
