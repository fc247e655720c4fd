// What the agent and its clients (the hotscope CLI) agree on: the API version, where the
// runtime directory is and what the files in it are called. Header-only, so the CLI uses the
// same rules without linking the library (whose runtime would start an agent in the CLI).
#pragma once

#include <arpa/inet.h>
#include <sys/types.h>

#include <charconv>
#include <cstdint>
#include <fstream>
#include <iterator>
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

// A TCP address to listen on (HOTSCOPE_AGENT_TCP, `hotscope exporter --listen`).
struct TcpAddress {
  std::string host; // numeric, IPv6 without its brackets
  std::uint16_t port = 0;
  bool v6 = false;
  bool loopback = false;
};

// "127.0.0.1:9464" or "[::1]:9464": numeric addresses only, so no name lookup at start.
inline std::optional<TcpAddress> parse_tcp_address(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return std::nullopt;
  }
  std::string host(text.substr(0, colon));
  const std::string_view port_text = text.substr(colon + 1);
  unsigned port = 0;
  const auto [end, error] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || error != std::errc() || end != port_text.data() + port_text.size() ||
      port > 65535) {
    return std::nullopt;
  }
  TcpAddress endpoint;
  endpoint.port = static_cast<std::uint16_t>(port);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    in6_addr address{};
    if (inet_pton(AF_INET6, host.c_str(), &address) != 1) {
      return std::nullopt;
    }
    endpoint.v6 = true;
    endpoint.loopback = IN6_IS_ADDR_LOOPBACK(&address);
  } else {
    in_addr address{};
    if (inet_pton(AF_INET, host.c_str(), &address) != 1) {
      return std::nullopt;
    }
    endpoint.loopback = (ntohl(address.s_addr) >> 24) == 127;
  }
  endpoint.host = std::move(host);
  return endpoint;
}

} // namespace hotscope::agent
