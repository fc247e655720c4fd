#include "trace/lock_table.hpp"

#include "text/text.hpp"
#include "trace/trace.hpp"

#include <algorithm>

namespace hotscope::trace {
namespace {

std::uint64_t elapsed(std::uint64_t from, std::uint64_t to) {
  return to > from ? to - from : 0;
}

} // namespace

LockTable::Stats LockTable::new_stats(const Lock& lock) {
  Stats stats;
  stats.name = lock.display;
  stats.kind = lock.kind;
  stats.address = lock.named ? 0 : lock.address;
  return stats;
}

LockTable::Instance* LockTable::instance(const Lock& lock) {
  // The lock's statistics: by name, or for an interposed lock by address.
  const auto stats_in = [&](auto& table, const auto& key) -> std::optional<std::uint32_t> {
    if (const auto found = table.find(key); found != table.end()) {
      return found->second;
    }
    if (locks_.size() >= kLocksMax) {
      return std::nullopt;
    }
    const auto index = static_cast<std::uint32_t>(locks_.size());
    locks_.push_back(new_stats(lock));
    table.emplace(key, index);
    return index;
  };
  const std::optional<std::uint32_t> stats = lock.named
                                                 ? stats_in(named_, std::string(lock.display))
                                                 : stats_in(by_address_, lock.address);
  if (!stats) {
    ++given_up_;
    return nullptr;
  }
  const std::uint32_t index = *stats;
  auto found = instances_.find(lock.address);
  if (found == instances_.end()) {
    if (instances_.size() >= kInstancesMax) {
      ++given_up_;
      return nullptr;
    }
    found = instances_.emplace(lock.address, Instance(index, lock.name)).first;
    ++locks_[index].instances;
  } else if (found->second.lock == UINT32_MAX) { // known so far only from an order
    found->second.lock = index;
    found->second.name = lock.name;
    ++locks_[index].instances;
  } else if (found->second.lock != index) {
    // Another lock now lives at this address: the old one is gone with its holds and orders.
    forget_instance_edges(lock.address);
    found->second = Instance(index, lock.name);
    ++locks_[index].instances;
  }
  return &found->second;
}

LockTable::ThreadLocks& LockTable::thread_locks(const At& at) {
  ThreadLocks& thread = threads_[at.thread];
  thread.os_tid = at.os_tid;
  return thread;
}

LockTable::Site LockTable::site_of(const At& at) const {
  return Site{{at.scopes.begin(), at.scopes.end()}, {}};
}

bool LockTable::wait(const At& at, const Lock& lock) {
  ThreadLocks& thread = thread_locks(at);
  thread.last = Last::None;
  if (instance(lock) == nullptr) {
    return false;
  }
  thread.waiting = Waiting{lock.address, at.ticks, 0, site_of(at)};
  thread.last = Last::Wait;
  return true;
}

void LockTable::holder(const At& at, std::uint64_t address, std::int64_t holder_tid) {
  ThreadLocks& thread = thread_locks(at);
  if (thread.waiting && thread.waiting->address == address) {
    thread.waiting->holder_tid = holder_tid;
  }
}

void LockTable::stack(std::uint32_t thread_index, std::span<const std::uint64_t> frames) {
  const auto found = threads_.find(thread_index);
  if (found == threads_.end()) {
    return;
  }
  ThreadLocks& thread = found->second;
  const std::vector<std::uint64_t> stack(frames.begin(),
                                         frames.begin() + std::min(frames.size(), kStackFramesMax));
  if (thread.last == Last::Wait && thread.waiting) {
    thread.waiting->site.stack = stack;
  } else if (thread.last == Last::Order) {
    if (const auto edge = edges_.find(thread.last_order); edge != edges_.end()) {
      edge->second.site.stack = stack;
    }
    for (Inversion& inversion : inversions_) { // found at this very order: its site too
      if (std::pair{inversion.first, inversion.second} == thread.last_order) {
        inversion.one.site.stack = stack;
      }
    }
  }
  thread.last = Last::None;
}

LockTable::WaitEnd LockTable::end_wait(ThreadLocks& thread, const At& at, std::uint64_t address,
                                       Instance& instance, bool acquired) {
  WaitEnd end;
  if (!thread.waiting || thread.waiting->address != address) {
    return end;
  }
  end.ended = true;
  end.since = thread.waiting->since;
  const Waiting waiting = std::move(*thread.waiting);
  thread.waiting.reset();
  if (!acquired) {
    return end;
  }
  Stats& stats = locks_[instance.lock];
  const std::uint64_t waited = elapsed(waiting.since, at.ticks);
  ++stats.contended;
  stats.wait.add(waited);
  if (stats.waiters.size() < kWaitersPerLock || stats.waiters.contains(at.thread)) {
    Tally& tally = stats.waiters[at.thread];
    ++tally.waits;
    tally.wait_ticks += waited;
  }
  if (stats.sites.size() < kSitesPerLock || stats.sites.contains(waiting.site)) {
    Tally& tally = stats.sites[waiting.site];
    ++tally.waits;
    tally.wait_ticks += waited;
  }
  end.flow = ++next_flow_;
  // An instrumented lock's every hold is recorded: with no holder left, its last release let the
  // waiter in, even one made between the failed try and the wait's record. An interposed lock's
  // uncontended holds are not: only a release after the wait began is known to be the one.
  const bool every_hold_recorded = locks_[instance.lock].address == 0;
  if (instance.last_release_thread != UINT32_MAX && instance.holders.empty() &&
      (every_hold_recorded || instance.last_release_ticks >= waiting.since) &&
      instance.last_release_ticks <= at.ticks) {
    end.handoff =
        Handoff{instance.last_release_thread, instance.last_release_ticks, instance.name, end.flow};
  } else {
    instance.pending = Instance::PendingHandoff{waiting.since, at.ticks, end.flow, pass_};
  }
  return end;
}

LockTable::WaitEnd LockTable::acquire(const At& at, const Lock& lock, bool shared) {
  ThreadLocks& thread = thread_locks(at);
  thread.last = Last::None;
  Instance* found = instance(lock);
  if (found == nullptr) {
    return {};
  }
  Instance& instance = *found;
  WaitEnd end = end_wait(thread, at, lock.address, instance, true);
  ++locks_[instance.lock].acquisitions;
  const auto held = std::find_if(thread.held.begin(), thread.held.end(),
                                 [&](const Held& h) { return h.address == lock.address; });
  if (held != thread.held.end()) { // a recursive lock taken again: no new hold, no order
    ++held->depth;
    return end;
  }
  for (const Held& outer : thread.held) {
    add_order(at, outer.address, lock.address, site_of(at));
  }
  if (thread.held.size() < kHeldPerThread) {
    thread.held.push_back({lock.address, at.ticks, 1, shared});
    instance.holders.push_back({at.thread, at.ticks, shared});
  } else {
    ++given_up_;
  }
  return end;
}

std::optional<LockTable::Handoff> LockTable::release(const At& at, const Lock& lock) {
  ThreadLocks& thread = thread_locks(at);
  thread.last = Last::None;
  const auto held = std::find_if(thread.held.rbegin(), thread.held.rend(),
                                 [&](const Held& h) { return h.address == lock.address; });
  const auto found = instances_.find(lock.address);
  if (held == thread.held.rend() || found == instances_.end()) {
    return std::nullopt; // taken before the records began, or past a cap
  }
  if (--held->depth > 0) {
    return std::nullopt;
  }
  Instance& instance = found->second;
  locks_[instance.lock].hold.add(elapsed(held->since, at.ticks));
  thread.held.erase(std::next(held).base());
  std::erase_if(instance.holders, [&](const Holder& h) { return h.thread == at.thread; });
  instance.last_release_thread = at.thread;
  instance.last_release_ticks = at.ticks;
  if (instance.pending && at.ticks <= instance.pending->acquired &&
      (locks_[instance.lock].address == 0 || at.ticks >= instance.pending->wait_since)) {
    const Handoff handoff{at.thread, at.ticks, instance.name, instance.pending->flow};
    instance.pending.reset();
    return handoff;
  }
  return std::nullopt;
}

LockTable::WaitEnd LockTable::try_failed(const At& at, const Lock& lock) {
  ThreadLocks& thread = thread_locks(at);
  thread.last = Last::None;
  Instance* found = instance(lock);
  if (found == nullptr) {
    return {};
  }
  ++locks_[found->lock].try_failed;
  return end_wait(thread, at, lock.address, *found, false);
}

void LockTable::order(const At& at, std::uint64_t held, std::uint64_t address) {
  ThreadLocks& thread = thread_locks(at);
  // A lock never contended is known from its orders alone: named by address (instance_name).
  for (const std::uint64_t lock : {held, address}) {
    if (instances_.size() < kInstancesMax) {
      instances_.try_emplace(lock, UINT32_MAX, 0);
    }
  }
  add_order(at, held, address, site_of(at));
  thread.last = Last::Order;
  thread.last_order = {held, address};
}

void LockTable::add_order(const At& at, std::uint64_t held, std::uint64_t address, Site site) {
  if (held == address || edges_.contains({held, address})) {
    return;
  }
  if (edges_.size() >= kOrderEdgesMax) {
    ++given_up_;
    return;
  }
  const Edge edge{at.thread, std::move(site), at.ticks};
  edges_.emplace(std::pair{held, address}, edge);
  successors_[held].push_back(address);
  // A path back from `address` to `held` closes a cycle: the two were taken in both orders.
  std::vector<std::uint64_t> path;
  if (!reaches(address, held, path) || inverted_pairs_.contains(std::minmax(held, address)) ||
      inversions_.size() >= kInversionsMax) {
    return;
  }
  inverted_pairs_.insert(std::minmax(held, address));
  // path: address, ..., held; the order that reached `held` is the path's last edge.
  const Edge& back = edges_.at({path[path.size() - 2], path.back()});
  inversions_.push_back({held, address, edge, back, instance_name(held), instance_name(address)});
}

bool LockTable::reaches(std::uint64_t from, std::uint64_t to,
                        std::vector<std::uint64_t>& path) const {
  // Depth first, iterative, each lock once: bounded by the edges.
  std::unordered_map<std::uint64_t, std::uint64_t> parent{{from, from}};
  std::vector<std::uint64_t> todo{from};
  while (!todo.empty()) {
    const std::uint64_t lock = todo.back();
    todo.pop_back();
    if (lock == to) {
      for (std::uint64_t at = to; at != from; at = parent.at(at)) {
        path.push_back(at);
      }
      path.push_back(from);
      std::reverse(path.begin(), path.end());
      return true;
    }
    const auto next = successors_.find(lock);
    if (next == successors_.end()) {
      continue;
    }
    for (const std::uint64_t successor : next->second) {
      if (parent.emplace(successor, lock).second) {
        todo.push_back(successor);
      }
    }
  }
  return false;
}

void LockTable::forget_instance_edges(std::uint64_t address) {
  std::erase_if(edges_, [&](const auto& entry) {
    return entry.first.first == address || entry.first.second == address;
  });
  successors_.erase(address);
  for (auto& [from, next] : successors_) {
    std::erase(next, address);
  }
}

std::string LockTable::instance_name(std::uint64_t address) const {
  const auto found = instances_.find(address);
  if (found == instances_.end() || found->second.lock == UINT32_MAX) {
    return address_lock_name("pthread lock", address);
  }
  const Stats& stats = locks_[found->second.lock];
  // A named lock of several instances: which one.
  return stats.instances > 1 && stats.address == 0
             ? text::cat(stats.name, " (0x", text::hex(address), ')')
             : stats.name;
}

void LockTable::thread_exited(std::uint32_t thread_index) {
  const auto found = threads_.find(thread_index);
  if (found == threads_.end()) {
    return;
  }
  for (const Held& held : found->second.held) {
    if (const auto instance = instances_.find(held.address); instance != instances_.end()) {
      std::erase_if(instance->second.holders,
                    [&](const Holder& h) { return h.thread == thread_index; });
    }
  }
  threads_.erase(found);
}

void LockTable::finish_pass() {
  // A release comes before the acquisition it let in, so it was written before the pass after the
  // acquisition's began: read by the end of that pass, or never.
  for (auto& [address, instance] : instances_) {
    if (instance.pending && instance.pending->pass < pass_) {
      instance.pending.reset();
    }
  }
  ++pass_;
  std::set<std::vector<std::pair<std::uint32_t, std::uint64_t>>> seen;
  std::vector<Cycle> standing;
  std::set<std::vector<std::pair<std::uint32_t, std::uint64_t>>> standing_keys;
  for (Cycle& cycle : cycles()) {
    std::vector<std::pair<std::uint32_t, std::uint64_t>> key;
    for (const Link& link : cycle) {
      key.emplace_back(link.waiter, link.address);
    }
    std::sort(key.begin(), key.end());
    if (candidates_.contains(key)) { // in two passes in a row: it stands
      if (!standing_keys_.contains(key)) {
        ++deadlocks_found_;
      }
      standing_keys.insert(key);
      standing.push_back(std::move(cycle));
    }
    seen.insert(std::move(key));
  }
  candidates_ = std::move(seen);
  standing_ = std::move(standing);
  standing_keys_ = std::move(standing_keys);
}

// Each thread waits for one lock; a lock held alone has one holder thread (several when shared):
// a walk from each waiting thread along "waits for a lock held by" finds every cycle once.
std::vector<LockTable::Cycle> LockTable::cycles() const {
  std::unordered_map<std::int64_t, std::uint32_t> by_tid;
  for (const auto& [index, thread] : threads_) {
    by_tid.emplace(thread.os_tid, index);
  }
  // The threads a waiting thread waits for.
  const auto blockers = [&](const ThreadLocks& thread, std::uint32_t index) {
    std::vector<std::uint32_t> holders;
    const auto instance = instances_.find(thread.waiting->address);
    if (instance != instances_.end()) {
      for (const Holder& holder : instance->second.holders) {
        if (holder.thread != index) {
          holders.push_back(holder.thread);
        }
      }
    }
    if (holders.empty() && thread.waiting->holder_tid != 0) {
      if (const auto found = by_tid.find(thread.waiting->holder_tid); found != by_tid.end()) {
        holders.push_back(found->second);
      }
    }
    return holders;
  };
  std::vector<Cycle> found;
  std::set<std::vector<std::pair<std::uint32_t, std::uint64_t>>> keys;
  for (const auto& [start, first] : threads_) {
    if (!first.waiting) {
      continue;
    }
    // Follow the first blocker from each thread: a deadlocked thread's chain loops.
    Cycle path;
    std::set<std::uint32_t> on_path;
    std::uint32_t at = start;
    while (!on_path.contains(at)) {
      const auto thread = threads_.find(at);
      if (thread == threads_.end() || !thread->second.waiting) {
        break;
      }
      const std::vector<std::uint32_t> holders = blockers(thread->second, at);
      if (holders.empty()) {
        break;
      }
      on_path.insert(at);
      path.push_back({at, thread->second.waiting->address, holders.front()});
      at = holders.front();
    }
    if (!on_path.contains(at)) {
      continue;
    }
    const auto loop =
        std::find_if(path.begin(), path.end(), [&](const Link& link) { return link.waiter == at; });
    Cycle cycle(loop, path.end());
    std::vector<std::pair<std::uint32_t, std::uint64_t>> key;
    for (const Link& link : cycle) {
      key.emplace_back(link.waiter, link.address);
    }
    std::sort(key.begin(), key.end());
    if (keys.insert(key).second) {
      found.push_back(std::move(cycle));
    }
  }
  return found;
}

void LockTable::reset() {
  for (Stats& stats : locks_) {
    stats.acquisitions = stats.contended = stats.try_failed = 0;
    stats.wait = {};
    stats.hold = {};
    stats.waiters.clear();
    stats.sites.clear();
  }
}

LockSite LockTable::site_out(const Site& site,
                             const std::function<std::string(std::uint32_t)>& scope_name) const {
  LockSite out;
  for (const std::uint32_t scope : site.scopes) {
    out.scopes.push_back(scope_name(scope));
  }
  out.stack = site.stack;
  return out;
}

LockThread LockTable::thread_out(std::uint32_t thread, std::uint64_t since, bool shared,
                                 const SnapshotConversion& conversion,
                                 const std::function<std::int64_t(std::uint32_t)>& os_tid) const {
  return LockThread{conversion.thread_label(thread), os_tid(thread),
                    conversion.duration(elapsed(since, conversion.now_ticks)), shared};
}

LockTable::Captured
LockTable::snapshot(const SnapshotConversion& conversion,
                    const std::function<std::string(std::uint32_t)>& scope_name,
                    const std::function<std::int64_t(std::uint32_t)>& os_tid) const {
  Captured out;
  out.locks.reserve(locks_.size());
  for (const Stats& stats : locks_) {
    LockStats& lock = out.locks.emplace_back();
    lock.name = stats.name;
    lock.kind = stats.kind;
    lock.address = stats.address;
    lock.acquisitions = stats.acquisitions;
    lock.contended = stats.contended;
    lock.try_failed = stats.try_failed;
    lock.wait = stats.wait.calls == 0 ? DurationStats{} : conversion.durations(stats.wait);
    lock.hold = stats.hold.calls == 0 ? DurationStats{} : conversion.durations(stats.hold);
    for (const auto& [thread, tally] : stats.waiters) {
      lock.top_waiters.push_back(
          {conversion.thread_label(thread), tally.waits, conversion.duration(tally.wait_ticks)});
    }
    std::sort(lock.top_waiters.begin(), lock.top_waiters.end(),
              [](const auto& a, const auto& b) { return a.wait_ns > b.wait_ns; });
    for (const auto& [site, tally] : stats.sites) {
      lock.contended_at.push_back(
          {site_out(site, scope_name), tally.waits, conversion.duration(tally.wait_ticks)});
    }
    std::sort(lock.contended_at.begin(), lock.contended_at.end(),
              [](const auto& a, const auto& b) { return a.wait_ns > b.wait_ns; });
  }
  // Live: who holds and who waits for each lock, whichever instance.
  for (const auto& [address, instance] : instances_) {
    if (instance.lock == UINT32_MAX) {
      continue;
    }
    for (const Holder& holder : instance.holders) {
      out.locks[instance.lock].holders.push_back(
          thread_out(holder.thread, holder.since, holder.shared, conversion, os_tid));
    }
  }
  for (const auto& [index, thread] : threads_) {
    if (!thread.waiting) {
      continue;
    }
    const auto instance = instances_.find(thread.waiting->address);
    if (instance != instances_.end() && instance->second.lock != UINT32_MAX) {
      out.locks[instance->second.lock].waiters.push_back(
          thread_out(index, thread.waiting->since, false, conversion, os_tid));
    }
  }
  std::stable_sort(out.locks.begin(), out.locks.end(), [](const LockStats& a, const LockStats& b) {
    return a.wait.total_ns > b.wait.total_ns;
  });
  for (const Cycle& cycle : standing_) {
    Deadlock& deadlock = out.deadlocks.emplace_back();
    for (const Link& link : cycle) {
      const ThreadLocks& waiter = threads_.at(link.waiter);
      Deadlock::Link& out_link = deadlock.cycle.emplace_back();
      out_link.waiter = thread_out(link.waiter, waiter.waiting->since, false, conversion, os_tid);
      out_link.lock = instance_name(link.address);
      std::uint64_t held_since = conversion.now_ticks;
      if (const auto holder = threads_.find(link.holder); holder != threads_.end()) {
        for (const Held& held : holder->second.held) {
          if (held.address == link.address) {
            held_since = held.since;
          }
        }
      }
      out_link.holder = thread_out(link.holder, held_since, false, conversion, os_tid);
      out_link.waiter_scopes = site_out(waiter.waiting->site, scope_name).scopes;
    }
  }
  for (const Inversion& inversion : inversions_) {
    out.inversions.push_back(
        {inversion.first_name, inversion.second_name, conversion.thread_label(inversion.one.thread),
         site_out(inversion.one.site, scope_name), conversion.thread_label(inversion.two.thread),
         site_out(inversion.two.site, scope_name),
         conversion.since_start ? conversion.since_start(inversion.one.ticks) : 0});
  }
  out.figures = {deadlocks_found_, edges_.size(), given_up_};
  return out;
}

std::size_t LockTable::bytes() const {
  std::size_t bytes = locks_.size() * sizeof(Stats) + instances_.size() * sizeof(Instance) +
                      edges_.size() * (sizeof(Edge) + 64) + threads_.size() * sizeof(ThreadLocks);
  for (const Stats& stats : locks_) {
    bytes += stats.sites.size() * (sizeof(Site) + 64) + stats.waiters.size() * 48;
  }
  return bytes;
}

} // namespace hotscope::trace
