// A program linked with hotscope::heap (tests/heap/linked_test.cpp runs it). Each form_* function
// makes known allocations of one kind inside its own scope; the test finds their sites by
// function name, and the same figures as memory per function in stats.json.
//   linked_forms forms DIR   every form, then DIR/heap.json and heap.pb.gz through the library
//                            call, then prints the mode and the pprof call's outcome
//   linked_forms retain DIR  starts the agent (the library call, twice), keeps 10 blocks of 1000
//                            bytes, frees 5 of 500, writes DIR/ready and waits for DIR/stop (the
//                            test resets and asks the agent meanwhile)
#include <hotscope/control.hpp>
#include <hotscope/hotscope.hpp>

#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>
#include <thread>

namespace {

// The compiler may remove a new/delete or malloc/free pair it can see whole: hide the pointer.
template <class T> T* opaque(T* pointer) {
  asm volatile("" : "+r"(pointer));
  return pointer;
}

struct Sized {
  char bytes[24];
};
struct alignas(64) Wide {
  char bytes[64];
};

void* kept[64];
int kept_count = 0;
void keep(void* pointer) {
  kept[kept_count++] = opaque(pointer);
}

// tb 28, tbk 2, eb 4, ebk 1: plain new, sized delete.
__attribute__((noinline)) void form_new() {
  HOTSCOPE_FUNCTION(); // memory per function: its figures equal these
  delete opaque(new Sized);
  keep(new int);
}

// tb 47, tbk 2, eb 7, ebk 1
__attribute__((noinline)) void form_new_array() {
  HOTSCOPE_FUNCTION(); // memory per function: its figures equal these
  delete[] opaque(new int[10]);
  keep(new char[7]);
}

// tb 32, tbk 2, eb 24, ebk 1
__attribute__((noinline)) void form_nothrow() {
  HOTSCOPE_FUNCTION(); // memory per function: its figures equal these
  delete opaque(new (std::nothrow) double);
  keep(new (std::nothrow) double[3]);
}

// tb 192, tbk 2, eb 128, ebk 1: aligned new, sized aligned delete.
__attribute__((noinline)) void form_aligned() {
  HOTSCOPE_FUNCTION(); // memory per function: its figures equal these
  delete opaque(new Wide);
  keep(new Wide[2]);
}

// tb 256, tbk 2, eb 192, ebk 1
__attribute__((noinline)) void form_aligned_nothrow() {
  HOTSCOPE_FUNCTION(); // memory per function: its figures equal these
  ::operator delete (opaque(new (std::nothrow) Wide), std::align_val_t{alignof(Wide)},
                     std::nothrow);
  keep(new (std::nothrow) Wide[3]);
}

// tb 183, tbk 3, eb 33, ebk 1: the operator functions called by name.
__attribute__((noinline)) void form_operators() {
  HOTSCOPE_FUNCTION(); // memory per function: its figures equal these
  ::operator delete(opaque(::operator new(100)), 100);
  ::operator delete[](opaque(::operator new[](50, std::nothrow)), std::nothrow);
  keep(::operator new (33, std::align_val_t{32}));
}

// tb 85, tbk 4, eb 55, ebk 2: a realloc counts again, and keeps its block.
__attribute__((noinline)) void form_malloc() {
  HOTSCOPE_FUNCTION(); // memory per function: its figures equal these
  std::free(opaque(std::malloc(10)));
  keep(std::calloc(3, 5));
  void* grown = std::realloc(opaque(std::malloc(20)), 40);
  keep(grown);
}

// tb 209, tbk 3, eb 81, ebk 2
__attribute__((noinline)) void form_aligned_c() {
  HOTSCOPE_FUNCTION(); // memory per function: its figures equal these
  std::free(opaque(std::aligned_alloc(64, 128)));
  void* pointer = nullptr;
  if (posix_memalign(&pointer, 32, 48) == 0) {
    keep(pointer);
  }
  keep(memalign(16, 33));
}

// tb 6, tbk 1, eb 6, ebk 1
__attribute__((noinline)) void form_strdup() {
  HOTSCOPE_FUNCTION(); // memory per function: its figures equal these
  keep(strdup("hello"));
}

// tb 10000, tbk 10: still live.
__attribute__((noinline)) void retained_blocks() {
  for (int i = 0; i < 10; ++i) {
    keep(std::malloc(1000));
  }
}

// tb 2500, tbk 5: freed.
__attribute__((noinline)) void dropped_blocks() {
  for (int i = 0; i < 5; ++i) {
    std::free(opaque(std::malloc(500)));
  }
}

const char* mode_name(hotscope::HeapMode mode) {
  switch (mode) {
  case hotscope::HeapMode::Full:
    return "full";
  case hotscope::HeapMode::Sampled:
    return "sampled";
  case hotscope::HeapMode::Off:
    return "off";
  case hotscope::HeapMode::NotLinked:
    break;
  }
  return "not linked";
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s forms|retain DIR\n", argv[0]);
    return 2;
  }
  const std::string what = argv[1];
  const std::filesystem::path dir = argv[2];
  if (what == "forms") {
    form_new();
    form_new_array();
    form_nothrow();
    form_aligned();
    form_aligned_nothrow();
    form_operators();
    form_malloc();
    form_aligned_c();
    form_strdup();
    std::printf("mode=%s\n", mode_name(hotscope::heap_mode()));
    const hotscope::Result written = hotscope::write_heap_profile(dir.string());
    std::printf("write_heap_profile: %s\n", written ? "ok" : written.problem().c_str());
    std::string pprof;
    const std::string problem =
        hotscope::heap_profile(hotscope::HeapFormat::Pprof, pprof).problem();
    const bool gzip = pprof.size() > 2 && static_cast<unsigned char>(pprof[0]) == 0x1f &&
                      static_cast<unsigned char>(pprof[1]) == 0x8b;
    std::printf("heap_profile: %s\n",
                problem.empty() ? (gzip ? "gzip" : "not gzip") : problem.c_str());
    return 0;
  }
  if (what == "retain") {
    const std::string started = hotscope::start_agent().problem();
    const std::string again = hotscope::start_agent().problem(); // running: nothing to do
    std::printf("start_agent: %s, again: %s\n", started.empty() ? "ok" : started.c_str(),
                again.empty() ? "ok" : again.c_str());
    std::fflush(stdout);
    retained_blocks();
    dropped_blocks();
    std::ofstream(dir / "ready") << "ready\n";
    while (!std::filesystem::exists(dir / "stop")) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return 0;
  }
  std::fprintf(stderr, "%s: unknown mode %s\n", argv[0], what.c_str());
  return 2;
}
