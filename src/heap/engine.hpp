// DHAT's accounting (docs/heap.md, "Accounting", as valgrind's dhat/dh_main.c computes it) over
// every block, and the raw figures it gives.
//
// Engine is not thread-safe by itself: its owner serializes calls (the heap libraries hold one
// mutex while they apply events to it). Nothing here allocates through a hook the engine itself
// observes: the owner marks the calling thread as "inside the profiler" first.
#pragma once

#include "heap/tables.hpp"
#include "snapshot/snapshot.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace hotscope::heap {

// DHAT's counters of one program point (site): one per interned stack.
struct SiteCounts {
  std::uint64_t total_bytes = 0;  // tb
  std::uint64_t total_blocks = 0; // tbk
  std::uint64_t lifetimes = 0;    // tl
  std::uint64_t curr_bytes = 0;
  std::uint64_t curr_blocks = 0;
  std::uint64_t max_bytes = 0;  // mb
  std::uint64_t max_blocks = 0; // mbk
  std::uint64_t gmax_bytes = 0; // gb
  std::uint64_t gmax_blocks = 0;
};

// What the engine knows at one moment, figures finalized as DHAT does at exit: the peak check
// has run, and the lifetimes of live blocks count up to `end_time`. Times are in the unit of the
// engine's caller until in_microseconds() converts them.
struct RawSite {
  // Code addresses, innermost first. Not a copy: they lie in the stack table of the engine that
  // took the profile, which keeps each stack where it is for as long as the engine lives.
  std::span<const std::uintptr_t> stack;
  SiteCounts counts; // curr_* are the t-end figures (eb, ebk)
  StackId id = 0;    // the stack's in that table
};

// The process-wide figures at one moment, for gauges (/v1/metrics): everything allocated in the
// measuring window, what is live now, and the peak of live bytes (with its blocks).
using Totals = HeapTotals;

// What is live now and the peak: the part of Totals both engines know in constant time.
struct LiveFigures {
  std::uint64_t live_bytes = 0;
  std::uint64_t live_blocks = 0;
  std::uint64_t peak_bytes = 0;
  std::uint64_t peak_blocks = 0;
};

struct RawProfile {
  std::uint64_t end_time = 0;  // te
  std::uint64_t gmax_time = 0; // tg
  std::uint64_t unknown_frees = 0;
  std::uint64_t unknown_reallocs = 0;
  bool attached = false; // the process was attached to while it ran (set by the recorder)
  // Attached (count_unknown_as_before_attach): the frees and reallocs of blocks never seen.
  std::uint64_t frees_before_attach = 0;
  std::uint64_t reallocs_before_attach = 0;
  std::vector<RawSite> sites;
};

// Times in µs, from times in units of `microseconds_per_unit` µs each.
RawProfile in_microseconds(RawProfile raw, double microseconds_per_unit);

// Times (`now`) are in any unit of a clock that never goes back, as the caller chooses.
class Engine {
public:
  // Interns `stack` (innermost first); equal stacks get the same id, stored once. `hash`, if
  // given, is hash_values(stack).
  StackId intern(std::span<const std::uintptr_t> stack) { return stacks_.intern(stack); }
  StackId intern(std::span<const std::uintptr_t> stack, std::uint64_t hash) {
    return stacks_.intern(stack, hash);
  }
  // Starts fetching what interning a stack of `hash` reads first.
  void prefetch_stack(std::uint64_t hash) const { stacks_.prefetch(hash); }

  // A new block. Size 0 counts as 1 byte, as valgrind does.
  void alloc(std::uintptr_t address, std::size_t size, StackId stack, std::uint64_t now);
  // Returns false, and counts it, when `address` is not a live block.
  bool free(std::uintptr_t address, std::uint64_t now);
  // A realloc, in two steps: the first before the real call (its old address may be handed out
  // again as soon as the call returns), the second after it. With nothing in between they count
  // as valgrind counts a realloc.
  // Step one takes the block at `old_address` out of the live blocks, figures unchanged, and
  // keeps it under `key` (a number no other realloc in progress has) for step two.
  void realloc_begin(std::uint64_t key, std::uintptr_t old_address);
  // Step two. A known block resized (and maybe moved to `new_address`) keeps its site and
  // allocation time and counts as a new allocation of `size` bytes (0 counts as 1). A failed
  // call (`new_address` 0) leaves it as it was, unless `size` was 0: then it was freed. An
  // unknown block is counted, and its new address recorded as an allocation at `stack`.
  void realloc_end(std::uint64_t key, std::uintptr_t new_address, std::size_t size, StackId stack,
                   std::uint64_t now);

  bool is_live(std::uintptr_t address) const { return live_.find(address) != nullptr; }
  // Starts fetching what an event about the block at `address` will read.
  void prefetch(std::uintptr_t address) const { live_.prefetch(address); }
  // The interned stacks: ids from 0 to stack_count() - 1.
  std::size_t stack_count() const { return stacks_.size(); }
  std::span<const std::uintptr_t> stack(StackId id) const { return stacks_.stack(id); }
  std::uint64_t live_bytes() const { return curr_bytes_; }
  Totals totals() const {
    return {total_bytes_, total_blocks_, curr_bytes_, curr_blocks_, max_bytes_, max_blocks_};
  }
  LiveFigures live_figures() const { return {curr_bytes_, curr_blocks_, max_bytes_, max_blocks_}; }

  // The figures as if the program ended at `now`; the engine itself is unchanged, so this
  // can be called at any time.
  RawProfile snapshot(std::uint64_t now) const;
  // A new measuring window from `now`: the totals restart, and the blocks still live stay, as
  // if allocated when the window starts (their lifetimes still count from their allocation).
  void restart(std::uint64_t now);
  // The profile of a process attached to while it ran (docs/heap.md, "Attach to a running
  // program"): a free or realloc of a block never seen is one allocated before the attach.
  void count_unknown_as_before_attach() { attached_ = true; }

private:
  void grow(SiteCounts& site, std::uint64_t size, std::uint64_t now);
  void retire(const LiveBlock& block, std::uint64_t now);
  void check_for_peak();
  SiteCounts& changing(StackId id);

  StackTable stacks_;
  Table<SiteCounts> sites_; // indexed by StackId
  // Peaks recorded by check_for_peak, and per site the count when its figures last changed: a
  // site behind the count holds its figures at the latest peak in curr_*, not gmax_*.
  std::uint64_t peak_ = 0;
  std::vector<std::uint64_t> synced_;
  LiveTable live_;
  struct Reallocating {
    std::uint64_t key;
    std::uintptr_t old_address; // 0: not a live block
    LiveBlock block;
  };
  std::vector<Reallocating> reallocating_; // between the two steps (one per thread at most)

  std::uint64_t total_bytes_ = 0;
  std::uint64_t total_blocks_ = 0;
  std::uint64_t curr_bytes_ = 0;
  std::uint64_t curr_blocks_ = 0;
  std::uint64_t max_bytes_ = 0;
  std::uint64_t max_blocks_ = 0;
  std::uint64_t gmax_time_ = 0;
  std::uint64_t unknown_frees_ = 0;
  std::uint64_t unknown_reallocs_ = 0;
  bool attached_ = false;
  std::uint64_t frees_before_attach_ = 0;
  std::uint64_t reallocs_before_attach_ = 0;
};

} // namespace hotscope::heap
