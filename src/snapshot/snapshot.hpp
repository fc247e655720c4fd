// The snapshot: an immutable copy of everything the collector knows, in nanoseconds.
// Exporters read snapshots only, never live collector state.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hotscope {

struct ClockInfo {
  std::string source;           // "tsc" or "monotonic"
  std::string frequency_origin; // "cpuid", "calibrated" or "fixed" (monotonic: 1 tick = 1 ns)
  double ticks_per_second = 0;
  bool invariant_tsc = false; // what CPUID said, whatever was chosen
  std::string reason;         // why this source was chosen, e.g. "HOTSCOPE_CLOCK=monotonic"
};

// The fixed upper bounds of the Prometheus duration histogram (docs/agent.md): 1, 2.5 and 5 times
// each power of ten from 100 ns to 50 s, then 100 s. Every process uses the same, so buckets add
// up across processes.
inline constexpr std::array<std::uint64_t, 28> kDurationBucketsNs = {100,
                                                                     250,
                                                                     500,
                                                                     1'000,
                                                                     2'500,
                                                                     5'000,
                                                                     10'000,
                                                                     25'000,
                                                                     50'000,
                                                                     100'000,
                                                                     250'000,
                                                                     500'000,
                                                                     1'000'000,
                                                                     2'500'000,
                                                                     5'000'000,
                                                                     10'000'000,
                                                                     25'000'000,
                                                                     50'000'000,
                                                                     100'000'000,
                                                                     250'000'000,
                                                                     500'000'000,
                                                                     1'000'000'000,
                                                                     2'500'000'000,
                                                                     5'000'000'000,
                                                                     10'000'000'000,
                                                                     25'000'000'000,
                                                                     50'000'000'000,
                                                                     100'000'000'000};

// Timing figures of one function (source location), all in nanoseconds.
struct DurationStats {
  std::uint64_t calls = 0;
  std::uint64_t total_ns = 0; // inclusive
  std::uint64_t self_ns = 0;  // inclusive minus the inclusive time of direct children
  std::uint64_t min_ns = 0;
  std::uint64_t max_ns = 0;
  double mean_ns = 0;
  std::uint64_t p50_ns = 0;
  std::uint64_t p90_ns = 0;
  std::uint64_t p95_ns = 0;
  std::uint64_t p99_ns = 0;
  std::uint64_t p999_ns = 0;
  // Calls that took at most kDurationBucketsNs[i] (cumulative); empty when calls is 0.
  std::vector<std::uint64_t> at_most_bucket;
};

// Heap blocks allocated by measured threads (hotscope::detail::record_allocation).
struct AllocationCounts {
  std::uint64_t bytes = 0;
  std::uint64_t blocks = 0;
  AllocationCounts& operator+=(const AllocationCounts& other) {
    bytes += other.bytes;
    blocks += other.blocks;
    return *this;
  }
  bool operator==(const AllocationCounts&) const = default;
};

// An instrumented function no longer recorded (docs/instrument.md, "Cost control"): its first
// calls were all shorter than HOTSCOPE_MIN_NS.
struct FilteredFunction {
  std::string name;
  std::string file;
  std::uint32_t line = 0;
  std::string module, build_id;     // as FunctionStats
  std::uint64_t recorded_calls = 0; // before it was filtered (in the functions' figures)
  std::uint64_t skipped_calls = 0;  // since
  std::uint64_t max_ns = 0;         // the longest recorded call
};

struct FunctionStats {
  std::string name; // short display name, e.g. "Parser::parse"
  std::string file;
  std::uint32_t line = 0;
  // An instrumented function's object and its GNU build id (docs/instrument.md); empty for a
  // macro scope.
  std::string module;
  std::string build_id;
  DurationStats stats; // all zero for a function whose first call is still open
  // Allocated while this function was the innermost open scope (exclusive).
  AllocationCounts allocated_self;
  // Allocated while it was open, its children included (inclusive). A recursive function
  // counts each allocation once, however many of its calls were open.
  AllocationCounts allocated_total;
  // On-CPU time sampled while it was the innermost open scope, and while it was open at all
  // (a recursive function counts each sample once). Zero when the CPU was not sampled.
  std::uint64_t cpu_self_ns = 0;
  std::uint64_t cpu_total_ns = 0;
};

// Every allocation a thread recorded, and those made while it had no scope open; the
// functions' allocated_self figures plus outside_scopes add up to all.
struct Allocations {
  AllocationCounts all;
  AllocationCounts outside_scopes;
  Allocations& operator+=(const Allocations& other) {
    all += other.all;
    outside_scopes += other.outside_scopes;
    return *this;
  }
};

struct CounterStats {
  std::string name;
  std::uint64_t updates = 0;
  std::int64_t last = 0;
  std::int64_t min = 0;
  std::int64_t max = 0;
};

// Record accounting: written == kept + dropped, exactly, once everything has been drained.
struct RecordCounts {
  std::uint64_t written = 0;
  std::uint64_t kept = 0;    // drained by the collector
  std::uint64_t dropped = 0; // refused by a full ring on the producing thread
};

// A track that is not a thread of this process (a guest, docs/guest.md) has an os_tid from
// kExternalTidBase up, a value no thread id reaches (pid_max is at most 2^22).
constexpr std::int64_t kExternalTidBase = std::int64_t{1} << 32;

// A scope open on a thread when the snapshot was taken.
struct OpenScope {
  std::string name;
  std::string file;
  std::uint32_t line = 0;
  std::uint64_t opened_ns = 0; // since Snapshot's start (0 when it opened before the window)
  std::uint64_t open_ns = 0;   // how long it has been open at the snapshot, in full
};

// What the operating system says about a live thread, read by whoever takes the snapshot (from
// /proc/self/task/TID), never by the thread itself. All zero and `state` empty for threads that
// have exited, for external tracks and when /proc could not be read.
struct OsThreadFigures {
  std::string state;               // /proc's state letter: R running, S sleeping, D disk wait, ...
  std::uint64_t cpu_user_ns = 0;   // cumulative since the thread started
  std::uint64_t cpu_system_ns = 0; // cumulative since the thread started
  std::uint64_t voluntary_switches = 0;
  std::uint64_t involuntary_switches = 0;
};

// What an external track's producer did with the batches it was sent (a guest's, docs/guest.md):
// since the track was added, not reset with the statistics.
struct BatchCounts {
  std::uint64_t accepted = 0;
  std::uint64_t rejected = 0;
  std::uint64_t records_rejected = 0; // the track's RecordCounts::dropped
  std::uint64_t nesting_repairs = 0;  // ends without a begin dropped, scopes closed by the host
  std::string last_rejection;         // the newest rejected batch's diagnostic, or empty
};

struct ThreadInfo {
  std::uint32_t index = 0; // stable index, referenced by TraceEvent::thread
  std::int64_t os_tid = 0; // kExternalTidBase + n for the n-th external track
  bool external() const { return os_tid >= kExternalTidBase; }
  std::string name; // empty when the program never named it
  bool exited = false;
  RecordCounts records;
  Allocations allocations;
  std::vector<FunctionStats> functions; // this thread's share, sorted by total_ns descending
  std::vector<OpenScope> open_scopes;   // outermost first, innermost last
  OsThreadFigures os;
  std::optional<BatchCounts> batches; // external tracks whose producer reports them
  std::uint64_t cpu_samples = 0;      // sampling periods of on-CPU time (CpuProfile)
  // An unmodified program's thread, known from /proc only (Snapshot::unmodified_program): it has
  // no ring, so no records and no scopes.
  bool os_only = false;
};

// The CPU samples of the measuring window (docs/cpu.md): stacks of native frames with the scopes
// open at the sample placed among them, each with the sampling periods it stands for.
struct CpuFrame {
  std::uint64_t address = 0; // native: the interrupted instruction (innermost) or a return address
  std::int32_t scope = -1;   // an open scope: its index in CpuProfile::scopes; -1: native
  bool is_scope() const { return scope >= 0; }
};
struct CpuStack {
  std::vector<CpuFrame> frames; // innermost first
  std::uint64_t samples = 0;    // sampling periods
};
struct CpuScope {
  std::string name;
  std::string file;
  std::uint32_t line = 0;
};
struct CpuThreadSamples {
  std::int64_t os_tid = 0;
  std::uint64_t samples = 0;
};
struct CpuProfile {
  unsigned hz = 0;             // the sampling rate now; 0 when off
  std::uint64_t period_ns = 0; // CPU time one period stands for, at the latest rate
  std::uint64_t samples = 0;   // periods sampled in the window, stored or not
  // Timer signals those periods came in: the kernel merges expirations finer than its tick into
  // one signal, so samples / signals periods fall together (the draws are the signals).
  std::uint64_t signals = 0;
  std::uint64_t lost = 0;       // samples the buffer had no room for (the collector lagged)
  std::uint64_t incomplete = 0; // stacks not unwound to their outermost frame (kept as they are)
  std::uint64_t unstored = 0;   // periods of stacks past the bound of distinct stacks
  std::string problem;          // why sampling stopped or could not start
  std::vector<CpuStack> stacks;
  std::vector<CpuScope> scopes;
  std::vector<CpuThreadSamples> threads; // by os_tid
};

// QueuePush and QueuePop carry the item id in TraceEvent::value and the queue's name in name.
// TaskResume opens a task's running slice like a Begin, TaskSuspend and TaskComplete close it like
// an End (the task waits for its next resumption, or is finished); they carry the task id in value
// and the task's name in name.
enum class EventKind : std::uint8_t {
  Begin,
  End,
  Message,
  Counter,
  QueuePush,
  QueuePop,
  TaskResume,
  TaskSuspend,
  TaskComplete,
  // A thread waited for a lock (name: the lock's): a complete slice that ends at the event's
  // time and lasted `value` ns (the window keeps ticks). It opens and closes nothing.
  LockWait,
  // On the thread that released a lock, at the release that let a waiter in, and on the waiter,
  // as it acquired the lock: the two ends of one flow, whose id is `value`.
  LockHandoff,
  LockAcquired
};
// The events that open a slice on their thread, and those that close the innermost one.
constexpr bool opens_slice(EventKind kind) {
  return kind == EventKind::Begin || kind == EventKind::TaskResume;
}
constexpr bool closes_slice(EventKind kind) {
  return kind == EventKind::End || kind == EventKind::TaskSuspend ||
         kind == EventKind::TaskComplete;
}

// One queue (HOTSCOPE_QUEUE_PUSH / _POP), over the measuring window unless said otherwise.
struct QueueStats {
  std::string name;
  std::uint64_t pushed = 0;
  std::uint64_t popped = 0;
  std::uint64_t depth = 0;     // in the queue now: pushes less pops, never below 0; not reset
  std::uint64_t max_depth = 0; // the largest depth seen in the window
  std::uint64_t capacity = 0;  // HOTSCOPE_QUEUE_CAPACITY's value, 0 if never given
  // Time in the queue (push to the pop of the same id): calls = pops matched with their push.
  // self_ns is not used.
  DurationStats wait;
  std::uint64_t popped_never_pushed = 0; // pops of an id not waiting (never pushed, given up)
  std::uint64_t pending_given_up = 0;    // waiting ids forgotten: past the cap, or pushed again
  std::uint64_t pending = 0;             // ids pushed and still waiting for their pop
  std::uint64_t oldest_pending_ns = 0;   // how long the oldest of them has waited (0: none)
  std::vector<std::string> push_threads; // labels of the threads that pushed, first seen first
  std::vector<std::string> pop_threads;
};

// The tasks of one name (HOTSCOPE_TASK coroutines, or Asio operations of one kind), over the
// measuring window unless said otherwise (docs/tasks.md).
struct TaskStats {
  std::string name;
  std::string kind; // "coroutine" or "asio"
  std::uint64_t created = 0;
  std::uint64_t completed = 0;            // returned (or threw); an Asio handler that ran
  std::uint64_t destroyed_unfinished = 0; // destroyed while suspended; an Asio handler never run
  std::uint64_t alive = 0;                // created less finished since the start; not reset
  std::uint64_t resumes = 0;              // running slices begun
  // The running slices that ended: calls = slices, total_ns = the running time. self_ns unused.
  DurationStats running;
  // Per finished task whose creation was seen: its time not running (lifetime less its running
  // time), and its lifetime (creation to completion or destruction). self_ns unused.
  DurationStats waiting;
  DurationStats lifetime;
  std::uint64_t given_up = 0; // tasks no longer followed (past the table's cap): no lifetime
};

// Where a lock was acquired or waited for (docs/locks.md): the scopes open on the thread
// (instrumented locks) and the native stack (interposed pthread locks), either may be empty.
struct LockSite {
  std::vector<std::string> scopes;  // outermost first
  std::vector<std::uint64_t> stack; // return addresses, innermost first
  bool operator==(const LockSite&) const = default;
};

// A thread holding or waiting for a lock now.
struct LockThread {
  std::string thread; // its label
  std::int64_t os_tid = 0;
  std::uint64_t for_ns = 0; // since when it holds or waits
  bool shared = false;      // holds it shared
};

// One lock (hotscope::Lockable by name; an interposed pthread lock by address), over the
// measuring window unless said otherwise (docs/locks.md).
struct LockStats {
  std::string name;
  std::string kind;               // "mutex", "recursive_mutex", "shared_mutex", ... "pthread_mutex"
  std::uint64_t address = 0;      // an interposed lock's; 0 for a named lock (all its instances)
  std::uint64_t acquisitions = 0; // holds begun (shared ones too)
  std::uint64_t contended = 0;    // acquisitions that waited first
  std::uint64_t try_failed = 0;   // try-locks that failed, timed waits that gave up
  DurationStats wait;             // per contended acquisition; self_ns unused
  DurationStats hold;             // per hold that ended; self_ns unused
  struct Waiter {
    std::string thread;
    std::uint64_t waits = 0;
    std::uint64_t wait_ns = 0;
  };
  std::vector<Waiter> top_waiters; // the threads that waited longest, longest first
  struct Contention {
    LockSite site;
    std::uint64_t waits = 0;
    std::uint64_t wait_ns = 0;
  };
  std::vector<Contention> contended_at; // where it was waited for, longest total first
  std::vector<LockThread> holders;      // now (not reset)
  std::vector<LockThread> waiters;      // now (not reset)
};

// A cycle of threads each waiting for a lock the next one holds (docs/locks.md, "Deadlocks").
struct Deadlock {
  struct Link {
    LockThread waiter; // for_ns: how long it has waited
    std::string lock;  // the lock it waits for
    LockThread holder; // the thread holding it; for_ns: how long it has held it
    std::vector<std::string> waiter_scopes; // open on the waiter, outermost first
  };
  std::vector<Link> cycle;
};

// Two locks taken in both orders (docs/locks.md, "Lock-order inversions"): `first` then
// `second` at one site, `second` then `first` at the other.
struct LockInversion {
  std::string first;
  std::string second;
  std::string thread_one; // acquired `second` while holding `first`
  LockSite site_one;
  std::string thread_two; // acquired `first` while holding `second` (perhaps through others)
  LockSite site_two;
  std::uint64_t found_ns = 0; // when, since the start
};

// The locks' figures as a whole and what their bounded tables gave up.
struct LockFigures {
  std::uint64_t deadlocks_found = 0; // cycles found since the start (not reset)
  std::uint64_t order_edges = 0;     // lock-order pairs known
  std::uint64_t given_up = 0;        // locks, order pairs or waits past their caps, not followed
};

struct TraceEvent {
  std::uint64_t ns = 0;     // since Snapshot::start_ns
  std::uint32_t thread = 0; // ThreadInfo::index
  EventKind kind = EventKind::Begin;
  std::uint32_t name = 0; // index into Snapshot::names (function, message text or counter)
  std::int64_t value = 0; // counter value
};

// One of a function's K slowest calls of the measuring window, kept whole (docs/slow.md). Its
// events are those of the trace between its Begin and its End on its thread, in order: the
// Begin first and the End last, nested scopes, messages, counters, queue, task and lock events
// (TraceEvent::thread is `thread`). A subtree longer than the cap is cut: the events after
// the first `kSlowCallEvents - 1` are not kept (the End is), and `cut_events` says how many.
constexpr std::size_t kSlowCallEvents = 4096;
struct SlowCall {
  std::uint64_t id = 0;       // unique in the process's run, never reused (exemplars' call_id)
  std::uint32_t function = 0; // index into Snapshot::names
  std::uint32_t thread = 0;   // ThreadInfo::index of its thread when kept
  std::string thread_name;    // the thread's label when kept (it may have ended since)
  std::int64_t os_tid = 0;
  std::uint64_t start_ns = 0; // since Snapshot::start_ns (may be before trace_start_ns)
  std::uint64_t duration_ns = 0;
  std::uint64_t allocations = 0;     // heap allocations made inside it (count), 0 without heap
  std::uint64_t allocated_bytes = 0; // their bytes
  std::uint64_t cpu_samples = 0;     // CPU samples taken inside it, 0 when the sampler is off
  std::uint64_t cut_events = 0;      // events past the cap, not kept; 0 when whole
  std::uint64_t cut_at_ns = 0;       // since Snapshot::start_ns, where the cut began (0: whole)
  std::vector<TraceEvent> events;
};

// The kept calls' figures (stats.json "slow_calls_figures").
struct SlowCallFigures {
  std::uint32_t per_function = 0; // K (HOTSCOPE_SLOWEST), 0 off
  std::uint64_t budget_bytes = 0; // HOTSCOPE_SLOWEST_MIB
  std::uint64_t kept = 0;         // calls kept now
  std::uint64_t evicted = 0;      // kept calls given up to stay within the budget (window)
  std::uint64_t cut = 0;          // kept calls whose subtree was cut
};

// The heap profiler's process-wide figures at one moment (estimates in the sampled mode): the
// engines' totals, what the heap libraries hand libhotscope (heap_link) and what /v1/metrics shows.
struct HeapTotals {
  std::uint64_t total_bytes = 0; // allocated in the measuring window
  std::uint64_t total_blocks = 0;
  std::uint64_t live_bytes = 0; // live now
  std::uint64_t live_blocks = 0;
  std::uint64_t peak_bytes = 0;  // the most live bytes in the window
  std::uint64_t peak_blocks = 0; // live blocks at that peak
};

// The heap profiler's figures, when it runs.
struct HeapFigures : HeapTotals {
  std::string mode; // "full" or "sampled"
};

// Memory the profiler holds, in bytes; each part is bounded (docs/architecture.md).
struct ProfilerMemory {
  std::uint64_t rings = 0;        // the threads' rings, mapped (HOTSCOPE_RING_RECORDS each)
  std::uint64_t trace_window = 0; // up to HOTSCOPE_TRACE_MIB
  std::uint64_t statistics = 0;   // per-function and per-thread statistics, names
  std::uint64_t slow_calls = 0;   // bytes held by the kept calls
};

// The image of a guest that ran under guest tracing (hotscope vm run, docs/guest.md).
struct GuestImage {
  std::string track; // the guest's track: "guest: sample-guest"
  std::string path;
  std::uint64_t bytes = 0;
  std::string sha256; // of the bytes read, lowercase hex
};

struct Snapshot {
  std::string hotscope_version;
  std::int64_t pid = 0;
  std::string process_name;
  ClockInfo clock;
  std::uint64_t start_unix_ns = 0;  // wall-clock time of the start, for humans
  std::uint64_t duration_ns = 0;    // from the start of the measuring window to this snapshot
  std::uint64_t captured_ticks = 0; // the clock's ticks (clock::now_ticks) at this snapshot
  RecordCounts records;             // over all threads
  std::uint64_t threads_folded = 0; // exited threads merged into one entry, to bound memory
  // The runtime was preloaded into (or attached to) a program not linked with hotscope: no
  // scopes; `threads` adds its other live threads, os_only (docs/heap.md).
  bool unmodified_program = false;
  Allocations allocations;              // over all threads
  std::optional<HeapFigures> heap;      // filled by the agent for /v1/metrics, else empty
  std::vector<GuestImage> guest_images; // filled by hotscope vm run, else empty
  ProfilerMemory memory;

  std::vector<FunctionStats> functions; // over all threads, sorted by total_ns descending
  std::vector<FilteredFunction> filtered_functions; // in the order they were filtered
  std::vector<ThreadInfo> threads; // live threads, the newest exited ones, the merged entry
  // Exited threads merged into the "(N ended threads)" entry whose events are still in
  // the trace window: only index, os_tid, name and exited are set, for the trace outputs.
  std::vector<ThreadInfo> trace_threads;
  std::vector<CounterStats> counters;
  std::vector<QueueStats> queues;        // sorted by name
  std::vector<TaskStats> tasks;          // sorted by name
  std::vector<LockStats> locks;          // sorted by total wait, longest first
  std::vector<Deadlock> deadlocks;       // the cycles that stand now
  std::vector<LockInversion> inversions; // found since the start, in the order found
  LockFigures lock_figures;
  CpuProfile cpu;
  // The kept calls (docs/slow.md): by function (Snapshot::functions' order), slowest first
  // within one.
  std::vector<SlowCall> slow_calls;
  SlowCallFigures slow_call_figures;

  // The trace window: the most recent events, per thread in order, sorted by time overall.
  // Each thread's Begin/End events are balanced: a scope whose Begin was evicted from the
  // window starts at trace_start_ns, and a scope still open ends at duration_ns.
  std::vector<std::string> names;
  std::vector<TraceEvent> trace;
  std::uint64_t trace_start_ns = 0;
  std::uint64_t trace_window_events = 0; // events in the window (also in statistics-only snapshots)
  std::uint64_t trace_evicted = 0;       // events pushed out of the bounded window
  std::uint64_t trace_open_scopes = 0;   // scopes still open when the snapshot was taken
};

} // namespace hotscope

