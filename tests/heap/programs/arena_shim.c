// Preloaded ahead of the heap library in one test: its dlsym allocates while the heap library
// looks up the real allocator, as a C library's dlsym may, so those blocks come from the heap
// library's bootstrap arena. The program frees them later through arena_shim_release().
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

enum { max_kept = 64 };
static void* kept[max_kept];
static int kept_count;

// RTLD_NEXT means "after the caller", and the caller of the real dlsym would be this library:
// the heap library's look-ups (all in the C library) are answered from the C library itself.
void* dlsym(void* handle, const char* name) {
  static void* (*real_dlsym)(void*, const char*);
  if (real_dlsym == NULL) {
    real_dlsym = (void* (*)(void*, const char*))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  }
  if (handle != RTLD_NEXT) {
    return real_dlsym(handle, name);
  }
  if (kept_count < max_kept) {
    void* block = malloc(32);
    if (block != NULL) {
      memset(block, 0xAB, 32);
      kept[kept_count++] = block;
    }
  }
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  return libc == NULL ? NULL : real_dlsym(libc, name);
}

// Frees the blocks; returns how many of them lay inside the heap library's own image (its arena).
int arena_shim_release(const char* library_name) {
  int in_library = 0;
  for (int i = 0; i < kept_count; ++i) {
    Dl_info info;
    if (dladdr(kept[i], &info) != 0 && info.dli_fname != NULL &&
        strstr(info.dli_fname, library_name) != NULL) {
      ++in_library;
    }
    free(kept[i]);
  }
  kept_count = 0;
  return in_library;
}
