// libhotscope-pprof.so: the pprof writer for the heap libraries, loaded by them (dlopen) only
// when a profile is written. The writer is libhotscope's exporter code, which the heap libraries
// do not link; loaded late, it and libdeflate enter the process only for the report, after the
// program's own allocations (docs/heap.md, "pprof output").
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
