// Loaded after loaded_a.c's library was unloaded, maybe at its address: its frames must not be
// taken for those of the library that was there before.
#include <stdlib.h>

// One frame deeper than loaded_a_allocates, so that its stack never equals that one's.
__attribute__((noinline)) static void* loaded_b_inner(size_t bytes) {
  void* block = malloc(bytes);
  __asm__ volatile("" : "+r"(block));
  return block;
}

__attribute__((noinline)) void* loaded_b_allocates(size_t bytes) {
  void* block = loaded_b_inner(bytes);
  __asm__ volatile("" : "+r"(block));
  return block;
}
