// The agent inside hotscope-demo, through curl --unix-socket and raw sockets: every endpoint,
// the files, access control, malformed input, stuck clients, the TCP listener.
#include "demo_process.hpp"
#include "prometheus_check.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <grp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <atomic>
#include <mutex>
#include <random>
#include <regex>

namespace {

using namespace hotscope::testing;
using Json = nlohmann::json;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
// Everything, the agent included, runs 5-20 times slower: a snapshot can take seconds, and a
// client queued behind several of them would reach the agent's connection timeout.
constexpr double kFloodSeconds = 240;
constexpr int kConcurrentClients = 4;
constexpr auto kPromptAnswer = std::chrono::seconds(5);
#else
constexpr double kFloodSeconds = 60;
constexpr int kConcurrentClients = 8;
constexpr auto kPromptAnswer = std::chrono::seconds(2);
#endif

// The HOTSCOPE_COUNTER the demo's writer updates after each request it served.
std::int64_t served(const Demo& demo) {
  const std::string metrics = demo.get("/v1/metrics");
  std::smatch match;
  static const std::regex line(R"(hotscope_series_last_value\{series="served_total"\} (\d+))");
  return std::regex_search(metrics, match, line) ? std::stoll(match[1]) : -1;
}

bool advances(const Demo& demo) {
  const std::int64_t before = served(demo);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  return served(demo) > before;
}

// "" if every thread's B and E events pair up in a Chrome trace, else which thread does not.
std::string unbalanced(const Json& chrome) {
  std::map<std::int64_t, int> depth;
  for (const Json& event : chrome.at("traceEvents")) {
    const std::string phase = event.at("ph");
    if (phase == "B" || phase == "E") {
      const std::int64_t tid = event.at("tid");
      if ((depth[tid] += phase == "B" ? 1 : -1) < 0) {
        return "an E without its B on thread " + std::to_string(tid);
      }
    }
  }
  for (const auto& [tid, open] : depth) {
    if (open != 0) {
      return std::to_string(open) + " B without E on thread " + std::to_string(tid);
    }
  }
  return "";
}

TEST(AgentDemo, FilesArePrivateDescribeTheProcessAndGoAwayAtExit) {
  Demo demo;
  struct stat status {};
  ASSERT_EQ(stat(demo.runtime_dir().c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 0777, 0700u);
  ASSERT_EQ(stat(demo.socket().c_str(), &status), 0);
  EXPECT_TRUE(S_ISSOCK(status.st_mode));
  EXPECT_EQ(status.st_mode & 0777, 0600u);
  ASSERT_EQ(stat(demo.info_path().c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 0777, 0600u);

  const Json info = Json::parse(slurp(demo.info_path()));
  EXPECT_EQ(info.at("api_version"), hotscope::agent::kApiVersion);
  EXPECT_EQ(info.at("pid"), demo.pid());
  EXPECT_EQ(info.at("name"), "hotscope-demo");
  EXPECT_EQ(fs::path(info.at("executable").get<std::string>()), fs::path(HOTSCOPE_DEMO));
  EXPECT_EQ(info.at("socket"), demo.socket().string());
  EXPECT_EQ(info.at("start_ticks"), hotscope::agent::process_start_ticks(demo.pid()));
  EXPECT_EQ(info.at("enabled").at("trace"), true);
  EXPECT_EQ(info.at("enabled").at("heap"), DEMO_HEAP ? "off" : "not linked");

  EXPECT_EQ(demo.stop(), 0);
  EXPECT_FALSE(fs::exists(demo.socket()));
  EXPECT_FALSE(fs::exists(demo.info_path()));
  EXPECT_EQ(demo.stderr_text(), "");
}

TEST(AgentDemo, EveryEndpointThroughCurl) {
  // Few requests, so nothing is evicted from the trace window during the test and the whole
  // trace can be compared with a recent part of it (balancing after evictions is the collector's
  // matter, tested in tests/core).
  Demo demo(Env{{"HOTSCOPE_TRACE_MIB", "8"}}, true, {"--rate", "20"});
  const Json info = Json::parse(demo.get("/v1/info"));
  EXPECT_EQ(info.at("pid"), demo.pid());
  EXPECT_TRUE(info.at("clock").at("ticks_per_second").get<double>() > 0);
  EXPECT_EQ(info.at("records").at("dropped"), 0);

  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const Json stats = Json::parse(demo.get("/v1/stats"));
  EXPECT_EQ(stats.at("pid"), demo.pid());
  EXPECT_GT(calls_of(stats, "demo::Service::handle"), 0u);
  const Json columns = Json::parse(demo.get("/v1/stats?format=columns"));
  const Json& names = columns.at("functions").at("name");
  EXPECT_NE(std::find(names.begin(), names.end(), "demo::Service::handle"), names.end());
  EXPECT_EQ(columns.at("functions").at("calls").size(), names.size());
  EXPECT_FALSE(columns.at("threads").at(0).contains("functions"));
  const std::string table = demo.get("/v1/stats?format=table");
  EXPECT_NE(table.find("Function"), std::string::npos);
  EXPECT_NE(table.find("demo::Service::handle"), std::string::npos);

  const Json chrome = Json::parse(demo.get("/v1/trace"));
  EXPECT_GT(chrome.at("traceEvents").size(), 10u);
  ASSERT_EQ(chrome.at("otherData").at("trace_evicted"), 0);
  EXPECT_EQ(unbalanced(chrome), "");
  const Json recent = Json::parse(demo.get("/v1/trace?format=chrome&seconds=0.05"));
  EXPECT_LT(recent.at("traceEvents").size(), chrome.at("traceEvents").size());
  EXPECT_EQ(unbalanced(recent), "");
  EXPECT_NE(demo.get("/v1/trace?format=folded&seconds=1").find("hotscope-demo;"),
            std::string::npos);
  EXPECT_NE(demo.get("/v1/trace?format=text").find("== main"), std::string::npos);

  const std::string metrics = demo.get("/v1/metrics");
  EXPECT_EQ(prometheus_problems(metrics), std::vector<std::string>{});
  EXPECT_NE(metrics.find("hotscope_function_calls_total{function=\"demo::Service::handle\""),
            std::string::npos);
  if (std::string(PROMTOOL).empty()) {
    std::cout
        << "promtool not installed: the exposition was checked by prometheus_check.hpp only\n";
  } else {
    const fs::path file = demo.scratch() / "metrics.prom";
    std::ofstream(file) << metrics;
    const CommandResult check =
        run({"sh", "-c", std::string(PROMTOOL) + " check metrics <" + quote(file.string())});
    EXPECT_EQ(check.status, 0) << check.out << check.err;
  }
  const CommandResult headers = demo.curl(
      {"--include", "--output", "/dev/null", "--dump-header", "-", "http://localhost/v1/metrics"});
  EXPECT_NE(headers.out.find("Content-Type: text/plain; version=0.0.4; charset=utf-8"),
            std::string::npos)
      << headers.out;

  // The heap profiler is linked in but off (or, under sanitizers, not linked in): 501 says
  // what enables it.
  const CommandResult heap = demo.curl({"--write-out", "%{http_code}", "http://localhost/v1/heap"});
  EXPECT_NE(heap.out.find(DEMO_HEAP ? "start it with HOTSCOPE_HEAP_MODE=full"
                                    : "link it with the CMake target hotscope::heap"),
            std::string::npos)
      << heap.out;
  EXPECT_EQ(heap.out.substr(heap.out.size() - 3), "501");

  const CommandResult missing = demo.curl({"--write-out", "%{http_code}", "http://localhost/nope"});
  EXPECT_EQ(missing.out.substr(missing.out.size() - 3), "404");
  EXPECT_NE(missing.out.find("POST /v1/reset"), std::string::npos);
  const CommandResult wrong = demo.curl(
      {"--write-out", "%{http_code}", "--request", "DELETE", "http://localhost/v1/stats"});
  EXPECT_EQ(wrong.out.substr(wrong.out.size() - 3), "405");

  // Reset: a new window, so fewer calls than before.
  const std::uint64_t before =
      calls_of(Json::parse(demo.get("/v1/stats")), "demo::Service::handle");
  const CommandResult reset =
      demo.curl({"--fail", "--request", "POST", "http://localhost/v1/reset"});
  EXPECT_EQ(reset.status, 0) << reset.err;
  EXPECT_EQ(Json::parse(reset.out).at("reset"), true);
  const Json after = Json::parse(demo.get("/v1/stats"));
  EXPECT_LT(calls_of(after, "demo::Service::handle"), before);
  EXPECT_TRUE(advances(demo));
}

// The live heap profile, through curl: DHAT JSON and pprof, while the service runs.
TEST(AgentDemo, HeapProfileNow) {
  if (!DEMO_HEAP) {
    GTEST_SKIP() << "hotscope-demo has no heap profiler in sanitizer builds";
  }
  Demo demo(Env{{"HOTSCOPE_HEAP_MODE", "full"}});
  EXPECT_EQ(Json::parse(demo.get("/v1/info")).at("enabled").at("heap"), "full");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const Json profile = Json::parse(demo.get("/v1/heap"));
  EXPECT_EQ(profile.at("dhatFileVersion"), 2);
  EXPECT_EQ(profile.at("pid"), demo.pid());
  // The service's own allocation sites are there, with their frames symbolized.
  bool handle_seen = false;
  for (const Json& pp : profile.at("pps")) {
    for (const Json& frame : pp.at("fs")) {
      const std::string text = profile.at("ftbl").at(frame.get<std::size_t>());
      handle_seen = handle_seen || text.find("demo::Service::") != std::string::npos;
      // The agent's and the collector's allocations are the profiler's own.
      EXPECT_EQ(text.find("hotscope::agent::"), std::string::npos) << text;
      EXPECT_EQ(text.find("hotscope::trace::"), std::string::npos) << text;
    }
  }
  EXPECT_TRUE(handle_seen);
  const CommandResult pprof =
      demo.curl({"--fail", "--dump-header", demo.scratch() / "headers", "--output",
                 demo.scratch() / "heap.pb.gz", "http://localhost/v1/heap?format=pprof"});
  EXPECT_EQ(pprof.status, 0) << pprof.err;
  const std::string bytes = slurp(demo.scratch() / "heap.pb.gz");
  ASSERT_GT(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f); // gzip
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);
  EXPECT_NE(slurp(demo.scratch() / "headers").find("application/octet-stream"), std::string::npos);
  // Several profiles built at once, while the service allocates.
  std::vector<std::thread> clients;
  std::atomic<int> good{0};
  for (int i = 0; i < 3; ++i) {
    clients.emplace_back([&] {
      const CommandResult answer = demo.curl({"--fail", "http://localhost/v1/heap"});
      good += answer.status == 0 && Json::parse(answer.out).at("pid") == demo.pid();
    });
  }
  for (std::thread& client : clients) {
    client.join();
  }
  EXPECT_EQ(good, 3);
  // The heap gauges join the metrics while the heap profiler runs.
  const std::string metrics = demo.get("/v1/metrics");
  const std::string live = "hotscope_heap_live_bytes{mode=\"full\"} ";
  const std::size_t at = metrics.find(live);
  ASSERT_NE(at, std::string::npos) << metrics;
  EXPECT_GT(std::stoull(metrics.substr(at + live.size())), 0u);
  EXPECT_TRUE(advances(demo));
  EXPECT_EQ(demo.stop(), 0);
  EXPECT_EQ(demo.stderr_text(), "");
}

TEST(AgentDemo, ConcurrentClientsAllGetAnswers) {
  Demo demo;
  std::atomic<int> good{0};
  std::vector<std::thread> clients;
  std::mutex failures_mutex;
  std::string failures;
  for (int i = 0; i < kConcurrentClients; ++i) {
    clients.emplace_back([&, i] {
      const char* paths[] = {"/v1/stats", "/v1/metrics", "/v1/trace?format=folded", "/v1/info"};
      for (int k = 0; k < 5; ++k) {
        const CommandResult result =
            demo.curl({"--fail", "--output", "/dev/null",
                       std::string("http://localhost") + paths[(i + k) % 4]});
        good += result.status == 0;
        if (result.status != 0) {
          const std::lock_guard lock(failures_mutex);
          failures += paths[(i + k) % 4] + (": " + result.err);
        }
      }
    });
  }
  for (std::thread& client : clients) {
    client.join();
  }
  EXPECT_EQ(good, kConcurrentClients * 5) << failures;
}

// One client connection on the agent's socket.
class Connection {
public:
  explicit Connection(const fs::path& path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  }
  ~Connection() { close(fd_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  bool connected() const { return connected_; }
  void send_all(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t sent = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (sent <= 0) {
        return; // the agent closed it: that is an answer too
      }
      bytes.remove_prefix(static_cast<std::size_t>(sent));
    }
  }
  // Reads until the agent closes the connection or `timeout_ms` pass without data.
  std::string read_until_closed(int timeout_ms) {
    std::string text;
    char buffer[65536];
    pollfd waiting{fd_, POLLIN, 0};
    while (poll(&waiting, 1, timeout_ms) == 1) {
      const ssize_t got = recv(fd_, buffer, sizeof(buffer), 0);
      if (got <= 0) {
        closed_ = true;
        break;
      }
      text.append(buffer, static_cast<std::size_t>(got));
    }
    return text;
  }
  bool closed() const { return closed_; }
  // Reads what the first packet of an answer brings, then the caller hangs up.
  void read_some() {
    char buffer[256];
    pollfd waiting{fd_, POLLIN, 0};
    if (poll(&waiting, 1, 10'000) == 1) {
      static_cast<void>(recv(fd_, buffer, sizeof(buffer), 0));
    }
  }

private:
  int fd_ = -1;
  bool connected_ = false;
  bool closed_ = false;
};

// One malformed request of kind `kind`; returns whether it was sent.

bool malformed(const fs::path& socket, int kind, std::mt19937& random) {
  Connection connection(socket);
  if (!connection.connected()) {
    return false;
  }
  auto random_bytes = [&](std::size_t size) {
    std::string bytes(size, '\0');
    for (char& c : bytes) {
      c = static_cast<char>(random() & 0xFF);
    }
    return bytes;
  };
  const std::string close = "Connection: close\r\n\r\n";
  switch (kind % 10) {
  case 0: // random bytes
    connection.send_all(random_bytes(1 + random() % 512));
    break;
  case 1: // a request cut anywhere inside its headers
  {
    const std::string request = "GET /v1/stats HTTP/1.1\r\nHost: localhost\r\nAccept: */*\r\n";
    connection.send_all(request.substr(0, random() % request.size()));
    break;
  }
  case 2: // an oversized header
    connection.send_all("GET /v1/heap HTTP/1.1\r\nX-Big: " + std::string(100'000, 'a') + "\r\n" +
                        close);
    connection.read_until_closed(2000);
    break;
  case 3: // bad methods
  {
    const char* methods[] = {"FOO", "GE T", "\x01\x02", "PUT", "DELETE", "CONNECT", "get"};
    connection.send_all(std::string(methods[random() % 7]) + " /v1/info HTTP/1.1\r\n" + close);
    connection.read_until_closed(2000);
    break;
  }
  case 4: // bad paths
  {
    const char* paths[] = {"/../../etc/passwd",    "/v1/%00",    "*",
                           "/v1/stats/",           "//v1//info", "/v1/trace?format=%ff%fe",
                           "/v1/trace?seconds=-1", "/%zz",       "/v1/heap#frag",
                           "http://evil/v1/heap"};
    connection.send_all(std::string("GET ") + paths[random() % 10] + " HTTP/1.1\r\n" + close);
    connection.read_until_closed(2000);
    break;
  }
  case 5: // a huge query string
    connection.send_all("GET /v1/stats?format=" + std::string(200'000, 'j') + " HTTP/1.1\r\n" +
                        close);
    connection.read_until_closed(2000);
    break;
  case 6: // bad protocol versions and request lines
  {
    const char* lines[] = {"GET /v1/heap HTTP/9.9", "GET /v1/heap", "GET",
                           "GET /v1/heap HTTP/1.1 x", "\r\n\r\nGET /v1/heap HTTP/1.1"};
    connection.send_all(std::string(lines[random() % 5]) + "\r\n" + close);
    connection.read_until_closed(2000);
    break;
  }
  case 7: // a body the endpoint does not take, or a lying Content-Length
    connection.send_all("POST /v1/reset HTTP/1.1\r\nContent-Length: " +
                        std::to_string(random() % 2 ? 5 : 100000) + "\r\n" + close + "hello");
    break;
  case 8: // a valid request, then gone before or during the answer
    if (kind % 1000 == 8) {
      // A large answer, from a snapshot: few of them, they are slow in sanitized builds.
      connection.send_all("GET /v1/stats HTTP/1.1\r\n" + close);
      connection.read_some();
    } else {
      connection.send_all("GET /v1/heap HTTP/1.1\r\n" + close);
    }
    break;
  default: // headers that are not headers
    connection.send_all("GET /v1/heap HTTP/1.1\r\n" + random_bytes(1 + random() % 256) + "\r\n" +
                        close);
    break;
  }
  return true;
}

TEST(AgentDemo, TenThousandMalformedRequestsLeaveItAnsweringAndTheDemoWorking) {
  Demo demo;
  const auto started = std::chrono::steady_clock::now();
  // Clients that connect and never send, held while the flood runs.
  std::vector<std::unique_ptr<Connection>> silent;
  for (int i = 0; i < 8; ++i) {
    silent.push_back(std::make_unique<Connection>(demo.socket()));
  }
  std::atomic<int> sent{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&, t] {
      std::mt19937 random(1234 + t);
      for (int i = 0; i < 2600; ++i) {
        sent += malformed(demo.socket(), i, random) ? 1 : 0;
      }
    });
  }
  for (std::thread& client : clients) {
    client.join();
  }
  silent.clear();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << sent << " malformed requests in " << seconds << " s\n";
  EXPECT_GE(sent, 10'000);
  EXPECT_LT(seconds, kFloodSeconds);

  EXPECT_EQ(Json::parse(demo.get("/v1/info")).at("pid"), demo.pid());
  EXPECT_GT(calls_of(Json::parse(demo.get("/v1/stats")), "demo::Service::handle"), 0u);
  EXPECT_TRUE(advances(demo));
  EXPECT_EQ(demo.stop(), 0);
  EXPECT_FALSE(fs::exists(demo.socket()));
}

TEST(AgentDemo, AStuckClientIsDroppedAndOthersAreServedMeanwhile) {
  Demo demo;
  Connection stuck(demo.socket());
  ASSERT_TRUE(stuck.connected());
  Connection half(demo.socket());
  half.send_all("GET /v1/info HTTP/1.1\r\nHost: x\r\n"); // and never the blank line
  EXPECT_EQ(Json::parse(demo.get("/v1/info")).at("pid"), demo.pid());
  // The agent's connection timeout is 10 s.
  stuck.read_until_closed(20'000);
  half.read_until_closed(20'000);
  EXPECT_TRUE(stuck.closed());
  EXPECT_TRUE(half.closed());
}

TEST(AgentDemo, AnotherUserIsRefused) {
  if (geteuid() != 0 || std::string(SETPRIV).empty()) {
    GTEST_SKIP() << "needs root and setpriv to act as another user";
  }
  Demo demo;
  const std::vector<std::string> as_nobody{SETPRIV, "--reuid=65534", "--regid=65534",
                                           "--clear-groups"};
  auto nobody_curl = [&] {
    std::vector<std::string> words = as_nobody;
    for (const std::string& word :
         {std::string(CURL), std::string("--silent"), std::string("--show-error"),
          std::string("--write-out"), std::string("%{http_code}"), std::string("--unix-socket"),
          demo.socket().string(), std::string("http://localhost/v1/stats")}) {
      words.push_back(word);
    }
    return run(words);
  };
  // The private directory and socket stop another user at connect(): curl cannot connect.
  const CommandResult blocked = nobody_curl();
  EXPECT_EQ(blocked.status, 7) << blocked.out << blocked.err; // CURLE_COULDNT_CONNECT
  EXPECT_EQ(blocked.out.find("functions"), std::string::npos);

  // With the file permissions opened up, the peer check still refuses: 403, connection closed.
  fs::permissions(demo.scratch(), fs::perms::others_exec, fs::perm_options::add);
  fs::permissions(demo.runtime_dir(), fs::perms::others_exec, fs::perm_options::add);
  fs::permissions(demo.socket(), fs::perms::all, fs::perm_options::add);
  const CommandResult refused = nobody_curl();
  EXPECT_EQ(refused.status, 0) << refused.err;
  EXPECT_NE(refused.out.find("uid 65534 may not use this agent"), std::string::npos) << refused.out;
  EXPECT_EQ(refused.out.substr(refused.out.size() - 3), "403");
  EXPECT_EQ(refused.out.find("functions"), std::string::npos);
}

// A query of 600 parameters (2.4 KB) got no answer, only a close 10 s later; a NUL or another
// control character written %XX cut the path short or matched nothing as it should.
TEST(AgentDemo, LongQueriesAndControlCharactersAreAnsweredAtOnce) {
  Demo demo;
  std::string query = "a=1";
  for (int i = 1; i < 600; ++i) {
    query += "&a=1";
  }
  const auto answer = [&](const std::string& target) {
    Connection connection(demo.socket());
    connection.send_all("GET " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    const auto started = std::chrono::steady_clock::now();
    const std::string text = connection.read_until_closed(5'000);
    EXPECT_LT(std::chrono::steady_clock::now() - started, kPromptAnswer) << target;
    return text.substr(0, text.find("\r\n"));
  };
  EXPECT_EQ(answer("/v1/stats?" + query), "HTTP/1.1 414 URI Too Long");
  EXPECT_EQ(answer("/v1/info%00.json"), "HTTP/1.1 404 Not Found");
  EXPECT_EQ(answer("/v1/info%00"), "HTTP/1.1 404 Not Found");
  EXPECT_EQ(answer("/v1/info%0a"), "HTTP/1.1 404 Not Found");
  EXPECT_EQ(answer("/v1/info%7F"), "HTTP/1.1 404 Not Found");
  EXPECT_EQ(answer("/v1/info\x01"), "HTTP/1.1 404 Not Found");
  EXPECT_EQ(answer("/v1/stats?format=json%00table"), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(answer("/v1/stats?format%00=json"), "HTTP/1.1 400 Bad Request");
  // What is allowed still works: 64 parameters, and escapes of ordinary characters.
  std::string allowed = "format=json";
  for (int i = 1; i < 64; ++i) {
    allowed += "&format=json";
  }
  EXPECT_EQ(answer("/v1/stats?" + allowed), "HTTP/1.1 200 OK");
  EXPECT_EQ(answer("/v1/%69nfo?"), "HTTP/1.1 200 OK");
  EXPECT_EQ(answer("/v1/stats?format=%74able"), "HTTP/1.1 200 OK");
  const CommandResult detail = demo.curl({"http://localhost/v1/stats?" + query});
  EXPECT_NE(detail.out.find("more than 64 parameters"), std::string::npos) << detail.out;
  const CommandResult named = demo.curl({"http://localhost/v1/info%00.json"});
  EXPECT_NE(named.out.find("no endpoint /v1/info%00.json"), std::string::npos) << named.out;
  EXPECT_TRUE(advances(demo));
}

// Links planted in the runtime directory under the names of the agent's files for process `pid`
// (the issue's trial: <pid>.json.tmp -> a file of root's, overwritten with the process's JSON),
// before it runs. With `uid`, planted as that user (setresuid in a child, as setpriv does).
void plant_links(const fs::path& dir, const fs::path& target, uid_t uid, pid_t pid) {
  const pid_t child = fork();
  if (child == 0) {
    if (uid != geteuid() && (setgroups(0, nullptr) != 0 || setresgid(uid, uid, uid) != 0 ||
                             setresuid(uid, uid, uid) != 0)) {
      _exit(1);
    }
    for (const char* suffix : {".json.tmp", ".json", ".sock"}) {
      if (symlink(target.c_str(), (dir / (std::to_string(pid) + suffix)).c_str()) != 0) {
        _exit(2);
      }
    }
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(AgentDemo, LinksPlantedUnderTheAgentsFileNamesAreReplacedNeverFollowed) {
  ScratchDir scratch;
  const fs::path target = scratch.path() / "precious";
  std::ofstream(target) << "precious\n";
  const fs::path runtime_dir = scratch.path() / "rt";
  fs::create_directory(runtime_dir);
  Demo demo(Env{{"HOTSCOPE_RUNTIME_DIR", runtime_dir}}, true, {},
            [&](pid_t pid) { plant_links(runtime_dir, target, geteuid(), pid); });
  ASSERT_TRUE(fs::is_symlink(runtime_dir / (std::to_string(demo.pid()) + ".json.tmp")));
  EXPECT_EQ(slurp(target), "precious\n");
  EXPECT_FALSE(fs::is_symlink(demo.info_path()));
  EXPECT_EQ(Json::parse(slurp(demo.info_path())).at("pid"), demo.pid());
  EXPECT_EQ(Json::parse(demo.get("/v1/info")).at("pid"), demo.pid());
  EXPECT_EQ(demo.stop(), 0);
  EXPECT_EQ(slurp(target), "precious\n");
}

TEST(AgentDemo, ARuntimeDirectoryHoldingAnotherUsersEntriesIsRefused) {
  if (geteuid() != 0) {
    GTEST_SKIP() << "needs root to act as another user (uid 65534)";
  }
  ScratchDir scratch;
  const fs::path target = scratch.path() / "precious";
  std::ofstream(target) << "precious\n";
  // A directory another user could write before hotscope made it private.
  const fs::path runtime_dir = scratch.path() / "rt";
  fs::create_directory(runtime_dir);
  fs::permissions(runtime_dir, fs::perms::all);
  fs::permissions(scratch.path(), fs::perms::others_exec, fs::perm_options::add);
  Demo demo(Env{{"HOTSCOPE_RUNTIME_DIR", runtime_dir}}, false, {},
            [&](pid_t pid) { plant_links(runtime_dir, target, 65534, pid); });
  const bool planted = fs::is_symlink(runtime_dir / (std::to_string(demo.pid()) + ".json.tmp"));
  demo.stop();
  ASSERT_TRUE(planted);
  EXPECT_EQ(slurp(target), "precious\n");
  EXPECT_FALSE(fs::exists(demo.socket()));
  EXPECT_FALSE(fs::exists(demo.info_path()));
  const std::string err = demo.stderr_text();
  EXPECT_NE(err.find("hotscope: agent: the runtime directory " + runtime_dir.string() + " holds "),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("which belongs to uid 65534, not to uid 0"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

TEST(AgentDemo, TcpListenerServesMetricsOnly) {
  Demo demo(Env{{"HOTSCOPE_AGENT_TCP", "127.0.0.1:0"}});
  const Json info = Json::parse(slurp(demo.info_path()));
  const std::string address = info.at("enabled").at("metrics_tcp");
  ASSERT_EQ(address.rfind("127.0.0.1:", 0), 0u) << address;
  const CommandResult metrics =
      run({CURL, "--silent", "--fail", "http://" + address + "/v1/metrics"});
  EXPECT_EQ(metrics.status, 0);
  EXPECT_EQ(prometheus_problems(metrics.out), std::vector<std::string>{});
  const CommandResult stats =
      run({CURL, "--silent", "--write-out", "%{http_code}", "http://" + address + "/v1/stats"});
  EXPECT_EQ(stats.out.substr(stats.out.size() - 3), "404");
  EXPECT_EQ(stats.out.find("functions"), std::string::npos);
}

TEST(AgentDemo, RemoteTcpAddressIsRefusedAndTheAgentCanBeSwitchedOff) {
  Demo refused(Env{{"HOTSCOPE_AGENT_TCP", "0.0.0.0:0"}});
  EXPECT_NE(refused.stderr_text().find("not a loopback address"), std::string::npos);
  EXPECT_TRUE(Json::parse(slurp(refused.info_path())).at("enabled").at("metrics_tcp").is_null());

  Demo off(Env{{"HOTSCOPE_AGENT", "0"}}, false);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_FALSE(fs::exists(off.runtime_dir()));
  EXPECT_EQ(off.stop(), 0);
}

} // namespace
