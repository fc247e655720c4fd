#include "config/config.hpp"

#include "config/variables.hpp"
#include "text/text.hpp"

#include <arpa/inet.h>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string_view>
#include <system_error>
#include <unistd.h>

namespace hotscope::config {
namespace {

using variables::read_number;
using variables::read_switch;

void read_agent(const Getenv& getenv, Config& config, std::vector<std::string>& errors) {
  read_switch(getenv, "HOTSCOPE_AGENT", config.agent, errors);
  const char* configured_dir = getenv("HOTSCOPE_RUNTIME_DIR");
  if (configured_dir != nullptr && *configured_dir == '\0') {
    errors.push_back("hotscope: HOTSCOPE_RUNTIME_DIR is set but empty; using the default");
  }
  config.runtime_dir = runtime_dir(configured_dir, getenv("XDG_RUNTIME_DIR"), getuid());
  bool allow_remote = false;
  read_switch(getenv, "HOTSCOPE_AGENT_TCP_ALLOW_REMOTE", allow_remote, errors);
  const char* tcp = getenv("HOTSCOPE_AGENT_TCP");
  if (tcp == nullptr) {
    return;
  }
  const auto endpoint = parse_tcp_address(tcp);
  if (!endpoint) {
    errors.push_back(text::cat("hotscope: HOTSCOPE_AGENT_TCP=\"", tcp,
                               "\" is not a numeric address and port such as 127.0.0.1:9464 or "
                               "[::1]:9464; no TCP listener"));
  } else if (!endpoint->loopback && !allow_remote) {
    errors.push_back(text::cat(
        "hotscope: HOTSCOPE_AGENT_TCP=\"", tcp,
        "\" is not a loopback address; no TCP listener (set HOTSCOPE_AGENT_TCP_ALLOW_REMOTE=1 to "
        "serve metrics to other hosts, without any access control)"));
  } else {
    config.agent_tcp_host = endpoint->host;
    config.agent_tcp_port = endpoint->port;
  }
}

void read_locks(const Getenv& getenv, locks::Mode& mode, std::vector<std::string>& errors) {
  const char* text = getenv("HOTSCOPE_LOCKS");
  if (text == nullptr) {
    return;
  }
  const std::string_view value = text;
  if (value == "0") {
    mode = locks::Mode::Off;
  } else if (value == "1") {
    mode = locks::Mode::Contended;
  } else if (value == "hold") {
    mode = locks::Mode::Hold;
  } else {
    errors.push_back(
        text::cat("hotscope: HOTSCOPE_LOCKS=\"", value, "\" is not one of 0, 1, hold; using 0"));
  }
}

// HOTSCOPE_ON_CRASH: report (the default) or off.
// A variable of two values, `yes` and `no`: `flag` is whether it says `yes`; unset, it is left.
void read_choice(const Getenv& getenv, const char* name, std::string_view yes, std::string_view no,
                 bool& flag, std::vector<std::string>& errors) {
  const char* text = getenv(name);
  if (text == nullptr) {
    return;
  }
  const std::string_view value = text;
  if (value == yes || value == no) {
    flag = value == yes;
  } else {
    errors.push_back(text::cat("hotscope: ", name, "=\"", value, "\" is not ", yes, " or ", no,
                               "; using ", flag ? yes : no));
  }
}

// Under `hotscope run`, which names the program's pid in HOTSCOPE_RUN_PID, a process the program
// starts writes its reports into a directory of its own, <out>/<name>.<pid>, rather than over the
// program's.
std::string out_dir_of_this_process(const Getenv& getenv, std::string out_dir) {
  const char* run_pid = getenv("HOTSCOPE_RUN_PID");
  if (out_dir.empty() || run_pid == nullptr || std::to_string(getpid()) == run_pid) {
    return out_dir;
  }
  std::ifstream comm("/proc/self/comm");
  std::string name;
  std::getline(comm, name);
  return text::cat(out_dir, "/", name.empty() ? "process" : name, ".", getpid());
}

} // namespace

Parsed parse(const Getenv& getenv) {
  Parsed parsed;
  Config& config = parsed.config;
  config.out_dir =
      out_dir_of_this_process(getenv, variables::read_out_dir(getenv, parsed.errors).value_or(""));
  if (const char* clock_name = getenv("HOTSCOPE_CLOCK")) {
    const std::string_view value = clock_name;
    if (value == "auto") {
      config.clock = clock::Request::Auto;
    } else if (value == "tsc") {
      config.clock = clock::Request::Tsc;
    } else if (value == "monotonic") {
      config.clock = clock::Request::Monotonic;
    } else {
      parsed.errors.push_back(text::cat("hotscope: HOTSCOPE_CLOCK=\"", value,
                                        "\" is not one of auto, tsc, monotonic; using auto"));
    }
  }
  read_number(getenv, "HOTSCOPE_RING_RECORDS", 64, 1ull << 24, "a record count", true,
              config.ring_records, parsed.errors);
  std::size_t window_mib = config.trace_window_bytes >> 20;
  read_number(getenv, "HOTSCOPE_TRACE_MIB", 0, 4096, "a size in MiB", false, window_mib,
              parsed.errors);
  config.trace_window_bytes = window_mib << 20;
  read_number(getenv, "HOTSCOPE_COLLECT_MS", 1, 1000, "a period in milliseconds", false,
              config.collect_period_ms, parsed.errors);
  read_number(getenv, "HOTSCOPE_CPU_HZ", 0, 10000, "a rate in samples per CPU second", false,
              config.cpu_hz, parsed.errors);
  read_number(getenv, "HOTSCOPE_SLOWEST", 0, 1000, "a count of calls", false, config.slowest,
              parsed.errors);
  std::size_t slowest_mib = config.slowest_bytes >> 20;
  read_number(getenv, "HOTSCOPE_SLOWEST_MIB", 1, 4096, "a size in MiB", false, slowest_mib,
              parsed.errors);
  config.slowest_bytes = slowest_mib << 20;
  read_number(getenv, "HOTSCOPE_MIN_NS", 0, 1'000'000'000, "a duration in nanoseconds", false,
              config.min_ns, parsed.errors);
  read_locks(getenv, config.locks, parsed.errors);
  read_agent(getenv, config, parsed.errors);
  read_choice(getenv, "HOTSCOPE_ON_CRASH", "report", "off", config.report_on_crash, parsed.errors);
  read_choice(getenv, "HOTSCOPE_XRAY", "on", "off", config.xray_patch, parsed.errors);
  read_choice(getenv, "HOTSCOPE_RUNTIME_AT", "first-client", "start",
              config.runtime_at_first_client, parsed.errors);
  config.report_on_signal = read_on_signal(getenv, parsed.on_signal_errors);
  return parsed;
}

std::string check_out_dir(const std::string& dir, const std::string& named) {
  std::error_code error;
  if (std::filesystem::exists(dir, error) && !std::filesystem::is_directory(dir, error)) {
    return text::cat("hotscope: ", named, dir, ": exists and is not a directory");
  }
  std::filesystem::create_directories(dir, error);
  if (error) {
    return text::cat("hotscope: ", named, dir, ": cannot create the directory: ", error.message());
  }
  if (!std::filesystem::is_directory(dir, error)) {
    return text::cat("hotscope: ", named, dir, ": not a directory");
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return text::cat("hotscope: ", named, dir, ": directory is not writable");
  }
  return "";
}

} // namespace hotscope::config
