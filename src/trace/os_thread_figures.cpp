// Per-thread CPU time, context switches and state, from /proc/self/task/TID, and an unmodified
// program's threads from /proc/self/task. Read by the thread
// taking a snapshot: a measured thread never reads its own figures, but once, as it ends
// (read_own_figures: /proc no longer has them afterwards).
#include "trace/trace.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string_view>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>

namespace hotscope::trace {
namespace {

// A thread's file read as it ends fails with ESRCH: istreambuf_iterator would throw that out of
// the snapshot; copying the buffer into a stream stops there instead (the text read so far).
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

// A /proc comm file's name, without its newline.
std::string comm_name(const std::string& path) {
  std::ifstream comm(path);
  std::string name;
  std::getline(comm, name);
  return name;
}

std::uint64_t number(std::string_view text) {
  std::uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

// "voluntary_ctxt_switches:\t12" in /proc/.../status.
std::uint64_t status_field(const std::string& status, std::string_view key) {
  const std::size_t at = status.find(std::string(key) + ":");
  if (at == std::string::npos) {
    return 0;
  }
  std::size_t start = at + key.size() + 1;
  while (start < status.size() && (status[start] == ' ' || status[start] == '\t')) {
    ++start;
  }
  return number(std::string_view(status).substr(start));
}

// Leaves `out` alone when the thread is gone (its /proc entry no longer exists).
void read_figures(std::int64_t tid, double ns_per_clock_tick, OsThreadFigures& out) {
  const std::string task = "/proc/self/task/" + std::to_string(tid);
  const std::string stat = slurp(task + "/stat");
  // The name (field 2) is in parentheses and may hold anything: count fields from its end.
  const std::size_t name_end = stat.rfind(')');
  if (name_end == std::string::npos) {
    return;
  }
  std::istringstream fields(stat.substr(name_end + 1));
  std::string field;
  OsThreadFigures figures;
  std::uint64_t user_ticks = 0;
  std::uint64_t system_ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 3) {
      figures.state = field;
    } else if (i == 14) {
      user_ticks = number(field);
    } else if (i == 15) {
      system_ticks = number(field);
    }
  }
  // stat counts in clock ticks (10 ms); schedstat's first field is the time on a CPU in ns. Its
  // total, split in stat's proportion (as the kernel splits it), is exact to the ns.
  std::uint64_t on_cpu_ns = 0;
  std::istringstream(slurp(task + "/schedstat")) >> on_cpu_ns;
  const std::uint64_t ticks = user_ticks + system_ticks;
  if (on_cpu_ns == 0) { // no schedstat (a kernel without CONFIG_SCHED_INFO): ticks it is
    figures.cpu_user_ns =
        static_cast<std::uint64_t>(static_cast<double>(user_ticks) * ns_per_clock_tick);
    figures.cpu_system_ns =
        static_cast<std::uint64_t>(static_cast<double>(system_ticks) * ns_per_clock_tick);
  } else if (ticks > 0) {
    figures.cpu_system_ns =
        static_cast<std::uint64_t>(static_cast<double>(on_cpu_ns) *
                                   static_cast<double>(system_ticks) / static_cast<double>(ticks));
    figures.cpu_user_ns = on_cpu_ns - figures.cpu_system_ns;
  } else {
    figures.cpu_user_ns = on_cpu_ns; // less than a tick so far: counted as user time
  }
  const std::string status = slurp(task + "/status");
  figures.voluntary_switches = status_field(status, "voluntary_ctxt_switches");
  figures.involuntary_switches = status_field(status, "nonvoluntary_ctxt_switches");
  out = std::move(figures);
}

// What was last reported per live thread: the user/system split of a thread's CPU time is
// recomputed from tick counts at each read and may shift back, but counters only go up.
struct Reported {
  std::uint64_t user_ns = 0;
  std::uint64_t system_ns = 0;
};
// By thread id, the threads of the last read. Never destroyed: an agent's answer may still read
// it while the process exits.
std::mutex reported_mutex;
std::unordered_map<std::int64_t, Reported>& reported =
    *new std::unordered_map<std::int64_t, Reported>;

// The exact total kept, each part at least what was reported before (the total only grows, so
// both bounds can always be met).
void keep_monotonic(std::int64_t tid, OsThreadFigures& figures,
                    std::unordered_map<std::int64_t, Reported>& now) {
  const Reported before = reported.count(tid) != 0 ? reported[tid] : Reported{};
  const std::uint64_t total =
      std::max(figures.cpu_user_ns + figures.cpu_system_ns, before.user_ns + before.system_ns);
  figures.cpu_system_ns =
      std::clamp(figures.cpu_system_ns, before.system_ns, total - before.user_ns);
  figures.cpu_user_ns = total - figures.cpu_system_ns;
  now[tid] = {figures.cpu_user_ns, figures.cpu_system_ns};
}

} // namespace

