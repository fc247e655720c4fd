// Reading the files hotscope writes, for every tool that reads them (`hotscope diff`, `report`,
// `flame`, `console`): stats.json (and GET /v1/stats, /v1/threads) as typed figures, heap.json
// (DHAT) told apart from it, trace.folded's stacks, and DHAT's frame strings taken apart
// (docs/formats-output.md, docs/heap.md).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hotscope::cli::profiles {

enum class Kind { Stats, Heap };

// "a stats.json", "a heap profile (DHAT)": for messages.
std::string kind_name(Kind kind);

// stats.json as the tools read it (docs/formats-output.md, "stats.json"): a figure the file
// lacks is 0 (older files lack some), unless said otherwise.
struct Records {
  std::uint64_t written = 0, kept = 0, dropped = 0;
};

// One function's figures: over all threads, or one thread's.
struct FunctionStats {
  std::string name;
  std::string file;
  int line = 0;
  // An instrumented function's object and build id (docs/instrument.md); "" for a macro scope
  // and in older files.
  std::string module;
  std::string build_id;
  std::uint64_t calls = 0;
  double mean_ns = 0;
  std::uint64_t min_ns = 0, p50_ns = 0, p90_ns = 0, p95_ns = 0, p99_ns = 0, p999_ns = 0, max_ns = 0,
                self_ns = 0, total_ns = 0;
  std::uint64_t alloc_bytes_self = 0, alloc_blocks_self = 0, alloc_bytes_total = 0,
                alloc_blocks_total = 0;
  std::uint64_t cpu_self_ns = 0, cpu_total_ns = 0; // sampled (docs/cpu.md)
  std::uint32_t given = 0;                         // which keys the entry has: bits of has()
  // Whether the entry has `key` ("p999_ns"): a figure it lacks is not known, rather than 0.
  bool has(std::string_view key) const;
};

struct OpenScope {
  std::string name;
  std::string file;
  int line = 0;
  std::uint64_t opened_ns = 0, open_ns = 0; // when it opened; how long it has been open
};

// A guest track's batches (docs/guest.md).
struct Batches {
  std::uint64_t accepted = 0, rejected = 0, records_rejected = 0, nesting_repairs = 0;
  std::string last_rejection;
};

// A thread of stats.json, or of GET /v1/threads (which adds open_scopes and stuck).
struct ThreadStats {
  std::int64_t index = 0;
  std::int64_t os_tid = 0;
  std::string name;
  bool exited = false;
  // The OS's figures; none when the key is missing. An empty state: none were read (a guest's
  // track), the zeros are unknowns.
  std::optional<std::string> state;
  std::optional<std::uint64_t> cpu_user_ns, cpu_system_ns, voluntary_switches, involuntary_switches;
  std::optional<std::uint64_t> cpu_samples; // the CPU sampler's samples of the thread
  Records records;
  std::optional<Batches> batches;
  std::vector<FunctionStats> functions; // stats.json's layout "full" only
  std::vector<OpenScope> open_scopes;   // outermost first
  bool stuck = false;
  bool os_only = false; // an unmodified program's thread: no records, no scopes
};

struct Clock {
  std::string source, frequency_origin;
  double ticks_per_second = 0;
};

// A queue's figures (HOTSCOPE_QUEUE_PUSH/POP): counts, depths and its items' wait.
struct QueueStats {
  std::string name;
  std::uint64_t pushed = 0, popped = 0, depth = 0, max_depth = 0, capacity = 0, pending = 0;
  std::uint64_t waits = 0, wait_total_ns = 0, wait_p50_ns = 0, wait_p95_ns = 0, wait_p99_ns = 0,
                wait_max_ns = 0, oldest_pending_ns = 0;
  std::vector<std::string> push_threads, pop_threads; // a name that is no string reads as "?"
};

// A kind of task's figures (coroutines, Asio handlers): counts and its slices' durations.
struct TaskStats {
  std::string name, kind;
  std::uint64_t created = 0, resumes = 0, alive = 0, destroyed_unfinished = 0;
  std::uint64_t running_p50_ns = 0, running_p99_ns = 0, waiting_p50_ns = 0, waiting_p99_ns = 0,
                lifetime_p99_ns = 0;
};

