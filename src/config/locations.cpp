// Where things are: the runtime directory the agents and the CLI share, and the TCP addresses
// the agent and `hotscope exporter` listen on.
#include "config/config.hpp"

#include <arpa/inet.h>

#include <charconv>

namespace hotscope::config {

std::string runtime_dir(const char* hotscope_runtime_dir, const char* xdg_runtime_dir, uid_t uid) {
  if (hotscope_runtime_dir != nullptr && *hotscope_runtime_dir != '\0') {
    return hotscope_runtime_dir;
  }
  if (xdg_runtime_dir != nullptr && *xdg_runtime_dir != '\0') {
    return std::string(xdg_runtime_dir) + "/hotscope";
  }
  return "/tmp/hotscope-" + std::to_string(uid);
}

std::optional<TcpAddress> parse_tcp_address(std::string_view text) {
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

} // namespace hotscope::config
