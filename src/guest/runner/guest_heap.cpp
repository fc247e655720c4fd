#include "guest/runner/guest_heap.hpp"

#include "clock/clock.hpp"
#include "symbols/symbols.hpp"
#include "text/text.hpp"

#include <unistd.h>

#include <unordered_map>

namespace hotscope::guest {
namespace {

// Stand-ins for stacks that are not the guest's frames (no guest return address is 0 or 1).
constexpr std::uint64_t kNoStack = 0;
constexpr std::uint64_t kPooledStacks = 1;

// Symbol names come from the guest's image: anything but printable ASCII is shown as '?'.
std::string printable(std::string text) {
  for (char& c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f) {
      c = '?';
    }
  }
  return text;
}

} // namespace

GuestHeap::GuestHeap(std::uint64_t start, Symbolizer symbolizer, std::string image_name,
                     std::function<void(const std::string&)> report)
    : start_(start), symbolizer_(std::move(symbolizer)), image_name_(std::move(image_name)),
      report_(std::move(report)) {}

void GuestHeap::apply(std::span<const GuestHeapEvent> events) {
  for (const GuestHeapEvent& event : events) {
    used_ = true;
    const std::uint64_t now = event.ticks > start_ ? event.ticks - start_ : 0;
    switch (event.kind) {
    case HOTSCOPE_RECORD_HEAP_ALLOC:
      alloc(event, now);
      break;
    case HOTSCOPE_RECORD_HEAP_FREE:
      free(event, now);
      break;
    default:
      realloc(event, now);
      break;
    }
  }
}

heap::StackId GuestHeap::stack_id(std::span<const std::uint64_t> stack) {
  const std::uint64_t no_stack[] = {kNoStack};
  if (stack.empty()) {
    stack = no_stack;
  }
  if (const auto found = stack_ids_.find(stack); found != stack_ids_.end()) {
    return found->second;
  }
  std::vector<std::uint64_t> key(stack.begin(), stack.end());
  if (stack_ids_.size() >= kMaxStacks) {
    ++counts_.stacks_over_bound;
    if (counts_.stacks_over_bound == 1) {
      report_(text::cat("guest heap: more than ", kMaxStacks,
                        " distinct allocation stacks; blocks of new stacks are counted under one "
                        "site, [stacks past the bound]"));
    }
    key.assign(1, kPooledStacks);
    const auto pooled = stack_ids_.find(key); // kept past the bound: at most one more entry
    if (pooled != stack_ids_.end()) {
      return pooled->second;
    }
  }
  const std::vector<std::uintptr_t> frames(key.begin(), key.end());
  const heap::StackId id = engine_.intern(frames);
  stack_ids_.emplace(std::move(key), id);
  return id;
}

void GuestHeap::alloc(const GuestHeapEvent& event, std::uint64_t now) {
  ++counts_.allocations;
  if (engine_.is_live(event.address)) {
    problem(counts_.allocations_over_live,
            text::cat("allocation of 0x", text::hex(event.address),
                      ", which is a live block already; the old block is counted as freed"),
            event);
    engine_.free(event.address, now);
  } else if (engine_.totals().live_blocks >= kMaxLiveBlocks) {
    problem(counts_.over_live_bound,
            text::cat("allocation of 0x", text::hex(event.address), " past ", kMaxLiveBlocks,
                      " live blocks: not profiled (it shows as an unknown free later)"),
            event);
    return;
  }
  freed_.erase(event.address);
  engine_.alloc(event.address, event.size, stack_id(event.stack), now);
}

void GuestHeap::free(const GuestHeapEvent& event, std::uint64_t now) {
  ++counts_.frees;
  if (engine_.free(event.address, now)) {
    if (freed_.size() >= kRememberedFrees) {
      freed_.clear(); // bounded: an older double free then counts as an unknown free
    }
    freed_.insert(event.address);
    return;
  }
  if (freed_.count(event.address) != 0) {
    problem(counts_.double_frees,
            text::cat("double free of 0x", text::hex(event.address),
                      " (freed before, not allocated since)"),
            event);
  } else {
    problem(counts_.unknown_frees,
            text::cat("free of 0x", text::hex(event.address), ", which is not a live block"),
            event);
  }
}

