#include "trace/task_table.hpp"

#include <algorithm>
#include <tuple>

namespace hotscope::trace {

TaskTable::TaskTable(std::size_t followed) : followed_cap_(followed) {}

std::uint32_t TaskTable::task(std::uint32_t location, const std::string& name, bool asio) {
  if (const auto found = by_location_.find(location); found != by_location_.end()) {
    return found->second;
  }
  const auto [named, added] = by_name_.try_emplace((asio ? "asio:" : "coroutine:") + name,
                                                   static_cast<std::uint32_t>(tasks_.size()));
  if (added) {
    Task& task = tasks_.emplace_back();
    task.name = name;
    task.asio = asio;
  }
  by_location_.emplace(location, named->second);
  return named->second;
}

TaskTable::Followed& TaskTable::follow(std::uint32_t task, std::uint64_t id) {
  if (Followed* found = followed_.find(id)) {
    return *found;
  }
  followed_.insert(id, Followed{.task = task});
  if (followed_.size() > followed_cap_) {
    ++tasks_[followed_.oldest()->task].given_up;
    followed_.drop_oldest();
  }
  return *followed_.find(id);
}

void TaskTable::create(std::uint32_t task, std::uint64_t id, std::uint64_t ticks) {
  ++tasks_[task].created;
  ++tasks_[task].balance;
  Followed& followed = follow(task, id);
  followed.created_seen = true;
  followed.created = ticks;
}

void TaskTable::resume(std::uint32_t task) {
  ++tasks_[task].resumes;
}

void TaskTable::ran(std::uint32_t task, std::uint64_t id, std::uint64_t slice_ticks) {
  tasks_[task].running.add(slice_ticks);
  follow(task, id).running += slice_ticks;
}

void TaskTable::end(std::uint32_t task, std::uint64_t id, std::uint64_t ticks, bool completed) {
  Task& named = tasks_[task];
  ++(completed ? named.completed : named.destroyed);
  --named.balance;
  Followed& followed = follow(task, id);
  followed.ended = true;
  followed.ended_ticks = ticks;
  followed.end_pass = pass_;
  ended_.push_back(id);
}

void TaskTable::finish(const Followed& followed, Durations& waiting, Durations& lifetime) {
  if (!followed.created_seen) {
    return; // its creation was dropped, given up or before the profiler: no lifetime
  }
  const std::uint64_t lived =
      followed.ended_ticks > followed.created ? followed.ended_ticks - followed.created : 0;
  lifetime.add(lived);
  waiting.add(lived > followed.running ? lived - followed.running : 0);
}

void TaskTable::finish_pass() {
  while (!ended_.empty()) {
    const std::uint64_t id = ended_.front();
    const Followed* followed = followed_.find(id);
    if (followed != nullptr && followed->ended) {
      if (followed->end_pass >= pass_) {
        break; // its other threads' records may still be on their way until this pass ends
      }
      Task& task = tasks_[followed->task];
      finish(*followed, task.waiting, task.lifetime);
      followed_.take(id);
    }
    ended_.pop_front();
  }
  ++pass_;
}

void TaskTable::reset() {
  for (Task& task : tasks_) {
    task.created = task.completed = task.destroyed = task.resumes = task.given_up = 0;
    task.running = task.waiting = task.lifetime = Durations{};
  }
}

std::vector<TaskStats> TaskTable::snapshot(const SnapshotConversion& conversion) const {
  // Tasks ended but not final yet: what has arrived of them.
  std::unordered_map<std::uint32_t, std::pair<Durations, Durations>> ending;
  followed_.for_each([&](const Followed& followed) {
    if (followed.ended) {
      auto [it, added] = ending.try_emplace(followed.task);
      if (added) {
        it->second = {tasks_[followed.task].waiting, tasks_[followed.task].lifetime};
      }
      finish(followed, it->second.first, it->second.second);
    }
  });
  const auto durations = [&](const Durations& d) {
    return d.calls == 0 ? DurationStats{} : conversion.durations(d);
  };
  std::vector<TaskStats> out;
  for (std::uint32_t i = 0; i < tasks_.size(); ++i) {
    const Task& task = tasks_[i];
    TaskStats& stats = out.emplace_back();
    stats.name = task.name;
    stats.kind = task.asio ? "asio" : "coroutine";
    stats.created = task.created;
    stats.completed = task.completed;
    stats.destroyed_unfinished = task.destroyed;
    stats.alive = task.balance > 0 ? static_cast<std::uint64_t>(task.balance) : 0;
    stats.resumes = task.resumes;
    stats.given_up = task.given_up;
    stats.running = durations(task.running);
    const auto found = ending.find(i);
    stats.waiting = durations(found == ending.end() ? task.waiting : found->second.first);
    stats.lifetime = durations(found == ending.end() ? task.lifetime : found->second.second);
  }
  std::sort(out.begin(), out.end(), [](const TaskStats& a, const TaskStats& b) {
    return std::tie(a.name, a.kind) < std::tie(b.name, b.kind);
  });
  return out;
}

std::size_t TaskTable::bytes() const {
  std::size_t bytes = followed_.size() * (sizeof(Followed) + 48) + ended_.size() * 8;
  for (const Task& task : tasks_) {
    bytes += sizeof(Task) + task.name.capacity() + task.running.histogram.allocated_bytes() +
             task.waiting.histogram.allocated_bytes() + task.lifetime.histogram.allocated_bytes();
  }
  return bytes;
}

} // namespace hotscope::trace
