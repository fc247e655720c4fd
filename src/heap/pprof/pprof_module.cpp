// libhotscope-pprof.so: the heap libraries' report module (heap/report_module.hpp), loaded by
// them (dlopen) only when a profile is built: the symbolizer and the profiles' builder, and the
// pprof writer, libhotscope's exporter code, which the heap libraries do not link. Loaded late,
// they, libdw and libdeflate enter the process only for a profile, after the program's own
// allocations (docs/heap.md, "pprof output"). `hotscope run` loads it too, to write the report of
// a sampled program that ended (docs/heap.md, "The report at exit").
#include "atomic_file/atomic_file.hpp"
#include "export/export.hpp"
#include "heap/profile.hpp"
#include "heap/raw_report.hpp"
#include "heap/report_module.hpp"
#include "objects/objects.hpp"
#include "symbols/symbols.hpp"

#include <chrono>
#include <cstdio>
#include <sstream>

namespace {

using namespace hotscope;

// The symbolizer and the builder kept for the process's life (report_module.hpp), made at the
// first call. Never destroyed: the report at exit may come after this module's destructors.
struct Kept {
  symbols::Symbolizer* symbolizer = nullptr;
  heap::ProfileBuilder* builder = nullptr;
};

Kept& kept(const std::string& debug_cache) {
  static Kept state = [&] {
    symbols::SymbolizerOptions options;
    options.inflated_debug_cache = debug_cache;
    return Kept{new symbols::Symbolizer(std::move(options)), new heap::ProfileBuilder};
  }();
  return state;
}

// One line on stderr; false.
bool failed(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
  return false;
}

} // namespace

extern "C" __attribute__((visibility("default"))) heap::report_module::Build hotscope_heap_build;
void hotscope_heap_build(const heap::RawProfile& raw, bool last, const std::string& command,
                         std::int64_t pid, const std::string& debug_cache, HeapProfile& profile,
                         heap::report_module::Symbolized& symbolized) {
  const Kept& state = kept(debug_cache);
  const auto start = std::chrono::steady_clock::now();
  state.symbolizer->refresh(); // before counting: it may forget addresses
  const std::size_t cached = state.symbolizer->cached();
  profile = last ? state.builder->build_last(raw, command, pid, *state.symbolizer)
                 : state.builder->build(raw, command, pid, *state.symbolizer);
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
  symbolized = {state.symbolizer->cached() - cached,
                cached,
                seconds.count(),
                state.symbolizer->debug_files_inflated(),
                state.symbolizer->debug_files_from_cache(),
                state.symbolizer->take_problems()};
}

extern "C" __attribute__((visibility("default")))
heap::report_module::Prepare hotscope_heap_prepare;
std::size_t hotscope_heap_prepare(const std::string& debug_cache) {
  const Kept& state = kept(debug_cache);
  state.symbolizer->refresh();
  state.builder->forget_if_stale(*state.symbolizer);
  return state.builder->added();
}

extern "C" __attribute__((visibility("default"))) heap::report_module::Add hotscope_heap_add;
void hotscope_heap_add(std::span<const std::uintptr_t> stack) {
  const Kept& state = kept("");
  state.builder->add(stack, *state.symbolizer);
}

extern "C" __attribute__((visibility("default"))) heap::report_module::Pprof hotscope_pprof_heap;
void hotscope_pprof_heap(const HeapProfile& profile, std::int64_t period,
                         void (*sink)(void*, const char*, std::size_t), void* context) {
  std::ostringstream out;
  exporters::write_pprof_heap(profile, period, out);
  const std::string bytes = std::move(out).str();
  sink(context, bytes.data(), bytes.size());
}

extern "C" __attribute__((visibility("default"))) heap::report_module::Report hotscope_heap_report;
bool hotscope_heap_report(const char* raw_path) {
  heap::RawReport report;
  if (const std::string problem = heap::read_raw_report(raw_path, report); !problem.empty()) {
    return failed("hotscope: no heap profile: " + problem);
  }
  const auto start = std::chrono::steady_clock::now();
  symbols::SymbolizerOptions options;
  options.inflated_debug_cache = report.debug_cache;
  // The program named its objects by the paths the loader opened them by (raw_report.hpp).
  report.memory_map = objects::with_resolved_paths(report.memory_map);
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
