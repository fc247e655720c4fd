// A library loaded with dlopen after a program's first heap profiles (on_demand.cpp) or after a
// symbolizer has read the memory map (symbol_cache_test.cpp): its frames must still resolve.
#include <stdlib.h>

__attribute__((noinline)) void* loaded_a_allocates(size_t bytes) {
  void* block = malloc(bytes);
  __asm__ volatile("" : "+r"(block)); // a call, not a tail jump: this frame stays on the stack
  return block;
}
