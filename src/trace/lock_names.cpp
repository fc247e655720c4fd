// Names of interposed pthread locks (docs/locks.md, "Interposed mode"), which have no location,
// only an address. Named at snapshot time, never on a measured thread.
#include "objects/objects.hpp"
#include "text/text.hpp"
#include "trace/trace.hpp"

#include <unordered_map>

namespace hotscope::trace {

std::string address_lock_name(bool rwlock, std::uint64_t address) {
  return text::cat(rwlock ? "pthread_rwlock 0x" : "pthread_mutex 0x", text::hex(address));
}

void name_interposed_locks(Snapshot& snapshot) {
  std::unordered_map<std::string, std::string> renamed; // address_lock_name -> the static's name
  for (LockStats& lock : snapshot.locks) {
    if (lock.address == 0) {
      continue;
    }
    std::string symbol = objects::data_name(lock.address);
    if (!symbol.empty()) {
      renamed.emplace(lock.name, symbol);
      lock.name = std::move(symbol);
    }
  }
  if (renamed.empty()) {
    return;
  }
  const auto rename = [&renamed](std::string& name) {
    if (const auto found = renamed.find(name); found != renamed.end()) {
      name = found->second;
    }
  };
  for (Deadlock& deadlock : snapshot.deadlocks) {
    for (Deadlock::Link& link : deadlock.cycle) {
      rename(link.lock);
    }
  }
  for (LockInversion& inversion : snapshot.inversions) {
    rename(inversion.first);
    rename(inversion.second);
  }
  for (std::string& name : snapshot.names) { // the trace's lock waits
    rename(name);
  }
}

} // namespace hotscope::trace
