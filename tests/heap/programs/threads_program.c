/* A C program with three named threads for the threads view of an unmodified program under
 * `hotscope run --heap` (tests/heap/live_test.cpp): starts worker-a, worker-b and worker-c, each
 * naming itself and then spending a little CPU time every 10 ms, writes its pid to DIR/ready once
 * all three are named, and ends when DIR/stop appears. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static atomic_int named;
static atomic_int stopping;

static void* work(void* name) {
  pthread_setname_np(pthread_self(), (const char*)name);
  atomic_fetch_add(&named, 1);
  volatile unsigned long sum = 0;
  while (!atomic_load(&stopping)) {
    for (unsigned long i = 0; i < 100000; ++i) {
      sum += i;
    }
    usleep(10 * 1000);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    return 2;
  }
  static const char* const names[] = {"worker-a", "worker-b", "worker-c"};
  pthread_t threads[3];
  for (int i = 0; i < 3; ++i) {
    if (pthread_create(&threads[i], NULL, work, (void*)names[i]) != 0) {
      return 3;
    }
  }
  while (atomic_load(&named) < 3) {
    usleep(1000);
  }
  char file[4096];
  snprintf(file, sizeof file, "%s/ready", argv[1]);
  FILE* out = fopen(file, "w");
  if (out == NULL) {
    return 4;
  }
  fprintf(out, "%d\n", (int)getpid());
  fclose(out);
  snprintf(file, sizeof file, "%s/stop", argv[1]);
  while (access(file, F_OK) != 0) {
    usleep(10 * 1000);
  }
  atomic_store(&stopping, 1);
  for (int i = 0; i < 3; ++i) {
    pthread_join(threads[i], NULL);
  }
  return 0;
}
