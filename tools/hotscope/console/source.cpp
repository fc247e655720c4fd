#include "source.hpp"

#include "export/formats.hpp"
#include "profiles/profiles.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <ctime>

namespace hotscope::cli::console {
namespace {

bool running(std::int64_t pid) {
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

// Runs `step`, adding how long it took to `spent`.
template <typename Step> void timed(std::chrono::steady_clock::duration& spent, Step step) {
  const auto start = std::chrono::steady_clock::now();
  step();
  spent += std::chrono::steady_clock::now() - start;
}

std::string heap_hint(const std::string& heap) {
  if (heap == "off") {
    return "the heap profiler is linked but off: start the program with HOTSCOPE_HEAP_MODE=full "
           "(or sampled) to see its memory here";
  }
  return "no heap profiler in this process: link hotscope::heap and set HOTSCOPE_HEAP_MODE=full, "
         "or start it with `hotscope run --heap`, to see its memory here";
}

} // namespace

Source::Source(AgentProcess process, std::string follow_name)
    : process_(std::move(process)), follow_name_(std::move(follow_name)) {}

std::string Source::label() const {
  return fmt::format("{} ({})", process_.name(), process_.pid);
}

std::optional<Reply> Source::get(const std::string& path) {
  if (!gone_.empty()) {
    return std::nullopt;
  }
  try {
    std::optional<Reply> reply;
    timed(times_.asked, [&] { reply = send(process_, "GET", path); });
    return reply;
  } catch (const Failure& failure) {
    // The agent removes its socket as the process exits: no answer and no process is an exit.
    if ((failure.code == kNoAgent || failure.code == kNoProcess) || !running(process_.pid)) {
      gone_ = fmt::format("{} exited at {:%H:%M:%S}", label(), fmt::localtime(std::time(nullptr)));
      return std::nullopt;
    }
    throw;
  }
}

nlohmann::json Source::parse(const std::string& path, const std::string& body) {
  nlohmann::json json;
  timed(times_.parsed,
        [&] { json = profiles::parse_json(body, "the agent's answer to GET " + path); });
  return json;
}

bool Source::fetch(Model& model, const ViewState& state, const FetchOptions& options) {
  times_ = FetchTimes{};
  using exporters::Format;
  const auto stats_path = [&] {
    return stats_columns_ ? exporters::agent_target(Format::Columns)
                          : std::string(exporters::format_info(Format::StatsJson).path);
  };
  std::optional<Reply> stats = get(stats_path());
  if (stats && stats->status == 400 && stats_columns_) {
    stats_columns_ = false;
    stats = get(stats_path());
  }
  if (!stats) {
    return false;
  }
  check_status(process_, "GET", stats_path(), *stats);
  timed(times_.parsed, [&] {
    read_answer(stats_path(), [&] {
      profiles::read_stats(stats->body, "the agent's answer to GET /v1/stats", stats_answer_);
    });
  });
  timed(times_.updated, [&] { model.update_stats(stats_answer_); });
  switch (tab_info(state.tab).answer) {
  case TabAnswer::Threads: {
    const std::string path = fmt::format("/v1/threads?stuck_ms={}", options.stuck_ms);
    const std::optional<Reply> threads = get(path);
    if (!threads) {
      return false;
    }
    if (threads->status == 404) {
      model.set_threads_unsupported(); // an agent from before /v1/threads
      break;
    }
    check_status(process_, "GET", path, *threads);
    const nlohmann::json answer = parse(path, threads->body);
    timed(times_.updated, [&] { model.update_threads(answer); });
    break;
  }
  case TabAnswer::Heap:
    fetch_heap(model);
    break;
  case TabAnswer::TraceWithDetail:
    if (!state.detail) {
      break;
    }
    // A tree stays as it was while it is read; the kept calls' list is only asked for here.
    if (state.focus != DetailFocus::Tree) {
      fetch_kept_calls(model, state);
    }
    if (state.focus != DetailFocus::Functions) {
      break;
    }
    [[fallthrough]]; // the detail pane's callers and callees come from the trace
  case TabAnswer::Trace: {
    if (state.tab == Tab::Flame && state.flame_cpu) {
      return fetch_cpu_flame(model, options) && gone_.empty();
    }
    // A trace answer copies and walks the whole trace window in the process: asked for once
    // per flame period, not at every refresh.
    const auto now = std::chrono::steady_clock::now();
    if (model.has_flame() &&
        now - last_trace_ < std::chrono::duration<double>(options.flame_seconds)) {
      break;
    }
    last_trace_ = now;
    const std::optional<Reply> folded =
        get(fmt::format("{}&seconds={}", exporters::agent_target(exporters::Format::Folded),
                        options.flame_seconds));
    if (!folded) {
      return false;
    }
    if (folded->status / 100 == 2) { // 501 without a trace: the flame tab says so
      timed(times_.updated, [&] { model.update_flame(folded->body, options.flame_seconds); });
    }
    break;
  }
  case TabAnswer::None:
    break;
  }
  return gone_.empty();
}

// The window's CPU samples, asked for once per flame period, while the sampler runs (else the
// flame tab says how to start it). False when the process has gone.
bool Source::fetch_cpu_flame(Model& model, const FetchOptions& options) {
  const std::optional<profiles::CpuSampling>& cpu = model.stats().cpu;
  const auto now = std::chrono::steady_clock::now();
  if (!cpu || cpu->hz == 0 ||
      (model.has_cpu_flame() &&
       now - last_cpu_ < std::chrono::duration<double>(options.flame_seconds))) {
    return true;
  }
  last_cpu_ = now;
  const std::string path = exporters::agent_target(*exporters::find_format("/v1/cpu", "folded"));
  const std::optional<Reply> folded = get(path);
  if (!folded) {
    return false;
  }
  check_status(process_, "GET", path, *folded);
  timed(times_.updated, [&] { model.update_cpu_flame(folded->body, cpu->period_ns); });
  return true;
}

void Source::fetch_kept_calls(Model& model, const ViewState& state) {
  const FunctionRow* row = model.function(state.selected[static_cast<std::size_t>(Tab::Functions)]);
  if (row == nullptr) {
    return;
  }
  const std::string function = row->name;
  const std::string path =
      exporters::agent_target(exporters::Format::SlowJson) + "&function=" + query_value(function);
  const std::optional<Reply> reply = get(path);
  if (!reply) {
    return;
  }
  if (reply->status == 404) {
    model.set_kept_calls_unsupported(function); // an agent from before /v1/slow
    return;
  }
  check_status(process_, "GET", path, *reply);
  const nlohmann::json answer = parse(path, reply->body);
  read_answer(path,
              [&] { timed(times_.updated, [&] { model.update_kept_calls(function, answer); }); });
}

void Source::fetch_heap(Model& model) {
  const nlohmann::json enabled = process_.info.value("enabled", nlohmann::json::object());
  const std::string heap = enabled.contains("heap") && enabled["heap"].is_string()
                               ? enabled["heap"].get<std::string>()
                               : "not linked";
  if (heap != "full" && heap != "sampled") {
    model.set_heap_unavailable(heap_hint(heap));
    return;
  }
  const std::string path = exporters::agent_target(exporters::Format::Dhat);
  const std::optional<Reply> reply = get(path);
  if (!reply) {
    return;
  }
  if (reply->status == 501) {
    model.set_heap_unavailable(heap_hint(heap));
    return;
  }
  check_status(process_, "GET", path, *reply);
  const nlohmann::json answer = parse(path, reply->body);
  timed(times_.updated, [&] { model.update_heap(answer); });
}

bool Source::reconnect() {
  if (gone_.empty() || follow_name_.empty()) {
    return false;
  }
  try {
    AgentProcess process = find_by_name(runtime_dir(), follow_name_);
    if (process.pid == process_.pid) {
      return false;
    }
    process_ = std::move(process);
    stats_columns_ = true;
    gone_.clear();
    return true;
  } catch (const Failure&) {
    return false; // not back yet
  }
}

} // namespace hotscope::cli::console
