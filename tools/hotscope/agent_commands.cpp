#include "agent_commands.hpp"

#include "agent_client.hpp"
#include "atomic_file/atomic_file.hpp"
#include "console/text.hpp"
#include "conventions.hpp"
#include "export/formats.hpp"
#include "locks_text.hpp"
#include "profiles/profiles.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace hotscope::cli {
namespace {

namespace fs = std::filesystem;

std::string uptime(std::uint64_t start_unix_ns) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const std::int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
  const std::int64_t seconds = std::max<std::int64_t>(
      0, (now_ns - static_cast<std::int64_t>(start_unix_ns)) / 1'000'000'000);
  if (seconds < 60) {
    return fmt::format("{}s", seconds);
  }
  if (seconds < 3600) {
    return fmt::format("{}m{:02}s", seconds / 60, seconds % 60);
  }
  if (seconds < 86400) {
    return fmt::format("{}h{:02}m", seconds / 3600, seconds / 60 % 60);
  }
  return fmt::format("{}d{:02}h", seconds / 86400, seconds / 3600 % 24);
}

std::string enabled(const nlohmann::json& info) {
  const nlohmann::json on = info.value("enabled", nlohmann::json::object());
  std::string list = "timing";
  if (on.value("trace", false)) {
    list += ",trace";
  }
  if (const auto heap = on.find("heap");
      heap != on.end() && heap->is_string() && (*heap == "full" || *heap == "sampled")) {
    list += ",heap-" + heap->get<std::string>();
  }
  if (on.contains("metrics_tcp") && on["metrics_tcp"].is_string()) {
    list += ",metrics-tcp=" + on["metrics_tcp"].get<std::string>();
  }
  return list;
}

int list_agents() {
  const std::string dir = runtime_dir();
  std::vector<std::string> removed;
  const std::vector<AgentProcess> agents = live_agents(dir, &removed);
  for (const std::string& line : removed) {
    std::fprintf(stderr, "hotscope: %s\n", line.c_str());
  }
  if (agents.empty()) {
    std::fprintf(stderr, "hotscope: no process runs a hotscope agent in %s\n", dir.c_str());
    return kOk;
  }
  for (const std::string& line : process_table(agents)) {
    std::fputs((line + "\n").c_str(), stdout);
  }
  return kOk;
}

std::string plural(std::size_t count, const char* one, const char* many) {
  return fmt::format("{} {}", count, count == 1 ? one : many);
}

} // namespace

std::vector<std::string> process_table(const std::vector<AgentProcess>& agents) {
  std::vector<std::array<std::string, 4>> rows{{"PID", "NAME", "UPTIME", "ENABLED"}};
  for (const AgentProcess& agent : agents) {
    rows.push_back({std::to_string(agent.pid), agent.name(),
                    uptime(agent.info.value("start_unix_ns", std::uint64_t{0})),
                    enabled(agent.info)});
  }
  std::array<std::size_t, 4> widths{};
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  std::vector<std::string> lines;
  for (const auto& row : rows) {
    lines.push_back(fmt::format("{:>{}}  {:<{}}  {:>{}}  {}", row[0], widths[0], row[1], widths[1],
                                row[2], widths[2], row[3]));
  }
  return lines;
}

std::string locks_text(const profiles::LockReport& report, bool inversions) {
  const std::vector<profiles::LockStats> locks =
      report.locks.value_or(std::vector<profiles::LockStats>{});
  std::string text = fmt::format(
      "{}, {} standing, {} found in all; {}\n", plural(locks.size(), "lock", "locks"),
      plural(report.deadlocks.size(), "deadlock", "deadlocks"), report.figures.deadlocks_found,
      plural(report.inversions.size(), "lock-order inversion", "lock-order inversions"));
  for (const profiles::Deadlock& deadlock : report.deadlocks) {
    for (const std::string& line : deadlock_lines(deadlock)) {
      text += "\n" + line;
    }
    text += "\n";
  }
  if (locks.empty()) {
    text += "no lock recorded: name locks with HOTSCOPE_LOCKABLE, or start the program with "
            "HOTSCOPE_LOCKS=1 (or `hotscope run --locks`) for its pthread locks\n";
  } else {
    text += "\n";
    for (const std::string& line : console::align(lock_table(locks), 0, console::Glyphs{})) {
      text += line + "\n";
    }
  }
  for (const profiles::LockInversion& inversion : report.inversions) {
    text += "\n";
    for (const std::string& line : inversion_lines(inversion, inversions)) {
      text += line + "\n";
    }
  }
  if (!report.inversions.empty() && !inversions) {
    text += "(--inversions shows where each order was taken)\n";
  }
  return text;
}

