// The agent's pprof endpoints as Go's net/http/pprof serves them, read by `go tool pprof` over the
// TCP listener (HOTSCOPE_AGENT_TCP) while hotscope-demo runs: /debug/pprof/heap (the heap
// profile now), /debug/pprof/profile?seconds=N (the CPU samples of the next N seconds) and
// /debug/pprof/wall?seconds=N (wall time per scope stack over the next N seconds, from the trace
// window) and /debug/pprof/mutex (the lock contention, Go's contention profile).
#include "demo_process.hpp"
#include "export/export.hpp"
#include "export/snapshot_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <regex>

namespace {

using namespace hotscope::testing;
using Json = nlohmann::json;

// `go tool pprof ARGS`, with its downloaded copies kept in the scratch directory.
CommandResult go_pprof(const fs::path& scratch, std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), {GO, "tool", "pprof"});
  return run(arguments, {{"PPROF_TMPDIR", scratch / "pprof"}});
}

std::string tcp_address(const Demo& demo) {
  return Json::parse(slurp(demo.info_path())).at("enabled").at("metrics_tcp");
}

// The flat column's function names of `go tool pprof -top` output, in its order.
std::vector<std::string> top_functions(const std::string& output) {
  std::vector<std::string> names;
  static const std::regex row(R"(^\s*\S+\s+\S+%\s+\S+%\s+\S+\s+\S+%\s+(.+)$)");
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (std::regex_match(line, match, row)) {
      names.push_back(match[1]);
    }
  }
  return names;
}

TEST(AgentPprof, GoToolPprofReadsTheWallProfileOverTcp) {
  // A window that holds more than the two seconds asked for (the tests' demos keep 2 MiB).
  Demo demo(Env{{"HOTSCOPE_AGENT_TCP", "127.0.0.1:0"}, {"HOTSCOPE_TRACE_MIB", "32"}});
  const std::string address = tcp_address(demo);
  // pprof waits for the answer 1.5 times the seconds asked for unless told: the agent's answer
  // comes after those 2 s, once the profile is built, which under a sanitizer on a busy machine
  // took more than the second left.
  const CommandResult top =
      go_pprof(demo.scratch(), {"-top", "-nodefraction=0", "-timeout=60",
                                "http://" + address + "/debug/pprof/wall?seconds=2"});
  ASSERT_EQ(top.status, 0) << top.err;
  EXPECT_NE(top.out.find("Type: wall"), std::string::npos) << top.out;
  const std::vector<std::string> functions = top_functions(top.out);
  // The demo's scopes, each with the time it was the innermost one open.
  for (const char* name : {"demo::Service::handle_get", "backend_query", "parse_request"}) {
    EXPECT_NE(std::find(functions.begin(), functions.end(), name), functions.end())
        << name << " not in\n"
        << top.out;
  }
  // Two seconds of wall time: at most two seconds per thread inside scopes.
  EXPECT_NE(top.out.find("Duration: 2"), std::string::npos) << top.out;
  std::smatch total;
  ASSERT_TRUE(std::regex_search(top.out, total, std::regex(R"(of ([0-9.]+)(s|ms|us) total)")))
      << top.out;
  const double seconds = std::stod(total[1]) / (total[2] == "ms"   ? 1e3
                                                : total[2] == "us" ? 1e6
                                                                   : 1);
  EXPECT_GT(seconds, 0);
  EXPECT_LT(seconds, 2.1 * 8); // the demo's threads: acceptor, parser, two workers, writer...
}

// Go's path of the CPU profile: the sampler runs for the seconds asked (it is off in the demo),
// and go tool pprof reads it without asking the agent for symbols.
TEST(AgentPprof, GoToolPprofReadsTheCpuProfileOverTcp) {
  Demo demo(Env{{"HOTSCOPE_AGENT_TCP", "127.0.0.1:0"}}, true, kBusyDemo);
  std::vector<std::string> arguments{"-top", "-nodefraction=0", "-timeout=60"};
  if (!DEMO_HEAP) {
    // A sanitizer build's demo is so large that pprof's own symbolization of its mappings takes
    // minutes: there pprof reads the names the profile carries (its Lines) as they are.
    arguments.push_back("-symbolize=none");
  }
  arguments.push_back("http://" + tcp_address(demo) + "/debug/pprof/profile?seconds=2");
  const CommandResult top = go_pprof(demo.scratch(), arguments);
  ASSERT_EQ(top.status, 0) << top.err;
  EXPECT_NE(top.out.find("Type: cpu"), std::string::npos) << top.out;
  EXPECT_NE(top.out.find("Duration: 2"), std::string::npos) << top.out;
  // Which of the demo's functions and scopes ran in two seconds varies: one of them did.
  const std::vector<std::string> functions = top_functions(top.out);
  EXPECT_TRUE(std::any_of(functions.begin(), functions.end(), [](const std::string& name) {
    return name.find("demo::") != std::string::npos;
  })) << top.out;
}

