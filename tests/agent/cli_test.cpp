// The hotscope CLI against hotscope-demo's agent: every command, compared with what curl gets
// from the same endpoint, and every failure's line and exit code (docs/agent.md).
#include "demo_process.hpp"
#include "prometheus_check.hpp"

#include "support/small_tmpfs.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <set>

namespace {

using namespace hotscope::testing;
using Json = nlohmann::json;

std::set<std::string> function_names(const Json& stats) {
  std::set<std::string> names;
  for (const Json& function : stats.at("functions")) {
    names.insert(function.at("name"));
  }
  return names;
}

bool includes(const std::set<std::string>& all, const std::set<std::string>& part) {
  return std::includes(all.begin(), all.end(), part.begin(), part.end());
}

// The metric names (no labels, no values) of an exposition.
std::set<std::string> metric_names(const std::string& text) {
  std::set<std::string> names;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# TYPE ", 0) == 0) {
      names.insert(line.substr(7, line.find(' ', 7) - 7));
    }
  }
  return names;
}

TEST(AgentCli, EveryCommandAgreesWithCurl) {
  Demo demo;
  const std::string pid = std::to_string(demo.pid());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));

  const CommandResult list = cli(demo, {"list"});
  EXPECT_EQ(list.status, 0) << list.err;
  EXPECT_NE(list.out.find("PID"), std::string::npos);
  EXPECT_NE(list.out.find(pid + "  hotscope-demo"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("timing,trace"), std::string::npos) << list.out;

  const CommandResult info = cli(demo, {"info", "-p", pid});
  EXPECT_EQ(info.status, 0) << info.err;
  const Json curl_info = Json::parse(demo.get("/v1/info"));
  const Json cli_info = Json::parse(info.out);
  for (const char* key : {"api_version", "pid", "name", "executable", "start_unix_ns", "enabled"}) {
    EXPECT_EQ(cli_info.at(key), curl_info.at(key)) << key;
  }

  // Functions only get added over time: the CLI's set lies between two curl answers.
  const Json before = Json::parse(demo.get("/v1/stats"));
  const CommandResult stats = cli(demo, {"stats", "--json", "-n", "hotscope-demo"});
  const Json after = Json::parse(demo.get("/v1/stats"));
  EXPECT_EQ(stats.status, 0) << stats.err;
  const Json cli_stats = Json::parse(stats.out);
  EXPECT_EQ(cli_stats.at("pid"), demo.pid());
  EXPECT_TRUE(includes(function_names(cli_stats), function_names(before)));
  EXPECT_TRUE(includes(function_names(after), function_names(cli_stats)));
  EXPECT_GT(calls_of(cli_stats, "demo::Service::handle"),
            calls_of(before, "demo::Service::handle"));

  const CommandResult table = cli(demo, {"stats", "-p", pid});
  EXPECT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("  Function "), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("% Total"), std::string::npos);
  EXPECT_NE(table.out.find("demo::Service::handle "), std::string::npos);
  EXPECT_EQ(table.out.rfind(std::string("hotscope ") + HOTSCOPE_VERSION + ": hotscope-demo (pid " +
                                pid + ")",
                            0),
            0u);

  const CommandResult chrome = cli(demo, {"trace", "-p", pid});
  EXPECT_EQ(chrome.status, 0) << chrome.err;
  EXPECT_GT(Json::parse(chrome.out).at("traceEvents").size(), 10u);
  const CommandResult folded =
      cli(demo, {"trace", "-p", pid, "--format", "folded", "--seconds", "0.5"});
  EXPECT_EQ(folded.status, 0) << folded.err;
  EXPECT_EQ(folded.out.rfind("hotscope-demo;", 0), 0u) << folded.out.substr(0, 200);
  const CommandResult text = cli(demo, {"trace", "-p", pid, "--format", "text", "--seconds", "1"});
  EXPECT_NE(text.out.find("trace window: from "), std::string::npos);

  const CommandResult metrics = cli(demo, {"metrics", "-p", pid});
  EXPECT_EQ(metrics.status, 0) << metrics.err;
  EXPECT_EQ(prometheus_problems(metrics.out), std::vector<std::string>{});
  EXPECT_EQ(metric_names(metrics.out), metric_names(demo.get("/v1/metrics")));

  const fs::path file = demo.scratch() / "stats.json";
  const CommandResult to_file = cli(demo, {"stats", "--json", "-p", pid, "-o", file});
  EXPECT_EQ(to_file.status, 0) << to_file.err;
  EXPECT_EQ(to_file.out, "");
  EXPECT_EQ(Json::parse(slurp(file)).at("pid"), demo.pid());

  const std::uint64_t calls = calls_of(Json::parse(demo.get("/v1/stats")), "demo::Service::handle");
  const CommandResult reset = cli(demo, {"reset", "-p", pid});
  EXPECT_EQ(reset.status, 0) << reset.err;
  EXPECT_EQ(reset.out, "process " + pid + " (hotscope-demo): a new measuring window starts now\n");
  EXPECT_LT(calls_of(Json::parse(demo.get("/v1/stats")), "demo::Service::handle"), calls);
}

