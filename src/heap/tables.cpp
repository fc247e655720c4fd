// The profiler's tables, in memory mapped directly (TableAllocator).
#include "heap/tables.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <new>

namespace hotscope::heap {

void* map_table(std::size_t bytes) {
  void* table = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (table == MAP_FAILED) {
    throw std::bad_alloc();
  }
  return table;
}

void unmap_table(void* table, std::size_t bytes) {
  munmap(table, bytes);
}

// Fibonacci hashing: block addresses share their low bits, the product's high bits do not.
std::size_t LiveTable::home(std::uintptr_t address) const {
  return static_cast<std::size_t>((address * 0x9E3779B97F4A7C15ull) >> shift_);
}

std::size_t LiveTable::slot_of(std::uintptr_t address) const {
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = home(address);
  while (slots_[i].address != 0 && slots_[i].address != address) {
    i = (i + 1) & mask;
  }
  return i;
}

const LiveBlock* LiveTable::find(std::uintptr_t address) const {
  if (slots_.empty()) {
    return nullptr;
  }
  const Slot& slot = slots_[slot_of(address)];
  return slot.address == address ? &slot.block : nullptr;
}

LiveBlock* LiveTable::find(std::uintptr_t address) {
  return const_cast<LiveBlock*>(static_cast<const LiveTable*>(this)->find(address));
}

void LiveTable::grow() {
  Table<Slot> old = std::move(slots_);
  // From a page's worth: a short program's few sampled blocks fault in one page, not eight.
  const std::size_t size = old.empty() ? std::bit_floor(4096 / sizeof(Slot)) : old.size() * 2;
  slots_.assign(size, Slot{0, {}});
  shift_ = 64 - static_cast<unsigned>(std::countr_zero(size));
  for (const Slot& slot : old) {
    if (slot.address != 0) {
      slots_[slot_of(slot.address)] = slot;
    }
  }
}

void LiveTable::insert(std::uintptr_t address, const LiveBlock& block) {
  if ((count_ + 1) * 2 > slots_.size()) { // at most half full keeps probes short
    grow();
  }
  Slot& slot = slots_[slot_of(address)];
  if (slot.address == 0) {
    ++count_;
  }
  slot = Slot{address, block};
}

void LiveTable::erase(std::uintptr_t address) {
  erase_slot(slot_of(address));
}

bool LiveTable::take(std::uintptr_t address, LiveBlock& block) {
  if (slots_.empty()) {
    return false;
  }
  const std::size_t slot = slot_of(address);
  if (slots_[slot].address != address) {
    return false;
  }
  block = slots_[slot].block;
  erase_slot(slot);
  return true;
}

void LiveTable::erase_slot(std::size_t hole) {
  const std::size_t mask = slots_.size() - 1;
  // Move back every later entry of the probe run that may not sit beyond the hole.
  for (std::size_t next = (hole + 1) & mask; slots_[next].address != 0; next = (next + 1) & mask) {
    const std::size_t wanted = home(slots_[next].address);
    const bool stays =
        hole < next ? (hole < wanted && wanted <= next) : (hole < wanted || wanted <= next);
    if (!stays) {
      slots_[hole] = slots_[next];
      hole = next;
    }
  }
  slots_[hole].address = 0;
  --count_;
}

std::span<const std::uintptr_t> StackTable::stack(StackId id) const {
  const auto [offset, length] = ranges_[id];
  return {blocks_[offset / block_frames].get() + offset % block_frames, length};
}

void HashIndex::grow() {
  Table<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 256 : old.size() * 2, Slot{0, none});
  const std::size_t mask = slots_.size() - 1;
  for (const Slot& slot : old) {
    if (slot.id != none) {
      std::size_t i = slot.hash & mask;
      while (slots_[i].id != none) {
        i = (i + 1) & mask;
      }
      slots_[i] = slot;
    }
  }
}

StackId StackTable::intern(std::span<const std::uintptr_t> frames, std::uint64_t hash) {
  const auto next = static_cast<StackId>(ranges_.size());
  const StackId id = index_.find_or_add(hash, next, [&](StackId known) {
    const auto known_frames = stack(known);
    return std::equal(known_frames.begin(), known_frames.end(), frames.begin(), frames.end());
  });
  if (id != next) {
    return id;
  }
  // Where the last stack ended in the last block. A stack may be empty (every frame inside the
  // profiler), and still needs a block to point into.
  std::size_t used =
      ranges_.empty() ? 0 : ranges_.back().first % block_frames + ranges_.back().second;
  if (blocks_.empty() || block_frames - used < frames.size()) {
    blocks_.emplace_back(
        static_cast<std::uintptr_t*>(map_table(block_frames * sizeof(std::uintptr_t))));
    used = 0;
  }
  make_room_for_one(ranges_);
  ranges_.emplace_back((blocks_.size() - 1) * block_frames + used, frames.size());
  std::copy(frames.begin(), frames.end(), blocks_.back().get() + used);
  return id;
}

std::pair<std::uint32_t, bool> AddressIndex::find_or_add(std::uintptr_t address) {
  const auto next = static_cast<std::uint32_t>(addresses_.size());
  const std::uint64_t product = address * 0x9E3779B97F4A7C15ull; // spreads the low bits
  const std::uint32_t id =
      index_.find_or_add(product ^ (product >> 32), next,
                         [&](std::uint32_t known) { return addresses_[known] == address; });
  if (id == next) {
    addresses_.push_back(address);
  }
  return {id, id == next};
}

} // namespace hotscope::heap
