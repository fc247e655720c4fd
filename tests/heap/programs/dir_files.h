/* The files through which the heap tests' C programs talk to their test: DIR/NAME appears, or is
 * written with a number (whole, through a rename: the test may read it at any moment). */
#ifndef HOTSCOPE_TESTS_HEAP_DIR_FILES_H
#define HOTSCOPE_TESTS_HEAP_DIR_FILES_H

#include <stdio.h>
#include <unistd.h>

static inline const char* path(const char* dir, const char* name) {
  static char buffer[4096];
  snprintf(buffer, sizeof buffer, "%s/%s", dir, name);
  return buffer;
}

static inline void wait_for(const char* dir, const char* name) {
  while (access(path(dir, name), F_OK) != 0) {
    usleep(10000);
  }
}

static inline int write_file(const char* dir, const char* name, unsigned long value) {
  char temporary[4096 + 8];
  snprintf(temporary, sizeof temporary, "%s.tmp", path(dir, name));
  FILE* out = fopen(temporary, "w");
  if (out == NULL) {
    return -1;
  }
  fprintf(out, "%lu\n", value);
  return fclose(out) == 0 && rename(temporary, path(dir, name)) == 0 ? 0 : -1;
}

#endif