// The function's calls in one stats.json, by name.
const Json& function_of(const Json& stats, const std::string& name) {
  for (const Json& function : stats.at("functions")) {
    if (function.at("name") == name) {
      return function;
    }
  }
  throw std::runtime_error("no function " + name);
}

// `hotscope slow` (docs/slow.md): the demo's slowest kept calls of one function, the slowest
// first, the first being the longest call the statistics saw; an unknown function has none.
TEST(AgentCli, SlowListsTheKeptCallsOfAFunctionWhole) {
  Demo demo;
  const std::string pid = std::to_string(demo.pid());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::string handle = "demo::Service::handle";
  const Json before = Json::parse(demo.get("/v1/stats"));
  const CommandResult json =
      cli(demo, {"slow", "-p", pid, "--json", "--function", handle, "--top", "2"});
  const Json after = Json::parse(demo.get("/v1/stats"));
  ASSERT_EQ(json.status, 0) << json.err;
  const Json calls = Json::parse(json.out).at("calls");
  ASSERT_EQ(calls.size(), 2u) << json.out;
  EXPECT_GE(calls[0].at("duration_ns"), calls[1].at("duration_ns"));
  EXPECT_GE(calls[0].at("duration_ns"), function_of(before, handle).at("max_ns"));
  EXPECT_LE(calls[0].at("duration_ns"), function_of(after, handle).at("max_ns"));
  for (const Json& call : calls) {
    EXPECT_EQ(call.at("function"), handle);
    EXPECT_EQ(call.at("tree").get<std::string>().rfind("[0.000ms  ] > " + handle + "\n", 0), 0u);
    EXPECT_EQ(call.at("events").back().at("kind"), "end");
  }
  const CommandResult text = cli(demo, {"slow", "-n", "hotscope-demo", "--top", "1"});
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("\n" + handle + ": "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("] > " + handle + "\n"), std::string::npos);
  const CommandResult unknown = cli(demo, {"slow", "-p", pid, "--function", "no such function"});
  EXPECT_EQ(unknown.status, 0) << unknown.err;
  EXPECT_NE(unknown.out.find("(no call kept)"), std::string::npos) << unknown.out;
  EXPECT_EQ(cli(demo, {"slow", "-p", pid, "--top", "0"}).status, 2);
}

