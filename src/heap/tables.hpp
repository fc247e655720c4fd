// The heap profiler's tables (tables.cpp): memory mapped for them directly, the live blocks by
// address, dense ids by hash, and the interned stacks. Serialized by their owner, as the engines
// that hold them are (engine.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <utility>
#include <vector>

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

} // namespace hotscope::heap
