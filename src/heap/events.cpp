// EventLog (heap.hpp): per-thread rings of allocation events, applied in one global order.
#include "heap/heap.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <new>

namespace hotscope::heap {

const HeapEvent* EventLog::Ring::head() {
  const std::uint64_t at = read_.load(std::memory_order_relaxed);
  if (at == visible_) {
    visible_ = write_.load(std::memory_order_acquire);
    if (at == visible_) {
      return nullptr;
    }
  }
  return &slots_[at % ring_capacity];
}

void EventLog::Ring::pop() {
  read_.store(read_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

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
    const std::uint64_t waiting =
        ring->write_.load(std::memory_order_acquire) - ring->read_.load(std::memory_order_acquire);
    backlog.largest = std::max(backlog.largest, waiting);
    backlog.total += waiting;
  }
  return backlog;
}

std::uint64_t unwrap_time(std::uint64_t wrapped, std::uint64_t latest) {
  constexpr std::uint64_t period = std::uint64_t{1} << HeapEvent::time_bits;
  std::uint64_t time = (latest & ~HeapEvent::time_mask) | wrapped;
  if (time + period / 2 < latest) {
    time += period; // wrapped after `latest`
  } else if (time > latest + period / 2 && time >= period) {
    time -= period; // a little before `latest`, across a wrap
  }
  return time;
}

namespace {

// Events carry the low 32 bits of their number: far more than can be in flight at once.
bool is_before(std::uint32_t event, std::uint64_t number) {
  return static_cast<std::int32_t>(event - static_cast<std::uint32_t>(number)) < 0;
}

} // namespace

// Events older than `sequence` at a ring's head were given up on: they are dropped on the way.
EventLog::Ring* EventLog::ring_with_head(std::uint64_t sequence) {
  for (Ring* ring = rings_.load(std::memory_order_acquire); ring != nullptr; ring = ring->next_) {
    const HeapEvent* head = ring->head();
    while (head != nullptr && is_before(head->sequence, sequence)) {
      ring->pop();
      head = ring->head();
    }
    if (head != nullptr && head->sequence == static_cast<std::uint32_t>(sequence)) {
      return ring;
    }
  }
  return nullptr;
}

std::size_t EventLog::drain(const Apply& apply, std::uint64_t wait_ns, std::uint64_t limit) {
  using Clock = std::chrono::steady_clock;
  std::size_t applied = 0;
  Clock::time_point waiting_since{};
  while (applied < limit) {
    const HeapEvent* head = current_ == nullptr ? nullptr : current_->head();
    if (head == nullptr || head->sequence != static_cast<std::uint32_t>(expected_)) {
      current_ = ring_with_head(expected_);
      head = current_ == nullptr ? nullptr : current_->head();
    }
    if (head == nullptr) {
      if (wait_ns == 0 || next_.load(std::memory_order_acquire) == expected_) {
        return applied;
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
      continue;
    }
    waiting_since = {};
    apply(*head, reinterpret_cast<std::uintptr_t>(current_));
    current_->pop();
    ++expected_;
    ++applied;
  }
  return applied;
}

} // namespace hotscope::heap
