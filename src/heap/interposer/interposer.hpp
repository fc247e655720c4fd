// The allocation interposer both heap libraries are built from: libhotscope-preload.so (for
// unmodified programs, LD_PRELOAD) and libhotscope-heap.so (hotscope::heap, linked into a
// program). It defines the C allocation functions and pthread_create, counts blocks with the
// heap Engine (or a sample of them), writes heap.json at exit, and answers the C interface of
// heap_link.hpp, through which libhotscope (the agent, the public calls) reaches it.
//
// Each library adds a Flavour, and libhotscope-heap.so the operator new/delete forms, which call
// the allocate/release functions here.
#pragma once

#include "heap_link/heap_link.hpp" // the C interface both libraries export

#include <stddef.h>
#include <stdint.h>

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

// The sampled mode's reporter thread for a signal's reports (on_signal.cpp), started at a sample
// once the program has run for a while: called at each sample, inside the profiler.
void start_signal_reporter_if_due();
// True where that thread was put off and never started: the program ended young, or allocated
// little after its start.
bool signal_reporter_put_off();

// The bodies of the allocation functions, for operator new and delete. `caller` is the
// return address of the program's call (a call from the library's own code is not counted).
void* allocate(size_t size, const void* caller);
void* allocate_aligned(size_t alignment, size_t size, const void* caller);
void release(void* pointer, const void* caller);

} // namespace hotscope::heap::interposer
