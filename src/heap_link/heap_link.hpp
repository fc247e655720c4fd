// libhotscope's link to a heap library (libhotscope-heap.so through hotscope::heap, or the
// preload library), when the program has one: the C interface both heap libraries export, which
// libhotscope declares weak (a program without a heap library finds it null), and what the agent
// and the runtime ask through it. Below the agent and the runtime; the heap libraries define the
// C functions (src/heap/interposer).
#pragma once

#include "snapshot/snapshot.hpp"

#include <stddef.h>
#include <stdint.h>

#include <optional>
#include <string>

// ---- The C interface, exported by both heap libraries ----

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
// The process-wide figures now (estimates in the sampled mode), copied under the lock. Returns
// 0, or -1 when nothing is recorded.
int hotscope_heap_read_totals(hotscope::HeapTotals* out);
// What is live and the peak, as of the last drain (full mode) or sample (sampled mode), and the
// full mode's events not drained yet: for a crash report (docs/crash.md), so without a lock, an
// allocation or anything that would start recording; async-signal-safe.
struct hotscope_heap_live {
  uint64_t live_bytes;
  uint64_t live_blocks;
  uint64_t peak_bytes;
  uint64_t peak_blocks;
  uint64_t events_waiting;
};
// Returns HOTSCOPE_HEAP_FULL or _SAMPLED with `out` filled, or HOTSCOPE_HEAP_OFF when nothing is
// recorded (`out` untouched).
int hotscope_heap_read_live(struct hotscope_heap_live* out);
// Restarts the totals; the blocks still live stay (Engine::restart).
void hotscope_heap_reset(void);
// `hotscope attach` and `hotscope detach` call these in the target, with the preload library
// loaded by dlopen (docs/heap.md, "Attach to a running program"). Attach starts recording and
// points the loaded modules' GOT entries of the allocation functions at the library's; detach
// points them back and writes the profile. Both return one of these.
enum {
  HOTSCOPE_ATTACH_DONE = 0,
  HOTSCOPE_ATTACH_ALREADY = 1,      // attach: it is attached already
  HOTSCOPE_ATTACH_PRELOADED = 2,    // attach: the library was preloaded (`hotscope run --heap`)
  HOTSCOPE_ATTACH_OFF = 3,          // attach: recording did not start (HOTSCOPE_HEAP_MODE=off)
  HOTSCOPE_ATTACH_NOT_ATTACHED = 4, // detach: nothing to detach
};
int hotscope_heap_attach(void);
int hotscope_heap_detach(void);
// The loaded object containing `address` (libhotscope-run.so, preloaded with the preload library)
// is the profiler's too, from now on: what its code allocates is not recorded, and its large
// blocks while it loads (its C++ runtime's) are kept out of the program's heap, as the heap
// library's own. Called from that object's first constructor.
void hotscope_heap_own_object(const void* address);
// 1 when the thread `tid` is one of the heap library's own (its collector, the threads it started
// inside the profiler), else 0.
int hotscope_heap_own_thread(int64_t tid);
// Memory per function: in the full mode, `observer` receives the size of every block recorded
// (allocations and reallocs, as DHAT counts them), on the allocating thread and inside the
// profiler. libhotscope registers hotscope::detail::record_allocation. Null stops it.
typedef void (*hotscope_heap_allocation_observer)(size_t bytes);
void hotscope_heap_observe_allocations(hotscope_heap_allocation_observer observer);
// With HOTSCOPE_ON_SIGNAL=report the heap library handles SIGTERM, SIGINT and SIGHUP for the
// whole process (heap/interposer/on_signal.cpp): on one, its reporter thread calls `write`
// (libhotscope's reports), then writes heap.json, then the signal's default action ends the
// process.
void hotscope_heap_report_on_signal(void (*write)(void));
}

namespace hotscope::heap_link {

// While one lives, the calling thread is inside the profiler: the heap library records nothing
// it allocates or frees, and the threads it starts (collector, agent) are the profiler's for
// their whole life. Does nothing without a heap library.
class ProfilerSection {
public:
  ProfilerSection();
  ~ProfilerSection();
  ProfilerSection(const ProfilerSection&) = delete;
  ProfilerSection& operator=(const ProfilerSection&) = delete;
};

// Makes the loaded object containing `address` the profiler's (hotscope_heap_own_object). Does
// nothing without a heap library.
void own_object(const void* address);

// True when the thread `tid` is the heap library's own; false without one.
bool own_thread(std::int64_t tid);

// Hands the heap library `observer` for memory per function; false without a heap library.
bool observe_allocations(hotscope_heap_allocation_observer observer);

// Hands the heap library `write` to run on a terminating signal before it writes its own
// profile (one handler per process: the heap library's); false without a heap library.
bool report_on_signal(void (*write)());

// True when a heap library is in the process: it then handles HOTSCOPE_ON_SIGNAL (and reports
// a bad value itself).
bool handles_signals();

// Restarts the heap totals; blocks still live are kept. Does nothing without heap profiling.
void reset();

// "full", "sampled", "off" or "not linked", as <pid>.json and /v1/info say.
const char* mode_name();

// The heap profiler's figures now; empty when it does not run.
std::optional<HeapFigures> figures();

// hotscope_heap_read_live's figures and what it returns, for a crash report: -1 without a heap
// library. Async-signal-safe.
int read_live(hotscope_heap_live& out) noexcept;

// Why there is no heap profile in this process, naming what enables it; "" when there is one.
std::string unavailable_reason();

} // namespace hotscope::heap_link
