// A program built with -finstrument-functions whose functions' inclusive times are far apart:
// ranked_K waits 8 ms * 1.3^K, so that two recordings of it (hotscope's, uftrace's) rank them
// alike. Waiting, not spinning: on a loaded machine a spinning function's time grows by every
// preemption (milliseconds each), a sleeping one's by a wake-up's latency only.
// tests/instrument/instrument_test.cpp, Instrument.TopTwentyRankedAsUftrace.
#include <cmath>
#include <ctime>

namespace {

// ::nanosleep, a C library call, is recorded by neither tool (uftrace --no-libcall).
#define RANKED(name, k)                                                                            \
  __attribute__((noinline)) void name() {                                                          \
    const long ns = std::lround(8e6 * std::pow(1.3, k));                                           \
    timespec wait{ns / 1000000000, ns % 1000000000};                                               \
    while (::nanosleep(&wait, &wait) != 0) {                                                       \
    }                                                                                              \
  }

RANKED(ranked_00, 0)
RANKED(ranked_01, 1)
RANKED(ranked_02, 2)
RANKED(ranked_03, 3)
RANKED(ranked_04, 4)
RANKED(ranked_05, 5)
RANKED(ranked_06, 6)
RANKED(ranked_07, 7)
RANKED(ranked_08, 8)
RANKED(ranked_09, 9)
RANKED(ranked_10, 10)
RANKED(ranked_11, 11)
RANKED(ranked_12, 12)
RANKED(ranked_13, 13)
RANKED(ranked_14, 14)
RANKED(ranked_15, 15)
RANKED(ranked_16, 16)
RANKED(ranked_17, 17)
RANKED(ranked_18, 18)

} // namespace

// 3.9 s in all; main, then ranked_18 down to ranked_00.
int main() {
  ranked_00();
  ranked_01();
  ranked_02();
  ranked_03();
  ranked_04();
  ranked_05();
  ranked_06();
  ranked_07();
  ranked_08();
  ranked_09();
  ranked_10();
  ranked_11();
  ranked_12();
  ranked_13();
  ranked_14();
  ranked_15();
  ranked_16();
  ranked_17();
  ranked_18();
  return 0;
}
