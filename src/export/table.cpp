// The human-readable report: headline figures, the per-function table, then threads, counters,
// queues, tasks and locks.
#include "export/common.hpp"
#include "export/export.hpp"
#include "export/lock_frames.hpp"
#include "text/text.hpp"

#include <algorithm>
#include <ostream>
#include <vector>

namespace hotscope::exporters {
namespace {

using Rows = std::vector<std::vector<std::string>>;

constexpr std::size_t kNameColumns = 60;
constexpr std::size_t kTopFunctionsPerThread = 10;

using text::columns;

// Cuts at a code point boundary and marks the cut with "…".
std::string shorten(const std::string& name) {
  if (columns(name) <= kNameColumns) {
    return name;
  }
  // Keep kNameColumns - 1 code points: end at the start of the next one.
  std::size_t starts = 0;
  std::size_t end = 0;
  while (end < name.size() && ((name[end] & 0xC0) == 0x80 || starts++ < kNameColumns - 1)) {
    ++end;
  }
  return name.substr(0, end) + "…";
}

// Pads every column to its widest cell: the first column left-aligned, numbers right-aligned.
void write_rows(std::ostream& out, const Rows& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], columns(row[i]));
    }
  }
  for (const auto& row : rows) {
    std::string line = "  ";
    for (std::size_t i = 0; i < row.size(); ++i) {
      line +=
          i == 0 ? text::pad_right(row[i], widths[i]) : "  " + text::pad_left(row[i], widths[i]);
    }
    out << line << '\n';
  }
}

// The optional columns appear only when the program has their figures (allocations, CPU
// samples), so the table of a timing-only program keeps its width.
struct Columns {
  bool allocations = false;
  bool cpu = false;
  explicit Columns(const Snapshot& snapshot)
      : allocations(snapshot.allocations.all.blocks > 0), cpu(snapshot.cpu.samples > 0) {}
};

