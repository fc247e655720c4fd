// Stack capture for the allocation hooks (libunwind or frame pointers).
#pragma once

#include "config/config.hpp"
#include "heap/tables.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace hotscope::heap {

// How stacks are walked: chosen by HOTSCOPE_HEAP_UNWIND (config::Unwinder).
using Unwinder = config::Unwinder;

// Address ranges [begin, end) of code that is the profiler's or the allocator's own: leading
// frames inside them are dropped, so a stack starts at the allocation's call site.
struct CodeRanges {
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> ranges;
  bool contains(std::uintptr_t address) const;
};

// The executable segments of the loaded object containing `address`, and the bodies of every
// `operator new` form currently loaded (found through the dynamic symbol table).
CodeRanges own_and_allocator_code(const void* address_in_own_object);

inline constexpr StackId unknown_stack = ~StackId{0};

// Where the Libunwind unwinder's per-thread cache keeps the id a cached stack was interned as,
// seen by the thread that captured it and by whoever interns the stack for it (the full mode's
// drainer): one word, the cache entry's generation (new each time the entry is replaced) in the
// high half and the id in the low half, `unknown_stack` until it is known. The caches' memory is
// never unmapped (a new thread reuses an ended thread's), so a slot outlives its thread, and the
// generation keeps an id off an entry that was replaced meanwhile.
class RememberedStack {
public:
  RememberedStack() = default;
  // `slot` is a plain word (the stack cache's entries then take no page until they are filled),
  // read and written only atomically.
  explicit RememberedStack(std::uint64_t& slot)
      : slot_(&slot), seen_(std::atomic_ref(slot).load(std::memory_order_relaxed)) {}
  // Whether the stack came from the cache, and whether the id was known when it did.
  bool cached() const { return slot_ != nullptr; }
  bool known() const { return cached() && id() != unknown_stack; }
  StackId id() const { return static_cast<StackId>(seen_); }
  std::uint32_t generation() const { return static_cast<std::uint32_t>(seen_ >> 32); }
  std::uint64_t* slot() const { return slot_; }

  // Tells `slot` the `id` its stack was interned as, unless its entry was replaced since
  // `generation` (or the id is known already). Any thread.
  static void remember(std::uint64_t& slot, std::uint32_t generation, StackId id) {
    const std::atomic_ref shared(slot);
    std::uint64_t unknown = std::uint64_t{generation} << 32 | unknown_stack;
    // Looked at before it is written: the line is the capturing thread's, and stays shared.
    if (shared.load(std::memory_order_relaxed) == unknown) {
      shared.compare_exchange_strong(unknown, std::uint64_t{generation} << 32 | id,
                                     std::memory_order_relaxed);
    }
  }

private:
  std::uint64_t* slot_ = nullptr;
  std::uint64_t seen_ = 0;
};

// Fills `out` with return addresses, innermost first, dropping the leading frames inside `skip`.
// Returns the number written (at most out.size()). Frame pointers are followed only within the
// calling thread's stack; code without them yields a truncated or shifted stack.
// With `remembered`, a stack found in the Libunwind unwinder's cache also gets its slot
// (RememberedStack), where its id can be remembered, to skip interning it next time; not cached()
// otherwise. When the id is known(), nothing is written to `out` and 0 returned. The ids must all
// come from one StackTable.
std::size_t capture_stack(Unwinder unwinder, const CodeRanges& skip, std::span<std::uintptr_t> out,
                          RememberedStack* remembered = nullptr);
// The ids remembered from here on are of a new StackTable (a recorder built again after a
// detach, docs/heap.md "Attach to a running program"): each thread's cache forgets its stacks
// before its next capture.
void forget_remembered_stacks();
// True when the calling thread runs a signal handler, at any depth: a frame on its stack was
// interrupted by a signal (the unwinder reports its address as the instruction itself, not as a
// return address). Walked with libgcc's unwinder when the capture has loaded it: the
// _Unwind_Backtrace of a program that loaded libunwind first is libunwind's, which blocks signals
// (two system calls) at every frame.
bool in_signal_handler() noexcept;
// The capture's one-time work, done now on the calling thread rather than at its first capture:
// finding the thread's stack (glibc reads /proc/self/maps for the main thread's) and, for the
// Libunwind unwinder, looking libgcc's up (for the stacks the frames' rules do not reach), and
// loading libunwind unless `sampling` (a sampled profile walks few stacks, by the frames' rules
// alone). What that allocates stays for the process's life.
void prepare_capture(Unwinder unwinder, bool sampling);

} // namespace hotscope::heap
