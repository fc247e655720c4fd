// The samples between the signal handlers and the collector: a bounded queue of fixed slots,
// many producers without a lock (each slot's sequence number says whose turn it is), one
// consumer. A producer that finds it full gives up at once and the sample is counted lost.
#pragma once

#include "cpu/cpu.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace hotscope::cpu {

class SampleBuffer {
public:
  static constexpr std::size_t kSlots = 1024; // a power of two; 1.1 MB

  SampleBuffer() {
    for (std::size_t i = 0; i < kSlots; ++i) {
      slots_[i].sequence.store(i, std::memory_order_relaxed);
    }
  }

  // Async-signal-safe. A slot to fill and then publish(), or null when the buffer is full.
  Sample* reserve(std::uint64_t& position) noexcept {
    position = write_.load(std::memory_order_relaxed);
    for (;;) {
      Slot& slot = slots_[position & (kSlots - 1)];
      const std::uint64_t sequence = slot.sequence.load(std::memory_order_acquire);
      const auto turn = static_cast<std::int64_t>(sequence - position);
      if (turn == 0) {
        if (write_.compare_exchange_weak(position, position + 1, std::memory_order_relaxed)) {
          return &slot.sample;
        }
      } else if (turn < 0) {
        return nullptr; // the slot still holds a sample a lap behind: full
      } else {
        position = write_.load(std::memory_order_relaxed);
      }
    }
  }
  void publish(std::uint64_t position) noexcept {
    slots_[position & (kSlots - 1)].sequence.store(position + 1, std::memory_order_release);
  }

  // The consumer's: the oldest published sample, or null when there is none (or the oldest
  // reserved one is still being written).
  const Sample* peek() const noexcept {
    const Slot& slot = slots_[read_ & (kSlots - 1)];
    return slot.sequence.load(std::memory_order_acquire) == read_ + 1 ? &slot.sample : nullptr;
  }
  void pop() noexcept {
    slots_[read_ & (kSlots - 1)].sequence.store(read_ + kSlots, std::memory_order_release);
    ++read_;
  }

private:
  struct Slot {
    std::atomic<std::uint64_t> sequence{0};
    Sample sample;
  };
  alignas(64) std::atomic<std::uint64_t> write_{0};
  alignas(64) std::uint64_t read_ = 0;
  Slot slots_[kSlots];
};

} // namespace hotscope::cpu