// A gzip stream starts with 1f 8b.
bool gzipped(const std::string& bytes) {
  return bytes.size() > 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

TEST(AgentCli, HeapProfileInBothFormats) {
  Demo demo(Env{{"HOTSCOPE_HEAP_MODE", "full"}});
  const std::string pid = std::to_string(demo.pid());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const CommandResult list = cli(demo, {"list"});
  EXPECT_NE(list.out.find("timing,trace,heap-full"), std::string::npos) << list.out;

  const CommandResult dhat = cli(demo, {"heap", "-p", pid});
  ASSERT_EQ(dhat.status, 0) << dhat.err;
  const Json cli_profile = Json::parse(dhat.out);
  const Json curl_profile = Json::parse(demo.get("/v1/heap?format=dhat"));
  for (const Json* profile : {&cli_profile, &curl_profile}) {
    EXPECT_EQ(profile->at("pid"), demo.pid());
    EXPECT_EQ(profile->at("mode"), "cpp-heap");
    EXPECT_GT(profile->at("pps").size(), 10u);
  }
  // The service keeps allocating: the later answer has at least the earlier one's total.
  auto total = [](const Json& profile) {
    std::uint64_t bytes = 0;
    for (const Json& pp : profile.at("pps")) {
      bytes += pp.at("tb").get<std::uint64_t>();
    }
    return bytes;
  };
  EXPECT_GE(total(curl_profile), total(cli_profile));

  const fs::path file = demo.scratch() / "heap.pb.gz";
  const CommandResult pprof =
      cli(demo, {"heap", "-n", "hotscope-demo", "--format", "pprof", "-o", file});
  EXPECT_EQ(pprof.status, 0) << pprof.err;
  EXPECT_EQ(pprof.out, "");
  EXPECT_TRUE(gzipped(slurp(file)));
  EXPECT_TRUE(gzipped(demo.get("/v1/heap?format=pprof")));
}

TEST(AgentCli, EachFailureIsOneLineWithItsExitCode) {
  Demo demo;
  const std::string pid = std::to_string(demo.pid());
  auto expect = [&](const std::vector<std::string>& arguments, int code, const std::string& text) {
    const CommandResult result = cli(demo, arguments);
    EXPECT_EQ(result.status, code) << result.err;
    EXPECT_NE(result.err.find(text), std::string::npos) << result.err;
    EXPECT_EQ(result.out, "");
  };
  expect({"stats"}, 2, "hotscope: stats: say which process with -p PID or -n NAME\n");
  expect({"stats", "-p", pid, "-n", "hotscope-demo"}, 2, "give -p PID or -n NAME, not both");
  expect({"trace", "-p", pid, "--format", "svg"}, 2, "svg");
  expect({"frobnicate"}, 2, "hotscope: unknown command 'frobnicate'; see hotscope --help\n");
  expect({"info", "-p", "999999999"}, 3, "hotscope: no process with pid 999999999\n");
  expect({"info", "-n", "no-such-program"}, 3, "hotscope: no process named no-such-program\n");
  // PID 1 exists but runs no agent in this directory.
  expect({"info", "-p", "1"}, 4, "runs no hotscope agent");
  // The demo has the heap profiler linked in, off unless HOTSCOPE_HEAP_MODE says otherwise.
  expect({"heap", "-p", pid}, 7,
         "heap profiling is off in this process: start it with "
         "HOTSCOPE_HEAP_MODE=full");

  // An unwritable output file: nothing is asked, so no reset happens.
  const std::uint64_t calls = calls_of(Json::parse(demo.get("/v1/stats")), "demo::Service::handle");
  expect({"reset", "-p", pid, "-o", "/nonexistent/dir/out"}, 8,
         "hotscope: cannot write /nonexistent/dir/out: No such file or directory\n");
  EXPECT_GE(calls_of(Json::parse(demo.get("/v1/stats")), "demo::Service::handle"), calls);

  // A process whose agent would speak another API version: the demo's file, rewritten.
  Json info = Json::parse(slurp(demo.info_path()));
  info["api_version"] = 2;
  std::ofstream(demo.info_path()) << info.dump();
  expect({"info", "-p", pid}, 6, "speaks agent API v2, this hotscope speaks v1");
}

// docs/agent.md, "Command-line conventions": every error one line starting "hotscope:" that
// says where to look, numbers checked in words, the version, usage lines naming `hotscope`.
TEST(AgentCli, CommandLineConventions) {
  const auto expect_error = [](const std::vector<std::string>& arguments, const std::string& line) {
    std::vector<std::string> words{HOTSCOPE_CLI};
    words.insert(words.end(), arguments.begin(), arguments.end());
    const CommandResult result = run(words);
    EXPECT_EQ(result.status, 2) << result.err;
    EXPECT_EQ(result.err, line);
    EXPECT_EQ(result.out, "");
  };
  expect_error({"bogus"}, "hotscope: unknown command 'bogus'; see hotscope --help\n");
  expect_error({}, "hotscope: say which command to run; see hotscope --help\n");
  expect_error({"trace", "-p", "1", "--seconds", "0"},
               "hotscope: --seconds must be greater than 0 (not 0); see hotscope trace --help\n");
  expect_error({"trace", "-p", "1", "--seconds", "-1"},
               "hotscope: --seconds must be greater than 0 (not -1); see hotscope trace --help\n");
  expect_error({"run"}, "hotscope: command is required; see hotscope run --help\n");
  expect_error({"info", "--bogus"}, "hotscope: The following argument was not expected: --bogus; "
                                    "see hotscope info --help\n");
  expect_error({"vm", "run", "x", "--calls", "-1"},
               "hotscope: --calls must be a whole number from 1 to 1000000000 (not -1); see "
               "hotscope vm run --help\n");

  for (const std::vector<std::string>& version :
       {std::vector<std::string>{HOTSCOPE_CLI, "--version"}, {HOTSCOPE_CLI, "version"}}) {
    const CommandResult result = run(version);
    EXPECT_EQ(result.status, 0);
    EXPECT_EQ(result.out, std::string("hotscope ") + HOTSCOPE_VERSION + "\n");
  }
  // Run by its full path, the usage still names the command `hotscope`.
  for (const std::vector<std::string>& help : {std::vector<std::string>{HOTSCOPE_CLI, "--help"},
                                               {HOTSCOPE_CLI, "trace", "--help"},
                                               {HOTSCOPE_CLI, "vm", "run", "--help"}}) {
    const CommandResult result = run(help);
    EXPECT_EQ(result.status, 0) << result.err;
    EXPECT_NE(result.out.find("Usage: hotscope"), std::string::npos) << result.out;
    EXPECT_EQ(result.out.find(HOTSCOPE_CLI), std::string::npos) << result.out;
    EXPECT_EQ(result.out.find("e+308"), std::string::npos) << result.out;
  }
}

TEST(AgentCli, ProgramsWithoutAnAgentAndAmbiguousNames) {
  Demo off(Env{{"HOTSCOPE_AGENT", "0"}}, false);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const CommandResult no_agent = cli(off, {"stats", "-p", std::to_string(off.pid())});
  EXPECT_EQ(no_agent.status, 4);
  EXPECT_NE(no_agent.err.find("unless HOTSCOPE_AGENT=0"), std::string::npos) << no_agent.err;
  const CommandResult by_name = cli(off, {"stats", "-n", "hotscope-demo"});
  EXPECT_EQ(by_name.status, 4) << by_name.err;

  // Two demos sharing one runtime directory: the name matches both.
  Demo first;
  const pid_t second = fork();
  if (second == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    setenv("HOTSCOPE_RUNTIME_DIR", first.runtime_dir().c_str(), 1);
    freopen("/dev/null", "w", stdout);
    execl(HOTSCOPE_DEMO, HOTSCOPE_DEMO, "--seconds", "0", static_cast<char*>(nullptr));
    _exit(127);
  }
  const fs::path second_info = hotscope::agent::info_path(first.runtime_dir(), second);
  for (int i = 0; i < 1500 && !fs::exists(second_info); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const CommandResult ambiguous = cli(first, {"info", "-n", "hotscope-demo"});
  EXPECT_EQ(ambiguous.status, 2);
  EXPECT_NE(ambiguous.err.find("2 processes named hotscope-demo"), std::string::npos)
      << ambiguous.err;
  EXPECT_NE(ambiguous.err.find(std::to_string(second)), std::string::npos);
  EXPECT_NE(ambiguous.err.find("choose one with -p PID"), std::string::npos);
  kill(second, SIGTERM);
  waitpid(second, nullptr, 0);
}

TEST(AgentCli, AnotherUsersProcessIsPermissionDenied) {
  if (geteuid() != 0 || std::string(SETPRIV).empty()) {
    GTEST_SKIP() << "needs root and setpriv to act as another user";
  }
  Demo demo;
  auto as_nobody = [&] {
    return run({SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups", HOTSCOPE_CLI, "stats",
                "-p", std::to_string(demo.pid())},
               {{"HOTSCOPE_RUNTIME_DIR", demo.runtime_dir()}});
  };
  // The private directory: its files cannot even be read.
  const CommandResult unreadable = as_nobody();
  EXPECT_EQ(unreadable.status, 5) << unreadable.err;
  EXPECT_NE(unreadable.err.find("permission denied"), std::string::npos) << unreadable.err;
  // Readable files and a connectable socket: the agent's peer check answers 403.
  fs::permissions(demo.scratch(), fs::perms::others_exec, fs::perm_options::add);
  fs::permissions(demo.runtime_dir(), fs::perms::others_read | fs::perms::others_exec,
                  fs::perm_options::add);
  fs::permissions(demo.info_path(), fs::perms::others_read, fs::perm_options::add);
  fs::permissions(demo.socket(), fs::perms::all, fs::perm_options::add);
  const CommandResult refused = as_nobody();
  EXPECT_EQ(refused.status, 5) << refused.err;
  EXPECT_NE(refused.err.find("uid 65534 may not use this agent"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.out, "");
}

TEST(AgentCli, ListRemovesTheFilesOfEndedProcesses) {
  Demo killed;
  const fs::path socket = killed.socket();
  const fs::path info = killed.info_path();
  const std::string pid = std::to_string(killed.pid());
  killed.kill_hard(); // no chance to clean up
  ASSERT_TRUE(fs::exists(socket));
  ASSERT_TRUE(fs::exists(info));
  // A file from a process whose pid now belongs to another one (its start time differs).
  const fs::path reused = hotscope::agent::info_path(killed.runtime_dir(), 1);
  std::ofstream(reused)
      << R"({"api_version": 1, "pid": 1, "name": "old", "start_ticks": 999999999999})";

  const CommandResult list = cli(killed, {"list"});
  EXPECT_EQ(list.status, 0);
  EXPECT_NE(list.err.find("removed the files of process " + pid + ", which has ended"),
            std::string::npos)
      << list.err;
  // Pid 1 runs: its pid was reused, it has not ended.
  EXPECT_EQ(list.err.find("process 1, which has ended"), std::string::npos) << list.err;
  EXPECT_NE(list.err.find("removed the files of an earlier process 1: that pid now belongs to "
                          "another process (its start time differs)"),
            std::string::npos)
      << list.err;
  EXPECT_NE(list.err.find("no process runs a hotscope agent"), std::string::npos) << list.err;
  EXPECT_FALSE(fs::exists(socket));
  EXPECT_FALSE(fs::exists(info));
  EXPECT_FALSE(fs::exists(reused));
  EXPECT_EQ(cli(killed, {"info", "-p", pid}).status, 3);
}

// A Unix socket bound at `path` (and listening if asked); the socket's fd.
int bound_socket(const fs::path& path, bool listening) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
  EXPECT_EQ(bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0) << path;
  if (listening) {
    EXPECT_EQ(listen(fd, 4), 0);
  }
  return fd;
}

// A <pid>.sock without its <pid>.json whose pid runs was never removed.
TEST(AgentCli, ListRemovesASocketNobodyListensOn) {
  Demo demo;
  const fs::path& dir = demo.runtime_dir();
  const auto ten_seconds_ago = fs::file_time_type::clock::now() - std::chrono::seconds(10);
  // Left behind under a pid that now runs (this test's): nobody listens, made 10 s ago.
  const fs::path stale = hotscope::agent::socket_path(dir, getpid());
  close(bound_socket(stale, false));
  fs::last_write_time(stale, ten_seconds_ago);
  // An agent between its bind() and listen(): nobody listens yet, made just now.
  const fs::path starting = hotscope::agent::socket_path(dir, 1);
  const int starting_fd = bound_socket(starting, false);
  // Someone listens, with no <pid>.json beside it (yet).
  const fs::path listening = hotscope::agent::socket_path(dir, getppid());
  const int listening_fd = bound_socket(listening, true);
  fs::last_write_time(listening, ten_seconds_ago);

  const CommandResult list = cli(demo, {"list"});
  EXPECT_EQ(list.status, 0) << list.err;
  EXPECT_EQ(list.err, "hotscope: removed the socket " + stale.string() +
                          ", on which nobody listens (no " + std::to_string(getpid()) +
                          ".json beside it)\n");
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(starting));
  EXPECT_TRUE(fs::exists(listening));
  EXPECT_NE(list.out.find(std::to_string(demo.pid()) + "  hotscope-demo"), std::string::npos)
      << list.out;
  close(starting_fd);
  close(listening_fd);
}

// The sockets an agent's process holds open (listeners and connections).
std::size_t open_sockets(pid_t pid) {
  std::size_t count = 0;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", error)) {
    count += fs::read_symlink(entry.path(), error).string().rfind("socket:", 0) == 0 ? 1 : 0;
  }
  return count;
}

