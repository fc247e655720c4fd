// DHAT's accounting, step for step as valgrind's dhat/dh_main.c does it (intro_Block,
// retire_Block, resize_Block, check_for_peak), with clock time instead of instructions.
#include "heap/engine.hpp"

#include <algorithm>

namespace hotscope::heap {
namespace {

// valgrind cannot keep zero-sized blocks in its interval tree, so it records them as 1 byte.
std::uint64_t dhat_size(std::size_t size) {
  return size == 0 ? 1 : size;
}

} // namespace

// Before a site's live figures change: if a peak was recorded since they last changed, they are
// its figures at that peak. A site's figures are made at its first block: until then they are
// all zero, the same at any peak.
SiteCounts& Engine::changing(StackId id) {
  if (id >= sites_.size()) {
    sites_.resize(std::size_t{id} + 1);
    synced_.resize(std::size_t{id} + 1, peak_);
  }
  SiteCounts& site = sites_[id];
  if (synced_[id] != peak_) {
    site.gmax_bytes = site.curr_bytes;
    site.gmax_blocks = site.curr_blocks;
    synced_[id] = peak_;
  }
  return site;
}

// The common tail of an allocation and a growing realloc: a new global peak (">=": of equal
// peaks the latest wins) also sets this site's mb/mbk, and only then, as valgrind does.
void Engine::grow(SiteCounts& site, std::uint64_t size, std::uint64_t now) {
  ++total_blocks_;
  total_bytes_ += size;
  ++site.total_blocks;
  site.total_bytes += size;
  if (curr_bytes_ >= max_bytes_) {
    max_bytes_ = curr_bytes_;
    max_blocks_ = curr_blocks_;
    gmax_time_ = now;
    site.max_bytes = site.curr_bytes;
    site.max_blocks = site.curr_blocks;
  }
}

// Called before anything lowers the live bytes: if we sit on the (latest) global peak, every
// site's live figures are the figures at t-gmax. valgrind copies them for every site here; they
// are copied per site when it next changes (changing()), or by snapshot(), so a program of
// 100,000 sites that frees at its peak again and again does not copy them all each time.
void Engine::check_for_peak() {
  if (curr_bytes_ == max_bytes_) {
    ++peak_;
  }
}

void Engine::alloc(std::uintptr_t address, std::size_t size, StackId stack, std::uint64_t now) {
  const std::uint64_t bytes = dhat_size(size);
  SiteCounts& site = changing(stack);
  ++curr_blocks_;
  curr_bytes_ += bytes;
  ++site.curr_blocks;
  site.curr_bytes += bytes;
  grow(site, bytes, now);
  live_.insert(address, LiveBlock{stack, bytes, now});
}

bool Engine::free(std::uintptr_t address, std::uint64_t now) {
  LiveBlock block;
  if (!live_.take(address, block)) {
    ++(attached_ ? frees_before_attach_ : unknown_frees_);
    return false;
  }
  retire(block, now);
  return true;
}

// A block that ends, already out of the live blocks.
void Engine::retire(const LiveBlock& block, std::uint64_t now) {
  check_for_peak();
  SiteCounts& site = changing(block.site);
  --curr_blocks_;
  curr_bytes_ -= block.size;
  --site.curr_blocks;
  site.curr_bytes -= block.size;
  site.lifetimes += now - block.alloc_time;
}

void Engine::realloc_begin(std::uint64_t key, std::uintptr_t old_address) {
  // An entry left under this key lost its second step (given up on by the caller): its block's
  // fate is unknown, and it must not be taken for this realloc's.
  std::erase_if(reallocating_, [&](const Reallocating& entry) {
    unknown_reallocs_ += entry.key == key ? 1 : 0;
    return entry.key == key;
  });
  Reallocating entry{key, old_address, {}};
  if (!live_.take(old_address, entry.block)) {
    entry.old_address = 0;
  }
  reallocating_.push_back(entry);
}

void Engine::realloc_end(std::uint64_t key, std::uintptr_t new_address, std::size_t size,
                         StackId stack, std::uint64_t now) {
  const auto found = std::find_if(reallocating_.begin(), reallocating_.end(),
                                  [key](const Reallocating& entry) { return entry.key == key; });
  Reallocating entry{key, 0, {}};
  if (found != reallocating_.end()) {
    entry = *found;
    reallocating_.erase(found);
  }
  if (entry.old_address == 0) {
    ++(attached_ ? reallocs_before_attach_ : unknown_reallocs_);
    if (new_address != 0) {
      alloc(new_address, size, stack, now);
    }
    return;
  }
  LiveBlock block = entry.block;
  if (new_address == 0 && size == 0) {
    // realloc(p, 0) freed the block (glibc's behaviour, and valgrind's count). Another thread may
    // hold its address already: the block is retired without going back to the live ones.
    retire(block, now);
    return;
  }
  if (new_address == 0) {
    live_.insert(entry.old_address, block); // failed: the block stays where it was
    return;
  }
  const std::uint64_t bytes = dhat_size(size);
  if (bytes < block.size) {
    check_for_peak();
  }
  SiteCounts& site = changing(block.site);
  // Block counts are unchanged: the block lives on under its original site.
  curr_bytes_ = curr_bytes_ - block.size + bytes;
  site.curr_bytes = site.curr_bytes - block.size + bytes;
  grow(site, bytes, now);
  block.size = bytes;
  live_.insert(new_address, block);
}

void Engine::restart(std::uint64_t now) {
  total_bytes_ = max_bytes_ = curr_bytes_;
  total_blocks_ = max_blocks_ = curr_blocks_;
  gmax_time_ = now;
  unknown_frees_ = unknown_reallocs_ = 0;
  frees_before_attach_ = reallocs_before_attach_ = 0;
  for (SiteCounts& site : sites_) {
    site.total_bytes = site.max_bytes = site.gmax_bytes = site.curr_bytes;
    site.total_blocks = site.max_blocks = site.gmax_blocks = site.curr_blocks;
    site.lifetimes = 0;
  }
  std::fill(synced_.begin(), synced_.end(), peak_);
}

RawProfile in_microseconds(RawProfile raw, double microseconds_per_unit) {
  const auto convert = [microseconds_per_unit](std::uint64_t time) {
    return static_cast<std::uint64_t>(static_cast<double>(time) * microseconds_per_unit + 0.5);
  };
  raw.end_time = convert(raw.end_time);
  raw.gmax_time = convert(raw.gmax_time);
  for (RawSite& site : raw.sites) {
    site.counts.lifetimes = convert(site.counts.lifetimes);
  }
  return raw;
}

RawProfile Engine::snapshot(std::uint64_t now) const {
  RawProfile raw;
  raw.end_time = now;
  raw.gmax_time = gmax_time_;
  raw.unknown_frees = unknown_frees_;
  raw.unknown_reallocs = unknown_reallocs_;
  raw.frees_before_attach = frees_before_attach_;
  raw.reallocs_before_attach = reallocs_before_attach_;
  raw.sites.reserve(stacks_.size());
  const bool at_peak = curr_bytes_ == max_bytes_; // the exit-time check_for_peak
  for (StackId id = 0; id < stacks_.size(); ++id) {
    const bool counted = id < sites_.size(); // a stack interned without a block yet: all zero
    RawSite& site =
        raw.sites.emplace_back(RawSite{stacks_.stack(id), counted ? sites_[id] : SiteCounts{}, id});
    if (counted && (at_peak || synced_[id] != peak_)) {
      site.counts.gmax_bytes = site.counts.curr_bytes;
      site.counts.gmax_blocks = site.counts.curr_blocks;
    }
  }
  live_.for_each([&](const LiveBlock& block) {
    raw.sites[block.site].counts.lifetimes += now - block.alloc_time;
  });
  return raw;
}

} // namespace hotscope::heap
