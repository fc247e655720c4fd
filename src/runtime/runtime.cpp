#include "runtime/runtime.hpp"

#include "clock/clock.hpp"
#include "cpu/cpu.hpp"
#include "crash/crash.hpp"
#include "export/export.hpp"
#include "heap_link/heap_link.hpp"
#include "instrument/instrument.hpp"
#include "locks/locks.hpp"
#include "signals/signals.hpp"
#include "text/text.hpp"
#include "threads/threads.hpp"
#include "trace/trace.hpp"
#if HOTSCOPE_WITH_AGENT
#include "agent/agent.hpp"
#endif

#include <hotscope/control.hpp>
#include <hotscope/hotscope.hpp>

#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <pthread.h>
#include <sstream>

// runtime/preload/preloaded.cpp defines it in libhotscope-run.so; a program linked with hotscope
// finds it null.
extern "C" __attribute__((weak, visibility("hidden"))) const bool hotscope_runtime_preloaded;
extern "C" const char hotscope_runtime_anchor;

namespace hotscope::runtime {
namespace {

struct State {
  config::Config config;
  bool reports_enabled = false;
  std::mutex agent_mutex;  // start_agent() against itself and against exit
  std::mutex finish_mutex; // exit against the reports written on a signal
  bool finished = false;
  bool exit_reports = false; // written at exit and on a signal
};

bool preloaded() {
  return &hotscope_runtime_preloaded != nullptr;
}

// libhotscope-run.so in a program linked with hotscope leaves everything to the program's own
// runtime: two would serve one agent socket and write the same reports. Executables linked with
// hotscope export the anchor (src/CMakeLists.txt).
bool linked_runtime_runs() {
  if (!preloaded()) {
    return false;
  }
  const void* anchor = dlsym(RTLD_DEFAULT, "hotscope_runtime_anchor");
  return anchor != nullptr && anchor != &hotscope_runtime_anchor;
}

// Preloaded, the runtime's code is the profiler's own for the heap library, from before its C++
// runtime's constructors allocate (their emergency pool): none of it is the program's.
__attribute__((constructor(101))) void own_code_when_preloaded() {
  if (preloaded()) {
    heap_link::own_object(reinterpret_cast<const void*>(&own_code_when_preloaded));
  }
}

State& state() {
  static State* instance = new State; // never destroyed: exit handlers and late threads use it
  return *instance;
}

void print_line(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
}

using heap_link::ProfilerSection;

// How long exit waits for answers the agent was still building when it stopped.
constexpr std::chrono::milliseconds kExitWaitForAnswers{2000};

#if HOTSCOPE_WITH_AGENT
std::vector<std::string> start_agent_once(const config::Config& config) {
  return agent::start(config);
}
bool agent_running() {
  return agent::running();
}
void stop_agent() {
  agent::stop();
}
bool wait_for_agent_answers(std::chrono::milliseconds most) {
  return agent::wait_for_answers(most);
}
#else
std::vector<std::string> start_agent_once(const config::Config&) {
  return {"hotscope: this hotscope was built without the live agent (HOTSCOPE_AGENT=OFF)"};
}
bool agent_running() {
  return false;
}
void stop_agent() {}
bool wait_for_agent_answers(std::chrono::milliseconds) {
  return true;
}
#endif
constexpr bool built_with_agent = HOTSCOPE_WITH_AGENT;

// The heap library's figures for a crash report, read from the signal handler.
crash::HeapLive crash_heap_figures() noexcept {
  hotscope_heap_live live{};
  crash::HeapLive figures;
  using Mode = crash::HeapLive::Mode;
  switch (heap_link::read_live(live)) {
  case HOTSCOPE_HEAP_FULL:
    figures.mode = Mode::Full;
    break;
  case HOTSCOPE_HEAP_SAMPLED:
    figures.mode = Mode::Sampled;
    break;
  case HOTSCOPE_HEAP_OFF:
    figures.mode = Mode::Off;
    return figures;
  default:
    return figures; // no heap library
  }
  figures.live_bytes = live.live_bytes;
  figures.live_blocks = live.live_blocks;
  figures.peak_bytes = live.peak_bytes;
  figures.peak_blocks = live.peak_blocks;
  figures.events_waiting = live.events_waiting;
  return figures;
}

// Preloaded (or attached), the program has no scopes: its threads are listed from /proc, all but
// the profiler's own, this library's and the heap library's (docs/heap.md).
bool profiler_thread(std::int64_t tid) {
  return threads::own_threads().contains(tid) || heap_link::own_thread(tid);
}

void start_once() {
  // The collector and the agent, and their threads, are the profiler's own.
  const ProfilerSection section;
  State& s = state();
  config::Parsed parsed = config::parse([](const char* name) { return std::getenv(name); });
  for (const std::string& error : parsed.errors) {
    print_line(error);
  }
  if (!heap_link::handles_signals()) {
    for (const std::string& error : parsed.on_signal_errors) {
      print_line(error);
    }
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
  // Preloaded, the runtime has reports of its own only when it samples the CPU or records locks;
  // else (`hotscope run --heap`) it serves the agent and reports crashes.
  const bool records_at_start = s.config.cpu_hz != 0 || s.config.locks != locks::Mode::Off;
  s.exit_reports = s.reports_enabled && (!preloaded() || records_at_start);
  clock::init(s.config.clock);
  // Preloaded without CPU samples or locks, nothing is recorded unless the agent is asked to:
  // the collector's thread waits until then (docs/heap.md, "Live").
  trace::start({s.config.ring_records,
                s.config.trace_window_bytes,
                s.config.collect_period_ms,
                {s.config.slowest, s.config.slowest_bytes},
                s.config.min_ns,
                preloaded() ? &profiler_thread : nullptr,
                !preloaded() || records_at_start});
  instrument::start_xray(s.config.xray_patch); // after the collector: the handler records
  if (s.reports_enabled && s.config.report_on_crash) {
    if (const std::string problem = crash::install(s.config.out_dir, crash_heap_figures);
        !problem.empty()) {
      print_line(problem);
    }
  }
  if (s.config.cpu_hz != 0) {
    if (const std::string problem = cpu::start(s.config.cpu_hz); !problem.empty()) {
      print_line("hotscope: no CPU samples: " + problem);
    }
  }
  // Memory per function, when there is a heap library.
  heap_link::observe_allocations([](std::size_t bytes) { detail::record_allocation(bytes); });
  if (built_with_agent && s.config.agent) {
    for (const std::string& problem : start_agent_once(s.config)) {
      print_line(problem);
    }
  }
  report_on_signal(finish);
  locks::start(s.config.locks); // last: a contended lock now registers a ring, which needs the rest
  // A forked child keeps recording but writes no reports: they would replace its parent's. Its
  // only thread holds no agent_mutex, whoever held it at the fork (start_agent() on another
  // thread): the child gets a fresh one, or exit would wait for it forever.
  pthread_atfork(nullptr, nullptr, [] {
    state().reports_enabled = false;
    new (&state().agent_mutex) std::mutex;
    new (&state().finish_mutex) std::mutex;
  });
  std::atexit(finish);
}

// Starting at load time means HOTSCOPE_OUT gets its reports even from a program whose
// instrumented code never runs, and configuration errors show up at once.
[[maybe_unused]] const bool started_at_load = linked_runtime_runs() || (ensure_started(), true);

} // namespace

const config::Config& ensure_started() {
  static std::once_flag once;
  std::call_once(once, start_once);
  return state().config;
}

void report_on_signal(void (*write)()) {
  if (!state().config.report_on_signal) {
    return;
  }
  // One handler per process: the heap library's, when there is one, calls `write` too.
  if (heap_link::report_on_signal(write)) {
    return;
  }
  if (const std::string problem = signals::report_on_signal(&::sigaction, write);
      !problem.empty()) {
    print_line(problem);
  }
}

namespace {

void write_exit_reports(const State& s) {
  const Snapshot snapshot = trace::snapshot();
  const std::string problem = exporters::write_all(snapshot, s.config.out_dir);
  if (!problem.empty()) {
    print_line("hotscope: " + problem);
  }
  if (s.config.locks != locks::Mode::Off) { // interposed locks: their summary (docs/locks.md)
    std::ostringstream summary;
    exporters::write_locks_text(snapshot, summary);
    if (!summary.str().empty()) {
      print_line(text::cat("hotscope: locks of ", snapshot.process_name, " (", snapshot.pid, ")",
                           summary.str()));
    }
  }
}

} // namespace

void finish() {
  signals::wait_for_signal_report();
  const ProfilerSection section;
  State& s = state();
  const std::lock_guard finishing(s.finish_mutex);
  if (s.finished) {
    return; // written on a signal, which now ends the process
  }
  s.finished = true;
  {
    const std::lock_guard lock(state().agent_mutex);
    stop_agent(); // first: no client may ask for a snapshot while the collector stops
  }
  cpu::stop(); // the samples so far are in the report; none is taken while the process ends
  locks::start(locks::Mode::Off);
  trace::stop();
  if (s.exit_reports) {
    write_exit_reports(s);
  }
  // An answer the agent was still building reads the profiler's state, which the process's
  // teardown (static destructors, a sanitizer's leak check) must not pull from under it.
  if (!wait_for_agent_answers(kExitWaitForAnswers)) {
    print_line(text::cat("hotscope: agent: an answer was still being built ",
                         kExitWaitForAnswers.count(),
                         " ms after the process began to exit; "
                         "the process exits without waiting for it"));
  }
}

} // namespace hotscope::runtime

// Named by hotscope::hotscope's link option (and hotscope.pc's Libs) as undefined, so that the
// linker takes this file out of the static library, and with it the start at load time, even
// into a program that calls nothing defined here (one that only asks for heap profiles).
extern "C" const char hotscope_runtime_anchor = 0;

hotscope::detail::Ring* hotscope::detail::register_thread() noexcept {
  const locks::Quiet quiet; // a contended lock in here must not register a ring again
  runtime::ensure_started();
  const hotscope::heap_link::ProfilerSection section; // the thread's ring is the profiler's
  hotscope::detail::Ring* ring = trace::register_current_thread();
  crash::prepare_thread(); // the thread's stack overflowing is reported too
  return ring;
}

hotscope::Result hotscope::start_agent() {
  const config::Config& config = runtime::ensure_started();
  const hotscope::heap_link::ProfilerSection section;
  const std::lock_guard lock(runtime::state().agent_mutex);
  if (runtime::agent_running()) {
    return {};
  }
  std::string problems;
  for (const std::string& problem : runtime::start_agent_once(config)) {
    problems += (problems.empty() ? "" : "\n") + problem;
  }
  return problems.empty() ? Result{} : Result::failure(std::move(problems));
}
