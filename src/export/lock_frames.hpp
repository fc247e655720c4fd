// Names for the native frames of lock sites, for the exporters that write them (stats.json,
// report.txt). Apart from common.hpp, which the hotscope command links too: this asks the objects
// component, which only libhotscope has.
#pragma once

#include "snapshot/snapshot.hpp"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace hotscope::exporters::detail {

// The names of the native frames of the snapshot's lock sites (contention sites, inversions),
// asked of the symbolizer in one call: each return address named by its call's function, the
// outermost name of its list (docs/locks.md, "Outputs").
class LockFrameNames {
public:
  explicit LockFrameNames(const Snapshot& snapshot);
  // The names of `stack`'s frames, innermost first.
  std::vector<std::string> names(const std::vector<std::uint64_t>& stack) const;

private:
  std::unordered_map<std::uint64_t, std::string> names_; // by return address
};

} // namespace hotscope::exporters::detail