namespace hotscope {

// ---- Heap profile: DHAT's model (docs/heap.md, "Accounting"), times in µs since start ----

// One program point (allocation site).
struct HeapSite {
  std::uint64_t total_bytes = 0;     // tb: every allocation's size, every realloc's new size
  std::uint64_t total_blocks = 0;    // tbk: allocations plus reallocs
  std::uint64_t lifetimes_us = 0;    // tl: Σ lifetimes; blocks live at the end count until end_us
  std::uint64_t max_bytes = 0;       // mb: this site's live bytes at the last global peak it grew
  std::uint64_t max_blocks = 0;      // mbk
  std::uint64_t gmax_bytes = 0;      // gb: live at the global peak (gmax_us)
  std::uint64_t gmax_blocks = 0;     // gbk
  std::uint64_t end_bytes = 0;       // eb: live at the end
  std::uint64_t end_blocks = 0;      // ebk
  std::vector<std::uint32_t> frames; // indices into HeapProfile::frames, innermost first; unique
};

// A frame of the frame table as the symbolizer resolved it (HeapProfile::frame_details), for
// writers that keep the structure: pprof's Locations, Lines and Mappings.
struct HeapFrame {
  std::uint64_t address = 0; // the call instruction (return address - 1); 0 for the root
  std::string function;      // demangled; empty when unknown
  std::string file;          // the source file's base name; empty without debug info
  std::uint32_t line = 0;
  std::uint32_t mapping = 0; // 1 + index into HeapProfile::mappings; 0: in none
  bool inlined = false;      // inlined into the next frame of its sites (at the same address)
};

// Where a loaded object's code was in the profiled process (an executable mapping).
struct HeapMapping {
  std::uint64_t start = 0;
  std::uint64_t limit = 0;  // one past the end
  std::uint64_t offset = 0; // the file offset mapped at `start`
  std::string path;
};

struct HeapProfile {
  std::string command; // the command line, arguments joined by single spaces
  std::int64_t pid = 0;
  std::uint64_t end_us = 0;  // te
  std::uint64_t gmax_us = 0; // tg: time of the global peak of live bytes
  // The frame table: frames[0] is "[root]", then one distinct string per frame, in valgrind's
  // syntax ("0x4011A6: make_node(int) (tree.cpp:12)").
  std::vector<std::string> frames;
  std::vector<HeapFrame> frame_details; // frames[i] as the symbolizer resolved it; [0] the root
  std::vector<HeapMapping> mappings;    // the objects with code in the process, by address
  std::vector<HeapSite> sites;
  std::uint64_t unknown_frees = 0;    // frees of pointers the profiler never saw allocated
  std::uint64_t unknown_reallocs = 0; // reallocs of such pointers, counted as new allocations
  // Attached to a running process (`hotscope attach`): the profile covers the time from the
  // attach, and frees and reallocs of blocks allocated before it are counted here instead.
  bool attached = false;
  std::uint64_t frees_before_attach = 0;
  std::uint64_t reallocs_before_attach = 0;
};

} // namespace hotscope
