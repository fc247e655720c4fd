// The CPU samples of a window: what a later snapshot's CPU profile has that an earlier one's has
// not (GET /debug/pprof/profile?seconds=N, docs/agent.md).
#include "agent/routes.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

namespace hotscope::agent {
namespace {

std::uint64_t less_floor0(std::uint64_t later, std::uint64_t earlier) {
  return later - std::min(later, earlier);
}

// A stack's frames as a map key: native addresses, and scopes by their index in `later`'s table.
using FramesKey = std::vector<std::pair<std::uint64_t, std::int32_t>>;

} // namespace

CpuProfile cpu_difference(const CpuProfile& earlier, const CpuProfile& later) {
  // Each snapshot numbers its scopes its own way: they are told apart by what they name.
  std::map<std::tuple<std::string, std::string, std::uint32_t>, std::int32_t> later_scopes;
  for (std::size_t i = 0; i < later.scopes.size(); ++i) {
    const CpuScope& scope = later.scopes[i];
    later_scopes.emplace(std::tuple(scope.name, scope.file, scope.line),
                         static_cast<std::int32_t>(i));
  }
  std::map<FramesKey, std::uint64_t> before;
  for (const CpuStack& stack : earlier.stacks) {
    FramesKey key;
    bool in_later = true;
    for (const CpuFrame& frame : stack.frames) {
      std::int32_t scope = -1;
      if (frame.is_scope()) {
        const CpuScope& named = earlier.scopes.at(static_cast<std::size_t>(frame.scope));
        const auto found = later_scopes.find(std::tuple(named.name, named.file, named.line));
        in_later = in_later && found != later_scopes.end();
        scope = found == later_scopes.end() ? -1 : found->second;
      }
      key.emplace_back(frame.address, scope);
    }
    if (in_later) {
      before[std::move(key)] += stack.samples;
    }
  }

  CpuProfile window = later;
  window.samples = less_floor0(later.samples, earlier.samples);
  window.signals = less_floor0(later.signals, earlier.signals);
  window.lost = less_floor0(later.lost, earlier.lost);
  window.incomplete = less_floor0(later.incomplete, earlier.incomplete);
  window.unstored = less_floor0(later.unstored, earlier.unstored);
  window.stacks.clear();
  for (const CpuStack& stack : later.stacks) {
    FramesKey key;
    for (const CpuFrame& frame : stack.frames) {
      key.emplace_back(frame.address, frame.scope);
    }
    const auto found = before.find(key);
    const std::uint64_t added =
        less_floor0(stack.samples, found == before.end() ? 0 : found->second);
    if (added > 0) {
      window.stacks.push_back({stack.frames, added});
    }
  }
  std::map<std::int64_t, std::uint64_t> thread_before;
  for (const CpuThreadSamples& thread : earlier.threads) {
    thread_before[thread.os_tid] += thread.samples;
  }
  window.threads.clear();
  for (const CpuThreadSamples& thread : later.threads) {
    const std::uint64_t added = less_floor0(thread.samples, thread_before[thread.os_tid]);
    if (added > 0) {
      window.threads.push_back({thread.os_tid, added});
    }
  }
  return window;
}

} // namespace hotscope::agent
