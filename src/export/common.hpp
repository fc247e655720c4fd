// Helpers shared by the exporters, so every output labels, formats and walks things the same way.
#pragma once

#include "snapshot/snapshot.hpp"
#include "text/text.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hotscope::exporters::detail {

// `value / unit` with exactly three decimals, truncated, in integer arithmetic so no float
// rounding creeps in: fixed3(2000500, 1000) == "2000.500". `unit` is 1000 or a multiple of it.
std::string fixed3(std::uint64_t value, std::uint64_t unit);

// A duration with a unit picked for readability: "850 ns", "1.23 µs", "4.56 ms", "7.89 s".
std::string human_duration(double ns);
// A byte count in binary units: "512 B", "1.50 KiB", "3.20 MiB", "1.00 GiB".
std::string human_bytes(std::uint64_t bytes);

// "begin", "queue_push", "lock_wait": an event's kind as the JSON outputs name it.
const char* event_kind_name(EventKind kind);

// The process name, or "process <pid>" when the snapshot has none.
std::string process_label(const Snapshot& snapshot);
// The thread name, or "thread <os_tid>" when the program never named it.
std::string thread_label(const ThreadInfo& thread);
// "== main (tid 4242, exited) ==": how the text outputs introduce a thread.
std::string thread_heading(const ThreadInfo& thread);

// "tsc, 2.995 GHz (cpuid); <reason>": the clock as one phrase.
std::string clock_summary(const ClockInfo& clock);
// "written=10 kept=8 dropped=2".
std::string records_summary(const RecordCounts& records);

// "guest image build/guest/sample-guest.elf: 12345 bytes, sha256 9f86d0..., track guest:
// sample-guest"
std::string guest_image_summary(const GuestImage& image);
// [{"track": ..., "path": ..., "bytes": ..., "sha256": ...}, ...] for the JSON outputs.
void write_guest_images(text::JsonWriter& json, const std::vector<GuestImage>& images);
// The "clock" and "records" objects of stats.json, which GET /v1/info answers too.
void write_clock(text::JsonWriter& json, const ClockInfo& clock);
void write_records(text::JsonWriter& json, const RecordCounts& records);

// True when the thread's innermost open scope has been open longer than `stuck_ns`.
bool is_stuck(const ThreadInfo& thread, std::uint64_t stuck_ns);
// The threads as /v1/threads lists them: stuck ones first (longest-open innermost scope first),
// then the rest in index order.
std::vector<const ThreadInfo*> stuck_first(const Snapshot& snapshot, std::uint64_t stuck_ns);

// One trace event as seen by a walk over the trace window.
struct TraceStep {
  const TraceEvent& event;
  const ThreadInfo& thread;
  // Name indices of the scopes open on this thread just before the event, outermost first.
  const std::vector<std::uint32_t>& open;
  // Time of the previous event on this thread (trace_start_ns for its first event).
  std::uint64_t previous_ns;
};

// Visits the trace window in order, tracking each thread's open scopes so that every exporter
// pairs Begin and End identically. Events of unknown threads and Ends with no open scope on
// their thread cannot be placed and are skipped.
void walk_trace(const Snapshot& snapshot, const std::function<void(const TraceStep&)>& visit);

// One event as a line of trace.txt, "[58.314ms ] " then two spaces per level, a mark and its
// text: `open` are the slices open on its thread just before it, `ns` the time shown.
std::string trace_event_line(const Snapshot& snapshot, const TraceEvent& event,
                             const std::vector<std::uint32_t>& open, std::uint64_t ns);

// One stack of open slices on one thread: the thread's index and its frames, outermost first. A
// frame is a scope's name index, or for a lock wait its lock's name index plus the number of
// names (stack_frame_name tells them apart).
using ThreadStack = std::pair<std::uint32_t, std::vector<std::uint32_t>>;
// The wall time (ns) each stack was the innermost one open in the trace window, a lock wait
// counting as a frame inside the scopes it waited in: the folded stacks' and the wall-time pprof
// profile's figures.
std::map<ThreadStack, std::uint64_t> self_time_by_stack(const Snapshot& snapshot);
// A ThreadStack frame's name: the scope's, or "wait for NAME" for a lock wait.
std::string stack_frame_name(const Snapshot& snapshot, std::uint32_t frame);

// The code address a CPU stack's native frame stands for: the interrupted instruction for the
// stack's innermost native frame, the call before the return address for the others (so a
// call that ends a function is not named after the next one).
std::uint64_t instruction_address(const CpuFrame& frame, bool innermost_native);

// The distinct instruction addresses of a CPU profile's native frames, first seen first, and
// each one's place in that list: what the writers name in one call to the symbolizer.
struct CpuAddresses {
  std::vector<std::uint64_t> addresses;
  std::unordered_map<std::uint64_t, std::size_t> index;
};
CpuAddresses cpu_addresses(const CpuProfile& cpu);

// The deadlocks as text (report.txt, `hotscope threads`), each after `indent`: "deadlock: A waits
// for m2 (held by B for 12.30 s) → B waits for m1 (held by A for 12.50 s)", then a line per
// waiter with its open scopes, "  A in serve > handle".
std::string deadlocks_text(const std::vector<Deadlock>& deadlocks, std::string_view indent);

// "wait for NAME": how the traces name the time a thread waits for a lock.
std::string lock_wait_frame(std::string_view lock);

} // namespace hotscope::exporters::detail
