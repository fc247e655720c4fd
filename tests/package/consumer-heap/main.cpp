// A program using the linked-in heap profiler (hotscope::heap, libhotscope-heap.so) the way an
// outside project would. Run with HOTSCOPE_HEAP_MODE=full and HOTSCOPE_OUT set; the test script
// then finds consumer_heap_site's two blocks in the heap.json written at exit (common.cmake).
#include <hotscope/control.hpp>
#include <hotscope/hotscope.hpp>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

// Live to the end: the blocks count in heap.json's At t-end too.
void* kept_blocks[2];

// A function of its own, so a frame names the allocation site; extern and not inlined, so the
// name is in the symbol table without debug information (the pkg-config build has none).
__attribute__((noinline)) void consumer_heap_site() {
  kept_blocks[0] = new char[100003];
  kept_blocks[1] = std::malloc(20011);
}

// True when the first definition of SYMBOL in the program's search order is the heap library's:
// it must come before libc and libstdc++ for their functions to be the recorded ones.
bool defined_by_heap_library(const char* symbol) {
  Dl_info info{};
  void* function = dlsym(RTLD_DEFAULT, symbol);
  const bool found = function != nullptr && dladdr(function, &info) != 0 &&
                     info.dli_fname != nullptr &&
                     std::strstr(info.dli_fname, "libhotscope-heap.so") != nullptr;
  if (!found) {
    std::fprintf(stderr, "%s comes from %s, not libhotscope-heap.so\n", symbol,
                 info.dli_fname == nullptr ? "nowhere" : info.dli_fname);
  }
  return found;
}

int main() {
  // malloc, and operator new(std::size_t) by its mangled name.
  if (!defined_by_heap_library("malloc") || !defined_by_heap_library("_Znwm")) {
    return 1;
  }
  if (hotscope::heap_mode() != hotscope::HeapMode::Full) {
    std::fprintf(stderr,
                 "hotscope::heap_mode() is %d, expected Full (%d): is "
                 "HOTSCOPE_HEAP_MODE=full set and libhotscope-heap.so linked?\n",
                 static_cast<int>(hotscope::heap_mode()),
                 static_cast<int>(hotscope::HeapMode::Full));
    return 1;
  }
  consumer_heap_site();
  // The library call sees the blocks too.
  std::string profile;
  const hotscope::Result result = hotscope::heap_profile(hotscope::HeapFormat::Dhat, profile);
  if (!result || profile.find("consumer_heap_site") == std::string::npos) {
    std::fprintf(stderr, "hotscope::heap_profile: no consumer_heap_site in the profile (%s)\n",
                 result.problem().c_str());
    return 1;
  }
  std::printf("heap consumer ok (hotscope::heap_mode() is Full)\n");
  return 0;
}
