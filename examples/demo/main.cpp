// The demo service: runs the pipeline for --seconds (0: until SIGINT/SIGTERM), then drains
// it and returns from main, so an instrumented build writes its profile at exit.
#include "command_line.hpp"
#include "service.hpp"

#include <hotscope/hotscope.hpp>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <semaphore.h>

namespace {

// Posted by the signal handler: sem_post is async-signal-safe, and whichever thread the
// signal lands on, the main thread wakes up.
sem_t stop_requested;

extern "C" void on_stop_signal(int) {
  sem_post(&stop_requested);
}

void wait_for_stop(double seconds) {
  if (seconds == 0) {
    while (sem_wait(&stop_requested) != 0 && errno == EINTR) {
    }
    return;
  }
  timespec deadline{};
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  const double whole = std::floor(seconds);
  deadline.tv_sec += static_cast<std::time_t>(whole);
  deadline.tv_nsec += static_cast<long>((seconds - whole) * 1e9);
  if (deadline.tv_nsec >= 1'000'000'000) {
    deadline.tv_nsec -= 1'000'000'000;
    ++deadline.tv_sec;
  }
  while (sem_clockwait(&stop_requested, CLOCK_MONOTONIC, &deadline) != 0 && errno == EINTR) {
  }
}

} // namespace

int main(int argc, char** argv) {
  demo::CommandLine line;
  if (const std::optional<int> status = demo::parse_command_line(argc, argv, line)) {
    return *status;
  }
  const double seconds = line.seconds;
  demo::Options options;
  options.threads = line.threads;
  options.rate = line.rate;

  HOTSCOPE_THREAD_NAME("main");
  sem_init(&stop_requested, 0, 0);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  demo::Service service(options);
  const auto started = demo::Clock::now();
  service.start();
  wait_for_stop(seconds);
  const demo::Summary summary = service.stop();
  const std::chrono::duration<double> elapsed = demo::Clock::now() - started;

  std::printf("served %llu of %llu requests in %.1f s (%.0f/s), %llu bad, %.1f MiB written\n",
              static_cast<unsigned long long>(summary.served),
              static_cast<unsigned long long>(summary.accepted), elapsed.count(),
              static_cast<double>(summary.served) / elapsed.count(),
              static_cast<unsigned long long>(summary.bad_requests),
              static_cast<double>(summary.bytes_written) / (1 << 20));
  std::printf("  by op:");
  for (std::size_t i = 0; i < summary.by_op.size(); ++i) {
    std::printf(" %s %llu", demo::op_names[i], static_cast<unsigned long long>(summary.by_op[i]));
  }
  const std::uint64_t lookups = summary.cache_hits + summary.cache_misses;
  std::printf("\n  cache hit rate %.0f%%, latency p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
              lookups == 0 ? 0.0 : 100.0 * static_cast<double>(summary.cache_hits) / lookups,
              summary.p50_ms, summary.p99_ms, summary.max_ms);
  return 0;
}
