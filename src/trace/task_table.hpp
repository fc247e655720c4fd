// Task statistics, per task name (HOTSCOPE_TASK coroutines, Asio operations by kind): tasks
// created, completed, destroyed unfinished and alive, resumes, running slices, and per finished
// task its lifetime and the part of it spent waiting. Owned by the Aggregator, which measures the
// running slices on their threads and hands their durations here.
//
// A task's records come from several threads, and the collector drains one thread after another,
// so its end can arrive before its creation or its last slices (their threads are drained later
// in the pass). A task is followed by id from its first record until the end of the drain pass
// after the one its end arrived in, by which every record written before the end has arrived;
// only then are its lifetime and waiting time final. Tasks followed at once are capped, so tasks
// that never end cannot grow the profiler: beyond the cap the oldest is given up, and counted.
#pragma once

#include "snapshot/snapshot.hpp"
#include "trace/histogram.hpp"
#include "trace/ids_in_order.hpp"
#include "trace/snapshot_conversion.hpp"

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

namespace hotscope::trace {

class TaskTable {
public:
  static constexpr std::size_t kTasksFollowed = 65536;

  explicit TaskTable(std::size_t followed = kTasksFollowed);

  // The task name `name` (of a coroutine, or of an Asio operation when `asio`), which records at
  // `location` refer to.
  std::uint32_t task(std::uint32_t location, const std::string& name, bool asio);
  void create(std::uint32_t task, std::uint64_t id, std::uint64_t ticks);
  void resume(std::uint32_t task);
  // A running slice of `slice_ticks` ended (the task suspended or completed).
  void ran(std::uint32_t task, std::uint64_t id, std::uint64_t slice_ticks);
  // The task completed, or was destroyed unfinished.
  void end(std::uint32_t task, std::uint64_t id, std::uint64_t ticks, bool completed);
  // Every thread's records written so far have been consumed (a drain pass ended).
  void finish_pass();
  // Counts and durations restart; tasks alive stay followed, and are timed in full.
  void reset();

  // Sorted by name. Tasks ended but not final yet count with what has arrived of them.
  std::vector<TaskStats> snapshot(const SnapshotConversion& conversion) const;
  std::size_t bytes() const; // an estimate, for the statistics' memory figure

private:
  struct Task {
    std::string name;
    bool asio = false;
    std::uint64_t created = 0;
    std::uint64_t completed = 0;
    std::uint64_t destroyed = 0;
    std::uint64_t resumes = 0;
    std::uint64_t given_up = 0;
    std::int64_t balance = 0; // created less ended since the start
    Durations running;
    Durations waiting;
    Durations lifetime;
  };
  struct Followed {
    std::uint32_t task = 0;
    bool created_seen = false;
    bool ended = false;
    std::uint64_t created = 0;
    std::uint64_t ended_ticks = 0;
    std::uint64_t running = 0;
    std::uint64_t end_pass = 0;
  };

  Followed& follow(std::uint32_t task, std::uint64_t id);
  // Adds a finished task's lifetime and waiting time to `waiting` and `lifetime`.
  static void finish(const Followed& followed, Durations& waiting, Durations& lifetime);

  std::size_t followed_cap_;
  std::uint64_t pass_ = 0;
  IdsInOrder<Followed> followed_;
  std::deque<std::uint64_t> ended_; // ids in the order their end arrived
  std::vector<Task> tasks_;
  std::unordered_map<std::uint32_t, std::uint32_t> by_location_;
  std::unordered_map<std::string, std::uint32_t> by_name_; // kind and name
};

} // namespace hotscope::trace
