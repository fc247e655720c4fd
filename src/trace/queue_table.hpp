// Queue statistics, per queue name: items pushed and popped by id, the time each item waited
// (its push to the pop of the same id), the depth, and the ids still waiting, bounded per queue
// so that a queue that never pops cannot grow the profiler. Owned by the Aggregator.
//
// The collector drains one thread after another, so a pop can arrive before the push it
// matches (the pusher's ring was drained just before the push). Such a pop waits for its push
// until the end of the next drain pass, by which every record written before it has arrived;
// only then is it counted as popped but never pushed. For the same reason the depth is worked
// out at the end of each pass from the pass's pushes and pops in time order.
#pragma once

#include "snapshot/snapshot.hpp"
#include "trace/histogram.hpp"
#include "trace/ids_in_order.hpp"
#include "trace/snapshot_conversion.hpp"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hotscope::trace {

class QueueTable {
public:
  // Ids kept waiting per queue (and pops kept waiting for their push); beyond it the oldest is
  // given up, and counted.
  static constexpr std::size_t kPendingPerQueue = 65536;
  // Threads named per queue as pushers, and as poppers.
  static constexpr std::size_t kThreadsPerQueue = 64;

  explicit QueueTable(std::size_t pending_per_queue = kPendingPerQueue);

  // The queue called `name`, which records at `location` refer to: every place that pushes to
  // or pops from a queue has a location of its own, and all of them name the same queue.
  std::uint32_t queue(std::uint32_t location, const std::string& name);
  void push(std::uint32_t queue, std::uint32_t thread, std::uint64_t id, std::uint64_t ticks);
  void pop(std::uint32_t queue, std::uint32_t thread, std::uint64_t id, std::uint64_t ticks);
  void set_capacity(std::uint32_t queue, std::uint64_t capacity);
  // Every thread's records written so far have been consumed (a drain pass ended).
  void finish_pass();
  // Counts, waits and the maximum depth restart; the items still waiting, and so the depth, stay.
  void reset();

  using Conversion = SnapshotConversion;
  // Sorted by name.
  std::vector<QueueStats> snapshot(const Conversion& conversion) const;
  // Each queue's name and depth as of the last pass, allocating nothing (a crash report).
  template <class Visit> void each_depth(Visit&& visit) const {
    for (const Queue& queue : queues_) {
      visit(queue.name.c_str(), depth(queue.balance));
    }
  }

private:
  struct Pending {
    std::uint64_t ticks = 0;
    std::uint64_t pass = 0;
  };
  using PendingIds = IdsInOrder<Pending>;

  struct Queue {
    std::string name;
    std::uint64_t pushed = 0;
    std::uint64_t popped = 0;
    // Pushes less pops up to the last pass, not counting pops found never pushed; below 0
    // while a pop waits for its push.
    std::int64_t balance = 0;
    std::uint64_t max_depth = 0;
    std::vector<std::pair<std::uint64_t, int>> this_pass; // (ticks, +1 push / -1 pop)
    std::uint64_t capacity = 0;
    Durations wait; // push to pop of the same id
    std::uint64_t popped_never_pushed = 0;
    std::uint64_t pending_given_up = 0;
    PendingIds pending;    // pushed, not popped yet: the push's time
    PendingIds early_pops; // popped before their push arrived: the pop's time and pass
    std::vector<std::uint32_t> push_threads;
    std::vector<std::uint32_t> pop_threads;
  };
  static void remember(std::vector<std::uint32_t>& threads, std::uint32_t thread);
  static void add_wait(Queue& queue, std::uint64_t push_ticks, std::uint64_t pop_ticks);
  static std::uint64_t depth(std::int64_t balance);
  // Applies a pass's pushes and pops in time order to `balance` and `max_depth`.
  static void apply(std::vector<std::pair<std::uint64_t, int>>& changes, std::int64_t& balance,
                    std::uint64_t& max_depth);
  static void never_pushed(Queue& queue);

  std::size_t pending_per_queue_;
  std::uint64_t pass_ = 0;
  std::vector<Queue> queues_;
  std::unordered_map<std::uint32_t, std::uint32_t> by_location_;
  std::unordered_map<std::string, std::uint32_t> by_name_;
};

} // namespace hotscope::trace
