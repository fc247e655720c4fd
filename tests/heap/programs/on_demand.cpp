// A program linked with hotscope::heap that takes profiles on demand again and again, from
// several threads at once and after loading libraries (tests/heap/on_demand_test.cpp runs it):
//   on_demand DIR LIBRARY_A LIBRARY_B
// writes DIR/first and DIR/second (two profiles in a row), DIR/thread0..3 (four at once), then
// DIR/loaded after dlopen of LIBRARY_A and a call of its allocating function, then DIR/reloaded
// after dlclose of it, dlopen of LIBRARY_B and a call of its. Prints nothing; a failure is one
// line on stderr and exit status 1.
#include <hotscope/control.hpp>
#include <hotscope/hotscope.hpp>

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

void* kept[16];
int kept_count = 0;

template <class T> T* opaque(T* pointer) {
  asm volatile("" : "+r"(pointer));
  return pointer;
}

__attribute__((noinline)) void keeps_a_vector() {
  kept[kept_count++] = opaque(new std::vector<int>(100));
}

__attribute__((noinline)) void keeps_a_string() {
  kept[kept_count++] = opaque(new std::string(200, 'x'));
}

__attribute__((noinline)) void frees_a_block() {
  std::free(opaque(std::malloc(300)));
}

void profile(const std::string& dir) {
  if (const hotscope::Result result = hotscope::write_heap_profile(dir); !result) {
    std::fprintf(stderr, "%s\n", result.problem().c_str());
    std::exit(1);
  }
}

// Loads `path` and calls `function(bytes)`, keeping the block.
void allocate_in(const char* path, const char* function, std::size_t bytes, void** handle) {
  *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  using Allocates = void* (*)(std::size_t);
  const auto allocates =
      *handle == nullptr ? nullptr : reinterpret_cast<Allocates>(dlsym(*handle, function));
  if (allocates == nullptr) {
    std::fprintf(stderr, "cannot call %s in %s: %s\n", function, path, dlerror());
    std::exit(1);
  }
  kept[kept_count++] = allocates(bytes);
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: on_demand DIR LIBRARY_A LIBRARY_B\n");
    return 1;
  }
  // Every path is made first: nothing but the profiles happens between them.
  const std::string dir = argv[1];
  const std::string first = dir + "/first", second = dir + "/second", loaded = dir + "/loaded",
                    reloaded = dir + "/reloaded";
  std::vector<std::string> per_thread;
  for (int i = 0; i < 4; ++i) {
    per_thread.push_back(dir + "/thread" + std::to_string(i));
  }
  keeps_a_vector();
  keeps_a_string();
  frees_a_block();
  profile(first);
  profile(second);

  // The threads are started (which allocates) before any of them asks, and end (which frees)
  // only after all have.
  std::atomic<int> started{0};
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  threads.reserve(per_thread.size());
  for (const std::string& path : per_thread) {
    threads.emplace_back([&started, &done, &path] {
      ++started;
      while (started.load() < 4) {
        std::this_thread::yield();
      }
      profile(path);
      ++done;
      while (done.load() < 4) {
        std::this_thread::yield();
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }

  void* a = nullptr;
  allocate_in(argv[2], "loaded_a_allocates", 1111, &a);
  profile(loaded);
  dlclose(a);
  void* b = nullptr;
  allocate_in(argv[3], "loaded_b_allocates", 2222, &b);
  profile(reloaded);
  return 0;
}
