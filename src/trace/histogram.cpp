#include "trace/histogram.hpp"

#include <algorithm>

#include <bit>
#include <cmath>

namespace hotscope::trace {

Histogram::Histogram(const Histogram& other) {
  *this = other;
}

Histogram& Histogram::operator=(const Histogram& other) {
  if (this != &other) {
    for (int b = 0; b < kBlocks; ++b) {
      blocks_[b] = other.blocks_[b] ? std::make_unique<Block>(*other.blocks_[b]) : nullptr;
    }
    count_ = other.count_;
  }
  return *this;
}

// Block b >= 1 holds values with bit width b + kSubBucketBits, i.e. [2^(b+6), 2^(b+7)).
int Histogram::block_of(std::uint64_t value) {
  const int width = std::bit_width(value);
  return width <= kSubBucketBits ? 0 : width - kSubBucketBits;
}

std::uint64_t Histogram::slot_of(std::uint64_t value, int block) {
  return block == 0 ? value : (value >> (block - 1)) - kSubBuckets;
}

std::uint64_t Histogram::midpoint(int block, std::uint64_t slot) {
  if (block == 0) {
    return slot;
  }
  const int shift = block - 1;
  const std::uint64_t low = (slot + kSubBuckets) << shift;
  return low + ((std::uint64_t{1} << shift) >> 1);
}

void Histogram::add(std::uint64_t value, std::uint64_t count) {
  const int block = block_of(value);
  if (!blocks_[block]) {
    blocks_[block] = std::make_unique<Block>();
  }
  (*blocks_[block])[slot_of(value, block)] += count;
  count_ += count;
}

std::size_t Histogram::allocated_bytes() const {
  std::size_t bytes = 0;
  for (const auto& block : blocks_) {
    bytes += block ? sizeof(Block) : 0;
  }
  return bytes;
}

void Histogram::merge(const Histogram& other) {
  for (int b = 0; b < kBlocks; ++b) {
    if (!other.blocks_[b]) {
      continue;
    }
    if (!blocks_[b]) {
      blocks_[b] = std::make_unique<Block>();
    }
    for (std::uint64_t s = 0; s < kSubBuckets; ++s) {
      (*blocks_[b])[s] += (*other.blocks_[b])[s];
    }
  }
  count_ += other.count_;
}

std::uint64_t Histogram::quantile(double q) const {
  if (count_ == 0) {
    return 0;
  }
  const double clamped = q < 0 ? 0 : (q > 1 ? 1 : q);
  std::uint64_t rank = static_cast<std::uint64_t>(std::ceil(clamped * static_cast<double>(count_)));
  rank = rank == 0 ? 1 : rank;
  std::uint64_t seen = 0;
  for (int b = 0; b < kBlocks; ++b) {
    if (!blocks_[b]) {
      continue;
    }
    for (std::uint64_t s = 0; s < kSubBuckets; ++s) {
      seen += (*blocks_[b])[s];
      if (seen >= rank) {
        return midpoint(b, s);
      }
    }
  }
  return 0; // unreachable while count_ matches the buckets
}

std::vector<std::uint64_t> Histogram::counts_at_most(std::span<const std::uint64_t> bounds) const {
  std::vector<std::uint64_t> counts(bounds.size(), 0);
  std::size_t bound = 0;
  std::uint64_t seen = 0;
  for (int b = 0; b < kBlocks && bound < bounds.size(); ++b) {
    if (!blocks_[b]) {
      continue;
    }
    for (std::uint64_t s = 0; s < kSubBuckets; ++s) {
      const std::uint64_t in_slot = (*blocks_[b])[s];
      if (in_slot == 0) {
        continue;
      }
      const std::uint64_t value = midpoint(b, s);
      for (; bound < bounds.size() && bounds[bound] < value; ++bound) {
        counts[bound] = seen;
      }
      seen += in_slot;
    }
  }
  for (; bound < bounds.size(); ++bound) {
    counts[bound] = seen;
  }
  return counts;
}

void Durations::add(std::uint64_t ticks) {
  ++calls;
  total += ticks;
  min = std::min(min, ticks);
  max = std::max(max, ticks);
  histogram.add(ticks);
}

void Durations::merge(const Durations& other) {
  calls += other.calls;
  total += other.total;
  min = std::min(min, other.min);
  max = std::max(max, other.max);
  histogram.merge(other.histogram);
}

} // namespace hotscope::trace
