#include "trace/histogram.hpp"

#include <algorithm>

#include <bit>
#include <cmath>
#include <utility>

namespace hotscope::trace {
namespace {

static_assert(Histogram::kBlocks <= 64, "Histogram::used_ has one bit per block");

// Calls visit(b) for each block b set in `used`, in ascending order.
template <typename Visit> void for_each_block(std::uint64_t used, Visit visit) {
  for (; used != 0; used &= used - 1) {
    visit(std::countr_zero(used));
  }
}

} // namespace

Histogram::Histogram(const Histogram& other) {
  *this = other;
}

Histogram& Histogram::operator=(const Histogram& other) {
  if (this != &other) {
    for (int b = 0; b < kBlocks; ++b) {
      blocks_[b] = other.blocks_[b] ? std::make_unique<Block>(*other.blocks_[b]) : nullptr;
    }
    used_ = other.used_;
    count_ = other.count_;
  }
  return *this;
}

Histogram::Histogram(Histogram&& other) noexcept
    : blocks_(std::move(other.blocks_)), used_(std::exchange(other.used_, 0)),
      count_(std::exchange(other.count_, 0)) {}

Histogram& Histogram::operator=(Histogram&& other) noexcept {
  blocks_ = std::move(other.blocks_);
  used_ = std::exchange(other.used_, 0);
  count_ = std::exchange(other.count_, 0);
  return *this;
}

Histogram::Block& Histogram::block(int b) {
  if (!blocks_[b]) {
    blocks_[b] = std::make_unique<Block>();
    used_ |= std::uint64_t{1} << b;
  }
  return *blocks_[b];
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
  const int b = block_of(value);
  block(b)[slot_of(value, b)] += count;
  count_ += count;
}

std::size_t Histogram::allocated_bytes() const {
  return static_cast<std::size_t>(std::popcount(used_)) * sizeof(Block);
}

void Histogram::merge(const Histogram& other) {
  for_each_block(other.used_, [&](int b) {
    Block& into = block(b);
    for (std::uint64_t s = 0; s < kSubBuckets; ++s) {
      into[s] += (*other.blocks_[b])[s];
    }
  });
  count_ += other.count_;
}

std::uint64_t Histogram::quantile(double q) const {
  std::uint64_t value = 0;
  quantiles({&q, 1}, {&value, 1});
  return value;
}

void Histogram::quantiles(std::span<const double> qs, std::span<std::uint64_t> values) const {
  std::fill(values.begin(), values.end(), 0);
  if (count_ == 0 || qs.empty()) {
    return;
  }
  const auto rank_of = [&](double q) {
    const double clamped = q < 0 ? 0 : (q > 1 ? 1 : q);
    const auto rank = static_cast<std::uint64_t>(std::ceil(clamped * static_cast<double>(count_)));
    return rank == 0 ? std::uint64_t{1} : rank;
  };
  std::size_t next = 0; // the first quantile not found yet, whose rank is `rank`
  std::uint64_t rank = rank_of(qs[0]);
  std::uint64_t seen = 0;
  for_each_block(used_, [&](int b) {
    const Block& block = *blocks_[b];
    for (std::uint64_t s = 0; s < kSubBuckets && next < qs.size(); ++s) {
      seen += block[s];
      while (next < qs.size() && seen >= rank) {
        values[next++] = midpoint(b, s);
        rank = next < qs.size() ? rank_of(qs[next]) : 0;
      }
    }
  });
}

std::vector<std::uint64_t> Histogram::counts_at_most(std::span<const std::uint64_t> bounds) const {
  std::vector<std::uint64_t> counts(bounds.size(), 0);
  std::size_t bound = 0;
  std::uint64_t seen = 0;
  for_each_block(used_, [&](int b) {
    if (bound == bounds.size()) {
      return;
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
  });
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
