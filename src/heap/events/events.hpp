// The full mode's hand-over of allocation events: per-thread rings, without a lock, applied by one
// drainer at a time in a single global order (docs/heap.md, "The full mode's events"). The
// Recorder (heap/recorder) owns one; tests drive it from plain threads.
#pragma once

#include "heap/tables.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

namespace hotscope::heap {

// One allocation event, as an allocating thread hands it to the engine's owner.
struct HeapEvent {
  enum Kind : std::uint16_t { Alloc, Free, ReallocBegin, ReallocEnd };
  std::uint64_t sequence = 0; // its number in the global order (set by EventLog)
  std::uint64_t time = 0;
  std::uintptr_t address = 0; // the block; for ReallocEnd its new address (0: the call failed)
  std::uint64_t size = 0;     // Alloc, ReallocEnd
  // Alloc, ReallocEnd (used when the old block is unknown): its id, or, when the event carries
  // its stack as words in its ring (stack_words > 0), what the Recorder says they go with.
  StackId stack = 0;
  Kind kind = Alloc;
  std::uint16_t stack_words = 0; // set by EventLog::reserve
};

// Lets the allocating threads hand their events over without a lock, and one drainer at a time
// apply them in a single global order: each event takes the next number from one counter when
// it is appended to its thread's ring, and the drainer applies them by number. A thread takes
// its number where the order matters (after the real malloc returned the block, before the
// real free gave it back), so a block handed from a free on one thread to a malloc on another
// is freed before it is allocated again, as the allocator saw it.
// An event may carry words (its stack, which the drainer interns): they go in its ring's word
// buffer, in the events' order, each event's in one piece.
class EventLog {
public:
  static constexpr std::size_t ring_capacity = 16384;  // events per thread: 640 KiB
  static constexpr std::size_t words_capacity = 65536; // words per thread: 512 KiB

  // One thread's events. Opened by the thread, closed when it ends; a closed ring is reused by
  // a new thread once the drainer has emptied it.
  class Ring {
    friend class EventLog;
    // The owning thread's side.
    std::atomic<std::uint64_t> write_{0};       // events made visible
    std::uint64_t room_until_ = 0;              // write_ may reach this without reading read_
    std::atomic<std::uint64_t> words_write_{0}; // the visible events' words end here
    std::uint64_t words_room_until_ = 0;        // likewise for words_read_
    // The drainer's side.
    alignas(64) std::atomic<std::uint64_t> read_{0}; // events applied (or dropped)
    std::atomic<std::uint64_t> words_read_{0};       // their words
    std::uint64_t visible_ = 0;                      // write_ as the drainer last read it
    std::uint64_t ahead_at_ = 0;       // an event from the drainer's next on (ahead_words())
    std::uint64_t ahead_words_at_ = 0; // where the words before that event end
    std::atomic<bool> open_{true};
    Ring* next_ = nullptr; // set before the ring is listed, then constant
    alignas(64) HeapEvent slots_[ring_capacity];
    std::uintptr_t words_[words_capacity];