// A client that connects and then says nothing; never waits for the connection.
int idle_client(const sockaddr* address, socklen_t length) {
  const int fd = socket(address->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  static_cast<void>(connect(fd, address, length));
  return fd;
}

// 32 idle connections made the agent refuse everyone else for the idle timeout (10 s).
TEST(AgentCli, AHundredIdleConnectionsDelayNoAnswer) {
  Demo demo(Env{{"HOTSCOPE_AGENT_TCP", "127.0.0.1:0"}});
  const std::string pid = std::to_string(demo.pid());
  const std::string address = Json::parse(slurp(demo.info_path())).at("enabled").at("metrics_tcp");
  sockaddr_un unix_address{};
  unix_address.sun_family = AF_UNIX;
  std::snprintf(unix_address.sun_path, sizeof(unix_address.sun_path), "%s", demo.socket().c_str());
  sockaddr_in tcp_address{};
  tcp_address.sin_family = AF_INET;
  tcp_address.sin_port =
      htons(static_cast<std::uint16_t>(std::stoi(address.substr(address.find(':') + 1))));
  tcp_address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

  const std::size_t sockets_before = open_sockets(demo.pid());
  std::vector<int> idle;
  for (int i = 0; i < 100; ++i) {
    idle.push_back(
        idle_client(reinterpret_cast<const sockaddr*>(&unix_address), sizeof(unix_address)));
    idle.push_back(
        idle_client(reinterpret_cast<const sockaddr*>(&tcp_address), sizeof(tcp_address)));
  }
  // The agent holds all 200 (it accepts at once; they would be dropped after 10 s idle).
  for (int i = 0; i < 100 && open_sockets(demo.pid()) < sockets_before + 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(open_sockets(demo.pid()), sockets_before + 200);

  const auto seconds_since = [](std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  auto started = std::chrono::steady_clock::now();
  const CommandResult stats = cli(demo, {"stats", "-p", pid});
  const double stats_seconds = seconds_since(started);
  started = std::chrono::steady_clock::now();
  const CommandResult scrape =
      run({CURL, "--silent", "--fail", "--max-time", "20", "http://" + address + "/v1/metrics"});
  const double scrape_seconds = seconds_since(started);
  for (const int fd : idle) {
    close(fd);
  }
  EXPECT_EQ(stats.status, 0) << stats.err;
  EXPECT_NE(stats.out.find("demo::Service::handle"), std::string::npos);
  EXPECT_LT(stats_seconds, 1.0);
  EXPECT_EQ(scrape.status, 0) << scrape.err;
  EXPECT_EQ(prometheus_problems(scrape.out), std::vector<std::string>{});
  EXPECT_LT(scrape_seconds, 1.0);
  std::cout << "with 100 idle connections on each listener: hotscope stats " << stats_seconds
            << " s, a metrics scrape " << scrape_seconds << " s\n";
}

// A full file system: `hotscope trace -o t.json` truncated the existing file and left 4,096
// bytes of the new one.
TEST(AgentCli, OutputToAFullFileSystemKeepsTheEarlierFile) {
  const hotscope::testing::SmallTmpfs tmpfs;
  if (!tmpfs.skip_reason().empty()) {
    GTEST_SKIP() << tmpfs.skip_reason();
  }
  Demo demo;
  const std::string pid = std::to_string(demo.pid());
  const fs::path file = tmpfs.path() / "t.json";
  const CommandResult earlier = cli(demo, {"info", "-p", pid, "-o", file});
  ASSERT_EQ(earlier.status, 0) << earlier.err;
  const std::string earlier_text = slurp(file);
  EXPECT_EQ(Json::parse(earlier_text).at("pid"), demo.pid());
  tmpfs.fill();
  const CommandResult full = cli(demo, {"trace", "-p", pid, "-o", file});
  EXPECT_EQ(full.status, 8);
  EXPECT_EQ(full.err, "hotscope: cannot write " + file.string() + ": No space left on device\n");
  EXPECT_EQ(slurp(file), earlier_text);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(tmpfs.path())) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"filler", "t.json"}));
}

} // namespace
