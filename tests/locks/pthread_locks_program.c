/* A C program with pthread locks and nothing of hotscope, for `hotscope run --locks`
 * (run_test.cpp). Its first argument picks the case:
 *   deadlock   two threads take m1 and m2 in opposite orders and deadlock (it never ends);
 *   inversion  the same two orders, one after the other: never deadlocks;
 *   condvar    a consumer waits on a condition variable for 50 ms (not contention);
 *   trylock    5 pthread_mutex_trylock calls fail on a mutex another thread holds;
 *   contended  main waits about 80 ms for a mutex another thread holds;
 *   fork       forks while another thread holds a mutex; the child locks others and exits. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t m1 = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t m2 = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t guarded = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_cond = PTHREAD_COND_INITIALIZER;
static int ready = 0;

static void sleep_ms(int ms) {
  usleep((useconds_t)ms * 1000);
}

static void* one_then_two(void* hold_ms) {
  pthread_mutex_lock(&m1);
  sleep_ms(*(int*)hold_ms);
  pthread_mutex_lock(&m2);
  pthread_mutex_unlock(&m2);
  pthread_mutex_unlock(&m1);
  return NULL;
}

static void* two_then_one(void* hold_ms) {
  pthread_mutex_lock(&m2);
  sleep_ms(*(int*)hold_ms);
  pthread_mutex_lock(&m1);
  pthread_mutex_unlock(&m1);
  pthread_mutex_unlock(&m2);
  return NULL;
}

static void* hold_guarded(void* ms) {
  pthread_mutex_lock(&guarded);
  sleep_ms(*(int*)ms);
  pthread_mutex_unlock(&guarded);
  return NULL;
}

static void* consume(void* unused) {
  (void)unused;
  pthread_mutex_lock(&guarded);
  while (!ready) {
    pthread_cond_wait(&ready_cond, &guarded);
  }
  pthread_mutex_unlock(&guarded);
  return NULL;
}

static int run(const char* which) {
  pthread_t a, b;
  int hold_ms = 100;
  if (strcmp(which, "deadlock") == 0) {
    pthread_create(&a, NULL, one_then_two, &hold_ms);
    pthread_create(&b, NULL, two_then_one, &hold_ms);
    pthread_join(a, NULL); /* never returns */
    return 1;
  }
  if (strcmp(which, "inversion") == 0) {
    hold_ms = 1;
    pthread_create(&a, NULL, one_then_two, &hold_ms);
    pthread_join(a, NULL);
    pthread_create(&b, NULL, two_then_one, &hold_ms);
    pthread_join(b, NULL);
    return 0;
  }
  if (strcmp(which, "condvar") == 0) {
    pthread_create(&a, NULL, consume, NULL);
    sleep_ms(50);
    pthread_mutex_lock(&guarded);
    ready = 1;
    pthread_cond_signal(&ready_cond);
    pthread_mutex_unlock(&guarded);
    pthread_join(a, NULL);
    return 0;
  }
  if (strcmp(which, "trylock") == 0) {
    pthread_create(&a, NULL, hold_guarded, &hold_ms);
    sleep_ms(20);
    int failed = 0;
    for (int i = 0; i < 5; ++i) {
      failed += pthread_mutex_trylock(&guarded) != 0;
    }
    pthread_join(a, NULL);
    return failed == 5 ? 0 : 1;
  }
  if (strcmp(which, "contended") == 0) {
    pthread_create(&a, NULL, hold_guarded, &hold_ms);
    sleep_ms(20);
    pthread_mutex_lock(&guarded);
    pthread_mutex_unlock(&guarded);
    pthread_join(a, NULL);
    return 0;
  }
  if (strcmp(which, "fork") == 0) {
    pthread_create(&a, NULL, hold_guarded, &hold_ms);
    sleep_ms(20);
    const pid_t child = fork();
    if (child == 0) {
      pthread_mutex_lock(&m1);
      pthread_mutex_lock(&m2);
      pthread_mutex_unlock(&m2);
      pthread_mutex_unlock(&m1);
      _exit(pthread_mutex_trylock(&guarded) != 0 ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    pthread_join(a, NULL);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  }
  fprintf(stderr, "locks_program: unknown case %s\n", which);
  return 2;
}

int main(int argc, char** argv) {
  return argc == 2 ? run(argv[1]) : 2;
}
