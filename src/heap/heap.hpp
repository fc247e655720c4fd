// The heap profiler's core: DHAT's accounting (docs/heap.md, "Accounting", as valgrind's
// dhat/dh_main.c computes it), call stacks interned once each, stack capture, and the step that
// turns the raw figures into a symbolized HeapProfile for the exporters.
//
// Engine is not thread-safe by itself: its owner serializes calls (the heap libraries hold one
// mutex while they apply events to it). Nothing here allocates through a hook the engine itself
// observes: the owner marks the calling thread as "inside the profiler" first.
#pragma once

#include "config/config.hpp"
#include "snapshot/snapshot.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <vector>

namespace hotscope::symbols {
class Symbolizer;
}

namespace hotscope::heap {

using StackId = std::uint32_t;

// Memory for the profiler's own tables (all of them, from their first entry, and the threads'
// stack caches): mapped and unmapped directly, never through malloc, so that the program's heap
// is laid out as without the profiler. Through malloc, a regrown table freed a block malloc had
// mapped, which raises glibc's threshold for mapping (up to 32 MiB) for the whole process: the
// program's own large blocks then came from its heap, where each free merges every freed small
// block first (malloc_consolidate; perl 10 % slower for that alone). And the small ones, taken
// from the program's heap at its first samples, sat among its blocks: 104 KiB of them after 256
// sampled stacks (HeapPreload.TheSampledModesRecordsStayOutOfTheProgramsHeap).
void* map_table(std::size_t bytes); // throws std::bad_alloc
void unmap_table(void* table, std::size_t bytes);

template <class T> struct TableAllocator {
  using value_type = T;
  TableAllocator() = default;
  template <class U> TableAllocator(const TableAllocator<U>&) noexcept {}
  T* allocate(std::size_t count) {
    if (count > SIZE_MAX / sizeof(T)) {
      throw std::bad_array_new_length();
    }
    return static_cast<T*>(map_table(count * sizeof(T)));
  }
  void deallocate(T* table, std::size_t count) noexcept { unmap_table(table, count * sizeof(T)); }
  friend bool operator==(const TableAllocator&, const TableAllocator&) { return true; }
};
template <class T> using Table = std::vector<T, TableAllocator<T>>;

// Room in `table` for one more entry. Each regrowth is a mapping of its own (two system calls,
// on the sampled mode's allocating thread): a table grown one entry at a time doubles from a
// page's worth, not from one entry.
template <class T> void make_room_for_one(Table<T>& table) {
  if (table.size() == table.capacity()) {
    table.reserve(std::max(table.capacity() * 2, std::size_t{4096} / sizeof(T)));
  }
}

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

struct RawProfile {
  std::uint64_t end_time = 0;  // te
  std::uint64_t gmax_time = 0; // tg
  std::uint64_t unknown_frees = 0;
  std::uint64_t unknown_reallocs = 0;
  std::vector<RawSite> sites;
};

// Times in µs, from times in units of `microseconds_per_unit` µs each.
RawProfile in_microseconds(RawProfile raw, double microseconds_per_unit);

// A live block: its site, its size as counted, and when it was allocated.
struct LiveBlock {
  StackId site;
  std::uint64_t size;
  std::uint64_t alloc_time;
};

// Live blocks by address: open addressing with linear probing and backward-shift deletion, one
// flat array, no allocation per block (this is on every malloc and free).
class LiveTable {
public:
  LiveBlock* find(std::uintptr_t address);
  const LiveBlock* find(std::uintptr_t address) const;
  void insert(std::uintptr_t address, const LiveBlock& block); // replaces a block at `address`
  void erase(std::uintptr_t address);                          // `address` must be live
  // Removes the block at `address` into `block` (one probe); false when none lives there.
  bool take(std::uintptr_t address, LiveBlock& block);
  // Starts fetching the slot where a lookup of `address` begins.
  void prefetch(std::uintptr_t address) const {
    if (!slots_.empty()) {
      __builtin_prefetch(&slots_[home(address)], 1);
    }
  }
  std::size_t size() const { return count_; }
  template <class F> void for_each(F&& visit) const {
    for (const Slot& slot : slots_) {
      if (slot.address != 0) {
        visit(slot.block);
      }
    }
  }

private:
  struct Slot {
    std::uintptr_t address; // 0: empty (no block lives at address 0)
    LiveBlock block;
  };
  std::size_t home(std::uintptr_t address) const;
  std::size_t slot_of(std::uintptr_t address) const; // the slot holding it, or an empty one
  void erase_slot(std::size_t hole);
  void grow();

