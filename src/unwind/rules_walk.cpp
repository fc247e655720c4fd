// The stack walk by the frames' .eh_frame rules (frame_rules.cpp), each rule kept in a
// process-wide cache by return address once read: a program allocates from the same functions
// over and over, and a return address seen before costs one load and a few additions instead of
// libgcc's search and CFI interpretation (docs/heap.md, "Walking the stacks").
#include "unwind/frame_rules.hpp"
#include "unwind/unwind.hpp"

#include <sys/mman.h>

#include <atomic>

namespace hotscope::unwind {
namespace {

using detail::FrameRule;

// The cache: direct-mapped, one word a return address, written and read whole (threads share it
// without a lock). A word holds the address's bits above the index (user space addresses have 47
// bits) and the rule, which fits in its low bits when its offsets are multiples of 8 within
// range; others are read again each time.
constexpr unsigned index_bits = 10;
constexpr std::size_t entries = std::size_t{1} << index_bits;
constexpr unsigned address_bits = 47;
constexpr unsigned rule_bits = 64 - (address_bits - index_bits);

// The rule's bits: its kind (0: an empty entry), then the flags and the offsets in words.
constexpr unsigned kind_shift = 0;          // 2 bits: FrameRule::Kind + 1
constexpr unsigned cfa_from_rbp_shift = 2;  // 1 bit
constexpr unsigned rbp_saved_shift = 3;     // 1 bit
constexpr unsigned rbp_words_shift = 4;     // 8 bits: -rbp_offset / 8
constexpr unsigned cfa_words_shift = 12;    // 15 bits: cfa_offset / 8
constexpr std::int64_t rbp_words_max = 255; //
constexpr std::int64_t cfa_words_max = (std::int64_t{1} << (rule_bits - cfa_words_shift)) - 1;
static_assert(cfa_words_shift < rule_bits);

// An entry's index: the address's low bits mixed with a hash of the rest, which the entry keeps,
// so that one entry's word tells its address whole.
std::size_t index_of(std::uintptr_t address) {
  const std::uint64_t high = address >> index_bits;
  const std::uint64_t mixed = (high * 0x9E3779B97F4A7C15ull) >> (64 - index_bits);
  return static_cast<std::size_t>((address ^ mixed) & (entries - 1));
}

std::uint64_t packed(std::uintptr_t address, const FrameRule& rule) {
  const std::uint64_t tag = std::uint64_t{address >> index_bits} << rule_bits;
  const std::uint64_t kind = static_cast<std::uint64_t>(rule.kind) + 1;
  if (rule.kind != FrameRule::Kind::Frame) {
    return tag | kind << kind_shift;
  }
  return tag | kind << kind_shift | std::uint64_t{rule.cfa_from_rbp} << cfa_from_rbp_shift |
         std::uint64_t{rule.rbp_saved} << rbp_saved_shift |
         static_cast<std::uint64_t>(rule.rbp_saved ? -rule.rbp_offset / 8 : 0) << rbp_words_shift |
         static_cast<std::uint64_t>(rule.cfa_offset / 8) << cfa_words_shift;
}

bool packable(std::uintptr_t address, const FrameRule& rule) {
  if (address >> address_bits != 0) {
    return false;
  }
  if (rule.kind != FrameRule::Kind::Frame) {
    return true;
  }
  const bool rbp_fits = !rule.rbp_saved || (rule.rbp_offset < 0 && rule.rbp_offset % 8 == 0 &&
                                            -rule.rbp_offset / 8 <= rbp_words_max);
  return rule.return_offset == -8 && rbp_fits && rule.cfa_offset >= 0 && rule.cfa_offset % 8 == 0 &&
         rule.cfa_offset / 8 <= cfa_words_max;
}

FrameRule unpacked(std::uint64_t word) {
  FrameRule rule;
  rule.kind = static_cast<FrameRule::Kind>(((word >> kind_shift) & 3) - 1);
  rule.cfa_from_rbp = ((word >> cfa_from_rbp_shift) & 1) != 0;
  rule.rbp_saved = ((word >> rbp_saved_shift) & 1) != 0;
  rule.rbp_offset = -static_cast<std::int64_t>((word >> rbp_words_shift) & 0xff) * 8;
  rule.cfa_offset = static_cast<std::int64_t>((word >> cfa_words_shift) &
                                              static_cast<std::uint64_t>(cfa_words_max)) *
                    8;
  rule.return_offset = -8;
  return rule;
}

// Mapped at the first walk: a program that never walks a stack keeps no page of it.
std::atomic<std::atomic<std::uint64_t>*> cache{nullptr};

std::atomic<std::uint64_t>* current_cache() {
  std::atomic<std::uint64_t>* words = cache.load(std::memory_order_acquire);
  if (words != nullptr) {
    return words;
  }
  void* mapped = mmap(nullptr, entries * sizeof(std::uint64_t), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) {
    return nullptr;
  }
  auto* fresh = static_cast<std::atomic<std::uint64_t>*>(mapped);
  if (!cache.compare_exchange_strong(words, fresh, std::memory_order_acq_rel)) {
    munmap(mapped, entries * sizeof(std::uint64_t));
    return words;
  }
  return fresh;
}

FrameRule cached_rule(std::atomic<std::uint64_t>* words, std::uintptr_t address) {
  if (words == nullptr) {
    return detail::rule_at(address);
  }
  std::atomic<std::uint64_t>& entry = words[index_of(address)];
  const std::uint64_t word = entry.load(std::memory_order_relaxed);
  if ((word & ((std::uint64_t{1} << rule_bits) - 1)) != 0 &&
      word >> rule_bits == address >> index_bits && address >> address_bits == 0) {
    return unpacked(word);
  }
  const FrameRule rule = detail::rule_at(address);
  if (packable(address, rule)) {
    entry.store(packed(address, rule), std::memory_order_relaxed);
  }
  return rule;
}

} // namespace

void forget_rules() noexcept {
  if (std::atomic<std::uint64_t>* words = cache.load(std::memory_order_acquire)) {
    for (std::size_t i = 0; i < entries; ++i) {
      words[i].store(0, std::memory_order_relaxed);
    }
  }
}

FrameRegisters caller_registers(std::uintptr_t frame_address) noexcept {
  return {stack_word(frame_address + sizeof(std::uintptr_t)), frame_address + 2 * sizeof(void*),
          stack_word(frame_address)};
}

std::optional<std::size_t> walk_by_rules(FrameRegisters frame, StackBounds bounds,
                                         std::span<std::uintptr_t> addresses,
                                         std::span<std::uintptr_t> slots) noexcept {
  if (bounds.high < bounds.low + 2 * sizeof(std::uintptr_t)) {
    return std::nullopt; // the thread's stack is not known
  }
  std::atomic<std::uint64_t>* words = current_cache();
  std::size_t count = 0;
  const auto within = [&bounds](std::uintptr_t address) {
    return address >= bounds.low && address <= bounds.high - sizeof(std::uintptr_t);
  };
  while (count < addresses.size() && frame.ip != 0) {
    addresses[count] = frame.ip;
    if (!slots.empty()) {
      slots[count] = frame.sp - sizeof(std::uintptr_t);
    }
    ++count;
    const FrameRule rule = cached_rule(words, frame.ip);
    if (rule.kind == FrameRule::Kind::Outermost) {
      break;
    }
    if (rule.kind == FrameRule::Kind::Unsupported) {
      return std::nullopt;
    }
    const std::uintptr_t cfa =
        (rule.cfa_from_rbp ? frame.rbp : frame.sp) + static_cast<std::uintptr_t>(rule.cfa_offset);
    const std::uintptr_t slot = cfa + static_cast<std::uintptr_t>(rule.return_offset);
    const std::uintptr_t rbp_slot = cfa + static_cast<std::uintptr_t>(rule.rbp_offset);
    // The stack only climbs, within the thread's own (a stack elsewhere, as a coroutine's or a
    // signal stack's, is libgcc's to walk).
    if (cfa <= frame.sp || !within(slot) || (rule.rbp_saved && !within(rbp_slot))) {
      return std::nullopt;
    }
    frame.ip = stack_word(slot);
    frame.rbp = rule.rbp_saved ? stack_word(rbp_slot) : frame.rbp;
    frame.sp = cfa;
  }
  return count;
}

} // namespace hotscope::unwind
