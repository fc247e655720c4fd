#include "trace/cpu_stacks.hpp"

#include <algorithm>

namespace hotscope::trace {

std::size_t
CpuStacks::WordsHash::operator()(const std::vector<std::uint64_t>& words) const noexcept {
  std::uint64_t hash = 0xcbf29ce484222325; // FNV-1a over the words
  for (const std::uint64_t word : words) {
    hash = (hash ^ word) * 0x100000001b3;
  }
  return static_cast<std::size_t>(hash ^ (hash >> 29));
}

void CpuStacks::add(std::span<const std::uint64_t> words, std::int64_t tid, std::uint64_t periods) {
  samples_ += periods;
  ++signals_;
  if (const auto it = threads_.find(tid); it != threads_.end()) {
    it->second += periods;
  } else if (threads_.size() < kMaxThreads) {
    threads_.emplace(tid, periods);
  } else {
    other_threads_ += periods;
  }
  std::vector<std::uint64_t> key(words.begin(), words.end());
  if (const auto it = stacks_.find(key); it != stacks_.end()) {
    it->second += periods;
  } else if (stacks_.size() < kMaxStacks) {
    stacks_.emplace(std::move(key), periods);
  } else {
    unstored_ += periods;
  }
}

void CpuStacks::reset() {
  *this = CpuStacks{};
}

void CpuStacks::capture(CpuProfile& profile,
                        const std::function<CpuScope(std::uint32_t location)>& location) const {
  profile.samples = samples_;
  profile.signals = signals_;
  profile.unstored = unstored_;
  std::unordered_map<std::uint32_t, std::int32_t> scope_index;
  profile.stacks.reserve(stacks_.size());
  for (const auto& [words, periods] : stacks_) {
    CpuStack stack;
    stack.samples = periods;
    stack.frames.reserve(words.size());
    for (const std::uint64_t word : words) {
      if ((word & kScopeWord) == 0) {
        stack.frames.push_back({word, -1});
        continue;
      }
      const auto id = static_cast<std::uint32_t>(word & ~kScopeWord);
      const auto [it, added] =
          scope_index.try_emplace(id, static_cast<std::int32_t>(profile.scopes.size()));
      if (added) {
        profile.scopes.push_back(location(id));
      }
      stack.frames.push_back({0, it->second});
    }
    profile.stacks.push_back(std::move(stack));
  }
  // Heaviest first, then by frames: the same figures give the same file.
  std::sort(profile.stacks.begin(), profile.stacks.end(), [](const auto& a, const auto& b) {
    if (a.samples != b.samples) {
      return a.samples > b.samples;
    }
    return std::lexicographical_compare(a.frames.begin(), a.frames.end(), b.frames.begin(),
                                        b.frames.end(), [](const CpuFrame& x, const CpuFrame& y) {
                                          return x.address != y.address ? x.address < y.address
                                                                        : x.scope < y.scope;
                                        });
  });
  for (const auto& [tid, periods] : threads_) {
    profile.threads.push_back({tid, periods});
  }
  if (other_threads_ != 0) {
    profile.threads.push_back({0, other_threads_});
  }
  std::sort(profile.threads.begin(), profile.threads.end(),
            [](const auto& a, const auto& b) { return a.os_tid < b.os_tid; });
}

std::size_t CpuStacks::bytes() const {
  std::size_t bytes = threads_.size() * 48;
  for (const auto& [words, periods] : stacks_) {
    bytes += 64 + words.capacity() * sizeof(std::uint64_t);
  }
  return bytes;
}

} // namespace hotscope::trace
