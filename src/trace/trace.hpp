// Tracing: the per-thread rings, the collector thread that drains them, and the aggregation
// of records into per-function statistics and a bounded trace window.
#pragma once

#include "cpu/cpu.hpp"
#include "snapshot/snapshot.hpp"
#include "trace/cpu_stacks.hpp"
#include "trace/histogram.hpp"
#include "trace/lock_table.hpp"
#include "trace/queue_table.hpp"
#include "trace/record_kinds.hpp"
#include "trace/slow_calls.hpp"
#include "trace/task_table.hpp"
#include "trace/window.hpp"

#include <hotscope/record.h>

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace hotscope::detail {
struct Ring;
} // namespace hotscope::detail

namespace hotscope::trace {

struct LocationText {
  std::string name;
  std::string file;
  std::uint32_t line = 0;
  std::uint32_t flags = 0; // HOTSCOPE_LOCATION_* (record.h)
  // An instrumented function's object (its path) and that object's build id; empty otherwise.
  std::string module = {};
  std::string build_id = {};
};

// Turns a record's `ref` into text: a hotscope_source_location for scopes and counters, a
// NUL-terminated string for static messages, a function's entry address for an instrumented
// function's scope (docs/instrument.md; without `function`, the address in hex). In-process this
// reads the program's own static data and symbols; a guest's resolver reads guest memory with
// bounds checks.
struct Resolver {
  std::function<LocationText(std::uint64_t ref)> location;
  std::function<std::string(std::uint64_t ref)> text;
  std::function<LocationText(std::uint64_t address)> function = {};
};

// Instrumented functions whose first `after_calls` calls were all shorter than `min_ns` are
// filtered (docs/instrument.md, "Cost control"): `apply` stops their recording (false: it could
// not), `skipped` counts their calls since. min_ns 0: none is. `ticks_per_second` converts
// min_ns when a function first reaches `after_calls`, not before: where no CPUID leaf gives the
// clock's frequency (AMD, most virtual machines) its first answer waits out 10 ms of calibration,
// which must not fall on the program's start.
struct FunctionFilter {
  std::uint64_t min_ns = 0;
  std::uint64_t after_calls = 1000;
  std::function<bool(std::uint64_t entry)> apply;
  std::function<std::uint64_t(std::uint64_t entry)> skipped;
  std::function<double()> ticks_per_second = [] { return 1e9; };
};

// The time base a snapshot converts ticks with.
struct TimeBase {
  ClockInfo clock;
  std::uint64_t start_ticks = 0; // start of the measuring window
  std::uint64_t now_ticks = 0;
};

// What a snapshot carries. Converting the trace window is the costly part, and the collector
// cannot drain while a snapshot is built, so statistics-only requests skip it. ProcessTotals
// also leaves out each thread's own function list, the names the trace's events use (a live
// view of thousands of functions) and the kept slowest calls. StatisticsOnly keeps those calls
// without their events; StatisticsAndSlowCalls and StatisticsAndTrace with them.
enum class Contents { StatisticsOnly, StatisticsAndTrace, ProcessTotals, StatisticsAndSlowCalls };

// A snapshot in two steps, so that the collector is held off the rings only for the first:
// Aggregator::capture (under the collector's lock) copies the statistics and takes the trace
// window by shared reference; complete() converts the window afterwards, without the lock.
struct CapturedSnapshot {
  Snapshot snapshot; // all but the trace
  TimeBase time;
  bool with_trace = false;
  std::vector<WindowPiece> window;
  // Per thread (ThreadInfo::index), the locations of its open scopes, outermost first.
  std::vector<std::pair<std::uint32_t, std::vector<std::uint32_t>>> open_scopes;
  // The kept slowest calls in Snapshot::slow_calls' order, their events shared with the collector.
  std::vector<KeptCall> slow_calls;
  bool slow_call_events = false;
};
// Adds the trace (if it was asked for) to a captured snapshot.
Snapshot complete(CapturedSnapshot captured);

// What a crash report reads (src/crash, docs/crash.md), from a signal handler: what it is handed
// lives only for the call.
class CrashVisitor {
public:
  // A thread with a ring. `name` is the collector's ("" before it first drained the ring).
  virtual void thread(std::int64_t os_tid, const char* name, const detail::Ring& ring) = 0;
  // A scope open on the thread last handed over, as of the collector's last drain of its ring
  // (the records from the ring's tail on are not in it), outermost first.
  virtual void open_scope(const char* name, std::uint64_t opened_ticks) = 0;
  virtual void counter(const char* name, std::int64_t last) = 0;
  virtual void queue(const char* name, std::uint64_t depth) = 0;

protected:
  ~CrashVisitor() = default;
};

// Turns records into statistics and a bounded trace. Not thread-safe: the collector owns it.
class Aggregator {
public:
  Aggregator(std::size_t window_bytes, Resolver resolver, const SlowCallSettings& slow = {},
             FunctionFilter filter = {});

