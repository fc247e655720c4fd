// A program only its dynamic symbol table names once stripped: linked with -rdynamic, so .dynsym
// lists its global functions, and stripped after the build. Its static function has no name left.
#include <stdio.h>
#include <stdlib.h>

void* volatile kept[2];

__attribute__((noinline)) static void* unexported_allocation(size_t size) {
  void* block = malloc(size);
  __asm__ volatile("" ::: "memory"); // no tail call: this frame stays on the stack
  return block;
}

__attribute__((noinline)) void exported_allocation(size_t size) {
  kept[0] = unexported_allocation(size);
  __asm__ volatile("" ::: "memory");
}

int main(void) {
  exported_allocation(1000);
  kept[1] = malloc(24);
  printf("%p %p\n", kept[0], kept[1]);
  free(kept[0]);
  free(kept[1]);
  return 0;
}
