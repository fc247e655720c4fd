// Thread churn: starts argv[1] short-lived threads, at most 16 at a time, each recording one
// scope, then prints CLOCK_MONOTONIC in ns as main returns, so that the test can measure how
// long the exit (the collector's last drain and the reports) takes after that.
#include <hotscope/hotscope.hpp>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>
#include <vector>

namespace {

void churn_work() {
  HOTSCOPE_FUNCTION();
}

} // namespace

int main(int argc, char** argv) {
  const int threads = argc == 2 ? std::atoi(argv[1]) : 0;
  if (threads <= 0) {
    std::fprintf(stderr, "usage: thread_churn_program THREADS\n");
    return 2;
  }
  constexpr int kAtOnce = 16;
  for (int started = 0; started < threads;) {
    std::vector<std::thread> batch;
    for (; started < threads && batch.size() < kAtOnce; ++started) {
      batch.emplace_back(churn_work);
    }
    for (std::thread& thread : batch) {
      thread.join();
    }
  }
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  std::printf("%lld\n", static_cast<long long>(now.tv_sec) * 1'000'000'000LL + now.tv_nsec);
  std::fflush(stdout);
  return 0;
}
