// A C++ program that knows nothing of hotscope: two threads take two std::mutex in opposite
// orders and deadlock (it never ends by itself). Run under `hotscope run --locks` by run_test.cpp.
#include <chrono>
#include <mutex>
#include <thread>

namespace {

std::mutex accounts_mutex;
std::mutex ledger_mutex;

void take(std::mutex& first, std::mutex& second) {
  const std::lock_guard hold(first);
  std::this_thread::sleep_for(std::chrono::milliseconds(100)); // both hold their first by now
  const std::lock_guard wait(second);
}

} // namespace

int main() {
  std::thread one([] { take(accounts_mutex, ledger_mutex); });
  std::thread two([] { take(ledger_mutex, accounts_mutex); });
  one.join(); // never returns
  two.join();
  return 1;
}
