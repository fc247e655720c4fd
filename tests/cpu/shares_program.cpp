// A CPU-bound program with four hot functions of known CPU share (docs/performance.md, "CPU
// samples"): `hotscope_shares_in_library` (a shared library without frame pointers) 40 %,
// `hotscope_shares_compare` (qsort's comparator, with qsort around it) 20 %, `scoped_work` (an
// instrumented scope) 20 %, and `hotscope_shares_sleepy` on a thread that sleeps half of its
// wall time, 20 %. Each part runs until its thread has spent its share of CPU time.
//   shares_program [CPU seconds, default 2]
#include <hotscope/hotscope.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>
#include <vector>

extern "C" std::uint64_t hotscope_shares_in_library(std::uint64_t x, int rounds);

namespace {

std::uint64_t sink = 0;

double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

void spin(std::uint64_t& x, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
  }
}

} // namespace

extern "C" __attribute__((noinline)) int hotscope_shares_compare(const void* a, const void* b) {
  const auto x = *static_cast<const std::uint64_t*>(a);
  const auto y = *static_cast<const std::uint64_t*>(b);
  std::uint64_t mixed = x ^ y; // enough work per comparison that qsort's own share is small
  spin(mixed, 40);
  sink += mixed & 1;
  return x < y ? -1 : x > y ? 1 : 0;
}

extern "C" __attribute__((noinline)) void hotscope_shares_sort(double seconds) {
  std::vector<std::uint64_t> values(4096);
  const double until = thread_cpu_seconds() + seconds;
  std::uint64_t seed = 1;
  while (thread_cpu_seconds() < until) {
    for (std::uint64_t& value : values) {
      spin(seed, 1);
      value = seed;
    }
    std::qsort(values.data(), values.size(), sizeof(values[0]), hotscope_shares_compare);
  }
}

extern "C" __attribute__((noinline)) void hotscope_shares_library_part(double seconds) {
  const double until = thread_cpu_seconds() + seconds;
  std::uint64_t x = 7;
  while (thread_cpu_seconds() < until) {
    x = hotscope_shares_in_library(x, 20'000);
  }
  sink += x;
}

extern "C" __attribute__((noinline)) void hotscope_shares_scoped(double seconds) {
  HOTSCOPE_SCOPE("scoped_work");
  const double until = thread_cpu_seconds() + seconds;
  std::uint64_t x = 3;
  while (thread_cpu_seconds() < until) {
    spin(x, 20'000);
  }
  sink += x;
}

// Alternates 10 ms of CPU with 10 ms of sleep.
extern "C" __attribute__((noinline)) void hotscope_shares_sleepy(double seconds) {
  HOTSCOPE_SCOPE("sleepy_loop");
  const double until = thread_cpu_seconds() + seconds;
  std::uint64_t x = 5;
  while (thread_cpu_seconds() < until) {
    const double burst = thread_cpu_seconds() + 0.01;
    while (thread_cpu_seconds() < burst) {
      spin(x, 2'000);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  sink += x;
}

int main(int argc, char** argv) {
  const double cpu_seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
  std::thread sleepy(hotscope_shares_sleepy, 0.2 * cpu_seconds);
  hotscope_shares_library_part(0.4 * cpu_seconds);
  hotscope_shares_sort(0.2 * cpu_seconds);
  hotscope_shares_scoped(0.2 * cpu_seconds);
  sleepy.join();
  std::printf("%llu\n", static_cast<unsigned long long>(sink & 1));
  return 0;
}
