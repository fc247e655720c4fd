// A guest's own heap, profiled (docs/guest.md, "Guest heap profiles"): the heap events of its
// accepted batches (HOTSCOPE_GUEST_ALLOC, _FREE, _REALLOC) applied to a heap::Engine, DHAT's
// accounting, one per guest. The guest is hostile: a free of a block that is not live, a double
// free, a realloc of an unknown block or an allocation over a live one is counted and reported,
// never trusted, and the host memory it can make this hold is bounded.
#pragma once

#include "guest/guest.hpp"
#include "heap/engine.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

namespace hotscope::guest {

// What the guest's heap events came to; nothing is dropped without being counted here.
struct GuestHeapCounts {
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::uint64_t reallocs = 0;
  std::uint64_t unknown_frees = 0;         // frees of a block that is not live (double frees apart)
  std::uint64_t double_frees = 0;          // frees of a block freed before and not allocated since
  std::uint64_t unknown_reallocs = 0;      // reallocs of a block that is not live: a new allocation
  std::uint64_t allocations_over_live = 0; // allocations of a block already live: it is freed
  std::uint64_t over_live_bound = 0;       // allocations not profiled: kMaxLiveBlocks were live
  std::uint64_t stacks_over_bound = 0;     // events whose new stack was pooled (kMaxStacks)
};

class GuestHeap {
public:
  // Host memory bounds: live blocks profiled, distinct stacks kept, freed addresses remembered
  // to tell a double free from a free of an unknown block.
  static constexpr std::uint64_t kMaxLiveBlocks = 65536;
  static constexpr std::size_t kMaxStacks = 16384;
  static constexpr std::size_t kRememberedFrees = 4096;

  // `start` (host ticks) is time 0 of the profile. `report` gets one line for the first problem
  // of each kind (later ones are only counted).
  GuestHeap(std::uint64_t start, Symbolizer symbolizer, std::string image_name,
            std::function<void(const std::string&)> report);

  void apply(std::span<const GuestHeapEvent> events);

  // True once the guest reported a heap event.
  bool used() const { return used_; }
  const GuestHeapCounts& counts() const { return counts_; }
  heap::Totals totals() const { return engine_.totals(); }
  // DHAT's model as if the guest ended at host tick `now`, times in µs since `start`, frames
  // symbolized from the guest's image: "0x1002A4: handle_request(unsigned long) (in
  // sample-guest.elf)".
  HeapProfile profile(std::uint64_t now, std::string command) const;

private:
  heap::StackId stack_id(std::span<const std::uint64_t> stack);
  void alloc(const GuestHeapEvent& event, std::uint64_t now);
  void free(const GuestHeapEvent& event, std::uint64_t now);
  void realloc(const GuestHeapEvent& event, std::uint64_t now);
  // Counts a problem; reports the first of its kind, naming the block and where it happened.
  void problem(std::uint64_t& count, const std::string& what, const GuestHeapEvent& event);
  std::string where(std::span<const std::uint64_t> stack) const;

  std::uint64_t start_;
  Symbolizer symbolizer_;
  std::string image_name_;
  std::function<void(const std::string&)> report_;
  heap::Engine engine_;
  // Stacks by content, looked up without a copy (the stack of every event is looked up).
  struct StackOrder {
    using is_transparent = void;
    bool operator()(std::span<const std::uint64_t> a, std::span<const std::uint64_t> b) const {
      return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
    }
  };
  std::map<std::vector<std::uint64_t>, heap::StackId, StackOrder> stack_ids_;
  heap::StackId pooled_stack_ = 0; // where new stacks past kMaxStacks go
  std::unordered_set<std::uint64_t> freed_;
  GuestHeapCounts counts_;
  bool used_ = false;
};

} // namespace hotscope::guest