// The CPU sampler's figures, stats.json's "cpu" (docs/cpu.md).
struct CpuSampling {
  std::uint64_t hz = 0, period_ns = 0, samples = 0, lost = 0, incomplete = 0, unstored = 0;
  std::string problem; // why the sampler could not run; "" when it could
  // The timer signals the samples came in (a file without them: one each); samples / signals
  // periods fell together, which widens the samples' noise (docs/diff-and-report.md).
  std::uint64_t signals = 0;
};

// Locks (docs/locks.md, "Reading contention"): stats.json's "locks", "deadlocks",
// "lock_inversions" and "lock_figures", and GET /v1/locks.
// A thread that holds or waits for a lock now, and for how long.
struct LockThread {
  std::string thread;
  std::int64_t os_tid = 0;
  std::uint64_t for_ns = 0;
  bool shared = false;
};

// Where a lock was waited for (or taken, in an inversion): the waiter's open scopes, outermost
// first, and its stack's frames, innermost first.
struct LockSite {
  std::vector<std::string> scopes, stack;
  std::uint64_t waits = 0, wait_ns = 0; // a contention site's; 0 in an inversion
};

struct LockWaiter {
  std::string thread;
  std::uint64_t waits = 0, wait_ns = 0;
};

struct LockStats {
  std::string name, kind, address; // address: "" for a lock named by the API
  std::uint64_t acquisitions = 0, contended = 0, try_failed = 0;
  std::uint64_t waits = 0, wait_total_ns = 0, wait_p50_ns = 0, wait_p95_ns = 0, wait_p99_ns = 0,
                wait_max_ns = 0;
  std::uint64_t holds = 0, hold_total_ns = 0, hold_p50_ns = 0, hold_p95_ns = 0, hold_p99_ns = 0,
                hold_max_ns = 0;
  std::vector<LockWaiter> top_waiters;
  std::vector<LockSite> contended_at;
  std::vector<LockThread> holders, waiters;
};

// One step of a deadlock's cycle: `waiter` waits for `lock`, which `holder` holds.
struct DeadlockLink {
  LockThread waiter;
  std::string lock;
  LockThread holder;
  std::vector<std::string> waiter_scopes; // outermost first
};

struct Deadlock {
  std::vector<DeadlockLink> cycle;
};

// Two locks taken in both orders: `first` then `second` by thread_one at site_one, the other
// order by thread_two at site_two.
struct LockInversion {
  std::string first, second, thread_one, thread_two;
  LockSite site_one, site_two;
  std::uint64_t found_ns = 0;
};

struct LockFigures {
  std::uint64_t deadlocks_found = 0, order_edges = 0, given_up = 0;
};

struct LockReport {
  std::optional<std::vector<LockStats>> locks; // none: no "locks" key (an older hotscope)
  std::vector<Deadlock> deadlocks;             // standing now (at exit, in a file)
  std::vector<LockInversion> inversions;
  LockFigures figures;
};

struct Stats {
  std::string hotscope_version;
  std::optional<std::string> process_name;
  std::int64_t pid = 0;
  double duration_ns = 0;
  Clock clock;
  Records records;
  std::uint64_t allocated_bytes = 0, allocated_blocks = 0; // "allocations"
  std::vector<FunctionStats> functions;
  std::vector<ThreadStats> threads;
  // None when the file has no such key (an older hotscope).
  std::optional<std::vector<QueueStats>> queues;
  std::optional<std::vector<TaskStats>> tasks;
  std::optional<CpuSampling> cpu;
  LockReport locks;
  bool unmodified_program = false; // no scopes: a program under `hotscope run` or attached
  // Whether the run has CPU samples: its per-function CPU figures are measured, not unknown.
  bool has_cpu_samples() const { return cpu && cpu->samples > 0; }
};

// GET /v1/threads.
struct ThreadsAnswer {
  std::uint64_t now_ns = 0, stuck_threshold_ns = 0;
  std::vector<ThreadStats> threads;
  std::vector<Deadlock> deadlocks; // standing now
};

