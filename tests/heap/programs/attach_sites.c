/* A C program for a sampled `hotscope attach` (tests/heap/attach_test.cpp): once DIR/go appears
 * (after the attach), keeps known bytes live at three sites, writes DIR/done, and ends when
 * DIR/stop appears, its blocks still live. Writes its pid to DIR/ready first. */
#include "dir_files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* `count` blocks of `bytes`, touched and never freed; 0, or -1 when malloc failed. Inlined in
 * each site: a call would be a tail call, leaving the site's frame out of the stack. */
static inline __attribute__((always_inline)) int keep(unsigned long count, size_t bytes) {
  for (unsigned long i = 0; i < count; ++i) {
    unsigned char* block = malloc(bytes);
    if (block == NULL) {
      return -1;
    }
    memset(block, (int)i, bytes);
  }
  return 0;
}

/* The sites, each a frame of its own: 2,000,000, 2,000,000 and 4,000,000 bytes. */
__attribute__((noinline)) static int keep_small(void) {
  return keep(20000, 100);
}
__attribute__((noinline)) static int keep_medium(void) {
  return keep(2000, 1000);
}
__attribute__((noinline)) static int keep_large(void) {
  return keep(100, 40000);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    return 2;
  }
  const char* dir = argv[1];
  if (write_file(dir, "ready", (unsigned long)getpid()) != 0) {
    return 3;
  }
  wait_for(dir, "go");
  if (keep_small() != 0 || keep_medium() != 0 || keep_large() != 0) {
    return 4;
  }
  if (write_file(dir, "done", 1) != 0) {
    return 3;
  }
  wait_for(dir, "stop");
  return 0;
}
