// A library whose debug information inflated_debug_test.cpp moves into a separate file, compressed
// as Debian's -dbg packages ship it: its frames, inlined ones included, must keep their names and
// lines.
#include <stdlib.h>

static inline __attribute__((always_inline)) void* inlined_allocation(size_t bytes) {
  void* block = malloc(bytes + 1);
  __asm__ volatile("" : "+r"(block));
  return block;
}

__attribute__((noinline)) void* split_debug_allocates(size_t bytes) {
  void* block = inlined_allocation(bytes);
  __asm__ volatile("" : "+r"(block)); // a call, not a tail jump
  return block;
}
