/* A statically linked program for `hotscope attach`'s refusal (tests/heap/attach_test.cpp): it
 * has no dynamic loader, so no dlopen to load the profiler with. Sleeps argv[1] seconds. */
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  sleep(argc > 1 ? (unsigned)atoi(argv[1]) : 30);
  return 0;
}
