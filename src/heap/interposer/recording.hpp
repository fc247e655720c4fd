// The process's one recorder (heap/recorder) and its modes: built on first use, in static
// storage, never destroyed; the phase it is in (not started, starting, recording, off); the
// flags that send the hooks down the sampled or the full mode's short path; the fork handlers;
// each thread's event ring. Its functions are called inside the profiler.
#pragma once

#include "heap/recorder/recorder.hpp"
#include "heap/sampling.hpp"
#include "heap_link/heap_link.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>

#pragma GCC visibility push(hidden)

namespace hotscope::heap::interposer {

enum : int { NotStarted, Starting, Recording, Off };
extern std::atomic<int> phase;
extern bool sampling; // set before phase becomes Recording, then constant
// True while phase is Recording in the sampled mode, with the real functions known and this
// library loaded: malloc and free then take the fast path (one flag, the countdown or the address
// counters, the real call).
extern std::atomic<bool> sampling_fast asm("hotscope_sampling_fast");
// The same for the full mode: its hooks go straight to recording an event.
extern std::atomic<bool> full_fast;
// True while this library loads: from its first constructor to the first allocation after it
// that is not the library's own (end_library_loading). Meanwhile the C++ runtime the preload
// library carries initializes, and the hooks keep its large start-up blocks out of the
// program's heap: a C program's heap with the exception emergency pool (71 KiB, kept for the
// process's life) at its bottom made glibc's malloc_consolidate two to three times slower in
// perl, a tenth of its run time, whatever the mode. The fast paths wait for the end.
extern std::atomic<bool> library_loading;
void begin_library_loading();
void end_library_loading();
extern __thread Sampler thread_sampler asm("hotscope_thread_sampler")
    __attribute__((tls_model("initial-exec")));
// The sampled mode's; outside the recorder, so the fast path reaches them without a pointer load.
extern SamplingPlan plan;
extern SampledAddresses sampled_addresses asm("hotscope_sampled_addresses"); // frees under lock
extern Recorder* recorder_pointer;

// Builds the recorder on first use. Returns nullptr when profiling is off (after the report was
// written, or in a forked child).
Recorder* start_recording();

// The recorder while recording, else as start_recording().
inline Recorder* recording_state() {
  return __builtin_expect(phase.load(std::memory_order_acquire) == Recording, 1)
             ? recorder_pointer
             : start_recording();
}

// From here on every call passes through.
void stop_recording();

// Loaded by `hotscope attach` (HOTSCOPE_HEAP_ATTACH=1 at load): recording waits for
// start_attached_recording, which starts it, or starts it again after a detach's report.
// Read on first use: a constructor may ask before the library's static variables are set.
bool loaded_for_attach();
Recorder* start_attached_recording();

// The full mode's collector thread (collector.cpp), for the recorder just built.
void start_collector();

// A block of the bootstrap arena was handed out (see enable_sampling_fast in recording.cpp).
void note_arena_block(void* block);

// Memory per function: `observer` gets the size of every block the full mode records
// (hotscope_heap_observe_allocations).
void set_allocation_observer(hotscope_heap_allocation_observer observer);

// ---- Recording (always called inside the profiler, with the recorder built) ----

// A new block: in the sampled mode at a sample point, in the full mode an event.
void record_alloc(void* pointer, std::size_t size);
// A free, recorded before the real allocator may hand the address out again.
void record_free(void* pointer);
// The full mode's realloc, numbered before the real call (which may give the old address to
// another thread at once) and after it (which may hand out an address another thread just freed).
void record_realloc_begin(Recorder& recorder, void* old);
void record_realloc_end(Recorder& recorder, void* pointer, std::size_t size);
// The full mode's free, from the free hook's short path.
void record_full_free(void* pointer);

} // namespace hotscope::heap::interposer

#pragma GCC visibility pop