Rows function_rows(const std::vector<FunctionStats>& functions, std::size_t limit,
                   std::uint64_t duration_ns, Columns with) {
  Rows rows{{"Function", "Calls", "Avg", "P50", "P95", "P99", "Total", "% Total"}};
  if (with.cpu) {
    rows[0].insert(rows[0].end(), {"CPU Self", "CPU Total", "CPU/Wall"});
  }
  if (with.allocations) {
    rows[0].insert(rows[0].end(), {"Alloc Self", "Blocks Self", "Alloc Total", "Blocks Total"});
  }
  for (std::size_t i = 0; i < std::min(limit, functions.size()); ++i) {
    const FunctionStats& function = functions[i];
    const DurationStats& s = function.stats;
    std::vector<std::string> row{shorten(function.name), text::cat(s.calls)};
    if (s.calls == 0) { // a call still open that has allocated: no duration yet
      row.insert(row.end(), 6, "-");
    } else {
      row.insert(
          row.end(),
          {detail::human_duration(s.mean_ns), detail::human_duration(static_cast<double>(s.p50_ns)),
           detail::human_duration(static_cast<double>(s.p95_ns)),
           detail::human_duration(static_cast<double>(s.p99_ns)),
           detail::human_duration(static_cast<double>(s.total_ns)),
           duration_ns == 0 ? "-"
                            : text::cat(text::fixed(static_cast<double>(s.total_ns) /
                                                        static_cast<double>(duration_ns) * 100.0,
                                                    2),
                                        "%")});
    }
    if (with.cpu) {
      row.insert(row.end(),
                 {detail::human_duration(static_cast<double>(function.cpu_self_ns)),
                  detail::human_duration(static_cast<double>(function.cpu_total_ns)),
                  s.total_ns == 0
                      ? "-"
                      : text::cat(text::fixed(static_cast<double>(function.cpu_total_ns) /
                                                  static_cast<double>(s.total_ns) * 100.0,
                                              1),
                                  "%")});
    }
    if (with.allocations) {
      row.insert(row.end(), {detail::human_bytes(function.allocated_self.bytes),
                             text::cat(function.allocated_self.blocks),
                             detail::human_bytes(function.allocated_total.bytes),
                             text::cat(function.allocated_total.blocks)});
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

// Coroutines (HOTSCOPE_TASK) and Asio operations, one row per name.
void write_tasks(const std::vector<TaskStats>& tasks, std::ostream& out) {
  if (tasks.empty()) {
    return;
  }
  out << "\nTasks (Running = resumption to suspension, on any thread; Waiting = a finished task's "
         "lifetime less its running time; for an Asio operation, Waiting is its latency and "
         "Running its handler)\n";
  Rows rows{{"Task", "Kind", "Created", "Completed", "Unfinished", "Alive", "Resumes", "Running",
             "Run P50", "Run P99", "Waiting", "Wait P50", "Wait P99", "Life P50", "Life P99",
             "Given Up"}};
  const auto ns = [](const DurationStats& d, std::uint64_t value) {
    return d.calls == 0 ? std::string("-") : detail::human_duration(static_cast<double>(value));
  };
  for (const TaskStats& task : tasks) {
    rows.push_back({shorten(task.name), task.kind, text::cat(task.created),
                    text::cat(task.completed), text::cat(task.destroyed_unfinished),
                    text::cat(task.alive), text::cat(task.resumes),
                    ns(task.running, task.running.total_ns), ns(task.running, task.running.p50_ns),
                    ns(task.running, task.running.p99_ns), ns(task.waiting, task.waiting.total_ns),
                    ns(task.waiting, task.waiting.p50_ns), ns(task.waiting, task.waiting.p99_ns),
                    ns(task.lifetime, task.lifetime.p50_ns),
                    ns(task.lifetime, task.lifetime.p99_ns), text::cat(task.given_up)});
  }
  write_rows(out, rows);
}

// The report's first lines: the process, the run, the clock, records and allocations.
void write_header(const Snapshot& snapshot, Columns with, std::ostream& out) {
  out << text::cat("hotscope ", snapshot.hotscope_version, ": ", detail::process_label(snapshot),
                   " (pid ", snapshot.pid, ")\n");
  out << text::cat("duration: ", detail::human_duration(static_cast<double>(snapshot.duration_ns)),
                   "\n");
  out << text::cat("clock: ", detail::clock_summary(snapshot.clock), "\n");
  out << text::cat("records: ", detail::records_summary(snapshot.records), "\n");
  if (snapshot.records.dropped > 0) {
    out << text::cat(
        "WARNING: ", snapshot.records.dropped,
        " records dropped (a thread's ring was full); the figures below miss those calls\n");
  }
  if (with.cpu) {
    const CpuProfile& cpu = snapshot.cpu;
    // A rate finer than the kernel's tick: the timers fire on the tick, several periods a signal.
    const std::string merged =
        cpu.signals > 0 && cpu.signals < cpu.samples
            ? text::cat(" in ", cpu.signals, " signals (the kernel's tick merged about ",
                        (cpu.samples + cpu.signals / 2) / cpu.signals, " periods into each)")
            : "";
    out << text::cat("cpu samples: ", cpu.samples, " of ",
                     detail::human_duration(static_cast<double>(cpu.period_ns)), " (",
                     detail::human_duration(static_cast<double>(cpu.samples * cpu.period_ns)),
                     " of CPU)", merged, ", lost ", cpu.lost, ", incomplete stacks ",
                     cpu.incomplete, cpu.problem.empty() ? "" : "; " + cpu.problem, "\n");
  }
  if (with.allocations) {
    out << text::cat("allocations: ", detail::human_bytes(snapshot.allocations.all.bytes), " in ",
                     snapshot.allocations.all.blocks, " blocks, of which ",
                     detail::human_bytes(snapshot.allocations.outside_scopes.bytes), " in ",
                     snapshot.allocations.outside_scopes.blocks, " blocks outside any scope\n");
  }
  if (snapshot.threads_folded > 0) {
    out << text::cat(snapshot.threads_folded, " ended threads merged into \"(",
                     snapshot.threads_folded, " ended threads)\"\n");
  }
}

// A row per thread with its CPU figures, then each thread's own top functions.
void write_threads(const Snapshot& snapshot, Columns with, std::ostream& out) {
  out << "\nThreads (CPU time and context switches since each thread started, read from /proc "
         "when this report was made; - for threads that had ended)\n";
  Rows threads{{"Thread", "TID", "State", "CPU User", "CPU System", "Voluntary Sw",
                "Involuntary Sw", "Records", "Dropped"}};
  if (with.cpu) {
    threads[0].push_back("CPU Samples");
  }
  for (const ThreadInfo& thread : snapshot.threads) {
    const OsThreadFigures& os = thread.os;
    const bool known = !os.state.empty();
    const auto figure = [&](std::string text) { return known ? text : std::string("-"); };
    threads.push_back(
        {shorten(detail::thread_label(thread)), text::cat(thread.os_tid), figure(os.state),
         figure(detail::human_duration(static_cast<double>(os.cpu_user_ns))),
         figure(detail::human_duration(static_cast<double>(os.cpu_system_ns))),
         figure(text::cat(os.voluntary_switches)), figure(text::cat(os.involuntary_switches)),
         text::cat(thread.records.written), text::cat(thread.records.dropped)});
    if (with.cpu) {
      threads.back().push_back(text::cat(thread.cpu_samples));
    }
  }
  write_rows(out, threads);
  for (const ThreadInfo& thread : snapshot.threads) {
    out << text::cat("\n", detail::thread_heading(thread),
                     " records: ", detail::records_summary(thread.records), "\n");
    if (!thread.functions.empty()) {
      write_rows(
          out, function_rows(thread.functions, kTopFunctionsPerThread, snapshot.duration_ns, with));
    }
  }
}

void write_counters(const std::vector<CounterStats>& counters, std::ostream& out) {
  if (counters.empty()) {
    return;
  }
  out << "\nCounters\n";
  Rows rows{{"Counter", "Updates", "Last", "Min", "Max"}};
  for (const CounterStats& counter : counters) {
    rows.push_back({shorten(counter.name), text::cat(counter.updates), text::cat(counter.last),
                    text::cat(counter.min), text::cat(counter.max)});
  }
  write_rows(out, rows);
}

// Instrumented functions no longer recorded (docs/instrument.md, "Cost control").
void write_filtered(const std::vector<FilteredFunction>& filtered, std::ostream& out) {
  if (filtered.empty()) {
    return;
  }
  out << "\nFiltered functions (instrumented; their first 1000 calls were all shorter than "
         "HOTSCOPE_MIN_NS: later calls are counted, not recorded; Max = longest recorded call)\n";
  Rows rows{{"Function", "Recorded", "Skipped", "Max"}};
  for (const FilteredFunction& function : filtered) {
    rows.push_back({shorten(function.name), text::cat(function.recorded_calls),
                    text::cat(function.skipped_calls), text::cat(function.max_ns, " ns")});
  }
  write_rows(out, rows);
}

// "a, b, c", or "-" for none.
std::string joined(const std::vector<std::string>& labels) {
  if (labels.empty()) {
    return "-";
  }
  std::string joined = labels[0];
  for (std::size_t i = 1; i < labels.size(); ++i) {
    text::append(joined, ", ", labels[i]);
  }
  return joined;
}

// A row per queue, then which threads pushed and popped each.
void write_queues(const Snapshot& snapshot, std::ostream& out) {
  if (snapshot.queues.empty()) {
    return;
  }
  out << "\nQueues (Wait = time in the queue, push to pop of the same id; Pending = pushed, "
         "not popped yet)\n";
  Rows rows{{"Queue", "Pushed", "Popped", "Push/s", "Pop/s", "Depth", "Max", "Capacity", "Wait P50",
             "Wait P95", "Wait P99", "Wait Max", "Pending", "Oldest", "Never Pushed", "Given Up"}};
  const auto rate = [&](std::uint64_t count) {
    return snapshot.duration_ns == 0
               ? std::string("-")
               : text::cat(text::fixed(static_cast<double>(count) * 1e9 /
                                           static_cast<double>(snapshot.duration_ns),
                                       1));
  };
  const auto wait = [](const QueueStats& queue, std::uint64_t ns) {
    return queue.wait.calls == 0 ? std::string("-")
                                 : detail::human_duration(static_cast<double>(ns));
  };
  for (const QueueStats& queue : snapshot.queues) {
    rows.push_back(
        {shorten(queue.name), text::cat(queue.pushed), text::cat(queue.popped), rate(queue.pushed),
         rate(queue.popped), text::cat(queue.depth), text::cat(queue.max_depth),
         queue.capacity == 0 ? "-" : text::cat(queue.capacity), wait(queue, queue.wait.p50_ns),
         wait(queue, queue.wait.p95_ns), wait(queue, queue.wait.p99_ns),
         wait(queue, queue.wait.max_ns), text::cat(queue.pending),
         queue.pending == 0 ? "-"
                            : detail::human_duration(static_cast<double>(queue.oldest_pending_ns)),
         text::cat(queue.popped_never_pushed), text::cat(queue.pending_given_up)});
  }
  write_rows(out, rows);
  for (const QueueStats& queue : snapshot.queues) {
    out << text::cat("  ", queue.name, ": pushed by ", joined(queue.push_threads), "; popped by ",
                     joined(queue.pop_threads), "\n");
  }
}

// A duration of `d`, or "-" when it measured nothing.
std::string measured(const DurationStats& d, std::uint64_t ns) {
  return d.calls == 0 ? std::string("-") : detail::human_duration(static_cast<double>(ns));
}

// "holder (tid 12) for 1.20 s".
std::string lock_thread(const LockThread& thread) {
  return text::cat(thread.thread, " (tid ", thread.os_tid, ") for ",
                   detail::human_duration(static_cast<double>(thread.for_ns)));
}

// "outer > inner, in frame_a < frame_b" (scopes outermost first, frames innermost first).
std::string site_text(const LockSite& site, const detail::LockFrameNames& frames) {
  std::string scopes;
  for (const std::string& scope : site.scopes) {
    text::append(scopes, scopes.empty() ? "" : " > ", scope);
  }
  std::string stack;
  for (const std::string& frame : frames.names(site.stack)) {
    text::append(stack, stack.empty() ? "" : " < ", frame);
  }
  if (scopes.empty() && stack.empty()) {
    return "(no scope, no stack)";
  }
  return stack.empty() ? scopes : scopes.empty() ? stack : text::cat(scopes, ", in ", stack);
}

// A row per lock, its contention sites and who holds and waits now; then the deadlocks standing
// and the lock-order inversions found (docs/locks.md, "Outputs").
void write_locks_section(const Snapshot& snapshot, std::ostream& out) {
  if (snapshot.locks.empty() && snapshot.deadlocks.empty() && snapshot.inversions.empty()) {
    return;
  }
  const detail::LockFrameNames frames(snapshot);
  out << "\nLocks (Wait = a contended acquisition's wait; Hold = acquisition to release; "
         "Top Waiter = the thread that waited longest in all)\n";
  Rows rows{{"Lock", "Kind", "Acquisitions", "Contended", "Try Failed", "Wait P50", "Wait P99",
             "Wait Max", "Wait Total", "Hold P50", "Hold P99", "Hold Max", "Top Waiter"}};
  for (const LockStats& lock : snapshot.locks) {
    const DurationStats& wait = lock.wait;
    const DurationStats& hold = lock.hold;
    rows.push_back(
        {shorten(lock.name), lock.kind, text::cat(lock.acquisitions), text::cat(lock.contended),
         text::cat(lock.try_failed), measured(wait, wait.p50_ns), measured(wait, wait.p99_ns),
         measured(wait, wait.max_ns), measured(wait, wait.total_ns), measured(hold, hold.p50_ns),
         measured(hold, hold.p99_ns), measured(hold, hold.max_ns),
         lock.top_waiters.empty() ? "-" : shorten(lock.top_waiters.front().thread)});
  }
  write_rows(out, rows);
  for (const LockStats& lock : snapshot.locks) {
    for (const LockStats::Contention& at : lock.contended_at) {
      out << text::cat("  ", lock.name, ": ", at.waits, " waits, ",
                       detail::human_duration(static_cast<double>(at.wait_ns)), " at ",
                       site_text(at.site, frames), "\n");
    }
    for (const LockThread& holder : lock.holders) {
      out << text::cat("  ", lock.name, ": held by ", lock_thread(holder),
                       holder.shared ? " (shared)" : "", "\n");
    }
    for (const LockThread& waiter : lock.waiters) {
      out << text::cat("  ", lock.name, ": waited for by ", lock_thread(waiter), "\n");
    }
  }
  out << text::cat("\nDeadlocks standing: ", snapshot.deadlocks.size(), "\n")
      << detail::deadlocks_text(snapshot.deadlocks, "  ");
  out << text::cat("\nLock-order inversions: ", snapshot.inversions.size(), "\n");
  for (const LockInversion& inversion : snapshot.inversions) {
    out << text::cat("  ", inversion.first, " then ", inversion.second, " by ",
                     inversion.thread_one, " at ", site_text(inversion.site_one, frames), "\n");
    out << text::cat("    ", inversion.second, " then ", inversion.first, " by ",
                     inversion.thread_two, " at ", site_text(inversion.site_two, frames), "\n");
  }
}

} // namespace

void write_table(const Snapshot& snapshot, std::ostream& out) {
  const Columns with(snapshot);
  write_header(snapshot, with, out);
  out << "\nFunctions (% Total = total time / duration; it exceeds 100% when several threads run "
         "a function at once)\n";
  if (with.cpu) {
    out << "CPU = on-CPU time sampled; Self while the function was the innermost scope, Total "
           "while it was open; CPU/Wall = CPU Total / Total (low: it waited)\n";
  }
  if (with.allocations) {
    out << "Alloc = bytes allocated, Blocks = allocations; Self while the function was the "
           "innermost scope, Total with its children (once per allocation, even in recursion)\n";
  }
  write_rows(out, function_rows(snapshot.functions, snapshot.functions.size(), snapshot.duration_ns,
                                with));
  write_filtered(snapshot.filtered_functions, out);
  write_threads(snapshot, with, out);
  write_counters(snapshot.counters, out);
  write_queues(snapshot, out);
  write_tasks(snapshot.tasks, out);
  write_locks_section(snapshot, out);
}

void write_locks_text(const Snapshot& snapshot, std::ostream& out) {
  write_locks_section(snapshot, out);
}

} // namespace hotscope::exporters