    // Where `count` words go when the words before them end at `at`: never split at the end of
    // the buffer (the rest of it is skipped).
    static std::uint64_t words_start(std::uint64_t at, std::size_t count) {
      const std::uint64_t offset = at % words_capacity;
      return offset + count > words_capacity ? at + (words_capacity - offset) : at;
    }
    // Where those words end, and where they are.
    static std::uint64_t words_end(std::uint64_t at, std::size_t count) {
      return words_start(at, count) + count;
    }
    std::uintptr_t* words_from(std::uint64_t at, std::size_t count) {
      return &words_[words_start(at, count) % words_capacity];
    }
    const std::uintptr_t* words_from(std::uint64_t at, std::size_t count) const {
      return &words_[words_start(at, count) % words_capacity];
    }
    // The drainer's next event, or nullptr.
    const HeapEvent* head() {
      const std::uint64_t at = read_.load(std::memory_order_relaxed);
      if (at == visible_) {
        visible_ = write_.load(std::memory_order_acquire);
        if (at == visible_) {
          return nullptr;
        }
      }
      return &slots_[at % ring_capacity];
    }
    // The words of the drainer's next event (head()).
    std::span<const std::uintptr_t> head_words() const {
      const std::uint64_t at = read_.load(std::memory_order_relaxed);
      const std::size_t count = slots_[at % ring_capacity].stack_words;
      return {words_from(words_read_.load(std::memory_order_relaxed), count), count};
    }
    void pop() {
      const std::uint64_t at = read_.load(std::memory_order_relaxed);
      const std::size_t count = slots_[at % ring_capacity].stack_words;
      if (count > 0) {
        words_read_.store(words_end(words_read_.load(std::memory_order_relaxed), count),
                          std::memory_order_release);
      }
      read_.store(at + 1, std::memory_order_release);
    }
    // The event `distance` places after the drainer's next, if it was visible at the last look.
    const HeapEvent* ahead(std::uint64_t distance) const {
      const std::uint64_t at = read_.load(std::memory_order_relaxed) + distance;
      return at < visible_ ? &slots_[at % ring_capacity] : nullptr;
    }
    // The words of the event `distance` places after the drainer's next, which ahead() returned:
    // found by walking on from the event they were last found for.
    std::span<const std::uintptr_t> ahead_words(std::uint64_t distance) {
      const std::uint64_t read = read_.load(std::memory_order_relaxed);
      if (ahead_at_ < read) {
        ahead_at_ = read;
        ahead_words_at_ = words_read_.load(std::memory_order_relaxed);
      }
      for (; ahead_at_ < read + distance; ++ahead_at_) {
        const std::size_t count = slots_[ahead_at_ % ring_capacity].stack_words;
        ahead_words_at_ = words_end(ahead_words_at_, count);
      }
      const std::size_t count = slots_[ahead_at_ % ring_capacity].stack_words;
      return {words_from(ahead_words_at_, count), count};
    }
    // Starts fetching the event `distance` places after the drainer's next, written or not.
    void prefetch(std::uint64_t distance) const {
      __builtin_prefetch(
          &slots_[(read_.load(std::memory_order_relaxed) + distance) % ring_capacity]);
    }
  };

  EventLog() = default;
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  Ring* open_ring(); // nullptr without memory
  void close_ring(Ring& ring);

  // The calling thread's next event in its `ring`, with room for `words` words of its own
  // (words_of(); a stack's, far fewer than words_capacity), to be filled in and then committed.
  // While the ring is full it calls `make_room()` (which drains, or waits for a drainer) and looks
  // again.
  template <class MakeRoom>
  HeapEvent& reserve(Ring& ring, MakeRoom&& make_room, std::size_t words = 0) {
    const std::uint64_t at = ring.write_.load(std::memory_order_relaxed);
    const std::uint64_t words_until =
        Ring::words_end(ring.words_write_.load(std::memory_order_relaxed), words);
    while (at == ring.room_until_ || words_until > ring.words_room_until_) {
      ring.room_until_ = ring.read_.load(std::memory_order_acquire) + ring_capacity;
      ring.words_room_until_ = ring.words_read_.load(std::memory_order_acquire) + words_capacity;
      if (at != ring.room_until_ && words_until <= ring.words_room_until_) {
        break;
      }
      make_room();
    }
    HeapEvent& event = ring.slots_[at % ring_capacity];
    event.stack_words = static_cast<std::uint16_t>(words);
    return event;
  }
  // The words of the event just reserved.
  std::uintptr_t* words_of(Ring& ring) {
    const HeapEvent& event =
        ring.slots_[ring.write_.load(std::memory_order_relaxed) % ring_capacity];
    return ring.words_from(ring.words_write_.load(std::memory_order_relaxed), event.stack_words);
  }

  // Numbers the reserved event and makes it visible, its words with it. From the number being
  // taken to the event being visible are a few instructions that neither wait nor call out.
  void commit(Ring& ring) {
    const std::uint64_t at = ring.write_.load(std::memory_order_relaxed);
    HeapEvent& event = ring.slots_[at % ring_capacity];
    if (event.stack_words > 0) {
      ring.words_write_.store(
          Ring::words_end(ring.words_write_.load(std::memory_order_relaxed), event.stack_words),
          std::memory_order_relaxed);
    }
    event.sequence = next_.fetch_add(1, std::memory_order_acq_rel);
    ring.write_.store(at + 1, std::memory_order_release);
    // The lines the next events will write, fetched for writing meanwhile: the drainer read them a
    // lap ago, and stores that miss stall the next commit's atomic, which waits for every store
    // before it (on cc1plus that stall was 4 % of the thread's time).
    prefetch_for_writing(&ring.slots_[(at + 2) % ring_capacity]);
    const std::uint64_t words_at = ring.words_write_.load(std::memory_order_relaxed);
    for (std::uint64_t line = 0; line < next_words_prefetched; line += 8) {
      prefetch_for_writing(&ring.words_[(words_at + line) % words_capacity]);
    }
  }

