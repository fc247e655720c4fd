// The C interface both heap libraries export (heap_link/heap_link.hpp), through which libhotscope
// (the agent, the public calls) reaches the recorder and its profiles; and which heap library the
// program's calls reach (preceded()).
#include "heap/interposer/interposer.hpp"
#include "heap/interposer/real_allocator.hpp"
#include "heap/interposer/recording.hpp"
#include "heap/interposer/reports.hpp"
#include "threads/threads.hpp"

#include <dlfcn.h>

#include <exception>
#include <mutex>
#include <string>

#define HOTSCOPE_EXPORT extern "C" __attribute__((visibility("default")))

namespace interposer = hotscope::heap::interposer;
using interposer::Inside;

HOTSCOPE_EXPORT int hotscope_heap_mode(void) {
  const Inside inside;
  if (interposer::recording_state() == nullptr) {
    return HOTSCOPE_HEAP_OFF;
  }
  return interposer::sampling ? HOTSCOPE_HEAP_SAMPLED : HOTSCOPE_HEAP_FULL;
}

// This library's hotscope_heap_mode, whichever one the program's calls reach.
extern "C" int hotscope_own_heap_mode()
    __attribute__((alias("hotscope_heap_mode"), visibility("hidden")));

bool interposer::preceded() {
  static const bool preceded = [] {
    const Inside inside;
    return dlsym(RTLD_DEFAULT, "hotscope_heap_mode") !=
           reinterpret_cast<void*>(&hotscope_own_heap_mode);
  }();
  return preceded;
}

HOTSCOPE_EXPORT void hotscope_heap_enter(void) {
  ++interposer::in_profiler;
}

HOTSCOPE_EXPORT void hotscope_heap_leave(void) {
  --interposer::in_profiler;
}

HOTSCOPE_EXPORT int hotscope_heap_profile(int formats, hotscope_heap_sink sink, void* context) {
  interposer::Outputs outputs;
  {
    const Inside inside;
    try {
      interposer::build_outputs(formats, outputs);
    } catch (const std::exception& error) {
      outputs.error = std::string("cannot build the heap profile: ") + error.what();
    }
  }
  if (outputs.error.empty()) {
    if ((formats & HOTSCOPE_HEAP_DHAT) != 0) {
      sink(context, HOTSCOPE_HEAP_DHAT, outputs.dhat.data(), outputs.dhat.size());
    }
    if ((formats & HOTSCOPE_HEAP_PPROF) != 0) {
      sink(context, HOTSCOPE_HEAP_PPROF, outputs.pprof.data(), outputs.pprof.size());
    }
  } else {
    sink(context, 0, outputs.error.data(), outputs.error.size());
  }
  const Inside inside; // the strings were allocated inside the profiler: freed there too
  const bool failed = !outputs.error.empty();
  outputs = interposer::Outputs{};
  return failed ? -1 : 0;
}

HOTSCOPE_EXPORT int hotscope_heap_read_totals(hotscope::HeapTotals* out) {
  const Inside inside;
  hotscope::heap::Recorder* recorder = interposer::recording_state();
  if (recorder == nullptr) {
    return -1;
  }
  *out = recorder->totals();
  return 0;
}

// Atomics only, nothing allocated: no Inside (docs/crash.md reads it from a signal handler).
HOTSCOPE_EXPORT int hotscope_heap_read_live(hotscope_heap_live* out) {
  if (interposer::phase.load(std::memory_order_acquire) != interposer::Recording) {
    return HOTSCOPE_HEAP_OFF;
  }
  const hotscope::heap::Recorder& recorder = *interposer::recorder_pointer;
  const hotscope::heap::LiveFigures live = recorder.published_figures();
  *out = {live.live_bytes, live.live_blocks, live.peak_bytes, live.peak_blocks,
          interposer::sampling ? 0 : recorder.events_waiting()};
  return interposer::sampling ? HOTSCOPE_HEAP_SAMPLED : HOTSCOPE_HEAP_FULL;
}

HOTSCOPE_EXPORT void hotscope_heap_own_object(const void* address) {
  if (!interposer::resolve_real()) {
    return;
  }
  interposer::add_own_code(address);
  interposer::begin_library_loading();
}

HOTSCOPE_EXPORT int hotscope_heap_own_thread(int64_t tid) {
  return hotscope::threads::own_threads().contains(tid) ? 1 : 0;
}

HOTSCOPE_EXPORT void hotscope_heap_observe_allocations(hotscope_heap_allocation_observer observer) {
  interposer::set_allocation_observer(observer);
}

HOTSCOPE_EXPORT void hotscope_heap_reset(void) {
  const Inside inside;
  if (hotscope::heap::Recorder* recorder = interposer::recording_state()) {
    recorder->restart();
  }
}
