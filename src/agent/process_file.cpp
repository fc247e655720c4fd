#include "agent/process_file.hpp"

#include "agent/protocol.hpp"

#include <filesystem>
#include <fstream>

namespace hotscope::agent {

Process process_of(std::int64_t pid, const std::string& runtime_dir,
                   std::size_t trace_window_bytes) {
  const std::string proc = "/proc/" + std::to_string(pid) + "/";
  Process process;
  process.pid = pid;
  std::ifstream comm(proc + "comm");
  std::getline(comm, process.name);
  std::error_code error;
  process.executable = std::filesystem::read_symlink(proc + "exe", error).string();
  process.start_unix_ns = process_start_unix_ns(pid);
  process.start_ticks = process_start_ticks(pid);
  process.socket = socket_path(runtime_dir, pid);
  process.trace_window_bytes = trace_window_bytes;
  return process;
}

void write_process_members(text::JsonWriter& json, const Process& process,
                           std::string_view heap_mode) {
  json.member("api_version", kApiVersion)
      .member("hotscope_version", HOTSCOPE_VERSION)
      .member("pid", process.pid)
      .member("name", process.name)
      .member("executable", process.executable)
      .member("start_unix_ns", process.start_unix_ns)
      .member("start_ticks", process.start_ticks)
      .member("socket", process.socket)
      .key("enabled")
      .begin_object()
      .member("timing", true)
      .member("trace", process.trace_window_bytes > 0)
      .member("trace_window_bytes", process.trace_window_bytes)
      .member("heap", heap_mode)
      .key("metrics_tcp");
  if (process.metrics_tcp.empty()) {
    json.null();
  } else {
    json.value(process.metrics_tcp);
  }
  json.end_object();
}

std::string process_json(const Process& process, std::string_view heap_mode) {
  std::string out;
  text::JsonWriter json(out, 2);
  json.begin_object();
  write_process_members(json, process, heap_mode);
  json.end_object();
  out += '\n';
  return out;
}

} // namespace hotscope::agent