void GuestHeap::realloc(const GuestHeapEvent& event, std::uint64_t now) {
  ++counts_.reallocs;
  const bool known = event.old_address != 0 && engine_.is_live(event.old_address);
  if (event.old_address != 0 && !known) {
    problem(counts_.unknown_reallocs,
            text::cat("realloc of 0x", text::hex(event.old_address),
                      ", which is not a live block; counted as a new allocation"),
            event);
  }
  if (event.address != 0 && event.address != event.old_address && engine_.is_live(event.address)) {
    problem(counts_.allocations_over_live,
            text::cat("realloc to 0x", text::hex(event.address),
                      ", which is a live block already; the old block is counted as freed"),
            event);
    engine_.free(event.address, now);
  }
  if (!known) { // an allocation, as valgrind counts it (address 0 never goes to the engine)
    if (event.address == 0) {
      return;
    }
    if (engine_.totals().live_blocks >= kMaxLiveBlocks) {
      problem(counts_.over_live_bound,
              text::cat("realloc to 0x", text::hex(event.address), " past ", kMaxLiveBlocks,
                        " live blocks: not profiled"),
              event);
      return;
    }
    freed_.erase(event.address);
    engine_.alloc(event.address, event.size, stack_id(event.stack), now);
    return;
  }
  freed_.erase(event.address);
  // A live block keeps its site: the stack argument, for unknown blocks only, is not used.
  engine_.realloc_begin(0, event.old_address);
  engine_.realloc_end(0, event.address, event.size, 0, now);
}

void GuestHeap::problem(std::uint64_t& count, const std::string& what,
                        const GuestHeapEvent& event) {
  if (++count == 1) {
    report_("guest heap: " + what + " at " + where(event.stack) +
            "; counted, and later ones of this kind only counted");
  }
}

std::string GuestHeap::where(std::span<const std::uint64_t> stack) const {
  if (stack.empty()) {
    return "(no stack)";
  }
  const std::optional<Symbol> symbol = symbolizer_ ? symbolizer_(stack[0]) : std::nullopt;
  return symbol ? text::cat(printable(symbol->name), "+0x", text::hex(symbol->offset))
                : text::cat("0x", text::hex(stack[0]));
}

HeapProfile GuestHeap::profile(std::uint64_t now, std::string command) const {
  const heap::RawProfile raw = heap::in_microseconds(
      engine_.snapshot(now > start_ ? now - start_ : 0), 1e6 / clock::ticks_per_second());
  HeapProfile profile;
  profile.command = std::move(command);
  profile.pid = getpid();
  profile.end_us = raw.end_time;
  profile.gmax_us = raw.gmax_time;
  profile.unknown_frees = counts_.unknown_frees + counts_.double_frees;
  profile.unknown_reallocs = counts_.unknown_reallocs;
  profile.frames.assign(1, "[root]");
  profile.frame_details.assign(1, HeapFrame{});
  std::unordered_map<std::uint64_t, std::uint32_t> index_of;
  for (const heap::RawSite& raw_site : raw.sites) {
    const heap::SiteCounts& c = raw_site.counts;
    HeapSite site{c.total_bytes, c.total_blocks, c.lifetimes,  c.max_bytes,   c.max_blocks,
                  c.gmax_bytes,  c.gmax_blocks,  c.curr_bytes, c.curr_blocks, {}};
    for (const std::uintptr_t address : raw_site.stack) {
      const auto [known, inserted] =
          index_of.try_emplace(address, static_cast<std::uint32_t>(profile.frames.size()));
      if (inserted) {
        // The call instruction ends just before the return address.
        symbols::Frame frame;
        frame.object = image_name_;
        if (address == kNoStack) {
          frame.function = "[no stack]";
        } else if (address == kPooledStacks) {
          frame.function = "[stacks past the bound]";
        } else if (const std::optional<Symbol> symbol =
                       symbolizer_ ? symbolizer_(address - 1) : std::nullopt) {
          frame.function = printable(symbol->name);
        }
        const std::uint64_t call = address > kPooledStacks ? address - 1 : address;
        profile.frames.push_back(symbols::describe(call, frame));
        profile.frame_details.push_back(HeapFrame{call, frame.function, "", 0, 0, false});
      }
      site.frames.push_back(known->second);
    }
    profile.sites.push_back(std::move(site));
  }
  return profile;
}

} // namespace hotscope::guest
