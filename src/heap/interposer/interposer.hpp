// The allocation interposer both heap libraries are built from: libhotscope-preload.so (for
// unmodified programs, LD_PRELOAD) and libhotscope-heap.so (hotscope::heap, linked into a
// program). It defines the C allocation functions and pthread_create, counts blocks with the
// heap Engine (or a sample of them), writes heap.json at exit, and answers the C interface
// below, through which libhotscope (the agent, the public calls) reaches it.
//
// Each library adds a Flavour, and libhotscope-heap.so the operator new/delete forms, which call
// the allocate/release functions here.
#pragma once

#include <stddef.h>
#include <stdint.h>

// ---- The C interface, exported by both libraries ----
// libhotscope declares these weak: a program without a heap library finds them null.

extern "C" {
enum { HOTSCOPE_HEAP_OFF = 0, HOTSCOPE_HEAP_FULL = 1, HOTSCOPE_HEAP_SAMPLED = 2 };
enum { HOTSCOPE_HEAP_DHAT = 1, HOTSCOPE_HEAP_PPROF = 2 };

// Receives one output: `format` is HOTSCOPE_HEAP_DHAT or HOTSCOPE_HEAP_PPROF, or 0 for an
// error line. Called outside the profiler, so what it allocates is the caller's own.
typedef void (*hotscope_heap_sink)(void* context, int format, const char* data, size_t size);

// What this process records: HOTSCOPE_HEAP_OFF, _FULL or _SAMPLED.
int hotscope_heap_mode(void);
// The calling thread enters / leaves the profiler: what it allocates or frees meanwhile is not
// recorded, and threads it starts are the profiler's for their whole life. Nests.
void hotscope_heap_enter(void);
void hotscope_heap_leave(void);
// The profile now, in each format of the bit set `formats`, handed to `sink`. The lock is held
// only while the raw figures are copied. Returns 0, or -1 after handing `sink` the reason.
int hotscope_heap_profile(int formats, hotscope_heap_sink sink, void* context);
// The process-wide figures now (heap::Totals; estimates in the sampled mode), copied under the
// lock. Returns 0, or -1 when nothing is recorded.
struct hotscope_heap_totals {
  uint64_t total_bytes, total_blocks, live_bytes, live_blocks, peak_bytes, peak_blocks;
};
int hotscope_heap_read_totals(struct hotscope_heap_totals* out);
// Restarts the totals; the blocks still live stay (Engine::restart).
void hotscope_heap_reset(void);
// Memory per function: in the full mode, `observer` receives the size of every block recorded
// (allocations and reallocs, as DHAT counts them), on the allocating thread and inside the
// profiler. libhotscope registers hotscope::detail::record_allocation. Null stops it.
typedef void (*hotscope_heap_allocation_observer)(size_t bytes);
void hotscope_heap_observe_allocations(hotscope_heap_allocation_observer observer);
// With HOTSCOPE_ON_SIGNAL=report this library handles SIGTERM, SIGINT and SIGHUP for the whole
// process (on_signal.cpp): on one, its reporter thread calls `write` (libhotscope's reports),
// then writes heap.json, then the signal's default action ends the process.
void hotscope_heap_report_on_signal(void (*write)(void));
}

namespace hotscope::heap::interposer {

// What differs between the two libraries.
struct Flavour {
  int default_mode;      // HOTSCOPE_HEAP_MODE when unset
  bool report_needs_out; // write heap.json at exit only when HOTSCOPE_OUT is set
};
extern const Flavour flavour; // defined by each library

// True when another heap library of hotscope comes before this one in the symbol search order
// (the preload library before libhotscope-heap.so, under `hotscope run --heap`): the program's
// malloc calls reach that one, so this one records nothing, and its operator new and delete use
// the process's malloc family, which that one records.
bool preceded();

// Writes heap.json and heap.pb.gz as at exit (once: recording stops), for a signal's reports.
void write_report_now();

// The bodies of the allocation functions, for operator new and delete. `caller` is the
// return address of the program's call (a call from the library's own code is not counted).
void* allocate(size_t size, const void* caller);
void* allocate_aligned(size_t alignment, size_t size, const void* caller);
void release(void* pointer, const void* caller);

} // namespace hotscope::heap::interposer