  std::uint32_t add_thread(std::int64_t os_tid, std::string name);
  // Consumes one thread's records in order. A batch must not end inside a record's payload.
  // `first_position`: how many records the thread wrote before the batch; `samples`: CPU samples
  // taken on the thread, by ring_head, each attributed to the scopes open after that many records
  // (one taken before the batch, to those open at its start).
  void consume(std::uint32_t thread, std::span<const hotscope_record> records,
               std::uint64_t first_position = 0, std::span<const cpu::Sample* const> samples = {});
  // A CPU sample of a thread that has no ring (it never recorded): no scope is open on it.
  void consume_cpu_sample(const cpu::Sample& sample) { cpu_sample(nullptr, sample); }
  // The sampler's figures as of now, for the next snapshot (counted from the latest reset()).
  void set_cpu_figures(const cpu::Figures& figures) {
    cpu_now_ = figures;
    if (figures.hz != 0) { // a window's samples keep the latest rate's period once it stops
      cpu_period_ns_ = 1'000'000'000 / figures.hz;
    }
  }
  void set_dropped(std::uint32_t thread, std::uint64_t dropped);
  // An external track's batch figures (its records_rejected become its dropped records).
  void set_batches(std::uint32_t thread, const BatchCounts& batches);
  // O(1) amortized: folds at most the one thread that leaves the kept set. `at_exit`: its CPU
  // time and context switches, read as it ended (they can no longer be read from /proc).
  void mark_exited(std::uint32_t thread, const OsThreadFigures& at_exit = {});
  // Every thread's records written before the pass began have been consumed (queue pops that
  // arrived before their push wait for it until the next pass ends).
  void finish_pass();
  // Forgets statistics, counts and the trace; open scopes stay open and are timed in full.
  void reset();
  // A shared library was unloaded: refs are addresses, so a location read from now on gets its
  // name from the memory at its address again (a library loaded at the same address gets names
  // of its own; a location whose text is unchanged keeps its id).
  void forget_addresses();

  CapturedSnapshot capture(const TimeBase& time,
                           Contents contents = Contents::StatisticsAndTrace) const;
  // A crash report's view (aggregator_crash.cpp): allocates nothing. The thread's open scopes,
  // then (crash_series) the counters' last values and the queues' depths.
  void crash_thread(std::uint32_t thread, const detail::Ring& ring, std::int64_t os_tid,
                    CrashVisitor& visitor) const noexcept;
  void crash_series(CrashVisitor& visitor) const noexcept;
  Snapshot snapshot(const TimeBase& time, bool with_trace = true) const {
    return complete(
        capture(time, with_trace ? Contents::StatisticsAndTrace : Contents::StatisticsOnly));
  }

