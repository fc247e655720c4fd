#include "model.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <tuple>

namespace hotscope::cli::console {
namespace {

using Json = nlohmann::json;

const std::string kHeapAnswer = "the agent's answer to GET /v1/heap";

// Per second from a cumulative counter's growth over `interval_ns`; a counter that went down
// (a reset) starts again from 0.
double rate(std::uint64_t now, std::uint64_t before, std::uint64_t interval_ns) {
  if (interval_ns == 0) {
    return 0;
  }
  const std::uint64_t grown = now >= before ? now - before : now;
  return static_cast<double>(grown) * 1e9 / static_cast<double>(interval_ns);
}

// A thread's user and system CPU, in % of one core over `interval_ns`, from the growth of
// each figure. CPU time never restarts: a figure that fell (an agent that recomputes the
// user/system split at each read) grew by nothing, and the two together by no more than their
// sum did, which is exact.
std::pair<double, double> cpu_percent(const profiles::ThreadStats& now,
                                      const profiles::ThreadStats& before,
                                      std::uint64_t interval_ns) {
  const auto growth = [](std::uint64_t to, std::uint64_t from) {
    return to > from ? to - from : 0;
  };
  const std::uint64_t user = now.cpu_user_ns.value_or(0);
  const std::uint64_t system = now.cpu_system_ns.value_or(0);
  const std::uint64_t user_before = before.cpu_user_ns.value_or(0);
  const std::uint64_t system_before = before.cpu_system_ns.value_or(0);
  const std::uint64_t total = growth(user + system, user_before + system_before);
  const std::uint64_t user_grown = std::min(growth(user, user_before), total);
  const std::uint64_t system_grown = std::min(growth(system, system_before), total - user_grown);
  const auto percent = [&](std::uint64_t ns) {
    return static_cast<double>(ns) * 100.0 / static_cast<double>(interval_ns);
  };
  return {percent(user_grown), percent(system_grown)};
}

void append_number(std::string& text, int number) {
  std::array<char, 16> digits{};
  text.append(digits.data(),
              std::to_chars(digits.data(), digits.data() + digits.size(), number).ptr);
}

void remember(std::deque<double>& history, double value) {
  history.push_back(value);
  if (history.size() > kHistoryLength) {
    history.pop_front();
  }
}

using CountPair = std::pair<std::uint64_t, std::uint64_t>;

// `entries` (the statistics' queues or tasks) as rows with the per-second rates of two of their
// cumulative counts, `first` and `second`, over the interval: from the previous answer's counts
// (`previous`, keyed by `key_of`, then replaced by this answer's), or from 0 when an entry is new
// or the interval does not continue the previous one.
template <class Row, class Entry, class KeyOf>
std::vector<Row> rows_with_rates(const std::vector<Entry>& entries, KeyOf key_of,
                                 std::pair<std::uint64_t Entry::*, double Row::*> first,
                                 std::pair<std::uint64_t Entry::*, double Row::*> second,
                                 std::map<std::string, CountPair>& previous, bool continues,
                                 std::uint64_t interval_ns) {
  std::map<std::string, CountPair> counts;
  std::vector<Row> rows;
  for (const Entry& entry : entries) {
    Row row;
    static_cast<Entry&>(row) = entry;
    const std::string key = key_of(entry);
    const CountPair now{entry.*first.first, entry.*second.first};
    const auto before = continues ? previous.find(key) : previous.end();
    const CountPair base = before == previous.end() ? CountPair{0, 0} : before->second;
    row.*first.second = rate(now.first, base.first, interval_ns);
    row.*second.second = rate(now.second, base.second, interval_ns);
    counts[key] = now;
    rows.push_back(std::move(row));
  }
  previous = std::move(counts);
  return rows;
}

// The fields /v1/threads and the statistics' threads share.
ThreadRow thread_row(const profiles::ThreadStats& thread) {
  ThreadRow row;
  row.index = thread.index;
  row.tid = thread.os_tid;
  row.name = thread.name;
  row.state = thread.state.value_or("");
  row.exited = thread.exited;
  row.written = thread.records.written;
  row.dropped = thread.records.dropped;
  row.os_only = thread.os_only;
  return row;
}

} // namespace

void Model::clear() {
  *this = Model();
}

void Model::update_stats(profiles::Stats& answer) {
  const auto duration_ns = static_cast<std::uint64_t>(answer.duration_ns);
  // Before a previous answer, and after a reset, the interval is the whole window.
  const bool continues = has_stats_ && duration_ns > stats_duration_ns_;
  const std::uint64_t interval_ns = continues ? duration_ns - stats_duration_ns_ : duration_ns;
  std::vector<profiles::FunctionStats> read = std::move(answer.functions);
  functions_.resize(read.size());
  ++answers_;
  for (std::size_t i = 0; i < read.size(); ++i) {
    FunctionRow& row = functions_[i];
    // The previous rows' strings go back, for the next answer's.
    std::swap(static_cast<profiles::FunctionStats&>(row), read[i]);
    // "name\tfile:line", and "\tmodule" for an instrumented function (one of a name in two
    // objects), in the row's string of an earlier answer (no allocation).
    row.key.assign(row.name).append(1, '\t').append(row.file).append(1, ':');
    append_number(row.key, row.line);
    if (!row.module.empty()) {
      row.key.append(1, '\t').append(row.module);
    }
    FunctionHistory* history = &histories_[row.key];
    if (history->answer == answers_) {
      // Template instantiations can share name, file and line: the n-th of them stays the n-th.
      row.key.append(1, '#');
      append_number(row.key, ++history->twins);
      history = &histories_[row.key];
    } else {
      history->twins = 0;
    }
    // Counts from the previous answer, if the function was in it.
    const Counts before = continues && history->answer + 1 == answers_ ? history->counts : Counts{};
    row.calls_rate = rate(row.calls, before.calls, interval_ns);
    row.time_rate = rate(row.total_ns, before.total_ns, interval_ns);
    row.core = rate(row.self_ns, before.self_ns, interval_ns) / 1e9 * 100.0;
    history->counts = Counts{row.calls, row.total_ns, row.self_ns};
    history->answer = answers_;
    remember(history->p99, static_cast<double>(row.p99_ns));
  }
  stats_duration_ns_ = duration_ns;
  stats_ = std::move(answer);
  has_stats_ = true;
  answer.functions = std::move(read);
  if (threads_unsupported_ || threads_.empty()) {
    threads_from_stats();
  }
  using profiles::QueueStats;
  using profiles::TaskStats;
  queues_ = rows_with_rates<QueueRow>(
      stats_.queues.value_or(std::vector<QueueStats>{}),
      [](const QueueStats& queue) { return queue.name; },
      std::pair{&QueueStats::pushed, &QueueRow::push_rate},
      std::pair{&QueueStats::popped, &QueueRow::pop_rate}, previous_queues_, continues,
      interval_ns);
  tasks_ = rows_with_rates<TaskRow>(
      stats_.tasks.value_or(std::vector<TaskStats>{}),
      [](const TaskStats& task) { return task.kind + ':' + task.name; },
      std::pair{&TaskStats::created, &TaskRow::created_rate},
      std::pair{&TaskStats::resumes, &TaskRow::resume_rate}, previous_tasks_, continues,
      interval_ns);
}

// As report.txt: the allocation columns only when the program recorded allocations.
bool Model::has_allocations() const {
  return has_stats_ && stats_.allocated_blocks > 0;
}

const FunctionRow* Model::function(const std::string& key) const {
  const auto found = std::find_if(functions_.begin(), functions_.end(),
                                  [&](const FunctionRow& row) { return row.key == key; });
  return found == functions_.end() ? nullptr : &*found;
}

const std::deque<double>* Model::p99_history(const std::string& key) const {
  const auto found = histories_.find(key);
  return found == histories_.end() ? nullptr : &found->second.p99;
}

void Model::update_threads(const Json& json) {
  profiles::ThreadsAnswer answer =
      profiles::read_threads(json, "the agent's answer to GET /v1/threads");
  threads_unsupported_ = false;
  const std::uint64_t now_ns = answer.now_ns;
  const bool continues = !previous_threads_.empty() && now_ns > threads_now_ns_;
  const std::uint64_t interval_ns = continues ? now_ns - threads_now_ns_ : 0;
  stuck_threshold_ns_ = answer.stuck_threshold_ns;
  std::map<std::int64_t, profiles::ThreadStats> seen;
  std::vector<ThreadRow> rows;
  for (profiles::ThreadStats& thread : answer.threads) {
    ThreadRow row = thread_row(thread);
    const auto before = previous_threads_.find(row.tid);
    if (interval_ns > 0 && before != previous_threads_.end()) {
      const profiles::ThreadStats& old = before->second;
      std::tie(row.user_percent, row.system_percent) = cpu_percent(thread, old, interval_ns);
      row.records_rate = rate(row.written, old.records.written, interval_ns);
    } else if (now_ns > 0) {
      row.records_rate = rate(row.written, 0, now_ns);
    }
    row.open_scopes = thread.open_scopes;
    row.stuck = thread.stuck;
    seen[row.tid] = std::move(thread);
    rows.push_back(std::move(row));
  }
  threads_ = std::move(rows);
  deadlocks_ = std::move(answer.deadlocks);
  previous_threads_ = std::move(seen);
  threads_now_ns_ = now_ns;
}

void Model::set_threads_unsupported() {
  threads_unsupported_ = true;
  threads_from_stats();
}

// Without /v1/threads: names, ids and records from the statistics, nothing about open scopes.
void Model::threads_from_stats() {
  threads_.clear();
  const std::uint64_t duration_ns = stats_duration_ns_;
  for (const profiles::ThreadStats& thread : stats_.threads) {
    ThreadRow row = thread_row(thread);
    row.records_rate = rate(row.written, 0, duration_ns);
    threads_.push_back(std::move(row));
  }
}

void Model::update_heap(const Json& dhat) {
  profiles::check_heap(dhat, kHeapAnswer);
  memory_.available = true;
  memory_.hint.clear();
  memory_.mode = dhat.value("mode", "");
  const std::uint64_t end_us = profiles::count_at(dhat, "te");
  // The first answer's rates are over the whole profile (te), as the other tabs' first rates are
  // over the window: what `--once` prints. A site new since the last answer grew from nothing.
  const bool first = previous_sites_.empty();
  const std::uint64_t interval_ns =
      first ? end_us * 1000 : (end_us > heap_end_us_ ? (end_us - heap_end_us_) * 1000 : 0);
  std::map<std::string, HeapSite> sites;
  memory_.live_bytes = memory_.live_blocks = memory_.peak_bytes = memory_.peak_blocks =
      memory_.total_bytes = 0;
  for (const profiles::Site& point : profiles::heap_sites(dhat, kHeapAnswer, 0)) {
    HeapSite site;
    site.where = profiles::site_name(point);
    site.live_bytes = point.end_bytes;
    site.live_blocks = point.end_blocks;
    site.total_bytes = point.total_bytes;
    site.total_blocks = point.total_blocks;
    memory_.peak_bytes += point.gmax_bytes;
    memory_.peak_blocks += point.gmax_blocks;
    memory_.live_bytes += site.live_bytes;
    memory_.live_blocks += site.live_blocks;
    memory_.total_bytes += site.total_bytes;
    // Stacks that differ only below the named frame are one site here.
    auto [slot, added] = sites.emplace(site.where, site);
    if (!added) {
      slot->second.live_bytes += site.live_bytes;
      slot->second.live_blocks += site.live_blocks;
      slot->second.total_bytes += site.total_bytes;
      slot->second.total_blocks += site.total_blocks;
    }
  }
  for (auto& [where, site] : sites) {
    const auto before = previous_sites_.find(where);
    const bool seen = before != previous_sites_.end();
    site.bytes_rate = rate(site.total_bytes, seen ? before->second.total_bytes : 0, interval_ns);
    if (seen) {
      site.growing = site.live_bytes > before->second.live_bytes ? before->second.growing + 1 : 0;
    }
  }
  memory_.sites.clear();
  for (const auto& [where, site] : sites) {
    memory_.sites.push_back(site);
  }
  std::sort(memory_.sites.begin(), memory_.sites.end(),
            [](const HeapSite& a, const HeapSite& b) { return a.live_bytes > b.live_bytes; });
  remember(memory_.live_history, static_cast<double>(memory_.live_bytes));
  previous_sites_ = std::move(sites);
  heap_end_us_ = end_us;
}

void Model::set_heap_unavailable(std::string hint) {
  memory_ = Memory{};
  memory_.hint = std::move(hint);
  previous_sites_.clear();
}

void Model::update_kept_calls(const std::string& function, const nlohmann::json& slow) {
  KeptCalls kept{function, false, slow.at("per_function").get<std::uint64_t>(), {}};
  for (const nlohmann::json& call : slow.at("calls")) {
    kept.calls.push_back(KeptCall{
        call.at("id").get<std::string>(), call.at("thread").get<std::string>(),
        call.at("os_tid").get<std::int64_t>(), call.at("start_unix_ns").get<std::uint64_t>(),
        call.at("duration_ns").get<std::uint64_t>(), call.at("cut_events").get<std::uint64_t>(),
        call.at("tree").get<std::string>()});
  }
  kept_calls_ = std::move(kept);
  has_kept_calls_ = true;
}

void Model::set_kept_calls_unsupported(const std::string& function) {
  kept_calls_ = KeptCalls{function, true, 0, {}};
  has_kept_calls_ = true;
}

const KeptCalls* Model::kept_calls(const std::string& function) const {
  return has_kept_calls_ && kept_calls_.function == function ? &kept_calls_ : nullptr;
}

namespace {

// Each line of folded stacks (`what` names them in a failure) as its frames, root first, and its
// count.
std::vector<std::pair<std::vector<std::string>, std::uint64_t>>
folded_lines(const std::string& folded, const std::string& what) {
  const profiles::StackLines stacks = profiles::folded_stacks(folded, what);
  std::vector<std::pair<std::vector<std::string>, std::uint64_t>> lines;
  for (std::size_t i = 0; i < stacks.starts.size(); ++i) {
    std::vector<std::string> frames;
    const std::string_view joined = stacks.frames(i);
    for (std::size_t start = 0;;) {
      const std::size_t end = std::min(joined.find(';', start), joined.size());
      frames.emplace_back(joined.substr(start, end - start));
      if (end == joined.size()) {
        break;
      }
      start = end + 1;
    }
    lines.emplace_back(std::move(frames), stacks.count(i));
  }
  return lines;
}

// The flame graph of `stacks` (frames root first, time in ns): children widest first.
FlameNode flame_of(const std::vector<std::pair<std::vector<std::string>, std::uint64_t>>& stacks) {
  FlameNode root{"all", 0, 0, {}};
  for (const auto& [frames, ns] : stacks) {
    FlameNode* node = &root;
    node->total_ns += ns;
    for (const std::string& frame : frames) {
      auto child = std::find_if(node->children.begin(), node->children.end(),
                                [&](const FlameNode& n) { return n.name == frame; });
      if (child == node->children.end()) {
        node->children.push_back(FlameNode{frame, 0, 0, {}});
        child = node->children.end() - 1;
      }
      node = &*child;
      node->total_ns += ns;
    }
    node->self_ns += ns;
  }
  std::vector<FlameNode*> pending{&root};
  while (!pending.empty()) {
    FlameNode* node = pending.back();
    pending.pop_back();
    std::sort(node->children.begin(), node->children.end(),
              [](const FlameNode& a, const FlameNode& b) { return a.total_ns > b.total_ns; });
    for (FlameNode& child : node->children) {
      pending.push_back(&child);
    }
  }
  return root;
}

} // namespace

void Model::update_flame(const std::string& folded, double seconds) {
  flame_seconds_ = seconds;
  stacks_ = folded_lines(folded, "the agent's folded stacks (GET /v1/trace)");
  for (auto& [frames, ns] : stacks_) {
    // The first two frames are the process and the thread: the flame merges threads.
    if (frames.size() > 2) {
      frames.erase(frames.begin(), frames.begin() + 2);
    }
  }
  flame_ = flame_of(stacks_);
  has_flame_ = true;
}

void Model::update_cpu_flame(const std::string& folded, std::uint64_t period_ns) {
  auto lines = folded_lines(folded, "the agent's CPU samples (GET /v1/cpu)");
  std::map<std::vector<std::string>, std::uint64_t> samples;
  for (auto& [frames, count] : lines) {
    samples[std::move(frames)] += count;
  }
  // Since the previous answer, unless the window started again (a reset: durations or counts
  // went down), or there was none.
  bool continues = has_cpu_flame_ && stats_duration_ns_ > cpu_window_ns_;
  for (const auto& [frames, count] : previous_cpu_) {
    const auto now = samples.find(frames);
    continues = continues && now != samples.end() && now->second >= count;
  }
  std::vector<std::pair<std::vector<std::string>, std::uint64_t>> gained;
  for (const auto& [frames, count] : samples) {
    const auto before = continues ? previous_cpu_.find(frames) : previous_cpu_.end();
    const std::uint64_t grown = count - (before != previous_cpu_.end() ? before->second : 0);
    if (grown > 0) {
      gained.emplace_back(frames, grown * period_ns);
    }
  }
  cpu_flame_ = flame_of(gained);
  cpu_flame_seconds_ =
      continues ? static_cast<double>(stats_duration_ns_ - cpu_window_ns_) / 1e9 : 0;
  cpu_window_ns_ = stats_duration_ns_;
  previous_cpu_ = std::move(samples);
  has_cpu_flame_ = true;
}

namespace {

std::vector<std::pair<std::string, std::uint64_t>>
by_time(const std::map<std::string, std::uint64_t>& times) {
  std::vector<std::pair<std::string, std::uint64_t>> list(times.begin(), times.end());
  std::sort(list.begin(), list.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  return list;
}

} // namespace

std::vector<std::pair<std::string, std::uint64_t>> Model::callers(const std::string& name) const {
  std::map<std::string, std::uint64_t> times;
  for (const auto& [frames, ns] : stacks_) {
    for (std::size_t i = 1; i < frames.size(); ++i) {
      if (frames[i] == name) {
        times[frames[i - 1]] += ns;
      }
    }
  }
  return by_time(times);
}

std::vector<std::pair<std::string, std::uint64_t>> Model::callees(const std::string& name) const {
  std::map<std::string, std::uint64_t> times;
  for (const auto& [frames, ns] : stacks_) {
    for (std::size_t i = 0; i + 1 < frames.size(); ++i) {
      if (frames[i] == name) {
        times[frames[i + 1]] += ns;
      }
    }
  }
  return by_time(times);
}

} // namespace hotscope::cli::console
