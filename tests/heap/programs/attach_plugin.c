/* A plug-in that attach_plugins.c loads after `hotscope attach` (tests/heap/attach_test.cpp):
 * its own calls to malloc and free keep a ring of 100 blocks of 3,000 bytes live. */
#include <stdlib.h>
#include <string.h>

enum { ring_blocks = 100, block_bytes = 3000 };

static void* ring[ring_blocks];

/* Step `step`: the oldest block freed and replaced. 0, or -1 when malloc failed. */
__attribute__((noinline)) int plugin_churn(unsigned long step) {
  const unsigned long slot = step % ring_blocks;
  free(ring[slot]);
  ring[slot] = malloc(block_bytes);
  if (ring[slot] == NULL) {
    return -1;
  }
  memset(ring[slot], 1, block_bytes);
  return 0;
}
