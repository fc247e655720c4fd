// Names of interposed pthread locks (docs/locks.md, "Interposed mode"), which have no location,
// only an address. Named at snapshot time, never on a measured thread.
#include "objects/objects.hpp"
#include "text/text.hpp"
#include "trace/trace.hpp"

#include <charconv>
#include <string_view>
#include <unordered_map>

namespace hotscope::trace {
namespace {

constexpr std::string_view kKinds[] = {"pthread_mutex", "pthread_rwlock", "pthread lock"};

// The address in a name address_lock_name wrote, or 0.
std::uint64_t address_in(std::string_view name) {
  for (const std::string_view kind : kKinds) {
    if (name.size() > kind.size() + 3 && name.starts_with(kind) &&
        name.substr(kind.size(), 3) == " 0x") {
      std::uint64_t address = 0;
      const char* end = name.data() + name.size();
      const auto [stop, error] = std::from_chars(name.data() + kind.size() + 3, end, address, 16);
      return error == std::errc() && stop == end ? address : 0;
    }
  }
  return 0;
}

} // namespace

std::string address_lock_name(std::string_view kind, std::uint64_t address) {
  return text::cat(kind, " 0x", text::hex(address));
}

void name_interposed_locks(Snapshot& snapshot) {
  std::unordered_map<std::uint64_t, std::string> symbols; // by address; "" when none names it
  const auto rename = [&symbols](std::string& name) {
    const std::uint64_t address = address_in(name);
    if (address == 0) {
      return;
    }
    auto [found, inserted] = symbols.try_emplace(address);
    if (inserted) {
      found->second = objects::data_name(address);
    }
    if (!found->second.empty()) {
      name = found->second;
    }
  };
  for (LockStats& lock : snapshot.locks) {
    if (lock.address != 0) {
      rename(lock.name);
    }
  }
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