  // Exited threads whose own statistics are kept; older ones are merged into one entry.
  static constexpr std::size_t kExitedThreadsKept = 256;

private:
  // A function's calls: their durations, self time and allocations.
  struct Stats : Durations {
    std::uint64_t self = 0;
    AllocationCounts allocated_self;
    AllocationCounts allocated_total;
    std::uint64_t cpu_self = 0; // sampling periods (CpuProfile)
    std::uint64_t cpu_total = 0;
    void add(std::uint64_t duration, std::uint64_t self_ticks);
    void merge(const Stats& other);
  };
  struct Frame {
    std::uint32_t location;
    std::uint64_t start;
    std::uint64_t stack_address; // where the scope opened (its BEGIN's value), 0: unknown
    std::uint64_t children = 0;
    // Allocations not yet in the statistics: those made while this frame was innermost, and
    // those plus its closed children's (a child hands its inclusive figure up at its END).
    AllocationCounts allocated_self;
    AllocationCounts allocated_inclusive;
  };
  // What an open frame has allocated so far; `total` is empty unless it is the outermost
  // frame of its location (see FunctionStats::allocated_total).
  struct OpenAllocation {
    std::uint32_t location;
    AllocationCounts self;
    AllocationCounts total;
  };
  struct Counter {
    std::uint64_t updates = 0;
    std::int64_t last = 0;
    std::uint64_t last_ticks = 0; // when `last` was recorded
    std::int64_t min = INT64_MAX;
    std::int64_t max = INT64_MIN;
  };
  struct ThreadState {
    std::int64_t os_tid = 0;
    std::string name;
    bool exited = false;
    bool stats_folded = false;
    RecordCounts records;
    std::uint64_t dropped_before_reset = 0;
    std::vector<Frame> stack;
    std::unordered_map<std::uint32_t, Stats> stats;
    Allocations allocations;
    std::uint64_t last_ticks = 0;
    std::optional<BatchCounts> batches;
    OsThreadFigures at_exit;
    std::uint64_t cpu_samples = 0; // sampling periods
    SlowThread slow;               // its open calls that may be among the slowest
  };
  // Direct-mapped, in front of name_ids_: a record's ref is found without hashing.
  struct InternedRef {
    std::uint64_t ref = 0;
    std::uint32_t id = UINT32_MAX; // none yet
  };
  static constexpr std::size_t kInternCacheSlots = 1024;

  // `ref` is a location, or with `function` a function's entry address (its name, once, from
  // the resolver's symbols).
  std::uint32_t intern_location(std::uint64_t ref, bool function = false);
  std::uint32_t intern_text(std::uint64_t ref);
  // The id of a name read at `ref`: by address and text, so ids outlive forget_addresses().
  std::uint32_t intern(std::uint64_t ref, LocationText text, char kind);
  // An event to the trace window, and to the kept calls' buffer of the thread being consumed
  // (docs/slow.md: a lock handoff put on another thread is not part of its calls). A scope's
  // Begin and End reach that buffer through SlowCalls::begin and end instead.
  void push_event(const WindowEvent& event) {
    window_.push(event);
    if (event.thread == consuming_ && consuming_slow_->buffering()) {
      consuming_slow_->event(event, nullptr);
    }
  }
  static SlowThreadFigures slow_figures(std::uint32_t index, const ThreadState& thread) {
    return {index, &thread.name, thread.os_tid, &thread.allocations.all, &thread.cpu_samples};
  }
  void capture_slow_calls(Contents contents, CapturedSnapshot& captured) const;
  void begin(ThreadState& thread, std::uint32_t location, std::uint64_t ticks,
             std::uint64_t stack_address);
  // A CPU sample: its stack with the thread's open scopes placed among its native frames, and
  // its periods in the open functions' figures. `thread` null: a thread without a ring.
  void cpu_sample(ThreadState* thread, const cpu::Sample& sample);
  // Returns the duration of the frame it closed (0 when none was open).
  std::uint64_t end(ThreadState& thread, std::uint32_t location, std::uint64_t ticks);
  // After an instrumented function's call closed: filters it when its calls so far qualify.
  void maybe_filter(std::uint32_t location, std::uint64_t entry);
  static void allocate(ThreadState& thread, std::uint64_t bytes);
  // One record of a known kind, its payload records after it.
  void consume_record(std::uint32_t thread_index, ThreadState& thread, const RecordKind& row,
                      const hotscope_record& record, std::span<const hotscope_record> payload);
  void queue_record(std::uint32_t thread, const RecordKind& row, const hotscope_record& record);
  void task_record(std::uint32_t thread_index, ThreadState& thread, const RecordKind& row,
                   const hotscope_record& record);
  // lock_records.cpp: the lock records to the LockTable, and their trace events.
  void lock_record(std::uint32_t thread_index, ThreadState& thread, const hotscope_record& record,
                   std::span<const hotscope_record> payload);
  LockTable::Lock lock_of(const hotscope_record& record);
  void wait_ended(std::uint32_t thread_index, const hotscope_record& record,
                  std::uint32_t lock_name, const LockTable::WaitEnd& end);
  std::string thread_label(std::uint32_t thread) const;
  // Parts of capture() (snapshot_builder.cpp): the statistics per function and per thread, each
  // thread's, and the counters, queues and tasks.
  class Figures;
  void capture_cpu(const Figures& figures, Snapshot& snapshot) const;
  void capture_functions_and_threads(const Figures& figures, std::uint64_t now_ticks,
                                     Snapshot& snapshot) const;
  ThreadInfo capture_thread(const Figures& figures, std::uint64_t now_ticks, std::uint32_t index,
                            const ThreadState& thread,
                            const std::vector<OpenAllocation>& open) const;
  void capture_series(const Figures& figures, std::uint64_t now_ticks, Snapshot& snapshot) const;
  static std::vector<OpenAllocation> open_allocations(const std::vector<Frame>& stack);
  static void forget_open_allocations(std::vector<Frame>& stack);
  void fold_thread(ThreadState& thread);
  void forget_threads_out_of_window();
  std::size_t statistics_bytes() const;

