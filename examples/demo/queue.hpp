// A bounded blocking queue between two pipeline stages. Full queues push back on the
// producer, so a slow stage shows up as time spent in push() upstream (the callers time it).
#ifndef DEMO_QUEUE_HPP
#define DEMO_QUEUE_HPP

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>

namespace demo {

template <typename T> class BoundedQueue {
public:
  explicit BoundedQueue(std::size_t capacity) : capacity_(capacity) {}

  std::size_t capacity() const { return capacity_; }

  // Blocks while the queue is full; returns the depth right after the push. `entering(item)` runs
  // under the queue's lock as the item goes in, `leaving(item)` in pop() as it comes out, so
  // whatever they record (HOTSCOPE_QUEUE_PUSH / _POP) is in the order the queue saw.
  template <typename Entering> std::size_t push(T item, Entering entering) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return items_.size() < capacity_; });
    entering(item);
    items_.push_back(std::move(item));
    const std::size_t depth = items_.size();
    lock.unlock();
    not_empty_.notify_one();
    return depth;
  }

  // Blocks while the queue is empty; nullopt once it is closed and drained.
  template <typename Leaving> std::optional<T> pop(Leaving leaving) {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return !items_.empty() || closed_; });
    if (items_.empty()) {
      return std::nullopt;
    }
    T item = std::move(items_.front());
    items_.pop_front();
    leaving(item);
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
  const std::size_t capacity_;
  std::mutex mutex_;
  std::condition_variable not_full_;
  std::condition_variable not_empty_;
  std::deque<T> items_;
  bool closed_ = false;
};

} // namespace demo

#endif // DEMO_QUEUE_HPP
