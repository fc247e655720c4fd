// The filtered functions' table (instrument.hpp, docs/instrument.md "Cost control").
#include "instrument/instrument.hpp"

namespace hotscope::instrument {

FilterSlot filter_slots[kFilterSlots];
std::atomic<std::uint32_t> filtered_count{0};
std::atomic<bool> hooks_off{false};

namespace {

FilterSlot* slot_of(std::uint64_t entry, bool take) noexcept {
  for (std::uint32_t probe = 0, slot = filter_home(entry); probe < kFilterProbes;
       ++probe, slot = (slot + 1) % kFilterSlots) {
    const std::uint64_t found = filter_slots[slot].entry.load(std::memory_order_relaxed);
    if (found == entry || (found == 0 && take)) {
      return &filter_slots[slot];
    }
    if (found == 0) {
      return nullptr;
    }
  }
  return nullptr;
}

} // namespace

bool filter(std::uint64_t entry) noexcept {
  if (const std::int32_t id = xray_id(entry); id != 0) {
    return filter_xray(id);
  }
  FilterSlot* slot = slot_of(entry, true);
  if (slot == nullptr) {
    return false;
  }
  if (slot->entry.load(std::memory_order_relaxed) == 0) {
    slot->entry.store(entry, std::memory_order_relaxed);
    filtered_count.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

std::uint64_t skipped_calls(std::uint64_t entry) noexcept {
  const FilterSlot* slot = slot_of(entry, false);
  return slot == nullptr ? 0 : slot->skipped.load(std::memory_order_relaxed);
}

} // namespace hotscope::instrument
