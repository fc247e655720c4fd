#include "runtime/runtime.hpp"

#include "agent/agent.hpp"
#include "atomic_file/atomic_file.hpp"
#include "clock/clock.hpp"
#include "export/export.hpp"
#include "heap/interposer/interposer.hpp"
#include "trace/trace.hpp"

#include <hotscope/hotscope.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <new>
#include <pthread.h>

// The heap library's C interface (heap/interposer/interposer.hpp), when the program has one:
// weak, so a program without it links and finds them null.
extern "C" {
__attribute__((weak)) int hotscope_heap_mode(void);
__attribute__((weak)) void hotscope_heap_enter(void);
__attribute__((weak)) void hotscope_heap_leave(void);
__attribute__((weak)) int hotscope_heap_profile(int formats, hotscope_heap_sink sink,
                                                void* context);
__attribute__((weak)) void hotscope_heap_reset(void);
__attribute__((weak)) int hotscope_heap_read_totals(struct hotscope_heap_totals* out);
__attribute__((weak)) void
hotscope_heap_observe_allocations(hotscope_heap_allocation_observer observer);
}

namespace hotscope::runtime {
namespace {

struct State {
  config::Config config;
  bool reports_enabled = false;
  std::mutex agent_mutex; // start_agent() against itself and against exit
};

State& state() {
  static State* instance = new State; // never destroyed: exit handlers and late threads use it
  return *instance;
}

void print_line(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
}

void start_once() {
  // The collector and the agent, and their threads, are the profiler's own.
  const ProfilerSection section;
  State& s = state();
  config::Parsed parsed = config::parse([](const char* name) { return std::getenv(name); });
  for (const std::string& error : parsed.errors) {
    print_line(error);
  }
  s.config = std::move(parsed.config);
  if (!s.config.out_dir.empty()) {
    const std::string problem = config::check_out_dir(s.config.out_dir);
    if (problem.empty()) {
      s.reports_enabled = true;
    } else {
      print_line(problem + "; no reports will be written");
    }
  }
  clock::init(s.config.clock);
  trace::start({s.config.ring_records, s.config.trace_window_bytes, s.config.collect_period_ms});
  if (hotscope_heap_observe_allocations != nullptr) { // memory per function
    hotscope_heap_observe_allocations([](std::size_t bytes) { detail::record_allocation(bytes); });
  }
  if (s.config.agent) {
    for (const std::string& problem : agent::start(s.config)) {
      print_line(problem);
    }
  }
  // A forked child keeps recording but writes no reports: they would replace its parent's. Its
  // only thread holds no agent_mutex, whoever held it at the fork (start_agent() on another
  // thread): the child gets a fresh one, or exit would wait for it forever.
  pthread_atfork(nullptr, nullptr, [] {
    state().reports_enabled = false;
    new (&state().agent_mutex) std::mutex;
  });
  std::atexit(finish);
}

// Starting at load time means HOTSCOPE_OUT gets its reports even from a program whose
// instrumented code never runs, and configuration errors show up at once.
[[maybe_unused]] const bool started_at_load = (ensure_started(), true);

// Both heap outputs of one copy of the figures, or the reason there are none.
struct HeapOutputs {
  std::string dhat;
  std::string pprof;
  std::string error;
};

HeapOutputs take_heap_profile(int formats) {
  HeapOutputs outputs;
  if (outputs.error = heap_unavailable_reason(); !outputs.error.empty()) {
    return outputs;
  }
  hotscope_heap_profile(
      formats,
      [](void* context, int format, const char* data, std::size_t size) {
        auto& into = *static_cast<HeapOutputs*>(context);
        (format == HOTSCOPE_HEAP_DHAT    ? into.dhat
         : format == HOTSCOPE_HEAP_PPROF ? into.pprof
                                         : into.error)
            .assign(data, size);
      },
      &outputs);
  return outputs;
}

std::string write_file(const std::filesystem::path& path, const std::string& bytes) {
  const std::string reason = atomic_file::write(path.string(), bytes);
  return reason.empty() ? "" : "cannot write " + path.string() + ": " + reason;
}

} // namespace

const config::Config& ensure_started() {
  static std::once_flag once;
  std::call_once(once, start_once);
  return state().config;
}

void finish() {
  const ProfilerSection section;
  {
    const std::lock_guard lock(state().agent_mutex);
    agent::stop(); // first: no client may ask for a snapshot while the collector stops
  }
  trace::stop();
  const State& s = state();
  if (!s.reports_enabled) {
    return;
  }
  const std::string problem = exporters::write_all(trace::snapshot(), s.config.out_dir);
  if (!problem.empty()) {
    print_line("hotscope: " + problem);
  }
}

ProfilerSection::ProfilerSection() {
  if (hotscope_heap_enter != nullptr) {
    hotscope_heap_enter();
  }
}

ProfilerSection::~ProfilerSection() {
  if (hotscope_heap_leave != nullptr) {
    hotscope_heap_leave();
  }
}

void reset_heap() {
  if (hotscope_heap_reset != nullptr) {
    hotscope_heap_reset();
  }
}

const char* heap_mode_name() {
  switch (hotscope::heap_mode()) {
  case HeapMode::Full:
    return "full";
  case HeapMode::Sampled:
    return "sampled";
  case HeapMode::Off:
    return "off";
  case HeapMode::NotLinked:
    break;
  }
  return "not linked";
}

std::optional<HeapFigures> heap_figures() {
  hotscope_heap_totals totals{};
  if (!heap_unavailable_reason().empty() || hotscope_heap_read_totals == nullptr ||
      hotscope_heap_read_totals(&totals) != 0) {
    return std::nullopt;
  }
  return HeapFigures{heap_mode_name(),   totals.total_bytes, totals.total_blocks, totals.live_bytes,
                     totals.live_blocks, totals.peak_bytes,  totals.peak_blocks};
}

std::string heap_unavailable_reason() {
  switch (hotscope::heap_mode()) {
  case HeapMode::Full:
  case HeapMode::Sampled:
    return "";
  case HeapMode::Off:
    return "heap profiling is off in this process: start it with HOTSCOPE_HEAP_MODE=full (every "
           "allocation) or HOTSCOPE_HEAP_MODE=sampled";
  case HeapMode::NotLinked:
    break;
  }
  return "this program has no heap profiler: link it with the CMake target hotscope::heap (built "
         "when HOTSCOPE_HEAP=ON and HOTSCOPE_SANITIZE is empty) and start it with "
         "HOTSCOPE_HEAP_MODE=full or sampled; or run it with `hotscope run --heap -- PROGRAM`, "
         "which writes heap.json when it exits";
}

} // namespace hotscope::runtime