namespace {

void write_to_stdout(const std::string& text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    throw Failure(kCannotWriteOutput,
                  fmt::format("cannot write to standard output: {}", std::strerror(errno)));
  }
}

// A device, FIFO or socket the user named: written through, as a shell's redirection would.
void write_through(const std::string& file, const std::string& text) {
  const int fd = open(file.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    throw Failure(kCannotWriteOutput,
                  fmt::format("cannot write {}: {}", file, std::strerror(errno)));
  }
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t wrote = write(fd, text.data() + done, text.size() - done);
    if (wrote < 0 && errno == EINTR) {
      continue;
    }
    if (wrote <= 0) {
      const int error = wrote == 0 ? ENOSPC : errno;
      close(fd);
      throw Failure(kCannotWriteOutput,
                    fmt::format("cannot write {}: {}", file, std::strerror(error)));
    }
    done += static_cast<std::size_t>(wrote);
  }
  if (close(fd) != 0) {
    throw Failure(kCannotWriteOutput,
                  fmt::format("cannot write {}: {}", file, std::strerror(errno)));
  }
}

// What `file` names once the links the user gave are followed, a link whose target does not exist
// yet included (it names that target). Only a regular file, or a name not taken yet, is then
// replaced; 40 links at most, as the kernel follows.
std::string followed(const std::string& file) {
  fs::path path = file;
  std::error_code error;
  for (int hops = 0; hops < 40 && fs::is_symlink(path, error); ++hops) {
    const fs::path next = fs::read_symlink(path, error);
    if (error) {
      break;
    }
    path = next.is_absolute() ? next : path.parent_path() / next;
  }
  return path.string();
}

bool is_written_through(const std::string& file) {
  struct stat status {};
  return stat(file.c_str(), &status) == 0 && !S_ISREG(status.st_mode) && !S_ISDIR(status.st_mode);
}

} // namespace

void write_output(const std::string& file, const std::string& text) {
  if (file.empty() || file == "-") {
    write_to_stdout(text);
    return;
  }
  if (is_written_through(file)) {
    write_through(file, text);
    return;
  }
  // Whole or not at all: a full disk leaves an earlier file as it was.
  const std::string target = followed(file);
  if (const std::string reason = atomic_file::write(target, text); !reason.empty()) {
    throw Failure(kCannotWriteOutput, fmt::format("cannot write {}: {}", file, reason));
  }
}

namespace {

// Why `file` could not be written, checked without creating it ("" if it can be): the
// directory it goes into must take a new file, and the name must not be a directory.
std::string unwritable(const std::string& file) {
  if (file == "-" || is_written_through(file)) {
    return "";
  }
  fs::path directory = fs::path(followed(file)).parent_path();
  if (directory.empty()) {
    directory = ".";
  }
  struct stat status {};
  if (stat(file.c_str(), &status) == 0 && S_ISDIR(status.st_mode)) {
    return std::strerror(EISDIR);
  }
  if (stat(directory.c_str(), &status) != 0) {
    return std::strerror(errno);
  }
  if (!S_ISDIR(status.st_mode)) {
    return std::strerror(ENOTDIR);
  }
  if (access(directory.c_str(), W_OK | X_OK) != 0) {
    return std::strerror(errno);
  }
  return "";
}

// `read` of an agent's answer: a malformed answer is the agent's failure (kFailed), not a usage
// error as a malformed file given to hotscope is.
template <typename Read> auto read_reply(Read read) {
  try {
    return read();
  } catch (const Failure& failure) {
    throw Failure(kFailed, failure.what());
  }
}

// What `hotscope instrument` prints of the agent's answer to POST /v1/instrument.
std::string instrument_text(const AgentProcess& process, const std::string& answer) {
  const std::string source =
      fmt::format("the answer of process {} to POST /v1/instrument", process.pid);
  const nlohmann::json json = read_reply([&] { return profiles::parse_json(answer, source); });
  try {
    return fmt::format("process {} ({}): instrumentation {}: {} of its {} XRay functions "
                       "switched\n",
                       process.pid, process.name(), json.at("state").get<std::string>(),
                       json.at("switched").get<std::uint64_t>(),
                       json.at("xray_functions").get<std::uint64_t>());
  } catch (const nlohmann::json::exception& error) {
    throw Failure(kFailed, fmt::format("{}: {}", source, error.what()));
  }
}

} // namespace

