// What the agent and its clients (the hotscope CLI) agree on: the API version and what the files
// in the runtime directory (config::runtime_dir) are called. Header-only, so the CLI uses the
// same rules without linking the library (whose runtime would start an agent in the CLI).
#pragma once

#include "config/config.hpp"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace hotscope::agent {

// The number in every endpoint's path (/v1/...) and in every <pid>.json.
inline constexpr int kApiVersion = 1;

// /v1/threads marks a thread stuck when its innermost scope has been open longer than this
// (its stuck_ms parameter, `hotscope threads --stuck MS`).
inline constexpr std::uint64_t kDefaultStuckMs = 1000;

// The longest window GET /debug/pprof/profile samples for (`hotscope cpu --seconds`).
inline constexpr unsigned kMostCpuProfileSeconds = 300;

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

// When the process started, in nanoseconds since the epoch (to the clock tick): the boot time
// plus its start ticks. 0 if the process does not exist. Its agent may start long after it
// (loaded at the first client, or by `hotscope attach`).
inline std::uint64_t process_start_unix_ns(std::int64_t pid) {
  const std::uint64_t ticks = process_start_ticks(pid);
  std::ifstream in("/proc/stat");
  std::string key;
  std::uint64_t boot_seconds = 0;
  while (in >> key && key != "btime") {
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  const long ticks_per_second = sysconf(_SC_CLK_TCK);
  if (ticks == 0 || !(in >> boot_seconds) || ticks_per_second <= 0) {
    return 0;
  }
  return boot_seconds * 1'000'000'000ull +
         ticks * 1'000'000'000ull / static_cast<std::uint64_t>(ticks_per_second);
}

// A listening, non-blocking TCP socket on `endpoint` (the agent's and the exporter's), or -1 with
// `reason` (strerror). `bound` gets "host:port" with the port actually bound (port 0 picks one).
inline int listen_tcp(const config::TcpAddress& endpoint, int backlog, std::string& bound,
                      std::string& reason) {
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (endpoint.v6) {
    auto* address = reinterpret_cast<sockaddr_in6*>(&storage);
    address->sin6_family = AF_INET6;
    address->sin6_port = htons(endpoint.port);
    inet_pton(AF_INET6, endpoint.host.c_str(), &address->sin6_addr);
    length = sizeof(sockaddr_in6);
  } else {
    auto* address = reinterpret_cast<sockaddr_in*>(&storage);
    address->sin_family = AF_INET;
    address->sin_port = htons(endpoint.port);
    inet_pton(AF_INET, endpoint.host.c_str(), &address->sin_addr);
    length = sizeof(sockaddr_in);
  }
  const int fd = socket(storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  const int on = 1;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
      bind(fd, reinterpret_cast<const sockaddr*>(&storage), length) != 0 ||
      listen(fd, backlog) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length) != 0) {
    reason = std::strerror(errno);
    if (fd >= 0) {
      close(fd);
    }
    return -1;
  }
  const std::uint16_t port =
      ntohs(endpoint.v6 ? reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port
                        : reinterpret_cast<sockaddr_in*>(&storage)->sin_port);
  bound = (endpoint.v6 ? "[" + endpoint.host + "]" : endpoint.host) + ":" + std::to_string(port);
  return fd;
}

} // namespace hotscope::agent
