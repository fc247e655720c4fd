/* A running C program for `hotscope attach` (tests/heap/attach_test.cpp): keeps a ring of 1,000
 * blocks of 1,000 bytes live from churn(), replacing the oldest one per step (after checking that
 * it still holds the byte it was filled with: exit status 5 if not), about 10,000 steps a second.
 * Writes its pid to DIR/ready, its step count to DIR/count every 100 steps, and ends when
 * DIR/stop appears. */
#include "dir_files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { ring_blocks = 1000, block_bytes = 1000 };

static unsigned char* ring[ring_blocks];

/* Step `step`: the oldest block checked, freed and replaced. */
__attribute__((noinline)) static int churn(unsigned long step) {
  const unsigned long slot = step % ring_blocks;
  unsigned char* old = ring[slot];
  if (old != NULL && (old[0] != (unsigned char)(step - ring_blocks) ||
                      old[block_bytes - 1] != (unsigned char)(step - ring_blocks))) {
    return -1;
  }
  free(old);
  ring[slot] = malloc(block_bytes);
  if (ring[slot] == NULL) {
    return -1;
  }
  memset(ring[slot], (unsigned char)step, block_bytes);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    return 2;
  }
  const char* dir = argv[1];
  if (write_file(dir, "ready", (unsigned long)getpid()) != 0) {
    return 3;
  }
  for (unsigned long step = 0;; ++step) {
    if (churn(step) != 0) {
      return 5;
    }
    if (step % 100 == 0) {
      if (access(path(dir, "stop"), F_OK) == 0) {
        return 0;
      }
      if (write_file(dir, "count", step) != 0) {
        return 4;
      }
    }
    usleep(100);
  }
}
