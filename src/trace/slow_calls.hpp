// The slowest calls of every function, kept whole (docs/slow.md): the Aggregator shows each of a
// thread's events to its SlowThread while a call is open there; at a call's END, SlowCalls keeps
// it when it is among its function's K slowest of the window, within one budget of bytes.
#pragma once

#include "snapshot/snapshot.hpp"
#include "trace/window.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hotscope::trace {

struct SlowCallSettings {
  unsigned per_function = 4;            // HOTSCOPE_SLOWEST, 0 off
  std::size_t budget_bytes = 16u << 20; // HOTSCOPE_SLOWEST_MIB
  std::size_t cap = kSlowCallEvents;    // events kept of one call, its End included
};

// Events of kept calls. A call kept inside a kept outer one points into the outer's storage.
struct SlowStorage {
  std::vector<WindowEvent> events; // an inline message's value indexes `texts`
  std::vector<std::string> texts;
  std::size_t bytes() const;
};

// A kept call as the collector holds it, in ticks: its events are storage->events[first,
// first + count), its Begin first and its End last.
struct KeptCall {
  std::uint64_t id = 0;
  std::uint32_t location = 0;
  std::uint32_t thread = 0;
  std::string thread_name;
  std::int64_t os_tid = 0;
  std::uint64_t start_ticks = 0;
  std::uint64_t duration_ticks = 0;
  AllocationCounts allocated;
  std::uint64_t cpu_periods = 0;
  std::uint64_t cut_events = 0;
  std::uint64_t cut_at_ticks = 0;
  std::shared_ptr<const SlowStorage> storage;
  std::uint32_t first = 0;
  std::uint32_t count = 0;
};

// The figures of a thread that a kept call copies, and its running totals (since the reset),
// read where the thread keeps them: a copy made for every BEGIN cost more than the rest of it.
struct SlowThreadFigures {
  std::uint32_t index = 0;
  const std::string* name = nullptr; // its label
  std::int64_t os_tid = 0;
  const AllocationCounts* allocated = nullptr; // not null
  const std::uint64_t* cpu_periods = nullptr;  // not null
};