  // Applies, in number order, the events numbered before it started: it stops
  // at the first number taken by a thread that has not made the event visible yet. With
  // `wait_ns`, waits up to that long for such an event, then gives up on it: counted in lost(),
  // and dropped if it comes later. Threads that keep appending cannot keep it going. `apply`
  // also gets the event's source (the same for all events of one thread: reallocs pair their
  // two events by it) and its words, valid until it returns; `ahead` an event and its words.
  // `ahead` is shown each event a few places before `apply` gets it (most often the same ring's),
  // so that what applying it will read can be fetched from memory meanwhile. Serialized by the
  // caller. Returns how many events it applied.
  template <class Apply, class Ahead>
  std::size_t drain(Apply&& apply, std::uint64_t wait_ns, Ahead&& ahead) {
    const std::uint64_t end = next_.load(std::memory_order_acquire);
    std::size_t applied = 0;
    while (expected_ < end) {
      const HeapEvent* head = current_ == nullptr ? nullptr : current_->head();
      if (head == nullptr || head->sequence != expected_) {
        head = find_next(end, wait_ns);
        if (head == nullptr) {
          break;
        }
      }
      // The events come from another core's cache: fetched twice as far ahead as what
      // applying them reads, which needs their addresses.
      current_->prefetch(2 * prefetch_distance);
      if (const HeapEvent* later = current_->ahead(prefetch_distance)) {
        ahead(*later, later->stack_words > 0 ? current_->ahead_words(prefetch_distance)
                                             : std::span<const std::uintptr_t>{});
      }
      apply(*head, reinterpret_cast<std::uintptr_t>(current_),
            head->stack_words > 0 ? current_->head_words() : std::span<const std::uintptr_t>{});
      current_->pop();
      ++expected_;
      ++applied;
    }
    return applied;
  }

  template <class Apply> std::size_t drain(Apply&& apply, std::uint64_t wait_ns = 0) {
    return drain(apply, wait_ns, [](const HeapEvent&, std::span<const std::uintptr_t>) {});
  }

  // Events given up on (see drain). Drainer only.
  std::uint64_t lost() const { return lost_; }

  // The most events waiting in one ring, and in all rings (any thread may ask: a passing view).
  // A ring's words count as events in the proportion of their capacities, where they fill it
  // faster.
  struct Backlog {
    std::uint64_t largest = 0;
    std::uint64_t total = 0;
  };
  Backlog backlog() const;
  // How many events were ever appended, by all threads, their words counting as in backlog() (any
  // thread may ask: a passing view).
  std::uint64_t appended() const;

private:
  Ring* ring_with_head(std::uint64_t sequence);
  // The event numbered expected_, found at the head of its ring (current_ then points to it),
  // waiting for it as drain() says; nullptr when the drain is to stop.
  const HeapEvent* find_next(std::uint64_t end, std::uint64_t wait_ns);

  // A stack's words, about: 32 frames and the slot.
  static constexpr std::uint64_t next_words_prefetched = 40;
  static void prefetch_for_writing(const void* line) {
#if defined(__x86_64__)
    asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(line))); // a no-op without it
#else
    __builtin_prefetch(line, 1);
#endif
  }

  // On cache lines of their own: every thread takes numbers, the drainer moves on per event.
  // About a DRAM access's worth of applying events: the live-block table of a program with a
  // million blocks lives in DRAM, and a lookup in it is one miss.
  static constexpr std::uint64_t prefetch_distance = 8;
  alignas(64) std::atomic<std::uint64_t> next_{0}; // the next number to hand out
  alignas(64) std::uint64_t expected_ = 0;         // the next number to apply (drainer only)
  std::uint64_t lost_ = 0;                         // drainer only
  Ring* current_ = nullptr;           // where the last applied event came from (drainer only)
  std::atomic<Ring*> rings_{nullptr}; // every ring ever opened: closed ones are reused
};

} // namespace hotscope::heap
