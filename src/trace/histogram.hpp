// Log-linear histogram of tick counts: exact below 128, then 128 linear buckets per power of
// two, so any reported quantile is within 1/256 (0.4%) of a recorded value. Bucket blocks are
// allocated per power of two actually used: memory follows the spread of the data.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace hotscope::trace {

class Histogram {
public:
  static constexpr int kSubBucketBits = 7;
  static constexpr std::uint64_t kSubBuckets = 1u << kSubBucketBits;
  static constexpr int kBlocks = 64 - kSubBucketBits + 1; // block 0: values below 128

  Histogram() = default;
  Histogram(const Histogram& other);
  Histogram& operator=(const Histogram& other);
  Histogram(Histogram&& other) noexcept;
  Histogram& operator=(Histogram&& other) noexcept;

  void add(std::uint64_t value, std::uint64_t count = 1);
  void merge(const Histogram& other);
  std::uint64_t count() const { return count_; }
  // Heap memory of the bucket blocks allocated so far.
  std::size_t allocated_bytes() const;
  // The value at quantile q in [0, 1], as the midpoint of its bucket.
  std::uint64_t quantile(double q) const;
  // quantile() of each of `qs` (ascending) into `values`, in one pass over the buckets.
  void quantiles(std::span<const double> qs, std::span<std::uint64_t> values) const;
  // For each bound (ascending), how many values are at most that bound, each bucket counted by
  // its midpoint as quantile() reports it: a value within 0.4% of a bound may fall on either side.
  std::vector<std::uint64_t> counts_at_most(std::span<const std::uint64_t> bounds) const;

private:
  using Block = std::array<std::uint64_t, kSubBuckets>;
  static int block_of(std::uint64_t value);
  static std::uint64_t slot_of(std::uint64_t value, int block);
  static std::uint64_t midpoint(int block, std::uint64_t slot);
  Block& block(int b);

  std::array<std::unique_ptr<Block>, kBlocks> blocks_;
  std::uint64_t used_ = 0; // bit b: blocks_[b] is allocated (walks skip the others unread)
  std::uint64_t count_ = 0;
};

// The durations of one kind of event, in ticks: a function's calls, a queue's waits, a task's
// running or waiting time. How many, their total, the shortest, the longest, their histogram.
struct Durations {
  std::uint64_t calls = 0;
  std::uint64_t total = 0;
  std::uint64_t min = UINT64_MAX;
  std::uint64_t max = 0;
  Histogram histogram;
  void add(std::uint64_t ticks);
  void merge(const Durations& other);
};

} // namespace hotscope::trace
