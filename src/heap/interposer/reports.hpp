// The heap libraries' profiles: symbolized by one symbolizer kept for the process's life, written
// as heap.json and heap.pb.gz at exit (this library's destructor) and on a signal
// (write_report_now, interposer.hpp), built on demand for the C interface. The symbolizer, the
// profiles' builder and the pprof writer are in the report module, libhotscope-pprof.so, loaded
// at the first profile (heap/report_module.hpp). In the sampled mode under `hotscope run`, the
// report at exit is the launcher's to symbolize and write (docs/heap.md, "The report at exit").
#pragma once

#include <cstddef>
#include <string>

#pragma GCC visibility push(hidden)

namespace hotscope::heap {
class Recorder;
}

namespace hotscope::heap::interposer {

// The outputs of one on-demand profile, in the formats of the bit set `formats`
// (HOTSCOPE_HEAP_DHAT, HOTSCOPE_HEAP_PPROF), or the reason there is none. Called inside the
// profiler.
struct Outputs {
  std::string dhat;
  std::string pprof;
  std::string error;
};
void build_outputs(int formats, Outputs& outputs);

// Adds the stacks interned since the last call to the profiles' builder, ahead of the next
// profile (the full mode's collector), unless a profile waits for the symbolizer or recording has
// ended. Returns how many stacks the builder holds.
std::size_t build_ahead(Recorder& recorder);

} // namespace hotscope::heap::interposer

#pragma GCC visibility pop
