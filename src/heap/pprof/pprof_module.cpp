// libhotscope-pprof.so: the pprof writer for the heap libraries, loaded by them (dlopen) only
// when a profile is written. The writer is libhotscope's exporter code, which the heap libraries
// do not link; loaded late, it and libdeflate enter the process only for the report, after the
// program's own allocations (docs/heap.md, "pprof output"). `hotscope run` loads it too, to write
// the report of a sampled program that ended (docs/heap.md, "The report at exit").
#include "atomic_file/atomic_file.hpp"
#include "export/export.hpp"
#include "heap/profile.hpp"
#include "heap/raw_report.hpp"
#include "objects/objects.hpp"
#include "symbols/symbols.hpp"

#include <chrono>
#include <cstdio>
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

namespace {

// One line on stderr; false.
bool failed(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
  return false;
}

} // namespace

// Writes heap.json and heap.pb.gz, and the summary on stderr, from the raw report at `raw_path`
// of a program that has ended, symbolized now from its memory map. False after one line on stderr
// per problem.
extern "C" __attribute__((visibility("default"))) bool hotscope_heap_report(const char* raw_path) {
  using namespace hotscope;
  heap::RawReport report;
  if (const std::string problem = heap::read_raw_report(raw_path, report); !problem.empty()) {
    return failed("hotscope: no heap profile: " + problem);
  }
  const auto start = std::chrono::steady_clock::now();
  symbols::SymbolizerOptions options;
  options.inflated_debug_cache = report.debug_cache;
  options.memory_map = report.memory_map;
  symbols::Symbolizer symbolizer(std::move(options));
  std::istringstream maps(report.memory_map);
  const std::vector<objects::CodeMapping> mappings = objects::code_mappings(maps);
  const HeapProfile profile =
      heap::build_profile(report.raw, report.command, report.pid, symbolizer, &mappings);
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
  for (const std::string& problem : symbolizer.take_problems()) {
    failed(problem);
  }
  const auto cannot_write = [](const std::string& path, const std::string& reason) {
    return failed("hotscope: cannot write the heap profile " + path + ": " + reason);
  };
  std::string problem = atomic_file::write_creating_directory(
      report.json_path, [&](std::ostream& out) { exporters::write_dhat_json(profile, out); });
  if (!problem.empty()) {
    return cannot_write(report.json_path, problem);
  }
  std::ostringstream pprof;
  exporters::write_pprof_heap(profile, report.pprof_period, pprof);
  problem = atomic_file::write_creating_directory(report.pprof_path, std::move(pprof).str());
  if (!problem.empty()) {
    cannot_write(report.pprof_path, problem);
  }
  if (report.summary) {
    exporters::HeapReportFacts facts;
    facts.program = report.program;
    facts.sampling = report.sampling;
    facts.sample_bytes = report.sample_bytes;
    facts.sampled_allocations = report.sampled_allocations;
    facts.addresses = symbolizer.cached();
    facts.by_launcher = true;
    facts.seconds = seconds.count();
    facts.debug_files_inflated = symbolizer.debug_files_inflated();
    facts.debug_files_from_cache = symbolizer.debug_files_from_cache();
    facts.json_path = report.json_path;
    facts.pprof_path = problem.empty() ? report.pprof_path : "";
    std::fputs(exporters::heap_report_summary(profile, facts).c_str(), stderr);
  }
  return problem.empty();
}