  Table<Slot> slots_;
  std::size_t count_ = 0;
  unsigned shift_ = 64;
};

// FNV-1a's step over `values` in four interleaved lanes, folded into one at the end, then its
// high bits folded down: HashIndex uses the low bits. One chain of multiplications made a stack's
// hash wait 4 cycles a frame; four chains keep pace with the loads.
template <class T> std::uint64_t hash_values(std::span<const T> values) {
  constexpr std::uint64_t prime = 1099511628211ull;
  constexpr std::uint64_t basis = 14695981039346656037ull;
  std::array<std::uint64_t, 4> lanes = {basis, basis + 1, basis + 2, basis + 3};
  const std::size_t rest = values.size() % lanes.size();
  const std::span<const T> whole = values.first(values.size() - rest);
  for (auto value = whole.begin(); value != whole.end(); value += lanes.size()) {
    for (std::size_t lane = 0; lane < lanes.size(); ++lane) {
      lanes[lane] = (lanes[lane] ^ value[static_cast<std::ptrdiff_t>(lane)]) * prime;
    }
  }
  std::uint64_t hash = values.size();
  for (const T value : values.last(rest)) {
    hash = (hash ^ value) * prime;
  }
  for (const std::uint64_t lane : lanes) {
    hash = (hash ^ lane) * prime;
  }
  return hash ^ (hash >> 29);
}

// Dense ids (0, 1, 2, ...) found by hash, for tables that keep what the ids stand for themselves:
// open addressing with linear probing, at most half full, one flat array of (hash, id). Lookups
// that repeat millions of times (a stack per allocation, a frame per site at exit) stay in a few
// cache lines, where a node-based map chases a pointer per lookup.
class HashIndex {
public:
  // The id whose entry `is(id)` says equals the one looked up (of those with `hash`), or `next`
  // (the count of ids so far) added for it.
  template <class Is> std::uint32_t find_or_add(std::uint64_t hash, std::uint32_t next, Is&& is) {
    if ((std::size_t{next} + 1) * 2 > slots_.size()) {
      grow();
    }
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = hash & mask;
    for (; slots_[i].id != none; i = (i + 1) & mask) {
      if (slots_[i].hash == hash && is(slots_[i].id)) {
        return slots_[i].id;
      }
    }
    slots_[i] = Slot{hash, next};
    return next;
  }
  // Starts fetching where a lookup of `hash` begins.
  void prefetch(std::uint64_t hash) const {
    if (!slots_.empty()) {
      __builtin_prefetch(&slots_[hash & (slots_.size() - 1)]);
    }
  }

private:
  struct Slot {
    std::uint64_t hash;
    std::uint32_t id; // `none`: empty
  };
  static constexpr std::uint32_t none = ~std::uint32_t{0};
  void grow();

