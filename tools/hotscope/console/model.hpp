// The console's data: the agent's answers turned into rows, with rates computed here from two
// successive answers' cumulative counters (the agent keeps no state per client), and the short
// histories the sparklines and the leak candidates need.
#pragma once

#include "profiles/profiles.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace hotscope::cli::console {

// How many refreshes a history keeps (the widest sparkline).
inline constexpr std::size_t kHistoryLength = 120;

// A function's figures over the measuring window (profiles::FunctionStats), and its rates.
struct FunctionRow : profiles::FunctionStats {
  std::string key; // name, file, line (and object): the same function across refreshes
  // Over the last interval (over the whole window before there is a previous answer).
  double calls_rate = 0; // calls per second
  double time_rate = 0;  // ns of total (inclusive) time per second
  double core = 0;       // self time per second, in % of one core
};

struct ThreadRow {
  std::int64_t index = 0;
  std::int64_t tid = 0;
  std::string name;
  std::string state; // the OS's state letter, "" when unknown
  bool exited = false;
  std::optional<double> user_percent, system_percent; // of one core, over the interval
  double records_rate = 0;
  std::uint64_t written = 0, dropped = 0;
  std::vector<profiles::OpenScope> open_scopes; // outermost first
  bool stuck = false;
  bool os_only = false; // an unmodified program's thread: records and scopes do not apply
};

struct QueueRow : profiles::QueueStats {
  double push_rate = 0, pop_rate = 0;
};

struct TaskRow : profiles::TaskStats {
  double created_rate = 0, resume_rate = 0;
};

struct HeapSite {
  std::string where; // the first frame outside the allocator: the site across refreshes
  std::uint64_t live_bytes = 0, live_blocks = 0, total_bytes = 0, total_blocks = 0;
  double bytes_rate = 0; // allocated per second over the interval
  int growing = 0;       // refreshes in a row its live bytes grew
};

struct Memory {
  bool available = false;
  std::string hint; // how to turn the heap profiler on, when it is not
  std::string mode;
  std::uint64_t live_bytes = 0, live_blocks = 0, peak_bytes = 0, peak_blocks = 0, total_bytes = 0;
  std::deque<double> live_history;
  std::vector<HeapSite> sites; // by live bytes
};

// One frame of a flame graph (wall time in scopes, or CPU time): children by time.
struct FlameNode {
  std::string name;
  std::uint64_t self_ns = 0, total_ns = 0;
  std::vector<FlameNode> children;
};

// One of a function's kept slowest calls (GET /v1/slow?function=NAME&format=json, docs/slow.md).
struct KeptCall {
  std::string id;
  std::string thread;
  std::int64_t os_tid = 0;
  std::uint64_t start_unix_ns = 0;
  std::uint64_t duration_ns = 0;
  std::uint64_t cut_events = 0; // events past the cap, not kept
  std::string tree;             // the call as indented text, one line per event
};

struct KeptCalls {
  std::string function;           // whose calls these are
  bool unsupported = false;       // the agent has no /v1/slow (an older hotscope)
  std::uint64_t per_function = 0; // HOTSCOPE_SLOWEST: 0 keeps none
  std::vector<KeptCall> calls;    // slowest first
};

class Model {
public:
  // GET /v1/stats (the stats.json schema), as profiles::read_stats() read it. Gives `answer` the
  // previous rows back, for the next read_stats() to reuse.
  void update_stats(profiles::Stats& answer);
  // GET /v1/threads; threads_unsupported() when the agent has none (an older hotscope).
  void update_threads(const nlohmann::json& threads);
  void set_threads_unsupported();
  // GET /v1/heap (DHAT JSON), or why there is none.
  void update_heap(const nlohmann::json& dhat);
  void set_heap_unavailable(std::string hint);
  // GET /v1/trace?format=folded&seconds=`seconds`.
  void update_flame(const std::string& folded, double seconds);
  // GET /v1/cpu?format=folded: the measuring window's CPU samples per stack, each standing for
  // `period_ns` of CPU time. The CPU flame is what each stack gained since the previous answer
  // (all of the window at the first answer and after a reset). Call after update_stats().
  void update_cpu_flame(const std::string& folded, std::uint64_t period_ns);
  // GET /v1/slow?function=`function`&format=json, or an agent without it.
  void update_kept_calls(const std::string& function, const nlohmann::json& slow);
  void set_kept_calls_unsupported(const std::string& function);
  // A new process (reconnected by name): forget everything.
  void clear();