  Resolver resolver_;
  std::vector<LocationText> names_; // index = name id, for locations and static texts
  std::unordered_map<std::uint64_t, std::uint32_t> name_ids_; // ref -> id, since the last unload
  std::unordered_map<std::string, std::uint32_t> ids_by_ref_and_text_;
  std::array<InternedRef, kInternCacheSlots> intern_cache_{};
  std::unordered_map<std::uint32_t, Stats> stats_;
  std::unordered_map<std::uint32_t, Counter> counters_;
  std::map<std::uint32_t, ThreadState> threads_;
  std::uint32_t next_thread_ = 0;
  // Exited threads, oldest exit first: those whose statistics are still their own (at most
  // kExitedThreadsKept), and those folded but still named by events in the trace window.
  std::deque<std::uint32_t> exited_kept_;
  std::deque<std::uint32_t> folded_in_window_;
  std::unordered_map<std::uint32_t, Stats> folded_thread_stats_;
  std::uint64_t threads_folded_ = 0;
  RecordCounts folded_records_; // counts of threads whose entry was folded away
  Allocations folded_allocations_;
  OsThreadFigures folded_os_; // the folded threads' CPU time and context switches, summed
  QueueTable queues_;
  TaskTable tasks_;
  LockTable locks_;
  std::vector<std::uint32_t> lock_scopes_; // lock_record's, kept for its capacity
  std::unordered_map<std::uint64_t, std::uint32_t> lock_names_; // an interposed lock's name id
  TraceWindow window_;
  CpuStacks cpu_stacks_;
  std::vector<std::uint64_t> cpu_words_; // cpu_sample's, kept for its capacity
  std::uint64_t folded_cpu_samples_ = 0;
  cpu::Figures cpu_now_;
  cpu::Figures cpu_at_reset_;
  std::uint64_t cpu_period_ns_ = 0;
  SlowCalls slow_;
  FunctionFilter filter_;
  std::uint64_t filter_min_ticks_ = 0; // filter_.min_ns in ticks, once a function needs it
  // The filtered functions' locations, in the order they were filtered, and their entries.
  std::vector<std::pair<std::uint32_t, std::uint64_t>> filtered_;
  std::unordered_set<std::uint32_t> filtered_locations_;
  std::uint32_t consuming_ = UINT32_MAX; // the thread consume() is at, and its buffer
  SlowThread* consuming_slow_ = nullptr;
};

// --- Interposed locks' names (lock_names.cpp) -----------------------------------------------
// What the aggregator names an interposed pthread lock: "pthread_mutex 0x55d0c0de1000"; `kind`:
// "pthread_mutex", "pthread_rwlock", or "pthread lock" when it is not known.
std::string address_lock_name(std::string_view kind, std::uint64_t address);
// Gives each lock so named that lives in a loaded object's data its static's symbol instead,
// wherever the snapshot names it (locks, deadlocks, inversions, the trace's names).
void name_interposed_locks(Snapshot& snapshot);

// --- The process-wide collector ------------------------------------------------------------

struct Settings {
  std::size_t ring_records = 262144; // 8 MiB mapped: 20 ms of 10 M records/s past the wake mark
  std::size_t window_bytes = 32u << 20;
  unsigned period_ms = 10;
  SlowCallSettings slow;
  std::uint64_t function_min_ns = 0; // HOTSCOPE_MIN_NS: instrumented functions' filter, 0 off
  // Set in an unmodified program: snapshots list its threads that have no ring, all but those
  // for which it is true (the profiler's own).
  bool (*profiler_thread)(std::int64_t tid) = nullptr;
  // False: the collector thread starts only once a ring passes its wake mark, or when
  // start_collector_thread() asks; until then each new thread and each snapshot drains the rings.
  // An unmodified program records nothing of its own: it then runs no thread for it.
  bool thread_at_start = true;
};

// Starts the collector (once; later calls are ignored).
void start(const Settings& settings);
// The calling thread's ring, created on its first record (start() must have run).
detail::Ring* register_current_thread() noexcept;
// Drains every ring now, on the calling thread.
void collect_now();
// The collector thread, where it has not run yet (a forked child, or Settings::thread_at_start
// false): once a ring passes its wake mark, or before records come that no ring holds (CPU
// samples).
void start_collector_thread() noexcept;
// Drains every ring before a shared library is unloaded (unloads.cpp), if the collector started.
void before_unload() noexcept;
// How many objects the dynamic loader has unloaded so far (dl_phdr_info::dlpi_subs).
std::uint64_t objects_unloaded() noexcept;
// Drains every ring and returns a snapshot of everything collected.
Snapshot snapshot(Contents contents = Contents::StatisticsAndTrace);
// Fills ThreadInfo::os of every live thread of this process from /proc/self/task/TID (CPU time,
// context switches, state). snapshot() does it, outside the collector's lock.
void read_os_thread_figures(std::vector<ThreadInfo>& threads);
// The name of thread `tid` of this process, and the process's, from /proc ("" once gone).
std::string read_thread_name(std::int64_t tid);
std::string read_process_name();
// Adds the process's live threads that `snapshot` lacks and that are not the profiler's (from
// /proc/self/task, os_only, named from their comm), and marks it an unmodified program's.
void add_program_threads(Snapshot& snapshot, bool (*profiler_thread)(std::int64_t tid));
// The calling thread's own CPU time (exact user/system split) and context switches: what a
// thread leaves behind as it ends.
OsThreadFigures read_own_figures();
// Starts a new measuring window: statistics, counts and trace restart from now.
void reset();
// Stops the collector thread and drains what is left (process exit).
void stop();
// A crash report (src/crash): hands `visitor` every thread with a ring, what the collector knows
// of it, and the counters and queues. Never waits for a lock: it tries the collector's for up to
// `patience_ns` (they keep rings from being freed and the statistics from changing meanwhile),
// and returns false without visiting anything when it could not have them (the crashing thread,
// or one stuck, holds one). Allocates nothing.
bool read_for_crash(CrashVisitor& visitor, std::uint64_t patience_ns) noexcept;
// Tests: the collector thread stops draining while paused (collect_now still drains).
void pause_collector_for_testing(bool paused);
// How often a ring passing its wake mark woke the collector before its period was over.
std::uint64_t early_wakes();

// --- External tracks: code running outside this process's threads (guests, docs/guest.md) ---
// Each shows in snapshots as a thread of its own whose os_tid is kExternalTidBase + n
// (snapshot.hpp). start() must have run.
std::uint32_t add_external_track(std::string name);
// Records already in host form: host clock ticks, refs to static data the host owns for the life
// of the process, scopes well nested, in time order within the track.
void consume_external(std::uint32_t track, std::span<const hotscope_record> records);
// What the track's producer did with the batches sent to it so far (e.g. a guest's): its
// records_rejected are the track's RecordCounts::dropped.
void set_external_batches(std::uint32_t track, const BatchCounts& batches);
// The producer is gone: the track is kept (and later folded) like an exited thread.
void close_external_track(std::uint32_t track);

} // namespace hotscope::trace
