/* A running C program that loads and unloads plug-ins while `hotscope attach` profiles it
 * (tests/heap/attach_test.cpp), with PLUGIN_A PLUGIN_B DIR as arguments: loads PLUGIN_A at its
 * start and calls it; unloads it when DIR/unload appears (then writes DIR/unloaded); loads
 * PLUGIN_B when DIR/load appears, after which each step, about 5,000 a second, calls B's
 * plugin_churn. Writes its pid to DIR/ready, its loops to DIR/count every 100, and ends
 * when DIR/stop appears. */
#include "dir_files.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 4) {
    return 2;
  }
  const char* dir = argv[3];
  void* a = dlopen(argv[1], RTLD_NOW);
  void* (*a_allocates)(size_t) =
      a != NULL ? (void* (*)(size_t))dlsym(a, "loaded_a_allocates") : NULL;
  if (a_allocates == NULL) {
    fprintf(stderr, "%s\n", dlerror());
    return 3;
  }
  free(a_allocates(100));
  if (write_file(dir, "ready", (unsigned long)getpid()) != 0) {
    return 3;
  }
  int (*churn)(unsigned long) = NULL;
  unsigned long steps = 0;
  for (unsigned long loop = 0;; ++loop) {
    if (a != NULL && access(path(dir, "unload"), F_OK) == 0) {
      dlclose(a);
      a = NULL;
      if (write_file(dir, "unloaded", 1) != 0) {
        return 4;
      }
    }
    if (churn == NULL && access(path(dir, "load"), F_OK) == 0) {
      void* b = dlopen(argv[2], RTLD_NOW);
      churn = b != NULL ? (int (*)(unsigned long))dlsym(b, "plugin_churn") : NULL;
      if (churn == NULL) {
        fprintf(stderr, "%s\n", dlerror());
        return 3;
      }
    }
    if (churn != NULL && churn(steps++) != 0) {
      return 5;
    }
    if (loop % 100 == 0) {
      if (access(path(dir, "stop"), F_OK) == 0) {
        return 0;
      }
      if (write_file(dir, "count", loop) != 0) {
        return 4;
      }
    }
    usleep(200);
  }
}
