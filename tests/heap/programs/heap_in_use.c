/* Prints the bytes in use in the C library's heap when main starts and how many blocks malloc
 * has mapped: what the libraries loaded before main left in the program's heap. */
#include <malloc.h>
#include <stdio.h>

int main(void) {
  const struct mallinfo2 info = mallinfo2();
  printf("%zu %zu\n", info.uordblks, info.hblks);
  return 0;
}
