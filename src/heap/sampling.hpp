// The sampled mode: Poisson byte sampling (docs/heap.md) and DHAT's accounting over the sampled
// blocks.
#pragma once

#include "heap/engine.hpp"
#include "heap/tables.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

namespace hotscope::heap {

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

// Lets a free skip the lock: a count per hash bucket of the sampled blocks that are live, a bit
// per bucket that says whether its count is not 0, and a summary word with a bit per 1024 buckets
// that says whether any of their bits is set. A free whose bit is clear was not sampled. Every
// free reads the summary, one cache line: while few sampled blocks are live, most frees stop
// there. The bits (8 KiB) are read by the others, at a line each that a program's own data may
// have evicted (a miss there cost 30 ns a free, 0.5 % of a short program's time); the counts
// (256 KiB) only under the lock. Updated under the owner's lock, read without it.
class SampledAddresses {
public:
  // The counts are changed by one read-modify-write instruction (under the owner's lock all the
  // same): an untouched page of them then costs one page fault, not a read's and a write's.
  void add(std::uintptr_t address) {
    const std::size_t i = index(address);
    if (counts_[i].fetch_add(1, std::memory_order_relaxed) == 0) {
      bits_[i / 64].fetch_or(std::uint64_t{1} << (i % 64), std::memory_order_relaxed);
      summary_.fetch_or(std::uint64_t{1} << (i >> summary_shift), std::memory_order_relaxed);
    }
  }
  void remove(std::uintptr_t address) {
    const std::size_t i = index(address);
    if (counts_[i].fetch_sub(1, std::memory_order_relaxed) != 1) {
      return;
    }
    bits_[i / 64].fetch_and(~(std::uint64_t{1} << (i % 64)), std::memory_order_relaxed);
    const std::size_t first_word = (i >> summary_shift) << summary_shift >> 6;
    for (std::size_t word = first_word; word < first_word + (1u << summary_shift) / 64; ++word) {
      if (bits_[word].load(std::memory_order_relaxed) != 0) {
        return;
      }
    }
    summary_.fetch_and(~(std::uint64_t{1} << (i >> summary_shift)), std::memory_order_relaxed);
  }
  bool may_contain(std::uintptr_t address) const {
    const std::size_t i = index(address);
    return (summary_.load(std::memory_order_relaxed) >> (i >> summary_shift) & 1) != 0 &&
           (bits_[i / 64].load(std::memory_order_relaxed) >> (i % 64) & 1) != 0;
  }

  // The hash and the layout the x86-64 free entry (heap/interposer/hooks.cpp) repeats in assembly.
  static constexpr unsigned bits = 16;
  static constexpr unsigned summary_shift = bits - 6; // a summary bit per 1024 buckets
  static constexpr std::uint64_t multiplier = 0x9E3779B97F4A7C15ull;
  static constexpr std::size_t summary_offset() { return offsetof(SampledAddresses, summary_); }
  static constexpr std::size_t bits_offset() { return offsetof(SampledAddresses, bits_); }

private:
  static std::size_t index(std::uintptr_t address) {
    return static_cast<std::size_t>((address * multiplier) >> (64 - bits));
  }
  std::atomic<std::uint64_t> summary_{0};
  std::atomic<std::uint64_t> bits_[(std::size_t{1} << bits) / 64] = {};
  std::atomic<std::uint32_t> counts_[std::size_t{1} << bits] = {}; // under the owner's lock
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
  // The same of what is live and the peak, in constant time.
  LiveFigures live_figures() const;

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

} // namespace hotscope::heap
