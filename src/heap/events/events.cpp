// EventLog (events.hpp): per-thread rings of allocation events, applied in one global order.
#include "heap/events/events.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <new>

namespace hotscope::heap {

EventLog::~EventLog() {
  for (Ring* ring = rings_.load(); ring != nullptr;) {
    Ring* next = ring->next_;
    delete ring;
    ring = next;
  }
}

EventLog::Ring* EventLog::open_ring() {
  for (Ring* ring = rings_.load(std::memory_order_acquire); ring != nullptr; ring = ring->next_) {
    bool open = false;
    if (!ring->open_.load(std::memory_order_relaxed) &&
        ring->read_.load(std::memory_order_acquire) ==
            ring->write_.load(std::memory_order_relaxed) &&
        ring->open_.compare_exchange_strong(open, true, std::memory_order_acquire)) {
      return ring;
    }
  }
  Ring* ring = new (std::nothrow) Ring;
  if (ring == nullptr) {
    return nullptr;
  }
  ring->room_until_ = ring_capacity;
  ring->words_room_until_ = words_capacity;
  ring->next_ = rings_.load(std::memory_order_relaxed);
  while (!rings_.compare_exchange_weak(ring->next_, ring, std::memory_order_acq_rel)) {
  }
  return ring;
}

void EventLog::close_ring(Ring& ring) {
  ring.open_.store(false, std::memory_order_release);
}

EventLog::Backlog EventLog::backlog() const {
  Backlog backlog;
  for (Ring* ring = rings_.load(std::memory_order_acquire); ring != nullptr; ring = ring->next_) {
    // read_ first: a drain may move it on meanwhile, never past write_.
    const std::uint64_t read = ring->read_.load(std::memory_order_acquire);
    const std::uint64_t words_read = ring->words_read_.load(std::memory_order_acquire);
    const std::uint64_t waiting =
        std::max(ring->write_.load(std::memory_order_acquire) - read,
                 (ring->words_write_.load(std::memory_order_acquire) - words_read) * ring_capacity /
                     words_capacity);
    backlog.largest = std::max(backlog.largest, waiting);
    backlog.total += waiting;
  }
  return backlog;
}

std::uint64_t EventLog::appended() const {
  std::uint64_t words = 0;
  for (Ring* ring = rings_.load(std::memory_order_acquire); ring != nullptr; ring = ring->next_) {
    words += ring->words_write_.load(std::memory_order_relaxed);
  }
  return next_.load(std::memory_order_relaxed) + words * ring_capacity / words_capacity;
}

// Events older than `sequence` at a ring's head were given up on: they are dropped on the way.
EventLog::Ring* EventLog::ring_with_head(std::uint64_t sequence) {
  for (Ring* ring = rings_.load(std::memory_order_acquire); ring != nullptr; ring = ring->next_) {
    const HeapEvent* head = ring->head();
    while (head != nullptr && head->sequence < sequence) {
      ring->pop();
      head = ring->head();
    }
    if (head != nullptr && head->sequence == sequence) {
      return ring;
    }
  }
  return nullptr;
}

const HeapEvent* EventLog::find_next(std::uint64_t end, std::uint64_t wait_ns) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point waiting_since{};
  while (expected_ < end) {
    current_ = ring_with_head(expected_);
    if (current_ != nullptr) {
      return current_->head();
    }
    if (wait_ns == 0) {
      return nullptr;
    }
    // Numbered, not visible yet: its thread is inside commit().
    const Clock::time_point now = Clock::now();
    if (waiting_since == Clock::time_point{}) {
      waiting_since = now;
    } else if (now - waiting_since > std::chrono::nanoseconds(wait_ns)) {
      ++lost_;
      ++expected_;
      waiting_since = {};
    }
    sched_yield();
  }
  return nullptr;
}

} // namespace hotscope::heap