AgentCommands::AgentCommands(CLI::App& app) {
  list_ = app.add_subcommand("list", "List the running processes that have a hotscope agent");
  add_targeted(app, "info", "Print what the agent says about its process (JSON)");
  CLI::App* stats = add_targeted(app, "stats", "Print the per-function statistics as a table");
  stats->add_flag("--json", stats_json_, "Print them as JSON (the schema of stats.json)");
  CLI::App* heap = add_targeted(app, "heap", "Print the heap profile now");
  heap->add_option("--format", heap_format_, "dhat (JSON for dh_view.html) or pprof (gzip)")
      ->check(CLI::IsMember(exporters::format_choices("/v1/heap")))
      ->capture_default_str();
  CLI::App* trace = add_targeted(app, "trace", "Print the recent trace window");
  trace->add_option("--format", trace_format_, "chrome (Perfetto, speedscope), folded or text")
      ->check(CLI::IsMember(exporters::format_choices("/v1/trace")))
      ->capture_default_str();
  trace->add_option("--seconds", trace_seconds_, "Only the last N seconds of the window")
      ->check(number_in(0));
  CLI::App* threads = add_targeted(app, "threads",
                                   "Print what every thread is doing now: its open scopes and how "
                                   "long each has been open, CPU time, state; stuck threads first");
  threads->add_flag("--json", threads_json_, "Print it as JSON (what GET /v1/threads answers)");
  threads
      ->add_option("--stuck", stuck_ms_,
                   "Mark threads whose innermost scope has been open longer than MS "
                   "milliseconds as stuck, and list them first")
      ->check(number_in(0, HUGE_VAL, true))
      ->capture_default_str();
  CLI::App* slow = add_targeted(app, "slow",
                                "Print the slowest calls kept of each function, each whole as an "
                                "indented tree with its thread, start and duration (docs/slow.md)");
  add_slow_options(*slow, slow_);
  CLI::App* locks = add_targeted(app, "locks",
                                 "Print the locks: waits and holds, who holds and who waits now, "
                                 "deadlocks standing now first");
  locks->add_flag("--json", locks_json_, "Print them as JSON (what GET /v1/locks answers)");
  locks->add_flag("--inversions", inversions_,
                  "Show where each order of a lock-order inversion was taken (scopes, stack)");
  const char* pprof_file = exporters::format_info(exporters::Format::PprofCpu).file;
  const char* folded_file = exporters::format_info(exporters::Format::CpuFolded).file;
  CLI::App* cpu = add_targeted(app, "cpu",
                               fmt::format("Write the CPU profile of the next N seconds ({}, "
                                           "pprof); the agent samples for them if its sampler "
                                           "is off",
                                           pprof_file));
  cpu->add_option("--seconds", cpu_.seconds, "How long to sample (whole seconds)")
      ->check(whole_number(1, agent::kMostCpuProfileSeconds))
      ->capture_default_str();
  cpu->add_flag("--folded", cpu_.folded,
                fmt::format("Write folded stacks ({}) instead of pprof", folded_file));
  cpu->add_option("--top", cpu_.top,
                  "Also print the K functions with most CPU time in those seconds")
      ->check(whole_number(1, 1'000'000));
  cpu->footer(fmt::format("Exactly one of -p and -n. -o defaults to {} ({} with --folded); -o - "
                          "is standard output. Exit codes: see docs/agent.md.",
                          pprof_file, folded_file));
  add_targeted(app, "metrics", "Print the Prometheus metrics");
  add_targeted(app, "reset",
               "Start a new measuring window for the statistics, the trace and the heap totals "
               "(blocks still live are kept)");
  CLI::App* instrument = add_targeted(
      app, "instrument",
      "Switch the recording of instrumented functions on or off: XRay's sleds patched or "
      "unpatched, the -finstrument-functions hooks on or off (docs/instrument.md)");
  instrument->add_option("state", instrument_state_, "on or off")
      ->required()
      ->check(CLI::IsMember({"on", "off"}));
  instrument
      ->add_option("--function", instrument_function_,
                   "Only the XRay functions whose name this pattern matches (*, ?, [...])")
      ->check([](const std::string& value) { return value.empty() ? "an empty pattern" : ""; });
}

