// libhotscope-pprof.so: the pprof writer for the preload library, loaded by it (dlopen) only when
// the report is written. libprotobuf-lite exists here only as a shared library (its static copy
// uses local-exec TLS, which a shared object cannot), and that brings the shared C++ runtime:
// linked into the preload, it would be loaded, and its start-up allocations counted, in every C
// program. Loaded at the end, after recording stopped, it changes nothing the profile shows.
#include "export/export.hpp"

#include <fstream>

// Writes `profile` to `path`; false if the file could not be written (errno says why).
extern "C" __attribute__((visibility("default"))) bool
hotscope_write_pprof_heap(const hotscope::HeapProfile* profile, std::int64_t period,
                          const char* path) {
  std::ofstream out(path, std::ios::out | std::ios::binary);
  if (out) {
    hotscope::exporters::write_pprof_heap(*profile, period, out);
    out.close();
  }
  return static_cast<bool>(out);
}
