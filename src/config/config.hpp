// Configuration from the environment, read once at start. Bad values never stop the program:
// each gets one line naming the variable and the problem, and the default is used.
#pragma once

#include "clock/clock.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hotscope::config {

struct Config {
  std::string out_dir;                         // HOTSCOPE_OUT: reports written here at exit
  clock::Request clock = clock::Request::Auto; // HOTSCOPE_CLOCK=auto|tsc|monotonic
  std::size_t ring_records = 262144;           // HOTSCOPE_RING_RECORDS: per thread, power of 2
  std::size_t trace_window_bytes = 32u << 20;  // HOTSCOPE_TRACE_MIB: 0 keeps no trace
  unsigned collect_period_ms = 10;             // HOTSCOPE_COLLECT_MS
  bool agent = true;                           // HOTSCOPE_AGENT=0 turns the live agent off
  // HOTSCOPE_RUNTIME_DIR, else $XDG_RUNTIME_DIR/hotscope, else /tmp/hotscope-<uid>
  std::string runtime_dir;
  // HOTSCOPE_AGENT_TCP=HOST:PORT (a numeric address, IPv6 in brackets): a TCP listener serving
  // /v1/metrics only. Empty: none. Loopback only unless HOTSCOPE_AGENT_TCP_ALLOW_REMOTE=1.
  std::string agent_tcp_host;
  std::uint16_t agent_tcp_port = 0; // 0: the kernel picks a free port
  // HOTSCOPE_ON_SIGNAL=report: SIGTERM, SIGINT and SIGHUP write the reports before they end the
  // process (src/signals). Off by default in a program: see read_on_signal.
  bool report_on_signal = false;
};

struct Parsed {
  Config config;
  std::vector<std::string> errors; // one line each, e.g. "hotscope: HOTSCOPE_TRACE_MIB=..."
};

using Getenv = std::function<const char*(const char*)>;

Parsed parse(const Getenv& getenv);

// HOTSCOPE_ON_SIGNAL=report|off (default off: a library must not change what a program's signals
// do unasked; `hotscope run` and `hotscope vm run` set report). Part of parse(); the heap
// libraries, which do not run parse(), read it here too. A bad value adds one line to `errors`.
bool read_on_signal(const Getenv& getenv, std::vector<std::string>& errors);

// Creates `dir` if needed; returns "" if reports can be written there, else one line why not,
// naming the directory as `named` + dir ("HOTSCOPE_OUT=out", "--out out").
std::string check_out_dir(const std::string& dir, const std::string& named = "HOTSCOPE_OUT=");

} // namespace hotscope::config