struct Profile {
  Kind kind = Kind::Stats;
  std::string source;           // the file's path, or "process 4242 (name)"
  nlohmann::json document;      // Kind::Heap: the DHAT profile
  std::uint64_t text_bytes = 0; // the size of the text it was parsed from (0: made in code)
  Stats stats;                  // Kind::Stats
};

// What a file given to these commands may hold (docs/diff-and-report.md, "Limits"): past any of
// them the input is refused with a Failure (kUsage) naming the limit.
inline constexpr std::uint64_t kMaxFileBytes = 1ULL << 30; // any file read
inline constexpr std::size_t kMaxJsonDepth = 64;           // nested arrays and objects
inline constexpr std::size_t kMaxLineBytes = 1U << 20;     // a line of folded stacks
inline constexpr std::size_t kMaxStackFrames = 4096;       // frames of one stack or heap site
// A heap profile's frames over all its sites, as text: at most this or 32 times the file's size
// (a real compiler's profile has 11 times its size: deep stacks of long C++ names).
inline constexpr std::uint64_t kMinSiteFrameBytes = 256ULL << 20;
inline constexpr std::uint64_t kSiteFrameBytesPerByte = 32;

// The whole content of the file at `path`; a Failure (kUsage) naming it when it cannot be read
// or is larger than kMaxFileBytes.
std::string read_text(const std::string& path);

// `text` parsed as JSON with a bounded depth and a bounded memory (a small multiple of the
// text); a Failure (kUsage), one line naming `source`, when it is not JSON, is cut short, is
// nested deeper than kMaxJsonDepth or would take too much memory.
nlohmann::json parse_json(std::string_view text, const std::string& source);

// `document` classified and its figures checked (each key the commands read has the type and
// sign docs/formats-output.md gives it), a stats.json read into Profile::stats; a Failure
// (kUsage) naming `source` and the first wrong key when it is neither kind or malformed.
Profile classify(nlohmann::json document, const std::string& source);
// The checks classify() makes on a heap profile: for the agent's answers, which the console reads
// (`source` names the request).
void check_heap(const nlohmann::json& document, const std::string& source);
// The checks `hotscope crash` needs of a crash report (docs/crash.md): a Failure (kUsage) naming
// `source` and the first wrong key when it is damaged.
void check_crash_report(const nlohmann::json& report, const std::string& source);

// The one reader of stats.json. A stats.json (hotscope_version and functions required) checked
// and read; a Failure (kUsage) naming `source` and the first wrong key when malformed.
Stats read_stats(const nlohmann::json& document, const std::string& source);
// The agent's answer to GET /v1/stats in either layout of its functions (one object per function,
// or ?format=columns: one array per key, as many functions as names, a shorter column read as
// zeros), read in one pass of the text: the functions straight into `stats.functions` without a
// JSON tree of them. Lenient with the functions' figures (one of a wrong type reads as 0, what the
// console can show of a newer or older agent); the threads are checked as read_threads() checks
// them, a Failure (kUsage) naming `source`. The rows already in `stats.functions` are reused,
// their strings' memory too, so that a refresh allocates almost nothing. Text that is not JSON,
// or nests deeper than kMaxJsonDepth, throws a nlohmann::json::exception.
void read_stats(std::string_view text, const std::string& source, Stats& stats);
// GET /v1/threads, its threads checked as a stats.json's are, with now_ns, stuck_threshold_ns and
// each thread's open_scopes and stuck; a Failure (kUsage) naming `source` when malformed.
ThreadsAnswer read_threads(const nlohmann::json& answer, const std::string& source);
// GET /v1/locks ({"locks", "deadlocks", "lock_inversions", "lock_figures"}), checked as a
// stats.json's are; a Failure (kUsage) naming `source` when malformed.
LockReport read_locks(const nlohmann::json& answer, const std::string& source);
// The file at `path` read, parsed and classified; a Failure (kUsage), one line, when it cannot be
// read, is not JSON or is neither kind.
Profile read_profile(const std::string& path);

