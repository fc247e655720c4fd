// The HTTP server's stop while a worker is still building an answer: the worker is left to end
// alone, and the process's exit waits for it (agent::wait_for_answers), since its answer reads
// the profiler's state that the exit's teardown destroys.
#include "agent/http_server.hpp"
#include "agent/routes.hpp"
#include "cpu/cpu.hpp"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

namespace {

using namespace hotscope;
using Clock = std::chrono::steady_clock;

// A listening Unix socket at `path`, and a client connected to it.
struct Listening {
  int listener = -1;
  int client = -1;
  explicit Listening(const std::string& path) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
    const auto* named = reinterpret_cast<const sockaddr*>(&address);
    listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (bind(listener, named, sizeof(address)) != 0 || listen(listener, 4) != 0) {
      return;
    }
    client = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(client, named, sizeof(address)) != 0) {
      close(client);
      client = -1;
    }
  }
  ~Listening() {
    if (client >= 0) {
      close(client);
    }
  }
};

// A CPU profile holds its worker for its seconds, until interrupt_waits(): stop() leaves the
// worker running and says so; wait_for_workers() waits for it, and returns once it ended.
TEST(AgentServerStop, AWorkerStillBuildingAnAnswerIsWaitedFor) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("hotscope-stop-" + std::to_string(getpid())))
          .string();
  unlink(path.c_str());
  Listening listening(path);
  ASSERT_GE(listening.client, 0) << path;
  agent::Process process;
  process.pid = getpid();
  std::string problem;
  const auto server = agent::Server::start(process, listening.listener, -1, {}, problem);
  ASSERT_NE(server, nullptr) << problem;
  const std::string request = "GET /debug/pprof/profile?seconds=60 HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(send(listening.client, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  const Clock::time_point asked = Clock::now();
  while (cpu::hz() == 0 && Clock::now() < asked + std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_NE(cpu::hz(), 0u) << "the profile never started";

  EXPECT_FALSE(server->stop());
  EXPECT_FALSE(server->wait_for_workers(Clock::now() + std::chrono::milliseconds(200)));
  agent::interrupt_waits();
  const Clock::time_point interrupted = Clock::now();
  EXPECT_TRUE(server->wait_for_workers(interrupted + std::chrono::seconds(30)));
  EXPECT_LT(Clock::now() - interrupted, std::chrono::seconds(30));
  EXPECT_EQ(cpu::hz(), 0u) << "the profile's sampler was stopped by its worker";
  unlink(path.c_str());
}

} // namespace
