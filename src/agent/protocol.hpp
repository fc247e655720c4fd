// What the agent and its clients (the hotscope CLI) agree on: the API version, where the
// runtime directory is and what the files in it are called. Header-only, so the CLI uses the
// same rules without linking the library (whose runtime would start an agent in the CLI).
#pragma once

#include <sys/types.h>

#include <charconv>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace hotscope::agent {

// The number in every endpoint's path (/v1/...) and in every <pid>.json.
inline constexpr int kApiVersion = 1;

// /v1/threads marks a thread stuck when its innermost scope has been open longer than this
// (its stuck_ms parameter, `hotscope threads --stuck MS`).
inline constexpr std::uint64_t kDefaultStuckMs = 1000;

// $HOTSCOPE_RUNTIME_DIR if set and not empty, else $XDG_RUNTIME_DIR/hotscope, else
// /tmp/hotscope-<uid>.
inline std::string runtime_dir(const char* hotscope_runtime_dir, const char* xdg_runtime_dir,
                               uid_t uid) {
  if (hotscope_runtime_dir != nullptr && *hotscope_runtime_dir != '\0') {
    return hotscope_runtime_dir;
  }
  if (xdg_runtime_dir != nullptr && *xdg_runtime_dir != '\0') {
    return std::string(xdg_runtime_dir) + "/hotscope";
  }
  return "/tmp/hotscope-" + std::to_string(uid);
}

inline std::string socket_path(const std::string& dir, std::int64_t pid) {
  return dir + "/" + std::to_string(pid) + ".sock";
}
inline std::string info_path(const std::string& dir, std::int64_t pid) {
  return dir + "/" + std::to_string(pid) + ".json";
}

// The process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat), or 0 if
// the process does not exist. With the pid it identifies a process even after pid reuse.
inline std::uint64_t process_start_ticks(std::int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name (field 2) is in parentheses and may hold spaces: count from its end.
  const std::size_t name_end = stat.rfind(')');
  if (name_end == std::string::npos) {
    return 0;
  }
  std::istringstream fields(stat.substr(name_end + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) {
      std::uint64_t ticks = 0;
      std::from_chars(field.data(), field.data() + field.size(), ticks);
      return ticks;
    }
  }
  return 0;
}

} // namespace hotscope::agent
