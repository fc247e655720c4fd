/* Prints the bytes in use in the C library's heap when main starts (what the libraries loaded
 * before main left in the program's heap) and how many blocks malloc has mapped. With the
 * argument "after-work", also the bytes in use after allocating and freeing one block from each
 * of 256 distinct stacks (what a profiler's records of them left there). */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { levels = 8 };

static size_t left(unsigned path, int level);
static size_t right(unsigned path, int level);
/* Called through a volatile table: neither inlined nor turned into a loop, so that each path
 * through left and right is a stack of its own. */
static size_t (*volatile const steps[2])(unsigned, int) = {left, right};

__attribute__((noinline)) static size_t allocate_and_free(unsigned path) {
  char* volatile block = malloc(64 + path % 7 * 16);
  block[0] = 1;
  const size_t one = (size_t)block[0];
  free(block);
  return one;
}

static size_t step(unsigned path, int level) {
  return level == 0 ? allocate_and_free(path) : steps[path & 1](path >> 1, level - 1);
}
__attribute__((noinline)) static size_t left(unsigned path, int level) {
  return step(path, level) + 1; /* not a tail call: each level keeps its frame */
}
__attribute__((noinline)) static size_t right(unsigned path, int level) {
  return step(path, level) + 1;
}

int main(int argc, char** argv) {
  const struct mallinfo2 start = mallinfo2();
  printf("%zu %zu", start.uordblks, start.hblks);
  if (argc > 1 && strcmp(argv[1], "after-work") == 0) {
    /* As many programs do early: freeing a block malloc mapped raises its threshold for mapping
     * to that block's size, so anything of the profiler's up to 4 MiB would come from the heap. */
    void* volatile large = malloc(4 << 20);
    free(large);
    size_t sum = 0;
    for (unsigned path = 0; path < 1u << levels; ++path) {
      sum += step(path, levels);
    }
    if (sum != (size_t)(levels + 1) << levels) {
      return 2;
    }
    printf(" %zu", mallinfo2().uordblks);
  }
  printf("\n");
  return 0;
}
