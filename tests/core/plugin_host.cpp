// Loads the plug-ins (plugin.cpp) from the paths in argv and unloads each right after its calls,
// before the collector (HOTSCOPE_COLLECT_MS=1000) has drained their records:
//   plugin_host unload-at-once LIBRARY THREADS ROUNDS: each round loads LIBRARY, calls it 100
//     times on each of THREADS threads, and unloads it.
//   plugin_host same-address LIBRARY_A LIBRARY_B: calls A 10 times, unloads it and loads B; when B
//     landed where A was, calls B 20 times, unloads it and prints "same address after N tries";
//     else unloads B and tries again (another thread's mmap may take the hole A left), at most
//     50 times, then prints "different addresses".
// The host records a "host_round" scope of its own around each round. Exits 1 with a line on
// stderr when a library cannot be loaded.
#include <hotscope/hotscope.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <thread>
#include <vector>

namespace {

using Run = void (*)(int);

struct Loaded {
  void* handle = nullptr;
  Run run = nullptr;
  const void* base = nullptr;
};

Loaded load(const char* path) {
  Loaded loaded;
  loaded.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (loaded.handle == nullptr) {
    std::fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
    std::exit(1);
  }
  loaded.run = reinterpret_cast<Run>(dlsym(loaded.handle, "plugin_run"));
  Dl_info info{};
  if (loaded.run == nullptr || dladdr(reinterpret_cast<void*>(loaded.run), &info) == 0) {
    std::fprintf(stderr, "%s has no plugin_run\n", path);
    std::exit(1);
  }
  loaded.base = info.dli_fbase;
  return loaded;
}

void unload(const Loaded& loaded) {
  if (dlclose(loaded.handle) != 0) {
    std::fprintf(stderr, "dlclose: %s\n", dlerror());
    std::exit(1);
  }
}

} // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::strcmp(argv[1], "unload-at-once") == 0) {
    const int threads = std::atoi(argv[3]);
    const int rounds = std::atoi(argv[4]);
    for (int round = 0; round < rounds; ++round) {
      HOTSCOPE_SCOPE("host_round");
      const Loaded loaded = load(argv[2]);
      std::vector<std::thread> workers;
      for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&] { loaded.run(100); });
      }
      for (std::thread& worker : workers) {
        worker.join();
      }
      unload(loaded);
    }
    return 0;
  }
  if (argc == 4 && std::strcmp(argv[1], "same-address") == 0) {
    HOTSCOPE_SCOPE("host_round");
    for (int tries = 1; tries <= 50; ++tries) {
      const Loaded a = load(argv[2]);
      a.run(10);
      const void* base_a = a.base;
      unload(a);
      const Loaded b = load(argv[3]);
      if (b.base == base_a) {
        b.run(20);
        unload(b);
        std::printf("same address after %d tries\n", tries);
        return 0;
      }
      unload(b);
    }
    std::printf("different addresses\n");
    return 0;
  }
  std::fprintf(stderr, "usage: plugin_host unload-at-once LIBRARY THREADS ROUNDS | "
                       "same-address LIBRARY_A LIBRARY_B\n");
  return 2;
}
