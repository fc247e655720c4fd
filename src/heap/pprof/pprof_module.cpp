// libhotscope-pprof.so: the pprof writer for the heap libraries, loaded by them (dlopen) only
// when a profile is written. libprotobuf-lite exists here only as a shared library (its static
// copy uses local-exec TLS, which a shared object cannot), and that brings the shared C++
// runtime: linked into the preload library, it would be loaded, and its start-up allocations
// counted, in every C program. Loaded inside the profiler, it changes nothing the profile shows.
#include "export/export.hpp"

#include <sstream>

// Hands the pprof bytes of `profile` to `sink`.
extern "C" __attribute__((visibility("default"))) void
hotscope_pprof_heap(const hotscope::HeapProfile* profile, std::int64_t period,
                    void (*sink)(void*, const char*, std::size_t), void* context) {
  std::ostringstream out;
  hotscope::exporters::write_pprof_heap(*profile, period, out);
  const std::string bytes = std::move(out).str();
  sink(context, bytes.data(), bytes.size());
}
