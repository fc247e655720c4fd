// A program using the linked-in heap profiler (hotscope::heap, libhotscope-heap.so) the way an
// outside project would. Run with HOTSCOPE_HEAP_MODE=full and HOTSCOPE_OUT set; the test script
// then finds consumer_heap_site's two blocks in the heap.json written at exit (common.cmake).
#include <hotscope/hotscope.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

// Live to the end: the blocks count in heap.json's At t-end too.
void* kept_blocks[2];

// A function of its own, so a frame names the allocation site; extern and not inlined, so the
// name is in the symbol table without debug information (the pkg-config build has none).
__attribute__((noinline)) void consumer_heap_site() {
  kept_blocks[0] = new char[100003];
  kept_blocks[1] = std::malloc(20011);
}

int main() {
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
  const std::string error = hotscope::heap_profile(hotscope::HeapFormat::Dhat, profile);
  if (!error.empty() || profile.find("consumer_heap_site") == std::string::npos) {
    std::fprintf(stderr, "hotscope::heap_profile: no consumer_heap_site in the profile (%s)\n",
                 error.c_str());
    return 1;
  }
  std::printf("heap consumer ok (hotscope::heap_mode() is Full)\n");
  return 0;
}
