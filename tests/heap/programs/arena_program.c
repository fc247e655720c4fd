// Allocates and frees while profiled, then has the preloaded shim (arena_shim.c) free the blocks
// the heap library served from its bootstrap arena, and prints how many of them were.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

// Through a pointer the compiler cannot see through: a malloc and free pair it can see may be
// left out altogether.
static void* (*volatile allocate)(size_t) = malloc;

int main(void) {
  unsigned long checksum = 0;
  for (int i = 0; i < 10000; ++i) {
    char* block = allocate(100 + (size_t)(i % 50) * 64);
    block[0] = (char)i;
    checksum += (unsigned char)block[0];
    free(block);
  }
  int (*release)(const char*) = (int (*)(const char*))dlsym(RTLD_DEFAULT, "arena_shim_release");
  if (release == NULL) {
    fprintf(stderr, "arena_program: the shim is not preloaded\n");
    return 2;
  }
  printf("arena blocks freed: %d\n", release("libhotscope-preload"));
  return checksum == 0 ? 3 : 0;
}
