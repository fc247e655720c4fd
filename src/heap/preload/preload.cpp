// libhotscope-preload.so: the heap profiler for unmodified binaries (LD_PRELOAD). Everything is
// the interposer's (src/heap/interposer); a preloaded program asked for profiling, so it records
// every allocation unless HOTSCOPE_HEAP_MODE says otherwise, and always writes heap.json at exit.
// C++'s operator new and delete reach it through libstdc++, which calls malloc and free.
#include "heap/interposer/interposer.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

const hotscope::heap::interposer::Flavour hotscope::heap::interposer::flavour{HOTSCOPE_HEAP_FULL,
                                                                              false};

namespace {

// Under `hotscope run --heap` in the sampled mode the launcher loads the runtime (the live
// agent) into the program at its first client (docs/agent.md, "hotscope run"). A process the
// program starts loads it here, at its own start, as a preloaded runtime starts: the launcher
// knows nothing of it. HOTSCOPE_RUN_RUNTIME names the runtime, HOTSCOPE_HEAP_PID the program.
__attribute__((constructor)) void load_runtime_in_started_processes() {
  const char* runtime = std::getenv("HOTSCOPE_RUN_RUNTIME");
  const char* program = std::getenv("HOTSCOPE_HEAP_PID");
  if (runtime == nullptr || *runtime == '\0' ||
      (program != nullptr && std::strtol(program, nullptr, 10) == getpid())) {
    return;
  }
  // Bound as a preloaded runtime is: its threads start through this library's pthread_create.
  if (dlopen(runtime, RTLD_NOW) == nullptr) {
    const char* reason = dlerror();
    std::fprintf(stderr, "hotscope: no live agent: cannot load %s: %s\n", runtime,
                 reason != nullptr ? reason : "dlopen failed");
  }
}

} // namespace
