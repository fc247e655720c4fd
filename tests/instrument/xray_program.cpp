// A program built with hotscope_instrument(MODE xray): known call counts, an exception through
// instrumented frames, threads. With a directory as its argument it stops before each of its
// three phases until the test has switched the sleds: it writes <dir>/at<N> and waits for
// <dir>/go<N>. tests/instrument/xray_test.cpp checks what hotscope recorded.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<int> sink{0};

__attribute__((noinline)) void alpha(int value) {
  sink.fetch_add(value, std::memory_order_relaxed);
}

__attribute__((noinline)) void beta(int value) {
  sink.fetch_add(value + 1, std::memory_order_relaxed);
}

__attribute__((noinline)) void gamma(int value) {
  sink.fetch_add(value + 2, std::memory_order_relaxed);
}

__attribute__((noinline)) void thrower(int value) {
  if (value >= 0) {
    throw std::runtime_error("thrown through XRay's frames");
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

__attribute__((noinline)) void leaf(int value) {
  sink.fetch_add(value, std::memory_order_relaxed);
}

__attribute__((noinline)) void worker() {
  for (int i = 0; i < 100; ++i) {
    leaf(i);
  }
}

void phase(const char* dir, int number) {
  if (dir == nullptr) {
    return;
  }
  const std::string at = std::string(dir) + "/at" + std::to_string(number);
  std::ofstream(at + ".part") << number;
  std::filesystem::rename(at + ".part", at);
  const std::string go = std::string(dir) + "/go" + std::to_string(number);
  while (!std::filesystem::exists(go)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

} // namespace

// Calls: alpha 2000, beta 1000, gamma 1000, catcher, middle, thrower, after_catch 1, worker 4,
// leaf 400.
int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : nullptr;
  phase(dir, 1);
  for (int i = 0; i < 1000; ++i) {
    alpha(i);
  }
  // The filter's test lets the collector see these calls before alpha is called again.
  if (const char* pause = std::getenv("PAUSE_MS")) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(pause)));
  }
  for (int i = 0; i < 1000; ++i) {
    alpha(i);
  }
  phase(dir, 2);
  for (int i = 0; i < 500; ++i) {
    beta(i);
    gamma(i);
  }
  phase(dir, 3);
  for (int i = 0; i < 500; ++i) {
    beta(i);
    gamma(i);
  }
  catcher();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back(worker);
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  return 0;
}
