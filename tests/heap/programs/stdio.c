/* Exactness workload 3, in C: the C library's own allocations (a FILE and its buffer, the
 * stdout buffer, which stays live), an array grown with realloc, strdup'ed lines. The input is
 * written by the program itself, so both runs read the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  FILE* file = tmpfile();
  if (file == NULL) {
    return 2;
  }
  for (int i = 0; i < 200; ++i) {
    fprintf(file, "line %d: %.*s\n", i, i % 60,
            "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefgh");
  }
  rewind(file);
  char line[512];
  size_t count = 0;
  char** lines = NULL;
  while (fgets(line, sizeof line, file) != NULL) {
    lines = realloc(lines, (count + 1) * sizeof *lines);
    lines[count++] = strdup(line);
  }
  fclose(file);
  for (size_t i = 0; i < count; ++i) {
    free(lines[i]);
  }
  free(lines);
  printf("%zu line(s)\n", count);
  return 0;
}