  Table<Slot> slots_;
};

// Addresses to dense ids, found by a HashIndex: each distinct address is handled once.
class AddressIndex {
public:
  // The id of `address`, and true when it is new (then its id is the count of ids before it).
  std::pair<std::uint32_t, bool> find_or_add(std::uintptr_t address);

private:
  HashIndex index_;
  Table<std::uintptr_t> addresses_; // by id
};

// Interned stacks: each one's addresses stored once, found by hash. Ids are dense, from 0.
class StackTable {
public:
  // Equal stacks (innermost first) get the same id.
  StackId intern(std::span<const std::uintptr_t> stack) {
    return intern(stack, hash_values(stack));
  }
  // As intern(), `hash` being hash_values(stack).
  StackId intern(std::span<const std::uintptr_t> stack, std::uint64_t hash);
  // Starts fetching what interning a stack of `hash` reads first.
  void prefetch(std::uint64_t hash) const { index_.prefetch(hash); }
  // As intern(), and a new stack gets a default-constructed entry in `sites` (indexed by id).
  template <class Site>
  StackId intern_site(std::span<const std::uintptr_t> stack, Table<Site>& sites) {
    const StackId id = intern(stack);
    if (id == sites.size()) {
      make_room_for_one(sites);
      sites.emplace_back();
    }
    return id;
  }
  std::span<const std::uintptr_t> stack(StackId id) const;
  std::size_t size() const { return ranges_.size(); }

private:
  // The frames, in blocks that never move: a growing array would copy them all at each doubling
  // and touch twice their memory, on the allocating thread. A stack is never split between
  // blocks.
  static constexpr std::size_t block_frames = std::size_t{1} << 16;
  struct UnmapBlock {
    void operator()(std::uintptr_t* block) const noexcept {
      unmap_table(block, block_frames * sizeof(std::uintptr_t));
    }
  };
  Table<std::unique_ptr<std::uintptr_t[], UnmapBlock>> blocks_;
  Table<std::pair<std::size_t, std::size_t>> ranges_; // offset (block, then index), length
  HashIndex index_;
};

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

  // The figures as if the program ended at `now`; the engine itself is unchanged, so this
  // can be called at any time.
  RawProfile snapshot(std::uint64_t now) const;
  // A new measuring window from `now`: the totals restart, and the blocks still live stay, as
  // if allocated when the window starts (their lifetimes still count from their allocation).
  void restart(std::uint64_t now);

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
};

// ---- Sampled mode: Poisson byte sampling (docs/heap.md) ----

// Sample points fall on the stream of allocated bytes as a Poisson process of mean
// `mean_bytes`: an allocation of s bytes holds one with probability 1 - exp(-s / mean_bytes).
struct SamplingPlan {
  double mean_bytes = 512.0 * 1024;
  std::uint64_t seed = 0;
  std::atomic<std::uint64_t> threads{0}; // hands each thread its own random stream
};

// How many allocations of `size` bytes a sampled one stands for, on average:
// 1 / (1 - exp(-size / mean_bytes)). Size 0 counts as 1 byte.
double sample_weight(std::uint64_t size, double mean_bytes);

// One thread's sampler. Constant-initialized, so it can be a `__thread` variable: its stream is
// seeded from the plan the first time it reaches the slow path.
class Sampler {
public:
  // True when this allocation holds a sample point. The common case is one subtraction.
  bool sample(std::size_t size, SamplingPlan& plan) {
    const std::uint64_t bytes = size == 0 ? 1 : size;
    if (bytes < remaining_) {
      remaining_ -= bytes;
      return false;
    }
    return at_sample_point(bytes, plan);
  }

  // Where the countdown of bytes to the next sample point is: the x86-64 malloc entry
  // (heap/interposer/hooks.cpp) reads it without a call.
  static constexpr std::size_t countdown_offset() { return offsetof(Sampler, remaining_); }

private:
  bool at_sample_point(std::uint64_t bytes, SamplingPlan& plan);
  std::uint64_t next_interval(const SamplingPlan& plan);

  std::uint64_t remaining_ = 0; // bytes to the next sample point; 0 until seeded
  std::uint64_t random_ = 0;    // splitmix64 state
  bool seeded_ = false;
};