// A growable array of trivially copyable items whose push() hands out an uninitialized slot: a
// vector's emplace_back was an out-of-line call that zeroed the item before it was written.
template <class T> class GrowingArray {
  static_assert(std::is_trivially_copyable_v<T>);

public:
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::size_t capacity() const { return capacity_; }
  const T* begin() const { return data_.get(); }
  T& front() { return data_[0]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }
  T& push() {
    if (size_ == capacity_) {
      grow();
    }
    return data_[size_++];
  }
  void pop_back() { --size_; }
  // Keeps the first `items` (at most size()).
  void shrink_to(std::size_t items) { size_ = items; }
  void clear() { size_ = 0; }

private:
  [[gnu::noinline]] void grow() {
    capacity_ = std::max<std::size_t>(16, capacity_ * 2);
    auto data = std::make_unique_for_overwrite<T[]>(capacity_);
    std::copy(data_.get(), data_.get() + size_, data.get());
    data_ = std::move(data);
  }
  std::unique_ptr<T[]> data_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

// One thread's open calls and the events seen since its outermost one began. Each open call is a
// candidate: its first `cap - 1` events are buffered (an inner call's are a part of its outer's).
// An outermost call with nothing inside it yet has nothing buffered: its Begin is put in the
// buffer when a first event comes inside it, so a call with none (most of a hot leaf function's)
// touches no buffer.
class SlowThread {
public:
  bool buffering() const { return !open_.empty(); }
  // An event of this thread inside the open calls other than their Begin and End (inline text:
  // `text`, else null).
  void event(const WindowEvent& event, const std::string* text) {
    if (pending_) {
      materialize();
    }
    ++seen_;
    if (events_.size() - open_.back().offset + 1 < cap_) {
      append(event, text);
    }
  }
  std::size_t buffered_bytes() const;

private:
  friend class SlowCalls;
  struct Open {
    std::uint32_t location;
    std::size_t offset; // of its Begin in events_
    std::uint64_t seen; // seen_ before its Begin
    std::uint64_t start_ticks;
    std::uint64_t allocated_bytes;
    std::uint64_t allocated_blocks;
    std::uint64_t cpu_periods;
  };
  // A call kept while the open call at `depth` (its index in open_) was open, and where its
  // events are in the buffer: it may share that call's storage if that one is kept too.
  struct KeptInside {
    std::size_t depth;
    std::uint32_t location;
    std::uint64_t id;
    std::size_t offset;
    std::size_t count;
  };
  // Buffers an event written field by field: copying a WindowEvent just built on the stack reads
  // it back whole before its field stores have retired, which the processor cannot forward.
  void put(std::uint64_t ticks, std::uint32_t thread, EventKind kind, std::uint32_t name,
           std::int64_t value) {
    WindowEvent& event = events_.push();
    event.ticks = ticks;
    event.thread = thread;
    event.kind = kind;
    event.name = name;
    event.value = value;
  }
  // Puts the outermost open call's Begin in the buffer, when a first event comes inside it.
  void materialize() {
    Open& call = open_.front();
    call.offset = events_.size();
    put(call.start_ticks, thread_, EventKind::Begin, call.location, 0);
    pending_ = false;
  }
  void append(const WindowEvent& event, const std::string* text);
  // Drops the buffered events from `events` on.
  void truncate(std::size_t events) {
    if (events_.size() <= events) {
      return;
    }
    events_.shrink_to(events);
    while (!texts_.empty() && texts_.back().first >= events) {
      texts_.pop_back();
    }
  }
  void clear() {
    open_.clear();
    pending_ = false;
    events_.clear();
    texts_.clear();
    kept_inside_.clear();
    seen_ = 0;
  }

  std::size_t cap_ = kSlowCallEvents;
  std::uint32_t thread_ = 0; // ThreadInfo::index
  GrowingArray<Open> open_;
  bool pending_ = false; // open_'s one call has no event in the buffer, not even its Begin
  GrowingArray<WindowEvent> events_;
  std::vector<std::pair<std::size_t, std::string>> texts_; // (position in events_, text)
  std::vector<KeptInside> kept_inside_;                    // by depth, innermost last
  std::uint64_t seen_ = 0;
};

// The kept calls of every function. Not thread-safe: the collector owns it.
class SlowCalls {
public:
  explicit SlowCalls(const SlowCallSettings& settings) : settings_(settings) {}

  bool enabled() const { return settings_.per_function != 0; }
  // A call of `location` begins.
  void begin(SlowThread& thread, std::uint32_t location, std::uint64_t ticks,
             const SlowThreadFigures& figures);
  // The innermost open call ends.
  void end(SlowThread& thread, std::uint64_t ticks, const SlowThreadFigures& figures);
  // A new window: no call kept, and the calls open now are no candidates (they began before it).
  void reset(std::vector<SlowThread*> threads);

  // The calls kept now, by location (any order), slowest first within one.
  std::vector<KeptCall> kept() const;
  SlowCallFigures figures() const;
  std::size_t bytes() const { return bytes_; }

private:
  struct Function {
    std::vector<KeptCall> calls; // slowest first, at most K
    std::uint64_t floor = 0;     // the least duration that enters once one was evicted
  };
  std::uint64_t least_to_enter(std::uint32_t location) const {
    return location < least_to_enter_.size() ? least_to_enter_[location] : 0;
  }
  // end() past its inline cases, its End buffered: the call enters its list, or has kept calls
  // inside it.
  void end_call(SlowThread& thread, std::uint64_t ticks, const SlowThreadFigures& figures,
                bool enters);
  // Keeps `call`; returns what the call outside it may share, if any.
  std::optional<SlowThread::KeptInside> keep(SlowThread& thread, const SlowThread::Open& call,
                                             bool buffered, std::uint64_t ticks,
                                             const SlowThreadFigures& figures);
  void insert(Function& function, KeptCall call);
  void share_storage(const SlowThread& thread, const SlowThread::Open& call, const KeptCall& kept);
  void hold(const KeptCall& call);
  void release(const KeptCall& call);
  void evict_over_budget();
  void rank(std::uint32_t location, bool add);

  SlowCallSettings settings_;
  std::vector<Function> functions_;           // by location
  std::vector<std::uint64_t> least_to_enter_; // by location: read at every END
  std::unordered_map<const SlowStorage*, std::size_t> holders_;
  // Functions with kept calls, by (count, -shortest kept, location): the last is evicted from.
  std::set<std::tuple<std::size_t, std::uint64_t, std::uint32_t>> by_count_;
  std::size_t bytes_ = 0;
  std::uint64_t kept_ = 0;
  std::uint64_t evicted_ = 0;
  std::uint64_t next_id_ = 1;
};

// Inline: the collector calls it at every BEGIN.
[[gnu::always_inline]] inline void SlowCalls::begin(SlowThread& thread, std::uint32_t location,
                                                    std::uint64_t ticks,
                                                    const SlowThreadFigures& figures) {
  if (!enabled()) {
    return;
  }
  if (thread.open_.empty()) {
    thread.cap_ = settings_.cap;
    thread.thread_ = figures.index;
    thread.pending_ = true;
  } else if (thread.pending_) {
    thread.materialize(); // this call is inside it
  }
  SlowThread::Open& call = thread.open_.push();
  call.location = location;
  call.offset = thread.events_.size();
  call.seen = thread.seen_++;
  call.start_ticks = ticks;
  call.allocated_bytes = figures.allocated->bytes;
  call.allocated_blocks = figures.allocated->blocks;
  call.cpu_periods = *figures.cpu_periods;
  if (!thread.pending_) {
    thread.put(ticks, figures.index, EventKind::Begin, location, 0);
  }
}

// Inline for the common ENDs: a call that does not enter its function's list and has no kept
// call inside it. Forced: out of line, `figures` (needed past these cases only) was built in
// memory at every END (docs/performance.md, "The slowest calls").
[[gnu::always_inline]] inline void SlowCalls::end(SlowThread& thread, std::uint64_t ticks,
                                                  const SlowThreadFigures& figures) {
  if (thread.open_.empty()) {
    return; // a call open since before the reset: no candidate
  }
  const SlowThread::Open& open = thread.open_.back();
  const std::uint64_t duration = ticks > open.start_ticks ? ticks - open.start_ticks : 0;
  const bool enters = duration >= least_to_enter(open.location); // rare: most calls are faster
  if (thread.pending_ && !enters) {                              // nothing was buffered
    thread.open_.pop_back();
    thread.pending_ = false;
    thread.seen_ = 0;
    return;
  }
  ++thread.seen_;
  if (!thread.pending_ && thread.events_.size() - open.offset + 1 < thread.cap_) {
    thread.put(ticks, thread.thread_, EventKind::End, open.location, 0);
  }
  if (enters || !thread.kept_inside_.empty()) {
    end_call(thread, ticks, figures, enters);
    return;
  }
  thread.open_.pop_back();
  if (thread.open_.empty()) {
    thread.clear(); // the outermost call ended
    return;
  }
  // What lies past the cap of every call still open is needed by none.
  thread.truncate(thread.open_.back().offset + thread.cap_ - 1);
}

} // namespace hotscope::trace
