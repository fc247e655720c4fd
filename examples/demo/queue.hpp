// A bounded blocking queue between two pipeline stages. Full queues push back on the
// producer, so a slow stage shows up as time spent in push() upstream (the callers time it).
// Each queue reports itself to hotscope under the name it is given at run time.
#ifndef DEMO_QUEUE_HPP
#define DEMO_QUEUE_HPP

#include <hotscope/hotscope.hpp>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>

namespace demo {

// T has an `id` that tells items apart.
template <typename T> class BoundedQueue {
public:
  BoundedQueue(std::string_view name, std::size_t capacity) : probe_(name), capacity_(capacity) {
    probe_.set_capacity(capacity);
  }

  // Blocks while the queue is full; returns the depth right after the push. The push and the pop
  // are recorded under the queue's lock, so hotscope sees them in the order the queue did.
  std::size_t push(T item) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return items_.size() < capacity_; });
    probe_.push(item.id);
    items_.push_back(std::move(item));
    const std::size_t depth = items_.size();
    lock.unlock();
    not_empty_.notify_one();
    return depth;
  }

  // Blocks while the queue is empty; nullopt once it is closed and drained.
  std::optional<T> pop() {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return !items_.empty() || closed_; });
    if (items_.empty()) {
      return std::nullopt;
    }
    T item = std::move(items_.front());
    items_.pop_front();
    probe_.pop(item.id);
    lock.unlock();
    not_full_.notify_one();
    return item;
  }

  // No more pushes; consumers drain what is left, then pop() returns nullopt.
  void close() {
    {
      const std::lock_guard lock(mutex_);
      closed_ = true;
    }
    not_empty_.notify_all();
  }

private:
  const hotscope::Queue probe_;
  const std::size_t capacity_;
  std::mutex mutex_;
  std::condition_variable not_full_;
  std::condition_variable not_empty_;
  std::deque<T> items_;
  bool closed_ = false;
};

} // namespace demo

#endif // DEMO_QUEUE_HPP