  // The last statistics, but their functions: functions() has them, with their rates.
  const profiles::Stats& stats() const { return stats_; }
  bool has_stats() const { return has_stats_; }
  bool has_allocations() const;
  const std::vector<FunctionRow>& functions() const { return functions_; }
  const FunctionRow* function(const std::string& key) const;
  const std::deque<double>* p99_history(const std::string& key) const;
  const std::vector<ThreadRow>& threads() const { return threads_; }
  bool threads_unsupported() const { return threads_unsupported_; }
  // The deadlocks standing at the last /v1/threads answer.
  const std::vector<profiles::Deadlock>& deadlocks() const { return deadlocks_; }
  std::uint64_t stuck_threshold_ns() const { return stuck_threshold_ns_; }
  const std::vector<QueueRow>& queues() const { return queues_; }
  const std::vector<TaskRow>& tasks() const { return tasks_; }
  const Memory& memory() const { return memory_; }
  const FlameNode& flame() const { return flame_; }
  bool has_flame() const { return has_flame_; }
  double flame_seconds() const { return flame_seconds_; }
  const FlameNode& cpu_flame() const { return cpu_flame_; }
  bool has_cpu_flame() const { return has_cpu_flame_; }
  // The span of the measuring window the CPU flame covers; 0: all of it, from its start.
  double cpu_flame_seconds() const { return cpu_flame_seconds_; }
  // Callers and callees of `name` in the trace window, with the time spent: from the folded
  // stacks, so only once the flame has been fetched.
  std::vector<std::pair<std::string, std::uint64_t>> callers(const std::string& name) const;
  std::vector<std::pair<std::string, std::uint64_t>> callees(const std::string& name) const;
  // The kept calls of `function`, null until they have been asked for.
  const KeptCalls* kept_calls(const std::string& function) const;

private:
  struct Counts {
    std::uint64_t calls = 0, total_ns = 0, self_ns = 0;
  };
  void threads_from_stats();

  // What the console remembers of a function, by its row key, across answers.
  struct FunctionHistory {
    std::uint64_t answer = 0; // the last answer it was in (answers_ counts them from 1)
    Counts counts;            // its counts in that answer
    int twins = 0;            // later rows of that answer with the same name, file and line
    std::deque<double> p99;
  };

  profiles::Stats stats_;
  bool has_stats_ = false;
  std::uint64_t stats_duration_ns_ = 0;
  std::uint64_t answers_ = 0;
  std::vector<FunctionRow> functions_;
  std::unordered_map<std::string, FunctionHistory> histories_;

  bool threads_unsupported_ = false;
  std::uint64_t threads_now_ns_ = 0;
  std::uint64_t stuck_threshold_ns_ = 0;
  std::map<std::int64_t, profiles::ThreadStats> previous_threads_; // by os_tid
  std::vector<ThreadRow> threads_;
  std::vector<profiles::Deadlock> deadlocks_;

  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> previous_queues_; // push, pop
  std::vector<QueueRow> queues_;

  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>>
      previous_tasks_; // created, resumes
  std::vector<TaskRow> tasks_;

  Memory memory_;
  std::uint64_t heap_end_us_ = 0; // the previous profile's "te": its time, in µs
  std::map<std::string, HeapSite> previous_sites_;

  KeptCalls kept_calls_;
  bool has_kept_calls_ = false;

  FlameNode flame_;
  bool has_flame_ = false;
  double flame_seconds_ = 0;
  std::vector<std::pair<std::vector<std::string>, std::uint64_t>> stacks_;

  FlameNode cpu_flame_;
  bool has_cpu_flame_ = false;
  double cpu_flame_seconds_ = 0;
  std::uint64_t cpu_window_ns_ = 0; // the window's duration at the last CPU answer
  std::map<std::vector<std::string>, std::uint64_t> previous_cpu_; // samples per stack then
};

} // namespace hotscope::cli::console
