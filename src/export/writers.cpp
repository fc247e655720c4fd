#include "export/writers.hpp"

#include "export/export.hpp"

namespace hotscope::exporters {
namespace {

// The CPU profile's files are written only when the sampler ran (docs/cpu.md).
bool has_cpu_samples(const Snapshot& snapshot) {
  return snapshot.cpu.samples > 0;
}

} // namespace

// A switch without default: -Wswitch names a Format added without its writer.
Writer writer(Format format) {
  Writer bound;
  switch (format) {
  case Format::StatsJson:
    bound.stream = write_stats_json;
    break;
  case Format::Table:
    bound.stream = write_table;
    break;
  case Format::Columns:
    bound.whole = stats_columns;
    break;
  case Format::Chrome:
    bound.stream = write_chrome_json;
    break;
  case Format::Folded:
    bound.stream = write_folded;
    break;
  case Format::TextTree:
    bound.stream = write_text_tree;
    break;
  case Format::ThreadsJson:
    bound.threads = write_threads_json;
    break;
  case Format::ThreadsText:
    bound.threads = write_threads_text;
    break;
  case Format::Locks:
    bound.stream = write_locks_json;
    break;
  case Format::Prometheus:
    bound.stream = write_prometheus;
    break;
  case Format::Dhat:
  case Format::PprofHeap:
    bound.heap = true;
    break;
  case Format::PprofWall:
    bound.stream = write_pprof_wall;
    break;
  case Format::PprofCpu:
    bound.stream = write_pprof_cpu;
    bound.written_if = has_cpu_samples;
    break;
  case Format::CpuFolded:
    bound.stream = write_cpu_folded;
    bound.written_if = has_cpu_samples;
    break;
  case Format::PprofMutex:
    bound.stream = write_pprof_mutex;
    break;
  case Format::SlowText:
    bound.stream = write_slow_text;
    break;
  case Format::SlowJson:
    bound.stream = write_slow_json;
    break;
  }
  return bound;
}

} // namespace hotscope::exporters
