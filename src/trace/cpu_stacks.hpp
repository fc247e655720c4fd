// The CPU samples of the measuring window, as the Aggregator keeps them: each distinct stack
// (native frames with the open scopes placed among them) with the sampling periods it took, and
// the periods per thread. Bounded: past kMaxStacks distinct stacks a new stack's periods are
// counted (CpuProfile::unstored), its frames not kept.
#pragma once

#include "snapshot/snapshot.hpp"

#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

namespace hotscope::trace {

class CpuStacks {
public:
  static constexpr std::size_t kMaxStacks = 50'000;
  static constexpr std::size_t kMaxThreads = 4'096;
  // A word of a stack is a native address, or kScopeWord | the scope's location id.
  static constexpr std::uint64_t kScopeWord = std::uint64_t{1} << 63;

  // One sample (one timer signal): `words` innermost first.
  void add(std::span<const std::uint64_t> words, std::int64_t tid, std::uint64_t periods);
  void reset();
  // Fills the stacks, scopes, threads, samples, signals and unstored of `profile`; `location` gives
  // a scope's name from its location id.
  void capture(CpuProfile& profile,
               const std::function<CpuScope(std::uint32_t location)>& location) const;
  std::size_t bytes() const;

private:
  struct WordsHash {
    std::size_t operator()(const std::vector<std::uint64_t>& words) const noexcept;
  };
  std::unordered_map<std::vector<std::uint64_t>, std::uint64_t, WordsHash> stacks_;
  std::unordered_map<std::int64_t, std::uint64_t> threads_;
  std::uint64_t samples_ = 0;
  std::uint64_t signals_ = 0;
  std::uint64_t unstored_ = 0;
  std::uint64_t other_threads_ = 0; // periods of threads past kMaxThreads, under tid 0
};

} // namespace hotscope::trace