// Lets a free skip the lock: a count per hash bucket of the sampled blocks that are live, and a
// bit per bucket that says whether its count is not 0. A free whose bit is clear was not sampled.
// The bits (8 KiB) are what every free reads: small enough to stay in the L1 cache, where the
// counts (256 KiB) would not. Updated under the owner's lock, read without it.
class SampledAddresses {
public:
  void add(std::uintptr_t address) {
    const std::size_t i = index(address);
    if (counts_[i]++ == 0) {
      bits_[i / 64].fetch_or(std::uint64_t{1} << (i % 64), std::memory_order_relaxed);
    }
  }
  void remove(std::uintptr_t address) {
    const std::size_t i = index(address);
    if (--counts_[i] == 0) {
      bits_[i / 64].fetch_and(~(std::uint64_t{1} << (i % 64)), std::memory_order_relaxed);
    }
  }
  bool may_contain(std::uintptr_t address) const {
    const std::size_t i = index(address);
    return (bits_[i / 64].load(std::memory_order_relaxed) >> (i % 64) & 1) != 0;
  }

  // The hash and the layout the x86-64 free entry (heap/interposer/hooks.cpp) repeats in assembly.
  static constexpr unsigned bits = 16;
  static constexpr std::uint64_t multiplier = 0x9E3779B97F4A7C15ull;
  static constexpr std::size_t bits_offset() { return offsetof(SampledAddresses, bits_); }

private:
  static std::size_t index(std::uintptr_t address) {
    return static_cast<std::size_t>((address * multiplier) >> (64 - bits));
  }
  std::atomic<std::uint64_t> bits_[(std::size_t{1} << bits) / 64] = {};
  std::uint32_t counts_[std::size_t{1} << bits] = {}; // only under the owner's lock
};

// DHAT's accounting over sampled blocks only, each weighted by sample_weight(size): the figures
// are unbiased estimates of what Engine would report for every block. Serialized by its owner,
// as Engine is. A realloc is recorded by the owner as a free and a new allocation.
class SampledEngine {
public:
  SampledEngine() = default;
  explicit SampledEngine(double mean_bytes) : mean_bytes_(mean_bytes) {}

  StackId intern(std::span<const std::uintptr_t> stack);
  void alloc(std::uintptr_t address, std::size_t size, StackId stack, std::uint64_t now);
  // False when `address` is not a live sampled block.
  bool free(std::uintptr_t address, std::uint64_t now);
  std::size_t live_blocks() const { return live_.size(); }
  std::uint64_t sampled_allocations() const { return sampled_; }

  // Estimates rounded to whole bytes and blocks, as if the program ended at `now`.
  RawProfile snapshot(std::uint64_t now) const;
  // As Engine::restart.
  void restart(std::uint64_t now);
  // Estimates rounded to whole bytes and blocks.
  Totals totals() const;

private:
  struct Site {
    double total_bytes = 0, total_blocks = 0, lifetimes = 0;
    double curr_bytes = 0, curr_blocks = 0;
    double max_bytes = 0, max_blocks = 0, gmax_bytes = 0, gmax_blocks = 0;
  };
  void check_for_peak();

  double mean_bytes_ = 512.0 * 1024;
  StackTable stacks_;
  Table<Site> sites_;
  LiveTable live_;
  double curr_bytes_ = 0, curr_blocks_ = 0, max_bytes_ = 0, max_blocks_ = 0;
  std::uint64_t gmax_time_ = 0;
  std::uint64_t sampled_ = 0;
};

