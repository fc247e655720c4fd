#include "export/lock_frames.hpp"

#include "objects/objects.hpp"
#include "text/text.hpp"

namespace hotscope::exporters::detail {

LockFrameNames::LockFrameNames(const Snapshot& snapshot) {
  std::vector<std::uint64_t> calls; // return addresses less 1: the calls' own instructions
  const auto add = [&](const LockSite& site) {
    for (const std::uint64_t address : site.stack) {
      if (address != 0 && names_.try_emplace(address).second) {
        calls.push_back(address - 1);
      }
    }
  };
  for (const LockStats& lock : snapshot.locks) {
    for (const LockStats::Contention& contention : lock.contended_at) {
      add(contention.site);
    }
  }
  for (const LockInversion& inversion : snapshot.inversions) {
    add(inversion.site_one);
    add(inversion.site_two);
  }
  if (calls.empty()) {
    return;
  }
  const std::vector<std::vector<std::string>> found =
      objects::native_frame_names(calls, objects::code_mappings());
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (i < found.size() && !found[i].empty()) {
      names_[calls[i] + 1] = found[i].front();
    }
  }
}

std::vector<std::string> LockFrameNames::names(const std::vector<std::uint64_t>& stack) const {
  std::vector<std::string> named;
  for (const std::uint64_t address : stack) {
    const auto found = names_.find(address);
    named.push_back(found == names_.end() || found->second.empty()
                        ? text::cat("0x", text::hex(address))
                        : found->second);
  }
  return named;
}

} // namespace hotscope::exporters::detail
