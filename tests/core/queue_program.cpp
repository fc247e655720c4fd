// The program of QueueProgram: a producer hands 11 items one at a time to a consumer, which
// sleeps DELAY_MS (argv[1]) after it sees an item and before it pops it, so each item waits in
// the queue that long plus a wake-up. It writes its reports through HOTSCOPE_OUT at exit.
#include <hotscope/hotscope.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>

namespace {

std::mutex mutex;
std::condition_variable changed;
std::deque<int> items;
bool done = false;

void consume(std::chrono::milliseconds delay) {
  HOTSCOPE_THREAD_NAME("consumer");
  for (;;) {
    HOTSCOPE_SCOPE("consume");
    std::unique_lock lock(mutex);
    changed.wait(lock, [] { return !items.empty() || done; });
    if (items.empty()) {
      return;
    }
    lock.unlock();
    std::this_thread::sleep_for(delay);
    lock.lock();
    const int item = items.front();
    items.pop_front();
    HOTSCOPE_QUEUE_POP("handoff", item);
    lock.unlock();
    changed.notify_all();
  }
}

} // namespace

int main(int argc, char** argv) {
  const std::chrono::milliseconds delay(argc > 1 ? std::atoi(argv[1]) : 100);
  HOTSCOPE_THREAD_NAME("producer");
  HOTSCOPE_QUEUE_CAPACITY("handoff", 1);
  std::thread consumer(consume, delay);
  for (int item = 1; item <= 11; ++item) {
    HOTSCOPE_SCOPE("produce");
    std::unique_lock lock(mutex);
    HOTSCOPE_QUEUE_PUSH("handoff", item); // before the item can be seen, so before its pop
    items.push_back(item);
    changed.notify_all();
    changed.wait(lock, [] { return items.empty(); });
  }
  {
    const std::lock_guard lock(mutex);
    done = true;
  }
  changed.notify_all();
  consumer.join();
}
