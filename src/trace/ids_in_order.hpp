// Entries keyed by a 64-bit id, kept in the order they came: found and removed by id, the oldest
// known, in O(1) amortized, in memory proportional to the entries held. The queue table keeps its
// waiting items in it, the task table its tasks.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <utility>

namespace hotscope::trace {

template <typename Entry> class IdsInOrder {
public:
  // False when the id was there already: its older entry is replaced.
  bool insert(std::uint64_t id, Entry entry) {
    const bool added = by_id_.insert_or_assign(id, Stored{entry, next_sequence_}).second;
    order_.emplace_back(id, next_sequence_++);
    drop_stale();
    return added;
  }
  Entry* find(std::uint64_t id) {
    const auto found = by_id_.find(id);
    return found == by_id_.end() ? nullptr : &found->second.entry;
  }
  std::optional<Entry> take(std::uint64_t id) {
    const auto found = by_id_.find(id);
    if (found == by_id_.end()) {
      return std::nullopt;
    }
    const Entry entry = found->second.entry;
    by_id_.erase(found);
    drop_stale();
    return entry;
  }
  const Entry* oldest() const { // nullptr when empty
    return order_.empty() ? nullptr : &by_id_.at(order_.front().first).entry;
  }
  void drop_oldest() {
    by_id_.erase(order_.front().first);
    order_.pop_front();
    drop_stale();
  }
  std::size_t size() const { return by_id_.size(); }
  template <typename Visit> void for_each(Visit visit) const {
    for (const auto& [id, stored] : by_id_) {
      visit(stored.entry);
    }
  }

private:
  struct Stored {
    Entry entry;
    std::uint64_t sequence; // tells this insert apart from an older one of the same id
  };
  bool stale(const std::pair<std::uint64_t, std::uint64_t>& arrival) const {
    const auto found = by_id_.find(arrival.first);
    return found == by_id_.end() || found->second.sequence != arrival.second;
  }
  // Keeps the front of `order_` the oldest id held, and `order_` within a constant factor of the
  // ids held whatever order they are taken in.
  void drop_stale() {
    while (!order_.empty() && stale(order_.front())) {
      order_.pop_front();
    }
    if (order_.size() > 2 * by_id_.size() + 64) {
      std::erase_if(order_, [&](const auto& arrival) { return stale(arrival); });
    }
  }

  std::unordered_map<std::uint64_t, Stored> by_id_;
  // Ids in insert order, with their sequence. An entry whose id was taken, or inserted again,
  // since is stale; the front is never stale.
  std::deque<std::pair<std::uint64_t, std::uint64_t>> order_;
  std::uint64_t next_sequence_ = 0;
};

} // namespace hotscope::trace