std::string read_thread_name(std::int64_t tid) {
  return comm_name("/proc/self/task/" + std::to_string(tid) + "/comm");
}

std::string read_process_name() {
  return comm_name("/proc/self/comm");
}

void add_program_threads(Snapshot& snapshot, bool (*profiler_thread)(std::int64_t tid)) {
  snapshot.unmodified_program = true;
  std::unordered_set<std::int64_t> known;
  std::uint32_t next_index = 0;
  for (const ThreadInfo& thread : snapshot.threads) {
    known.insert(thread.os_tid);
    next_index = std::max(next_index, thread.index + 1);
  }
  std::vector<std::int64_t> tids;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", error)) {
    const std::int64_t tid = static_cast<std::int64_t>(number(entry.path().filename().native()));
    if (tid > 0 && known.count(tid) == 0 && !profiler_thread(tid)) {
      tids.push_back(tid);
    }
  }
  std::sort(tids.begin(), tids.end()); // the main thread first
  for (const std::int64_t tid : tids) {
    ThreadInfo thread;
    thread.index = next_index++;
    thread.os_tid = tid;
    thread.os_only = true;
    thread.name = read_thread_name(tid);
    snapshot.threads.push_back(std::move(thread));
  }
}

OsThreadFigures read_own_figures() {
  OsThreadFigures figures;
  figures.state = "X"; // the kernel's letter for a task that has ended
  rusage usage{};
  if (getrusage(RUSAGE_THREAD, &usage) == 0) {
    const auto ns = [](const timeval& time) {
      return static_cast<std::uint64_t>(time.tv_sec) * 1'000'000'000u +
             static_cast<std::uint64_t>(time.tv_usec) * 1000u;
    };
    figures.cpu_user_ns = ns(usage.ru_utime);
    figures.cpu_system_ns = ns(usage.ru_stime);
    figures.voluntary_switches = static_cast<std::uint64_t>(usage.ru_nvcsw);
    figures.involuntary_switches = static_cast<std::uint64_t>(usage.ru_nivcsw);
  }
  return figures;
}

void read_os_thread_figures(std::vector<ThreadInfo>& threads) {
  const double ns_per_clock_tick = 1e9 / static_cast<double>(sysconf(_SC_CLK_TCK));
  for (ThreadInfo& thread : threads) {
    if (thread.exited || thread.os_tid <= 0 || thread.os_tid >= kExternalTidBase) {
      continue;
    }
    read_figures(thread.os_tid, ns_per_clock_tick, thread.os);
  }
  std::lock_guard lock(reported_mutex);
  std::unordered_map<std::int64_t, Reported> now;
  for (ThreadInfo& thread : threads) {
    if (thread.os_tid > 0 && thread.os_tid < kExternalTidBase) { // an ended one's final figures too
      keep_monotonic(thread.os_tid, thread.os, now);
    }
  }
  reported = std::move(now);
}

} // namespace hotscope::trace
