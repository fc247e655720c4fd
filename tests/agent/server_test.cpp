// The agent's HTTP server where programs and clients misbehave (docs/agent.md, "Limits"): a
// daemon that closes every descriptor and opens its own files on those numbers, and clients that
// never read their answers while others loop on the large ones.
#include "demo_process.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <atomic>
#include <memory>

namespace {

using namespace hotscope::testing;
using Json = nlohmann::json;
using Seconds = std::chrono::duration<double>;

bool wait_for(const fs::path& path, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!fs::exists(path) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return fs::exists(path);
}

// A client connected to the Unix socket at `path`, or -1.
int socket_client(const fs::path& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void touch(const fs::path& path) {
  std::ofstream(path).put('\n');
}

// curl --unix-socket on `socket`: the answer's body, "" if there was none.
CommandResult curl_on(const fs::path& socket, const std::string& path) {
  return run({CURL, "--silent", "--show-error", "--fail", "--max-time", "20", "--unix-socket",
              socket.string(), "http://localhost" + path});
}

// Kills the process at the end of the test unless it ended (a failed assertion returns early).
struct EndsWithTheTest {
  pid_t pid;
  ~EndsWithTheTest() {
    if (waitpid(pid, nullptr, WNOHANG) == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

// The info of the agent on `socket`, or null.
Json info_on(const fs::path& socket) {
  const CommandResult info = curl_on(socket, "/v1/info");
  EXPECT_EQ(info.status, 0) << info.err;
  return info.status == 0 ? Json::parse(info.out) : Json();
}

// The daemon's files hold its three lines and nothing else: the agent wrote nothing to them
// (not even to 2, where its standard error used to be) and read nothing from 0.
TEST(AgentServer, ADaemonThatClosesEveryDescriptorLosesTheAgentNotItsFilesAndGetsItBack) {
#if defined(__SANITIZE_THREAD__)
  // TSan tracks descriptors as memory: the daemon's close() of a socket the agent's thread
  // checks is the race this test is made of, and TSan ends the daemon there.
  GTEST_SKIP() << "the daemon closes the agent's descriptors under it: a race by design";
#endif
  ScratchDir scratch;
  const fs::path work = scratch.path() / "work";
  const fs::path runtime = scratch.path() / "rt";
  fs::create_directories(work);
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    setenv("HOTSCOPE_RUNTIME_DIR", runtime.c_str(), 1);
    setenv("HOTSCOPE_AGENT_TCP", "127.0.0.1:0", 1);
    setenv("HOTSCOPE_TRACE_MIB", "2", 1);
    const std::string socket = hotscope::agent::socket_path(runtime, getpid());
    execl(DAEMON_PROGRAM, DAEMON_PROGRAM, work.c_str(), socket.c_str(), nullptr);
    _exit(127);
  }
  const EndsWithTheTest ends{pid};
  const fs::path socket = hotscope::agent::socket_path(runtime, pid);
  const fs::path info = hotscope::agent::info_path(runtime, pid);
  ASSERT_TRUE(wait_for(info, std::chrono::seconds(30)));
  ASSERT_EQ(info_on(socket).value("pid", 0), pid);
  // A client connected and silent, so that a connection's descriptor goes too.
  const int silent = socket_client(socket);
  ASSERT_GE(silent, 0);

  touch(work / "close");
  ASSERT_TRUE(wait_for(work / "stopped", std::chrono::seconds(30)));
  std::istringstream stopped(slurp(work / "stopped"));
  double cpu_seconds = -1;
  int socket_left = -1;
  stopped >> cpu_seconds >> socket_left;
  std::cout << "CPU time of the daemon over the 1.5 s after it closed the descriptors: "
            << cpu_seconds << " s\n";
  EXPECT_LT(cpu_seconds, 0.5); // no thread of the agent spins on a descriptor it lost
  EXPECT_EQ(socket_left, 0);   // the agent that stopped removed its socket file

  ASSERT_TRUE(wait_for(work / "restarted", std::chrono::seconds(30)));
  EXPECT_EQ(slurp(work / "restarted"), ""); // start_agent() started a new one
  ASSERT_EQ(info_on(socket).value("pid", 0), pid);
  // The agent's threads (hotscope-agent, hotscope-answer) are not among the program's.
  const CommandResult threads = curl_on(socket, "/v1/threads");
  ASSERT_EQ(threads.status, 0) << threads.err;
  const Json listed = Json::parse(threads.out).at("threads");
  EXPECT_EQ(listed.size(), 1u) << threads.out;
  for (const Json& thread : listed) {
    EXPECT_EQ(thread.at("name").get<std::string>().rfind("hotscope-", 0), std::string::npos);
  }
  const std::string tcp = Json::parse(slurp(info)).at("enabled").at("metrics_tcp");
  const CommandResult metrics =
      run({CURL, "--silent", "--fail", "--max-time", "20", "http://" + tcp + "/v1/metrics"});
  EXPECT_EQ(metrics.status, 0) << metrics.err;
  EXPECT_NE(metrics.out.find("hotscope_"), std::string::npos);
#ifdef HOTSCOPE_CLI
  const CommandResult stats = run({HOTSCOPE_CLI, "stats", "-p", std::to_string(pid)},
                                  {{"HOTSCOPE_RUNTIME_DIR", runtime.string()}});
  EXPECT_EQ(stats.status, 0) << stats.err;
  EXPECT_NE(stats.out.find("daemon_work"), std::string::npos) << stats.out;
#endif
  close(silent);

  const auto exit_started = std::chrono::steady_clock::now();
  touch(work / "exit");
  int status = -1;
  while (waitpid(pid, &status, WNOHANG) == 0 &&
         std::chrono::steady_clock::now() - exit_started < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double exit_seconds = Seconds(std::chrono::steady_clock::now() - exit_started).count();
  if (!WIFEXITED(status)) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    ADD_FAILURE() << "the daemon did not exit within 20 s";
  }
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_LT(exit_seconds, 2.0);
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(slurp(work / ("file" + std::to_string(i))), "before\nduring\nafter\n") << i;
  }
  EXPECT_FALSE(fs::exists(socket));
  EXPECT_FALSE(fs::exists(info));
}

// RFC 9112 §6.3 and §5.1, through the socket: these were answered 200.
TEST(AgentServer, ConflictingLengthsAndWhitespaceBeforeAColonAre400) {
  Demo demo;
  const auto status_line = [&](const std::string& request) {
    const int fd = socket_client(demo.socket());
    static_cast<void>(send(fd, request.data(), request.size(), MSG_NOSIGNAL));
    std::string answer;
    char buffer[4096];
    pollfd waiting{fd, POLLIN, 0};
    while (poll(&waiting, 1, 10'000) == 1) {
      const ssize_t got = recv(fd, buffer, sizeof(buffer), 0);
      if (got <= 0) {
        break;
      }
      answer.append(buffer, static_cast<std::size_t>(got));
    }
    close(fd);
    return answer.substr(0, answer.find("\r\n"));
  };
  EXPECT_EQ(status_line("GET /v1/info HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                        "Content-Length: 5\r\n\r\nhello"),
            "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(status_line("GET /v1/info HTTP/1.1\r\nHost : x\r\n\r\n"), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(status_line("GET /v1/info HTTP/1.1\r\nHost: x\r\nAccept\t: */*\r\n\r\n"),
            "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(status_line("GET /v1/info HTTP/1.1\r\nHost: x\r\n\r\n"), "HTTP/1.1 200 OK");
}

// Resident memory of a process now, in bytes.
std::size_t resident_bytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stoull(line.substr(6)) * 1024;
    }
  }
  return 0;
}

// Seconds from SIGTERM to the end of a demo.
double exit_seconds(Demo& demo) {
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(demo.stop(), 0);
  return Seconds(std::chrono::steady_clock::now() - started).count();
}

TEST(AgentServer, ClientsThatNeverReadDelayNoExitAndHoldBoundedMemory) {
  const Env env{{"HOTSCOPE_TRACE_MIB", "4"}};
  double quiet = 0;
  {
    Demo demo(env);
    std::this_thread::sleep_for(std::chrono::seconds(2));
    quiet = exit_seconds(demo);
  }
  Demo demo(env);
  std::this_thread::sleep_for(std::chrono::seconds(2)); // the trace window fills
  const std::size_t resident_before = resident_bytes(demo.pid());
  std::vector<int> stalled;
  for (int i = 0; i < 128; ++i) {
    const int fd = socket_client(demo.socket());
    const std::string request = "GET /v1/trace HTTP/1.1\r\nHost: x\r\n\r\n";
    static_cast<void>(send(fd, request.data(), request.size(), MSG_NOSIGNAL));
    stalled.push_back(fd);
  }
  const fs::path socket = demo.socket(); // read before stop() forgets the pid
  std::atomic<bool> done{false};
  std::atomic<int> answers{0};
  std::vector<std::thread> loopers;
  for (int i = 0; i < 200; ++i) {
    loopers.emplace_back([&, i] {
      const std::string request = i % 2 ? "GET /v1/trace HTTP/1.1\r\nHost: x\r\n\r\n"
                                        : "GET /v1/stats HTTP/1.1\r\nHost: x\r\n\r\n";
      while (!done) {
        const int fd = socket_client(socket);
        if (fd < 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          continue;
        }
        static_cast<void>(send(fd, request.data(), request.size(), MSG_NOSIGNAL));
        char buffer[65536];
        pollfd waiting{fd, POLLIN, 0};
        std::size_t got = 0;
        while (!done && poll(&waiting, 1, 100) >= 0) {
          const ssize_t read = waiting.revents != 0 ? recv(fd, buffer, sizeof(buffer), 0) : 1;
          if (read <= 0) {
            break;
          }
          got += waiting.revents != 0 ? static_cast<std::size_t>(read) : 0;
        }
        answers += got > 0 ? 1 : 0;
        close(fd);
      }
    });
  }
  std::size_t resident_peak = resident_before;
  for (int i = 0; i < 60; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    resident_peak = std::max(resident_peak, resident_bytes(demo.pid()));
  }
  const double loaded = exit_seconds(demo);
  done = true;
  for (std::thread& looper : loopers) {
    looper.join();
  }
  for (const int fd : stalled) {
    close(fd);
  }
  const double growth_mib = static_cast<double>(resident_peak - resident_before) / (1 << 20);
  std::cout << "exit after SIGTERM: " << quiet << " s without clients, " << loaded
            << " s with 128 clients that never read and 200 looping (" << answers
            << " answers); resident memory grew by " << growth_mib << " MiB\n";
  EXPECT_GT(answers, 0);
#if defined(__SANITIZE_THREAD__)
  constexpr double kMostDelay = 5.0; // TSan's demo, with 200 client threads on the same 2 CPUs
#elif defined(__SANITIZE_ADDRESS__)
  constexpr double kMostDelay = 2.0;
#else
  constexpr double kMostDelay = 1.0;
#endif
  EXPECT_LT(loaded - quiet, kMostDelay);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  // The budget (64 MiB), a snapshot per worker (2 x 4 MiB) and what the demo itself grows by;
  // sanitizers keep freed memory a while (ASan's quarantine), so not there.
  EXPECT_LT(growth_mib, 64 + 8 + 48);
#endif
}

} // namespace