// ---- Stack capture ----

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
  explicit RememberedStack(std::atomic<std::uint64_t>& slot)
      : slot_(&slot), seen_(slot.load(std::memory_order_relaxed)) {}
  // Whether the stack came from the cache, and whether the id was known when it did.
  bool cached() const { return slot_ != nullptr; }
  bool known() const { return cached() && id() != unknown_stack; }
  StackId id() const { return static_cast<StackId>(seen_); }
  std::uint32_t generation() const { return static_cast<std::uint32_t>(seen_ >> 32); }
  std::atomic<std::uint64_t>* slot() const { return slot_; }

  // Tells `slot` the `id` its stack was interned as, unless its entry was replaced since
  // `generation` (or the id is known already). Any thread.
  static void remember(std::atomic<std::uint64_t>& slot, std::uint32_t generation, StackId id) {
    std::uint64_t unknown = std::uint64_t{generation} << 32 | unknown_stack;
    // Looked at before it is written: the line is the capturing thread's, and stays shared.
    if (slot.load(std::memory_order_relaxed) == unknown) {
      slot.compare_exchange_strong(unknown, std::uint64_t{generation} << 32 | id,
                                   std::memory_order_relaxed);
    }
  }

private:
  std::atomic<std::uint64_t>* slot_ = nullptr;
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
// The capture's one-time work, done now on the calling thread rather than at its first capture:
// finding the thread's stack (glibc reads /proc/self/maps for the main thread's) and, for the
// Libunwind unwinder, loading libgcc's. What that allocates stays for the process's life.
void prepare_capture(Unwinder unwinder);

// ---- From raw figures to the exporters' model ----

// Times in `raw` are in µs. Symbolizes every stack (inlined frames expanded, frames below `main`
// dropped), builds the deduplicated frame table and keys sites by their final frame-index vector.
// Sites that end up with the same vector are merged: counts add up, mb/mbk are the largest single
// site's (the exact value is unknowable after the fact).
// `symbolizer` is refreshed first (after a dlopen or dlclose since its last use it forgets what
// they may have changed), so one kept across profiles resolves each address once, never stale.
HeapProfile build_profile(const RawProfile& raw, std::string command, std::int64_t pid,
                          symbols::Symbolizer& symbolizer);

// Profiles of one stack table's stacks (ids 0, 1, ... in the order added), with what each stack
// needs done once (symbolized up to main, inlined frames expanded, its frames added to the frame
// table, its site found by its frames) done ahead of the profiles, where a thread has the time
// (the full mode's collector): a profile then only adds up each stack's counts into its site.
// Each return address is resolved once. After a refresh of the symbolizer that forgot results
// (a dlopen or dlclose, by whoever called it) everything is done again.
class ProfileBuilder {
public:
  ProfileBuilder();
  ~ProfileBuilder(); // where State is whole

  // How many stacks add() added: the next one is the stack of that id.
  std::size_t added() const;
  // Starts over if the symbolizer forgot results since the stacks were added.
  void forget_if_stale(const symbols::Symbolizer& symbolizer);
  // Adds the next stack of the table (id added()). The symbolizer refreshed by the caller.
  void add(std::span<const std::uintptr_t> stack, symbols::Symbolizer& symbolizer);
  // As build_profile. A raw site is matched to the stack added with its id, if that was kept
  // where the site's stack is (the same span's data: the same table); the others are added now.
  // The frame table also lists the frames of stacks added that the profile has no site of
  // (stacks without blocks).
  HeapProfile build(const RawProfile& raw, std::string command, std::int64_t pid,
                    symbols::Symbolizer& symbolizer);
  // As build(), for the last profile (the report at exit): the builder's tables are moved into
  // it, not copied, and the next use of the builder starts over.
  HeapProfile build_last(const RawProfile& raw, std::string command, std::int64_t pid,
                         symbols::Symbolizer& symbolizer);

private:
  // build() and build_last(): `hand_over` moves the tables into the profile.
  HeapProfile make_profile(const RawProfile& raw, std::string command, std::int64_t pid,
                           symbols::Symbolizer& symbolizer, bool hand_over);
  // The site of `stack`, added if it is new.
  std::uint32_t site_of(std::span<const std::uintptr_t> stack, symbols::Symbolizer& symbolizer);
  // The site of the stack `id`, kept where `stack` is, found or added.
  std::uint32_t site_of(StackId id, std::span<const std::uintptr_t> stack,
                        symbols::Symbolizer& symbolizer);
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace hotscope::heap
