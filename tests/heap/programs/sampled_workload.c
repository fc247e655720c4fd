// The sampled mode's known workload: 200,000 allocations of ten known sizes, every tenth one
// kept live to the end, every other round's with calloc (its hook has a short path of its own).
// Prints the exact totals it allocated and kept, for the test to compare the sampled estimates
// with. First, a calloc whose size overflows must fail as glibc's does (exit status 3).
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { rounds = 20000, kinds = 10 };
static const size_t sizes[kinds] = {8, 24, 56, 120, 250, 600, 1500, 4000, 9000, 30000};

int main(void) {
  volatile size_t half = SIZE_MAX / 2 + 1;
  errno = 0;
  if (calloc(half, 2) != NULL || errno != ENOMEM) {
    return 3;
  }
  static void* kept[rounds];
  unsigned long long total = 0;
  unsigned long long live = 0;
  for (int round = 0; round < rounds; ++round) {
    for (int kind = 0; kind < kinds; ++kind) {
      char* block = round % 2 == 0 ? malloc(sizes[kind]) : calloc(1, sizes[kind]);
      if (block == NULL) {
        return 1;
      }
      memset(block, kind, sizes[kind]);
      total += sizes[kind];
      if (kind == round % kinds) {
        kept[round] = block;
        live += sizes[kind];
      } else {
        free(block);
      }
    }
  }
  unsigned checksum = 0; // reads the kept blocks, which stay allocated to the end
  for (int round = 0; round < rounds; ++round) {
    checksum += *(const unsigned char*)kept[round];
  }
  printf("%llu %llu %d %u\n", total, live, rounds * kinds, checksum);
  return 0;
}
