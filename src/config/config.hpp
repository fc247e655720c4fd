// Configuration from the environment, read once at start. Bad values never stop the program:
// each gets one line naming the variable and the problem, and the default is used.
#pragma once

#include "clock/clock.hpp"
#include "locks/locks.hpp"

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hotscope::config {

struct Config {
  std::string out_dir;                         // HOTSCOPE_OUT: reports written here at exit
  clock::Request clock = clock::Request::Auto; // HOTSCOPE_CLOCK=auto|tsc|monotonic
  std::size_t ring_records = 262144;           // HOTSCOPE_RING_RECORDS: per thread, power of 2
  std::size_t trace_window_bytes = 32u << 20;  // HOTSCOPE_TRACE_MIB: 0 keeps no trace
  unsigned collect_period_ms = 10;             // HOTSCOPE_COLLECT_MS
  unsigned cpu_hz = 0;                         // HOTSCOPE_CPU_HZ: CPU samples per second, 0 off
  unsigned slowest = 4;                        // HOTSCOPE_SLOWEST: calls kept per function, 0 off
  std::size_t slowest_bytes = 16u << 20;       // HOTSCOPE_SLOWEST_MIB: their budget (docs/slow.md)
  std::uint64_t min_ns = 200; // HOTSCOPE_MIN_NS: instrumented functions' filter (instrument.md)
  bool xray_patch = true;     // HOTSCOPE_XRAY=on|off: XRay's sleds patched at start (instrument.md)
  locks::Mode locks = locks::Mode::Off; // HOTSCOPE_LOCKS=0|1|hold (docs/locks.md)
  bool agent = true;                    // HOTSCOPE_AGENT=0 turns the live agent off
  // HOTSCOPE_RUNTIME_DIR, else $XDG_RUNTIME_DIR/hotscope, else /tmp/hotscope-<uid>
  std::string runtime_dir;
  // HOTSCOPE_AGENT_TCP=HOST:PORT (a numeric address, IPv6 in brackets): a TCP listener serving
  // /v1/metrics only. Empty: none. Loopback only unless HOTSCOPE_AGENT_TCP_ALLOW_REMOTE=1.
  std::string agent_tcp_host;
  std::uint16_t agent_tcp_port = 0; // 0: the kernel picks a free port
  // HOTSCOPE_ON_SIGNAL=report: SIGTERM, SIGINT and SIGHUP write the reports before they end the
  // process (src/signals). Off by default in a program: see read_on_signal.
  bool report_on_signal = false;
  // HOTSCOPE_ON_CRASH=report|off: with HOTSCOPE_OUT, a crash writes crash.<pid>.txt and .json
  // (src/crash). On by default: the crash still ends the process as it would have.
  bool report_on_crash = true;
  // HOTSCOPE_RUNTIME_AT=first-client|start: under `hotscope run --heap` in the sampled mode, the
  // runtime (the live agent, crash reports) is loaded at the first client, or with the program.
  bool runtime_at_first_client = true;
};

struct Parsed {
  Config config;
  std::vector<std::string> errors; // one line each, e.g. "hotscope: HOTSCOPE_TRACE_MIB=..."
  // HOTSCOPE_ON_SIGNAL's problem apart: a heap library in the process reads that variable too,
  // and says it once (the runtime prints this one only where there is none).
  std::vector<std::string> on_signal_errors;
};

using Getenv = std::function<const char*(const char*)>;

Parsed parse(const Getenv& getenv);

// HOTSCOPE_ON_SIGNAL=report|off (default off: a library must not change what a program's signals
// do unasked; `hotscope run` and `hotscope vm run` set report). Part of parse(); the heap
// libraries, which do not run parse(), read it here too. A bad value adds one line to `errors`.
bool read_on_signal(const Getenv& getenv, std::vector<std::string>& errors);

// ---- The heap profiler's variables, read by the heap libraries (heap_options.cpp) ----

// HOTSCOPE_HEAP_MODE: every block, a sample of them, or nothing at all.
enum class HeapMode { Off, Full, Sampled };

// HOTSCOPE_HEAP_UNWIND. Libunwind: libunwind with a per-thread cache of stacks, each reused only
// while every return address is still in the slot it was read from (docs/heap.md);
// LibunwindUncached: libunwind's unw_backtrace on every call; FramePointers: the frame-pointer
// chain.
enum class Unwinder { Libunwind, LibunwindUncached, FramePointers };

struct HeapOptions {
  std::string out_dir = ".";               // HOTSCOPE_OUT: heap.json is written there
  bool out_set = false;                    // HOTSCOPE_OUT was given
  std::size_t depth = 32;                  // HOTSCOPE_HEAP_DEPTH: frames kept, 1..256
  Unwinder unwinder = Unwinder::Libunwind; // HOTSCOPE_HEAP_UNWIND=libunwind|libunwind-uncached|fp
  bool summary = true;                     // HOTSCOPE_HEAP_SUMMARY=0 turns the stderr lines off
  HeapMode mode = HeapMode::Full;          // HOTSCOPE_HEAP_MODE=full|sampled|off
  std::uint64_t sample_bytes = 512 * 1024; // HOTSCOPE_HEAP_SAMPLE_BYTES: mean interval, >= 1
  std::uint64_t seed = 0;                  // HOTSCOPE_HEAP_SAMPLE_SEED
  bool seed_set = false;                   // else a seed from the clock and the pid
  // HOTSCOPE_HEAP_ATTACH=1: loaded by `hotscope attach` into a running process (docs/heap.md).
  bool attached = false;
  // Where inflated copies of compressed debug files are kept: $XDG_CACHE_HOME/hotscope/debug,
  // else $HOME/.cache/hotscope/debug; "" with HOTSCOPE_HEAP_DEBUG_CACHE=0 or neither set.
  std::string debug_cache;
};

struct ParsedHeap {
  HeapOptions options;
  std::vector<std::string> errors; // one line each, naming the variable
};

// `default_mode` applies when HOTSCOPE_HEAP_MODE is unset: the preload library records
// everything, a program linked with hotscope::heap nothing until asked. An empty HOTSCOPE_OUT is
// one line, as in parse(), and the default directory is kept.
ParsedHeap parse_heap(const Getenv& getenv, HeapMode default_mode = HeapMode::Full);

// Creates `dir` if needed; returns "" if reports can be written there, else one line why not,
// naming the directory as `named` + dir ("HOTSCOPE_OUT=out", "--out out").
std::string check_out_dir(const std::string& dir, const std::string& named = "HOTSCOPE_OUT=");

// $HOTSCOPE_RUNTIME_DIR if set and not empty, else $XDG_RUNTIME_DIR/hotscope, else
// /tmp/hotscope-<uid>: where agents put their sockets and the CLI looks for them.
std::string runtime_dir(const char* hotscope_runtime_dir, const char* xdg_runtime_dir, uid_t uid);

// A TCP address to listen on (HOTSCOPE_AGENT_TCP, `hotscope exporter --listen`).
struct TcpAddress {
  std::string host; // numeric, IPv6 without its brackets
  std::uint16_t port = 0;
  bool v6 = false;
  bool loopback = false;
};

// "127.0.0.1:9464" or "[::1]:9464": numeric addresses only, so no name lookup at start.
std::optional<TcpAddress> parse_tcp_address(std::string_view text);

} // namespace hotscope::config
