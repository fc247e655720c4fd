/* The guest side of hotscope-guest-transport-bench (docs/performance.md, "Guest tracing"):
 * hotscope_guest_dispatch(argument) runs argument >> 1 iterations of either an rdtsc pair (the
 * floor, argument & 1 == 0) or an empty instrumented scope (argument & 1 == 1), and returns the
 * TSC ticks the loop took, flushes (exits to the host) included. */
#define HOTSCOPE_GUEST_IMPLEMENTATION
#include "hotscope_guest.h"

static volatile uint64_t sink;

void hotscope_guest_init(void) {}

uint64_t hotscope_guest_dispatch(uint64_t argument) {
  const uint64_t iterations = argument >> 1;
  const uint64_t start = hotscope_guest_ticks();
  if ((argument & 1u) == 0) {
    for (uint64_t i = 0; i < iterations; ++i) {
      sink = hotscope_guest_ticks() - hotscope_guest_ticks();
    }
  } else {
    for (uint64_t i = 0; i < iterations; ++i) {
      HOTSCOPE_SCOPE("empty");
    }
  }
  return hotscope_guest_ticks() - start;
}
