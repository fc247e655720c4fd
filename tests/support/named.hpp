// Finding an entry of a snapshot's list (queues, tasks) by name in tests.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace hotscope::test_support {

// A copy: the snapshot is often a temporary. Throws, naming the entries, when there is none.
template <typename Entry> Entry named(const std::vector<Entry>& entries, const std::string& name) {
  std::string names;
  for (const Entry& entry : entries) {
    if (entry.name == name) {
      return entry;
    }
    names += " " + entry.name;
  }
  throw std::runtime_error("no " + name + " among:" + names);
}

} // namespace hotscope::test_support
