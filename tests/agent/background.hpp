// Programs run in the background for the agent's integration tests (a Prometheus server, the
// exporter), a free TCP port for them, and polling until a condition holds.
#pragma once

#include "demo_process.hpp"
#include "support/child_process.hpp"

#include <netinet/in.h>
#include <sys/socket.h>

namespace hotscope::testing {

// A program run in the background with its output in files, killed when the test ends.
class Background {
public:
  Background(const std::vector<std::string>& words, const Env& env, const fs::path& log)
      : log_(log) {
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      for (const auto& [name, value] : env) {
        setenv(name.c_str(), value.c_str(), 1);
      }
      freopen(log.c_str(), "w", stdout);
      freopen(log.c_str(), "a", stderr);
      std::vector<char*> argv;
      for (const std::string& word : words) {
        argv.push_back(const_cast<char*>(word.c_str()));
      }
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~Background() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  std::string log() const { return slurp(log_); }

private:
  fs::path log_;
  pid_t pid_ = 0;
};

// A TCP port nobody listens on now.
inline int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  bind(fd, reinterpret_cast<sockaddr*>(&address), length);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

using hotscope::test_support::eventually;

// The "HOST:PORT" a `hotscope exporter` started with `--listen 127.0.0.1:0` says it serves on,
// once it has said so; "" if it does not within 30 s.
inline std::string exporter_address(const Background& exporter) {
  std::string address;
  eventually(30, [&] {
    const std::string log = exporter.log();
    const std::size_t at = log.find("serving http://");
    if (at == std::string::npos) {
      return false;
    }
    address = log.substr(at + 15, log.find("/metrics", at) - at - 15);
    return true;
  });
  return address;
}

} // namespace hotscope::testing