CLI::App* AgentCommands::add_targeted(CLI::App& app, const std::string& name,
                                      const std::string& description) {
  CLI::App* command = app.add_subcommand(name, description);
  command->add_option("-p,--pid", target_.pid, "The process, by pid");
  command->add_option("-n,--name", target_.name, "The process, by name (see hotscope list)");
  command->add_option("-o,--output", target_.output, "Write to FILE instead of standard output");
  command->footer("Exactly one of -p and -n. Exit codes: see docs/agent.md.");
  targeted_.push_back(command);
  return command;
}

std::optional<int> AgentCommands::run() const {
  try {
    if (list_->parsed()) {
      return list_agents();
    }
    for (const CLI::App* command : targeted_) {
      if (command->parsed()) {
        return run_targeted(*command);
      }
    }
    return std::nullopt;
  } catch (const Failure& failure) {
    std::fprintf(stderr, "hotscope: %s\n", failure.what());
    return failure.code;
  }
}

int AgentCommands::run_targeted(const CLI::App& command) const {
  const std::string& name = command.get_name();
  const bool by_pid = command.count("--pid") > 0;
  if (by_pid == (command.count("--name") > 0)) {
    throw Failure(kUsage, fmt::format("{}: {}", name,
                                      by_pid ? "give -p PID or -n NAME, not both"
                                             : "say which process with -p PID or -n NAME"));
  }
  // Checked before asking: a reset must not happen when its answer cannot be written.
  CpuOptions cpu = cpu_;
  cpu.output = target_.output;
  const std::string file = name == "cpu" ? cpu_file(cpu) : target_.output;
  if (const std::string reason = file.empty() ? "" : unwritable(file); !reason.empty()) {
    throw Failure(kCannotWriteOutput, fmt::format("cannot write {}: {}", file, reason));
  }
  std::string method = "GET";
  std::string path = "/v1/" + name;
  if (name == "stats" && !stats_json_) {
    path = exporters::agent_target(exporters::Format::Table);
  } else if (name == "trace") {
    path = exporters::agent_target(*exporters::find_format(path, trace_format_));
    if (trace_seconds_ > 0) {
      path += fmt::format("&seconds={}", trace_seconds_);
    }
  } else if (name == "threads") {
    path += fmt::format("?stuck_ms={}", stuck_ms_);
    if (!threads_json_) {
      path +=
          fmt::format("&format={}", exporters::format_info(exporters::Format::ThreadsText).name);
    }
  } else if (name == "slow") {
    path = slow_target(slow_);
  } else if (name == "heap") {
    path = exporters::agent_target(*exporters::find_format(path, heap_format_));
  } else if (name == "reset") {
    method = "POST";
  } else if (name == "instrument") {
    method = "POST";
    path += "?state=" + instrument_state_;
    if (!instrument_function_.empty()) {
      path += "&function=" + query_value(instrument_function_);
    }
  }
  const std::string dir = runtime_dir();
  const AgentProcess process =
      by_pid ? find_by_pid(dir, target_.pid) : find_by_name(dir, target_.name);
  if (name == "cpu") {
    return run_cpu(process, cpu);
  }
  std::string text = request(process, method, path).body;
  if (name == "locks" && !locks_json_) {
    const std::string source = fmt::format("the answer of process {} to GET {}", process.pid, path);
    text = locks_text(read_reply([&] {
                        return profiles::read_locks(profiles::parse_json(text, source), source);
                      }),
                      inversions_);
  }
  if (name == "reset") {
    text = fmt::format("process {} ({}): a new measuring window starts now\n", process.pid,
                       process.name());
  } else if (name == "instrument") {
    text = instrument_text(process, text);
  }
  write_output(file, text);
  return kOk;
}

} // namespace hotscope::cli
