// XRay's sleds (instrument.hpp, docs/instrument.md "XRay"): compiler-rt's runtime is linked into
// a program built with hotscope_instrument(MODE xray) only, so its functions are weak here, null
// in every other program.
#include "instrument/instrument.hpp"

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <new>

extern "C" {
__attribute__((weak)) std::size_t __xray_max_function_id();
__attribute__((weak)) std::uintptr_t __xray_function_address(std::int32_t id);
__attribute__((weak)) int __xray_set_handler(void (*handler)(std::int32_t,
                                                             hotscope::instrument::XrayEvent));
__attribute__((weak)) int __xray_patch();
__attribute__((weak)) int __xray_unpatch();
__attribute__((weak)) int __xray_patch_function(std::int32_t id);
__attribute__((weak)) int __xray_unpatch_function(std::int32_t id);
}

namespace hotscope::instrument {

const std::uint64_t* xray_entries = nullptr;
std::int32_t xray_count = 0;

namespace {

// compiler-rt's XRayPatchingStatus::SUCCESS.
constexpr int kPatched = 1;

struct Sleds {
  std::vector<XrayFunction> by_entry; // for xray_id
  std::mutex mutex;                   // the filter's (collector) against the agent's switches
  std::vector<std::int32_t> filtered; // unpatched by the filter: a global patch leaves them off
};

Sleds& sleds() {
  static Sleds* instance = new Sleds; // never destroyed: the collector runs during exit
  return *instance;
}

} // namespace

bool start_xray(bool patch) {
  if (__xray_set_handler == nullptr || __xray_max_function_id() == 0) {
    return false;
  }
  const auto count = static_cast<std::int32_t>(__xray_max_function_id());
  auto* entries = new std::uint64_t[static_cast<std::size_t>(count)];
  Sleds& s = sleds();
  for (std::int32_t id = 1; id <= count; ++id) {
    entries[id - 1] = __xray_function_address(id);
    s.by_entry.push_back({id, entries[id - 1]});
  }
  std::sort(s.by_entry.begin(), s.by_entry.end(),
            [](const XrayFunction& a, const XrayFunction& b) { return a.entry < b.entry; });
  xray_entries = entries;
  xray_count = count;
  __xray_set_handler(xray_event);
  if (patch) {
    __xray_patch();
  }
  return true;
}

std::vector<XrayFunction> xray_functions() {
  std::vector<XrayFunction> functions;
  for (std::int32_t id = 1; id <= xray_count; ++id) {
    functions.push_back({id, xray_entries[id - 1]});
  }
  return functions;
}

std::int32_t xray_id(std::uint64_t entry) noexcept {
  const std::vector<XrayFunction>& by_entry = sleds().by_entry;
  const auto found = std::lower_bound(
      by_entry.begin(), by_entry.end(), entry,
      [](const XrayFunction& function, std::uint64_t wanted) { return function.entry < wanted; });
  return found != by_entry.end() && found->entry == entry ? found->id : 0;
}

bool switch_xray(std::int32_t id, bool on) noexcept {
  if (xray_count == 0) {
    return false;
  }
  Sleds& s = sleds();
  const std::lock_guard lock(s.mutex);
  if (id != 0) {
    return (on ? __xray_patch_function(id) : __xray_unpatch_function(id)) == kPatched;
  }
  if (!on) {
    return __xray_unpatch() == kPatched;
  }
  const bool patched = __xray_patch() == kPatched;
  for (const std::int32_t filtered : s.filtered) {
    __xray_unpatch_function(filtered);
  }
  return patched;
}

bool filter_xray(std::int32_t id) noexcept {
  Sleds& s = sleds();
  const std::lock_guard lock(s.mutex);
  try {
    s.filtered.push_back(id);
  } catch (const std::bad_alloc&) {
    return false;
  }
  return __xray_unpatch_function(id) == kPatched;
}

} // namespace hotscope::instrument