// Stacks as lines of text, "frame;frame;frame count", root first: checked and indexed, not
// copied (a large trace.folded stays one string). `text` must outlive it.
struct StackLines {
  std::string_view text;
  char separator = ';';
  std::vector<std::uint32_t> starts; // where each stack's line starts in `text`
  std::uint64_t total = 0;           // the counts' sum
  // The frames of stack `i` (still joined by `separator`) and its count.
  std::string_view frames(std::size_t i) const { return frames_at(starts[i]); }
  std::uint64_t count(std::size_t i) const { return count_at(starts[i]); }
  // The same for the line that starts at `start`.
  std::string_view frames_at(std::uint32_t start) const;
  std::uint64_t count_at(std::uint32_t start) const;
};
// The stacks of a folded file: every line but the empty ones and the `#` comments must be a
// stack with a count (an integer >= 0); a Failure (kUsage) naming `source`, the line and what
// is wrong otherwise, or past kMaxLineBytes or kMaxStackFrames. A file that is JSON (or starts
// like JSON) is refused as the wrong kind. `separator` other than ';': text the commands made
// themselves (heap stacks), with no comment lines.
StackLines folded_stacks(std::string_view text, const std::string& source, char separator = ';');

// A DHAT frame string taken apart: "0x4011D6: ns::parse(std::string const&) (service.cpp:40)" is
// {"ns::parse(std::string const&)", "service.cpp", 40}; "0x4011D6: f (in /lib/libc.so.6)" is
// {"f", "/lib/libc.so.6", 0}. Other strings ("[root]") are all function.
struct Frame {
  std::string function;
  std::string file;
  int line = 0;
};
Frame parse_frame(const std::string& text);
// "ns::parse (service.cpp:40)", "ns::parse (in svc)": without the address, the parameter types
// and qualifiers, which make C++ frames too long to read in a row, and the object's directory.
std::string short_frame(const std::string& text);
// What a frame of a heap site's stack is to the site's name (docs/heap.md, "Site names"); in the
// order of preference, the program's code first.
enum class FrameRole {
  Program,
  Library,     // the standard library, the C and C++ runtime, the loader, hotscope
  Allocator,   // malloc, operator new, ...
  ThreadEntry, // start_thread, clone, __libc_start_main, _start, ...
};
FrameRole frame_role(const std::string& text);

// One allocation site of a DHAT profile: its frame strings, innermost first, and its figures.
struct Site {
  std::vector<const std::string*> frames; // into the profile's "ftbl", which must outlive it
  std::uint64_t total_bytes = 0, total_blocks = 0; // tb, tbk
  std::uint64_t gmax_bytes = 0, gmax_blocks = 0;   // gb, gbk: at the global peak
  std::uint64_t end_bytes = 0, end_blocks = 0;     // eb, ebk: at the end
};
// The sites of a DHAT profile (`dhat`, checked by check_heap, parsed from `text_bytes` of text or
// made in code: 0); a Failure (kUsage) naming `source` when a site is malformed or their frames
// as text pass max(kMinSiteFrameBytes, kSiteFrameBytesPerByte times `text_bytes`).
std::vector<Site> heap_sites(const nlohmann::json& dhat, const std::string& source,
                             std::uint64_t text_bytes);
// The same for a profile of Kind::Heap.
inline std::vector<Site> heap_sites(const Profile& heap) {
  return heap_sites(heap.document, heap.source, heap.text_bytes);
}
// A site's name in every view: its first frame of the best FrameRole, shortened
// (docs/heap.md, "Site names").
std::string site_name(const Site& site);

// The lenient getters (stats_json.cpp): a key that is missing or of another type reads as 0
// (or "", or an empty object), a negative count as 0; names_at reads a name that is no string as
// "?".
std::uint64_t count_at(const nlohmann::json& object, const char* key);
std::int64_t integer_at(const nlohmann::json& object, const char* key);
std::string text_at(const nlohmann::json& object, const char* key);
const nlohmann::json& object_at(const nlohmann::json& object, const char* key);
std::vector<std::string> names_at(const nlohmann::json& object, const char* key);

} // namespace hotscope::cli::profiles
