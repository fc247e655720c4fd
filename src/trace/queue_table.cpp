#include "trace/queue_table.hpp"

#include <algorithm>

namespace hotscope::trace {

QueueTable::QueueTable(std::size_t pending_per_queue) : pending_per_queue_(pending_per_queue) {}

std::uint32_t QueueTable::queue(std::uint32_t location, const std::string& name) {
  if (const auto found = by_location_.find(location); found != by_location_.end()) {
    return found->second;
  }
  const auto [named, added] =
      by_name_.try_emplace(name, static_cast<std::uint32_t>(queues_.size()));
  if (added) {
    queues_.emplace_back().name = name;
  }
  by_location_.emplace(location, named->second);
  return named->second;
}

void QueueTable::remember(std::vector<std::uint32_t>& threads, std::uint32_t thread) {
  if (threads.size() < kThreadsPerQueue &&
      std::find(threads.begin(), threads.end(), thread) == threads.end()) {
    threads.push_back(thread);
  }
}

void QueueTable::add_wait(Queue& queue, std::uint64_t push_ticks, std::uint64_t pop_ticks) {
  queue.wait.add(pop_ticks > push_ticks ? pop_ticks - push_ticks : 0);
}

std::uint64_t QueueTable::depth(std::int64_t balance) {
  return balance > 0 ? static_cast<std::uint64_t>(balance) : 0;
}

void QueueTable::apply(std::vector<std::pair<std::uint64_t, int>>& changes, std::int64_t& balance,
                       std::uint64_t& max_depth) {
  std::sort(changes.begin(), changes.end()); // at equal times, pops (-1) first
  for (const auto& [ticks, change] : changes) {
    balance += change;
    max_depth = std::max(max_depth, depth(balance));
  }
  changes.clear();
}

// A pop that took no item out of the queue: it leaves the depth alone.
void QueueTable::never_pushed(Queue& queue) {
  ++queue.popped_never_pushed;
  ++queue.balance;
}

void QueueTable::push(std::uint32_t index, std::uint32_t thread, std::uint64_t id,
                      std::uint64_t ticks) {
  Queue& queue = queues_[index];
  ++queue.pushed;
  queue.this_pass.emplace_back(ticks, +1);
  if (queue.this_pass.size() > pending_per_queue_) { // a pass that long: apply what it has
    apply(queue.this_pass, queue.balance, queue.max_depth);
  }
  remember(queue.push_threads, thread);
  if (const auto popped = queue.early_pops.take(id)) {
    add_wait(queue, ticks, popped->ticks);
    return;
  }
  // The same id pushed again before its pop: the older push can no longer be told apart.
  if (!queue.pending.insert(id, {ticks, pass_})) {
    ++queue.pending_given_up;
  }
  if (queue.pending.size() > pending_per_queue_) {
    queue.pending.drop_oldest();
    ++queue.pending_given_up;
  }
}

void QueueTable::pop(std::uint32_t index, std::uint32_t thread, std::uint64_t id,
                     std::uint64_t ticks) {
  Queue& queue = queues_[index];
  ++queue.popped;
  queue.this_pass.emplace_back(ticks, -1);
  if (queue.this_pass.size() > pending_per_queue_) {
    apply(queue.this_pass, queue.balance, queue.max_depth);
  }
  remember(queue.pop_threads, thread);
  if (const auto pushed = queue.pending.take(id)) {
    add_wait(queue, pushed->ticks, ticks);
    return;
  }
  // Its push may still be in a ring drained after this one: it has until the next pass ends.
  if (!queue.early_pops.insert(id, {ticks, pass_})) {
    never_pushed(queue); // the same id popped twice before any push
  }
  if (queue.early_pops.size() > pending_per_queue_) {
    queue.early_pops.drop_oldest();
    never_pushed(queue);
  }
}

void QueueTable::set_capacity(std::uint32_t index, std::uint64_t capacity) {
  queues_[index].capacity = capacity;
}

void QueueTable::finish_pass() {
  for (Queue& queue : queues_) {
    apply(queue.this_pass, queue.balance, queue.max_depth);
    for (const auto* oldest = queue.early_pops.oldest(); oldest != nullptr && oldest->pass < pass_;
         oldest = queue.early_pops.oldest()) {
      queue.early_pops.drop_oldest();
      never_pushed(queue);
    }
  }
  ++pass_;
}

void QueueTable::reset() {
  for (Queue& queue : queues_) {
    apply(queue.this_pass, queue.balance, queue.max_depth);
    queue.pushed = queue.popped = 0;
    queue.wait = Durations{};
    queue.popped_never_pushed = queue.pending_given_up = 0;
    queue.max_depth = depth(queue.balance);
    queue.push_threads.clear();
    queue.pop_threads.clear();
  }
}

std::vector<QueueStats> QueueTable::snapshot(const Conversion& conversion) const {
  const auto labels = [&](const std::vector<std::uint32_t>& threads) {
    std::vector<std::string> out;
    for (const std::uint32_t thread : threads) {
      std::string label = conversion.thread_label(thread);
      if (!label.empty() && std::find(out.begin(), out.end(), label) == out.end()) {
        out.push_back(std::move(label));
      }
    }
    return out;
  };
  std::vector<QueueStats> out;
  for (const Queue& queue : queues_) {
    QueueStats& stats = out.emplace_back();
    stats.name = queue.name;
    stats.pushed = queue.pushed;
    stats.popped = queue.popped;
    // The pass under way counts too, in time order so far.
    std::vector<std::pair<std::uint64_t, int>> changes = queue.this_pass;
    std::int64_t balance = queue.balance;
    stats.max_depth = queue.max_depth;
    apply(changes, balance, stats.max_depth);
    stats.depth = depth(balance);
    stats.capacity = queue.capacity;
    if (queue.wait.calls > 0) {
      stats.wait = conversion.durations(queue.wait);
    }
    stats.popped_never_pushed = queue.popped_never_pushed;
    stats.pending_given_up = queue.pending_given_up;
    stats.pending = queue.pending.size();
    if (const auto* oldest = queue.pending.oldest()) {
      stats.oldest_pending_ns = conversion.duration(
          conversion.now_ticks > oldest->ticks ? conversion.now_ticks - oldest->ticks : 0);
    }
    stats.push_threads = labels(queue.push_threads);
    stats.pop_threads = labels(queue.pop_threads);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

} // namespace hotscope::trace
