/* Prints the bytes in use in the C library's heap when main starts (what the libraries loaded
 * before main left in the program's heap) and how many blocks malloc has mapped. With the
 * argument "after-work", also the bytes in use after allocating and freeing one block from each
 * of 256 distinct stacks (what a profiler's records of them left there), then the bytes in use
 * in the main arena, where its one thread allocates, at main and after the work; with a runtime
 * directory after "after-work", halfway through the work it asks its own live agent there for
 * the heap profile, as `hotscope heap` does (what the agent's answer left there). */
#define _GNU_SOURCE /* memfd_create */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

enum { levels = 8 };

static size_t left(unsigned path, int level);
static size_t right(unsigned path, int level);
/* Called through a volatile table: neither inlined nor turned into a loop, so that each path
 * through left and right is a stack of its own. */
static size_t (*volatile const steps[2])(unsigned, int) = {left, right};

__attribute__((noinline)) static size_t allocate_and_free(unsigned path) {
  char* volatile block = malloc(64 + path % 7 * 16);
  block[0] = 1;
  const size_t one = (size_t)block[0];
  free(block);
  return one;
}

static size_t step(unsigned path, int level) {
  return level == 0 ? allocate_and_free(path) : steps[path & 1](path >> 1, level - 1);
}
__attribute__((noinline)) static size_t left(unsigned path, int level) {
  return step(path, level) + 1; /* not a tail call: each level keeps its frame */
}
__attribute__((noinline)) static size_t right(unsigned path, int level) {
  return step(path, level) + 1;
}

/* The bytes in use in the main arena (malloc_stats' "Arena 0"), read back through a memory file:
 * nothing is allocated for it. The profiler's own threads allocate in arenas of their own. */
static size_t main_arena_in_use(void) {
  static char text[8192];
  const int file = memfd_create("malloc-stats", 0);
  const int saved = dup(2);
  if (file < 0 || saved < 0 || dup2(file, 2) < 0) {
    return (size_t)-1;
  }
  malloc_stats();
  dup2(saved, 2);
  close(saved);
  const ssize_t got = pread(file, text, sizeof text - 1, 0);
  close(file);
  text[got > 0 ? got : 0] = '\0';
  const char* arena = strstr(text, "Arena 0:");
  const char* in_use = arena != NULL ? strstr(arena, "in use bytes") : NULL;
  const char* equals = in_use != NULL ? strchr(in_use, '=') : NULL;
  return equals != NULL ? strtoul(equals + 1, NULL, 10) : (size_t)-1;
}

/* GET /v1/heap from this process's agent in `runtime_dir`, its answer read whole (into the
 * stack: the program allocates nothing for it). 0 when the answer is a 200. */
static int ask_own_agent(const char* runtime_dir) {
  struct sockaddr_un address = {.sun_family = AF_UNIX};
  snprintf(address.sun_path, sizeof address.sun_path, "%s/%d.sock", runtime_dir, (int)getpid());
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, (const struct sockaddr*)&address, sizeof address) != 0) {
    return -1;
  }
  static const char request[] =
      "GET /v1/heap HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  if (write(fd, request, sizeof request - 1) != (ssize_t)(sizeof request - 1)) {
    return -1;
  }
  char head[16] = {0};
  size_t got = 0;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) {
    for (ssize_t i = 0; i < n && got < sizeof head - 1; ++i) {
      head[got++] = buffer[i];
    }
  }
  close(fd);
  return strncmp(head, "HTTP/1.1 200", 12) == 0 ? 0 : -1;
}

int main(int argc, char** argv) {
  const struct mallinfo2 start = mallinfo2();
  const size_t main_start = main_arena_in_use();
  printf("%zu %zu", start.uordblks, start.hblks);
  if (argc > 1 && strcmp(argv[1], "after-work") == 0) {
    /* As many programs do early: freeing a block malloc mapped raises its threshold for mapping
     * to that block's size, so anything of the profiler's up to 4 MiB would come from the heap. */
    void* volatile large = malloc(4 << 20);
    free(large);
    size_t sum = 0;
    for (unsigned path = 0; path < 1u << levels; ++path) {
      if (argc > 2 && path == 1u << (levels - 1) && ask_own_agent(argv[2]) != 0) {
        return 3;
      }
      sum += step(path, levels);
    }
    if (sum != (size_t)(levels + 1) << levels) {
      return 2;
    }
    printf(" %zu %zu %zu", mallinfo2().uordblks, main_start, main_arena_in_use());
  }
  printf("\n");
  return 0;
}
