// The slowest calls of every function, kept whole (docs/slow.md): the Aggregator shows each of a
// thread's events to its SlowThread while a call is open there; at a call's END, SlowCalls keeps
// it when it is among its function's K slowest of the window, within one budget of bytes.
#pragma once

#include "snapshot/snapshot.hpp"
#include "trace/window.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <tuple>
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

// The figures of a thread that a kept call copies, and its running totals (since the reset).
struct SlowThreadFigures {
  std::uint32_t index = 0;
  const std::string* name = nullptr; // its label
  std::int64_t os_tid = 0;
  AllocationCounts allocated;
  std::uint64_t cpu_periods = 0;
};

// One thread's open calls and the events seen since its outermost one began. Each open call is a
// candidate: its first `cap - 1` events are buffered (an inner call's are a part of its outer's).
class SlowThread {
public:
  bool buffering() const { return !open_.empty(); }
  // An event of this thread while a call is open (inline text: `text`, else null).
  void event(const WindowEvent& event, const std::string* text) {
    ++seen_;
    if (events_.size() - open_.back().offset + 1 < cap_) {
      append(event, text);
    }
  }
  std::size_t buffered_bytes() const;

private:
  friend class SlowCalls;
  // A call kept while an outer one was open, and where its events are in the buffer.
  struct KeptInside {
    std::uint32_t location;
    std::uint64_t id;
    std::size_t offset;
    std::size_t count;
  };
  struct Open {
    std::uint32_t location;
    std::size_t offset; // of its Begin in events_
    std::uint64_t seen; // seen_ before its Begin
    std::uint64_t start_ticks;
    AllocationCounts allocated;
    std::uint64_t cpu_periods;
    std::vector<KeptInside> kept_inside;
  };
  void append(const WindowEvent& event, const std::string* text);
  void truncate(std::size_t events);
  void clear();

  std::size_t cap_ = kSlowCallEvents;
  std::vector<Open> open_;
  std::vector<WindowEvent> events_;
  std::vector<std::pair<std::size_t, std::string>> texts_; // (position in events_, text)
  std::uint64_t seen_ = 0;
};

// The kept calls of every function. Not thread-safe: the collector owns it.
class SlowCalls {
public:
  explicit SlowCalls(const SlowCallSettings& settings) : settings_(settings) {}

  bool enabled() const { return settings_.per_function != 0; }
  // A call of `location` begins (before its Begin event reaches thread.event()).
  void begin(SlowThread& thread, std::uint32_t location, std::uint64_t ticks,
             const SlowThreadFigures& figures);
  // The innermost open call ended (after its End event reached thread.event()).
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
    std::uint64_t floor = 0;     // a call must last longer than this to enter (evictions)
  };
  std::uint64_t least_to_enter(std::uint32_t location) const;
  void keep(SlowThread& thread, SlowThread::Open& call, std::uint64_t ticks,
            const SlowThreadFigures& figures);
  void insert(Function& function, KeptCall call);
  void share_storage(const SlowThread::Open& call, const KeptCall& kept);
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

} // namespace hotscope::trace
