/* The guest side of hotscope-guest-transport-bench (docs/performance.md, "Guest tracing"):
 * hotscope_guest_dispatch(argument) runs argument >> 2 iterations of what argument & 3 says: an
 * rdtsc pair (0, the floor), an empty instrumented scope (1), or a heap block reported allocated
 * and freed (2, HOTSCOPE_GUEST_ALLOC and HOTSCOPE_GUEST_FREE, each with its stack), and returns
 * the TSC ticks the loop took, flushes (exits to the host) included. */
#define HOTSCOPE_GUEST_IMPLEMENTATION
#include "hotscope_guest.h"

static volatile uint64_t sink;
static unsigned char block[64];

void hotscope_guest_init(void) {}

uint64_t hotscope_guest_dispatch(uint64_t argument) {
  const uint64_t iterations = argument >> 2;
  const uint64_t start = hotscope_guest_ticks();
  switch (argument & 3u) {
  case 0:
    for (uint64_t i = 0; i < iterations; ++i) {
      sink = hotscope_guest_ticks() - hotscope_guest_ticks();
    }
    break;
  case 1:
    for (uint64_t i = 0; i < iterations; ++i) {
      HOTSCOPE_SCOPE("empty");
    }
    break;
  default:
    for (uint64_t i = 0; i < iterations; ++i) {
      HOTSCOPE_GUEST_ALLOC(block, sizeof block);
      HOTSCOPE_GUEST_FREE(block);
    }
    break;
  }
  return hotscope_guest_ticks() - start;
}
