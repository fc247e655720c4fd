/* A C program for the live agent's tests under `hotscope run --heap` (tests/heap/live_test.cpp):
 * keeps 100 blocks of 1,000 bytes live from keep_blocks(), writes its pid to DIR/ready, and
 * then, each time DIR/go appears, removes it and answers: starts /bin/ls on /proc/self/fd (the
 * descriptors a child inherits; with an empty environment, so that no profiler is preloaded
 * into ls itself) into DIR/fds, and writes DIR/done. It ends when DIR/stop
 * appears. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kept_blocks = 100, block_bytes = 1000 };

static char* volatile kept[kept_blocks];

__attribute__((noinline)) static void keep_blocks(void) {
  for (int i = 0; i < kept_blocks; ++i) {
    kept[i] = malloc(block_bytes);
    memset(kept[i], i, block_bytes);
  }
}

static const char* path(const char* dir, const char* name) {
  static char buffer[4096];
  snprintf(buffer, sizeof buffer, "%s/%s", dir, name);
  return buffer;
}

static int write_file(const char* file, const char* text) {
  FILE* out = fopen(file, "w");
  if (out == NULL) {
    return -1;
  }
  fputs(text, out);
  return fclose(out);
}

/* /bin/ls /proc/self/fd, its output in `file`. */
static int list_child_descriptors(const char* file) {
  const pid_t child = fork();
  if (child == 0) {
    const int out = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || dup2(out, 1) < 0) {
      _exit(126);
    }
    close(out);
    char* const no_environment[] = {NULL};
    execle("/bin/ls", "ls", "/proc/self/fd", (char*)NULL, no_environment);
    _exit(127);
  }
  int status = 0;
  return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
                 WEXITSTATUS(status) == 0
             ? 0
             : -1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    return 2;
  }
  const char* dir = argv[1];
  keep_blocks();
  char pid[32];
  snprintf(pid, sizeof pid, "%d\n", (int)getpid());
  if (write_file(path(dir, "ready"), pid) != 0) {
    return 3;
  }
  for (;;) {
    if (access(path(dir, "stop"), F_OK) == 0) {
      return 0;
    }
    if (access(path(dir, "go"), F_OK) == 0) {
      unlink(path(dir, "go"));
      if (list_child_descriptors(path(dir, "fds")) != 0 || write_file(path(dir, "done"), "") != 0) {
        return 4;
      }
    }
    usleep(10 * 1000);
  }
}
