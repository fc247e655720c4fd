// A program built with -finstrument-functions (hotscope_instrument) and no hotscope macro but
// one: known call counts, recursion, an exception through instrumented frames, threads, a
// function of a shared library, one called before main. tests/instrument/instrument_test.cpp
// checks what hotscope recorded, and what uftrace records of the same program.
#include "instrumented_library.hpp"

#include <hotscope/hotscope.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

// Written by every thread: the calls have an effect the compiler keeps.
std::atomic<int> sink{0};

__attribute__((noinline)) void leaf(int value) {
  sink.fetch_add(value, std::memory_order_relaxed);
}

__attribute__((noinline)) int countdown(int depth) {
  sink.fetch_add(1, std::memory_order_relaxed);
  return depth == 0 ? 0 : 1 + countdown(depth - 1);
}

__attribute__((noinline)) void thrower(int value) {
  if (value >= 0) {
    throw std::runtime_error("thrown through instrumented frames");
  }
  sink.fetch_add(value, std::memory_order_relaxed);
}

__attribute__((noinline)) void middle(int value) {
  thrower(value);
  sink.fetch_add(1, std::memory_order_relaxed);
}

__attribute__((noinline)) void after_catch() {
  sink.fetch_add(2, std::memory_order_relaxed);
}

__attribute__((noinline)) void catcher() {
  try {
    middle(1);
  } catch (const std::runtime_error&) {
    after_catch();
  }
}

__attribute__((noinline)) void worker() {
  for (int i = 0; i < 100; ++i) {
    leaf(i);
  }
}

// Its symbol carries the ABI tag [abi:cxx11]; its name does not.
__attribute__((noinline)) std::string label(int length) {
  return std::string(static_cast<std::size_t>(length), 'x');
}

__attribute__((noinline)) void with_macro() {
  HOTSCOPE_SCOPE("macro_block");
  leaf(1);
}

__attribute__((noinline)) void before_main() {
  sink.fetch_add(3, std::memory_order_relaxed);
}

struct Early {
  Early() { before_main(); }
} early;

} // namespace

// Calls: leaf 1000 + 4 * 100 + 1 = 1401, countdown 11, thrower, middle, after_catch, catcher 1,
// worker 4, library::twice 5, with_macro 1, before_main 1, label 1.
int main() {
  for (int i = 0; i < 1000; ++i) {
    leaf(i);
  }
  // The filter's test lets the collector see these calls before the threads call leaf again.
  if (const char* pause = std::getenv("PAUSE_MS")) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(pause)));
  }
  countdown(10);
  catcher();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back(worker);
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  for (int i = 0; i < 5; ++i) {
    sink.fetch_add(library::twice(i), std::memory_order_relaxed);
  }
  with_macro();
  sink.fetch_add(static_cast<int>(label(3).size()), std::memory_order_relaxed);
  return 0;
}