TEST(AgentPprof, TheHeapProfileOverTcpShowsTheServiceNotTheAllocator) {
  if (!DEMO_HEAP) {
    GTEST_SKIP() << "hotscope-demo has no heap profiler in sanitizer builds";
  }
  Demo demo(Env{{"HOTSCOPE_AGENT_TCP", "127.0.0.1:0"}, {"HOTSCOPE_HEAP_MODE", "full"}});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const CommandResult top =
      go_pprof(demo.scratch(), {"-top", "-sample_index=alloc_space",
                                "http://" + tcp_address(demo) + "/debug/pprof/heap"});
  ASSERT_EQ(top.status, 0) << top.err;
  const std::vector<std::string> functions = top_functions(top.out);
  ASSERT_FALSE(functions.empty()) << top.out;
  bool service = false;
  for (const std::string& name : functions) {
    service = service || name.find("demo::") != std::string::npos;
    // drop_frames: the allocator's own frames are never the flat ones.
    EXPECT_EQ(name.find("operator new"), std::string::npos) << top.out;
    EXPECT_EQ(name.find("allocate"), std::string::npos) << top.out;
  }
  EXPECT_TRUE(service) << top.out;
}

// Go's path of the contention profile, over TCP: pprof reads it as a profile of delay (whether
// the demo's Lockables were contended in its short run varies; AgentLocks checks the samples).
TEST(AgentPprof, GoToolPprofReadsTheMutexProfileOverTcp) {
  Demo demo(Env{{"HOTSCOPE_AGENT_TCP", "127.0.0.1:0"}});
  const CommandResult top =
      go_pprof(demo.scratch(),
               {"-top", "-symbolize=none", "http://" + tcp_address(demo) + "/debug/pprof/mutex"});
  ASSERT_EQ(top.status, 0) << top.err;
  EXPECT_NE(top.out.find("Type: delay"), std::string::npos) << top.out;
}

// The contention of known locks: pprof shows the delay per wait, "wait for NAME" the flat frames,
// the contention counts under -sample_index=contentions.
TEST(AgentPprof, GoToolPprofReadsTheContentionOfKnownLocks) {
  const ScratchDir scratch;
  const fs::path file = scratch.path() / "mutex.pb.gz";
  {
    std::ofstream out(file, std::ios::binary);
    hotscope::exporters::write_pprof_mutex(known_snapshot_with_locks(), out);
  }
  const CommandResult delay = go_pprof(scratch.path(), {"-top", "-nodefraction=0", file.string()});
  ASSERT_EQ(delay.status, 0) << delay.err;
  EXPECT_NE(delay.out.find("Type: delay"), std::string::npos) << delay.out;
  EXPECT_NE(delay.out.find("of 700ns total"), std::string::npos) << delay.out;
  const std::vector<std::string> functions = top_functions(delay.out);
  EXPECT_EQ(functions.at(0), "wait for cache_mutex") << delay.out;
  const CommandResult contentions = go_pprof(
      scratch.path(), {"-top", "-sample_index=contentions", "-nodefraction=0", file.string()});
  ASSERT_EQ(contentions.status, 0) << contentions.err;
  EXPECT_NE(contentions.out.find("of 2 total"), std::string::npos) << contentions.out;
}

// On the Unix socket too; the TCP listener serves only what scrapers read, nothing that resets.
TEST(AgentPprof, EndpointsOnTheSocketAndWhatTcpRefuses) {
  Demo demo(Env{{"HOTSCOPE_AGENT_TCP", "127.0.0.1:0"}});
  const CommandResult profile = demo.curl({"--fail", "--output", demo.scratch() / "wall.pb.gz",
                                           "http://localhost/debug/pprof/wall?seconds=0.5"});
  ASSERT_EQ(profile.status, 0) << profile.err;
  const std::string bytes = slurp(demo.scratch() / "wall.pb.gz");
  ASSERT_GT(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f); // gzip
  for (const char* path : {"/debug/pprof/wall?", "/debug/pprof/profile?"}) {
    for (const char* bad : {"seconds=0", "seconds=-1", "seconds=x", "seconds=100000", "depth=3"}) {
      const CommandResult answer =
          demo.curl({"--write-out", "%{http_code}", std::string("http://localhost") + path + bad});
      EXPECT_EQ(answer.out.substr(answer.out.size() - 3), "400") << path << bad << answer.out;
    }
  }
  const std::string tcp = "http://" + tcp_address(demo);
  for (const auto& [method, path] :
       std::vector<std::pair<std::string, std::string>>{{"POST", "/v1/reset"},
                                                        {"GET", "/v1/stats"},
                                                        {"GET", "/v1/trace"},
                                                        {"GET", "/v1/heap"}}) {
    const CommandResult answer =
        run({CURL, "--silent", "--write-out", "%{http_code}", "-X", method, tcp + path});
    EXPECT_EQ(answer.out.substr(answer.out.size() - 3), "404") << method << " " << path;
  }
  // The 404 lists what TCP serves.
  const CommandResult listing = run({CURL, "--silent", tcp + "/nothing"});
  const Json endpoints = Json::parse(listing.out).at("endpoints");
  EXPECT_EQ(endpoints, (Json{"GET /v1/metrics", "GET /debug/pprof/heap",
                             "GET /debug/pprof/profile?format=pprof|folded&seconds=N",
                             "GET /debug/pprof/wall?seconds=N", "GET /debug/pprof/mutex"}));
  // Profiles being taken do not delay the exit.
  std::thread slow([&] { demo.curl({"http://localhost/debug/pprof/wall?seconds=60"}); });
  std::thread slow_cpu([&] { demo.curl({"http://localhost/debug/pprof/profile?seconds=60"}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto asked = std::chrono::steady_clock::now();
  EXPECT_EQ(demo.stop(), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::seconds(10));
  slow.join();
  slow_cpu.join();
}

} // namespace
