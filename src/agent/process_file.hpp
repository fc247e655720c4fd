// What <pid>.json and the start of /v1/info say about a process (docs/agent.md, "Files"). Written
// by the process's agent, and by `hotscope run` for a program whose agent starts at its first
// client: no state and no runtime here, so the CLI compiles this file too.
#pragma once

#include "text/text.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hotscope::agent {

struct Process {
  std::int64_t pid = 0;
  std::string name;
  std::string executable;
  std::uint64_t start_unix_ns = 0;
  std::uint64_t start_ticks = 0; // /proc/<pid>/stat field 22: tells a reused pid apart
  std::string socket;
  std::size_t trace_window_bytes = 0; // 0: HOTSCOPE_TRACE_MIB=0, no trace window
  std::string metrics_tcp;            // "127.0.0.1:9464" when that listener runs, else ""
};

// What /proc says of process `pid` (its name, executable and start), its socket in
// `runtime_dir` and the trace window it keeps: the agent's own, or the launcher's for a program
// whose agent starts at its first client.
Process process_of(std::int64_t pid, const std::string& runtime_dir,
                   std::size_t trace_window_bytes);

// The members of <pid>.json; `heap_mode`: "off", "sampled" or "full".
void write_process_members(text::JsonWriter& json, const Process& process,
                           std::string_view heap_mode);

// The content of <pid>.json: one JSON object and a line feed.
std::string process_json(const Process& process, std::string_view heap_mode);

} // namespace hotscope::agent
