// A program built with -finstrument-functions whose functions' inclusive times are far apart:
// ranked_K waits K * 20 ms, so that two recordings of it (hotscope's, uftrace's) rank them alike.
// Waiting, not spinning: on a loaded machine a spinning function's time grows by every
// preemption, a waiting one's by one wake-up's latency. Both are delays of milliseconds, not a
// share of the time: the functions are 20 ms apart (a ratio of 1.3 would leave the shortest ones
// a few milliseconds apart in a run of seconds, less than one late wake-up).
// tests/instrument/instrument_test.cpp, Instrument.TopTwentyRankedAsUftrace.
#include <ctime>

namespace {

// ::nanosleep, a C library call, is recorded by neither tool (uftrace --no-libcall).
#define RANKED(name, k)                                                                            \
  __attribute__((noinline)) void name() {                                                          \
    const long ns = (k)*20'000'000L;                                                               \
    timespec wait{ns / 1'000'000'000, ns % 1'000'000'000};                                         \
    while (::nanosleep(&wait, &wait) != 0) {                                                       \
    }                                                                                              \
  }

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
RANKED(ranked_19, 19)

} // namespace

// 3.8 s in all; main, then ranked_19 down to ranked_01.
int main() {
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
  ranked_19();
  return 0;
}
