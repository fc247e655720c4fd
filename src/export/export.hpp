// Exporters: one file per output format, each reading a Snapshot and nothing else.
#pragma once

#include "snapshot/snapshot.hpp"

#include <cstddef>
#include <iosfwd>
#include <string>
#include <string_view>

namespace hotscope::exporters {

// Chrome Trace Event JSON (object form): opens in Perfetto UI and speedscope.
void write_chrome_json(const Snapshot& snapshot, std::ostream& out);
// Folded stacks, root first, self time in ns as the count: flamegraph.pl, speedscope, Perfetto.
void write_folded(const Snapshot& snapshot, std::ostream& out);
// The indented text tree: "[58.314ms ] > load_gdt", one line per event.
void write_text_tree(const Snapshot& snapshot, std::ostream& out);
// The per-function table: Function | Calls | Avg | P50 | P95 | P99 | Total | % Total.
void write_table(const Snapshot& snapshot, std::ostream& out);
// The same statistics, and per-thread figures, as JSON.
void write_stats_json(const Snapshot& snapshot, std::ostream& out);
// The same for live views (GET /v1/stats?format=columns): unindented, `functions` as one array
// per key, and no per-thread function lists. Returned whole, not through a stream: with 10,000
// functions it is a megabyte that a stream would copy again.
std::string stats_columns(const Snapshot& snapshot);

// What every thread is doing now (GET /v1/threads, `hotscope threads`): its open scopes and how
// long each has been open, CPU time, context switches, state. Threads whose innermost scope has
// been open longer than `stuck_ns` come first, marked stuck. As JSON, and as indented text.
void write_threads_json(const Snapshot& snapshot, std::uint64_t stuck_ns, std::ostream& out);
void write_threads_text(const Snapshot& snapshot, std::uint64_t stuck_ns, std::ostream& out);
// Said once where an unmodified program's threads are listed (Snapshot::unmodified_program).
inline constexpr const char* kUnmodifiedProgram =
    "an unmodified program: threads without scopes, their CPU and state only";

// The locks (GET /v1/locks, docs/locks.md): stats.json's "locks", "deadlocks", "lock_inversions"
// and "lock_figures" as one object.
void write_locks_json(const Snapshot& snapshot, std::ostream& out);
// report.txt's "Locks" section alone (nothing when the snapshot has no lock): the summary
// `hotscope run --locks` and HOTSCOPE_LOCKS print on stderr at exit.
void write_locks_text(const Snapshot& snapshot, std::ostream& out);

// The kept slowest calls (docs/slow.md): slow.txt, a heading and an indented tree per call, and
// slow.json (docs/formats-output.md). Both list Snapshot::slow_calls in its order.
void write_slow_text(const Snapshot& snapshot, std::ostream& out);
void write_slow_json(const Snapshot& snapshot, std::ostream& out);
// One kept call as trace.txt's lines, times since its start: slow.txt's tree and slow.json's.
std::string slow_call_tree(const Snapshot& snapshot, const SlowCall& call);
// Keeps only the calls of `function` (exact name; null: every function) and, with `top` above 0,
// at most `top` per function, the slowest (GET /v1/slow).
void keep_slow_calls(Snapshot& snapshot, const std::string* function, std::size_t top);

// Writes the file of every format in export/formats.hpp that is written from a snapshot
// (stats.json, report.txt, trace.json, trace.folded, trace.txt, slow.txt, slow.json; cpu.pb.gz and
// cpu.folded when it has CPU samples) into `directory` (created if missing). Returns "" on success,
// else one line naming the path and the problem.
std::string write_all(const Snapshot& snapshot, const std::string& directory);

// DHAT JSON (docs/formats-output.md, "heap.json (DHAT)"): opens in valgrind's dh_view.html. Mode
// "cpp-heap", times in µs.
std::string dhat_json(const HeapProfile& profile);
void write_dhat_json(const HeapProfile& profile, std::ostream& out);
// DHAT's closing summary: "Total: / At t-gmax: / At t-end:" lines, each after `line_prefix`
// (such as "==4242== sort: hotscope heap: ").
void write_heap_summary(const HeapProfile& profile, std::string_view line_prefix,
                        std::ostream& out);
// What a heap report's summary on stderr says beside the profile's totals: how it was sampled,
// what its symbolization took, where the files went.
struct HeapReportFacts {
  std::string program; // the program's file name
  bool sampling = false;
  std::uint64_t sample_bytes = 0;
  std::uint64_t sampled_allocations = 0;
  std::size_t addresses = 0; // code addresses the report symbolized
  std::size_t ahead = 0;     // and those symbolized before it
  bool by_launcher = false;  // symbolized by `hotscope run` after the program ended
  double seconds = 0;        // building the profile
  std::size_t debug_files_inflated = 0;
  std::size_t debug_files_from_cache = 0;
  std::string json_path;
  std::string pprof_path; // "" when heap.pb.gz was not written
};
// The summary's lines ("==PID== PROGRAM: hotscope heap: ..."; docs/heap.md, "Use").
std::string heap_report_summary(const HeapProfile& profile, const HeapReportFacts& facts);

// Prometheus text exposition 0.0.4 (docs/agent.md, "Prometheus metrics"): calls, self time and a
// duration histogram per function, record and drop counters, counter series, the clock as an
// info gauge.
void write_prometheus(const Snapshot& snapshot, std::ostream& out);
// The same series in OpenMetrics 1.0 (what /v1/metrics answers a scraper that asks for it): each
// function duration bucket with the slowest kept call inside it as its exemplar (docs/slow.md).
void write_openmetrics(const Snapshot& snapshot, std::ostream& out);
inline constexpr const char* kOpenMetricsMime =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

// pprof heap profile, gzip-compressed (Go's heap convention): alloc_objects, alloc_space,
// inuse_objects, inuse_space per site, `period` the mean sampling interval in bytes (1 when
// every allocation is recorded).
void write_pprof_heap(const HeapProfile& profile, std::int64_t period, std::ostream& out);
// pprof wall-time profile, gzip-compressed: sample type wall/nanoseconds, one sample per thread
// and stack of open scopes with the time that stack was innermost in the trace window, the
// thread's name as the label `thread`.
void write_pprof_wall(const Snapshot& snapshot, std::ostream& out);
// pprof CPU profile, gzip-compressed (docs/formats-output.md, "cpu.pb.gz"): sample types
// samples/count and cpu/nanoseconds, one sample per stack of snapshot.cpu; native frames as
// addresses in this process's mappings (pprof symbolizes them from the mapped files), open scopes
// as functions among them.
void write_pprof_cpu(const Snapshot& snapshot, std::ostream& out);
// pprof contention profile, gzip-compressed, as Go's /debug/pprof/mutex (docs/formats-output.md,
// "Mutex profile"): sample types contentions/count and delay/nanoseconds, one sample per lock and
// contention site: "wait for NAME", the site's native frames, then its scopes.
void write_pprof_mutex(const Snapshot& snapshot, std::ostream& out);
// The same stacks folded, root first, with their sample counts: flamegraph.pl, speedscope.
void write_cpu_folded(const Snapshot& snapshot, std::ostream& out);

} // namespace hotscope::exporters