hotscope::detail::Ring* hotscope::detail::register_thread() noexcept {
  runtime::ensure_started();
  const runtime::ProfilerSection section; // the thread's ring is the profiler's
  return trace::register_current_thread();
}

hotscope::HeapMode hotscope::heap_mode() noexcept {
  if (hotscope_heap_mode == nullptr) {
    return HeapMode::NotLinked;
  }
  switch (hotscope_heap_mode()) {
  case HOTSCOPE_HEAP_FULL:
    return HeapMode::Full;
  case HOTSCOPE_HEAP_SAMPLED:
    return HeapMode::Sampled;
  default:
    return HeapMode::Off;
  }
}

std::string hotscope::heap_profile(HeapFormat format, std::string& out) {
  const bool pprof = format == HeapFormat::Pprof;
  runtime::HeapOutputs outputs =
      runtime::take_heap_profile(pprof ? HOTSCOPE_HEAP_PPROF : HOTSCOPE_HEAP_DHAT);
  if (outputs.error.empty()) {
    out = std::move(pprof ? outputs.pprof : outputs.dhat);
  }
  return outputs.error;
}

std::string hotscope::write_heap_profile(const std::string& dir) {
  const runtime::ProfilerSection section; // the copies here are the profiler's own
  runtime::HeapOutputs outputs =
      runtime::take_heap_profile(HOTSCOPE_HEAP_DHAT | HOTSCOPE_HEAP_PPROF);
  if (!outputs.error.empty()) {
    return outputs.error;
  }
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  const std::filesystem::path base(dir);
  std::string problem = runtime::write_file(base / "heap.json", outputs.dhat);
  if (problem.empty()) {
    problem = runtime::write_file(base / "heap.pb.gz", outputs.pprof);
  }
  return problem;
}

std::string hotscope::start_agent() {
  const config::Config& config = runtime::ensure_started();
  const runtime::ProfilerSection section;
  const std::lock_guard lock(runtime::state().agent_mutex);
  if (agent::running()) {
    return "";
  }
  std::string problems;
  for (const std::string& problem : agent::start(config)) {
    problems += (problems.empty() ? "" : "\n") + problem;
  }
  return problems;
}
