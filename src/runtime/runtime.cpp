#include "runtime/runtime.hpp"

#include "agent/agent.hpp"
#include "clock/clock.hpp"
#include "export/export.hpp"
#include "trace/trace.hpp"

#include <hotscope/hotscope.hpp>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <pthread.h>

namespace hotscope::runtime {
namespace {

struct State {
  config::Config config;
  bool reports_enabled = false;
};

State& state() {
  static State* instance = new State; // never destroyed: exit handlers and late threads use it
  return *instance;
}

void print_line(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
}

void start_once() {
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
  if (s.config.agent) {
    for (const std::string& problem : agent::start(s.config)) {
      print_line(problem);
    }
  }
  // A forked child keeps recording but writes no reports: they would replace its parent's.
  pthread_atfork(nullptr, nullptr, [] { state().reports_enabled = false; });
  std::atexit(finish);
}

// Starting at load time means HOTSCOPE_OUT gets its reports even from a program whose
// instrumented code never runs, and configuration errors show up at once.
[[maybe_unused]] const bool started_at_load = (ensure_started(), true);

} // namespace

const config::Config& ensure_started() {
  static std::once_flag once;
  std::call_once(once, start_once);
  return state().config;
}

void finish() {
  agent::stop(); // first: no client may ask for a snapshot while the collector stops
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

} // namespace hotscope::runtime

hotscope::detail::Ring* hotscope::detail::register_thread() noexcept {
  runtime::ensure_started();
  return trace::register_current_thread();
}
