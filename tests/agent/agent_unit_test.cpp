// The agent's parts without a server: its configuration, the recent
// trace window, and the endpoints as a function from request to response.
#include "agent/protocol.hpp"
#include "agent/routes.hpp"
#include "config/config.hpp"
#include "cpu/cpu.hpp"
#include "export/export.hpp"
#include "export/formats.hpp"
#include "export/snapshot_fixture.hpp"
#include "instrument/instrument.hpp"
#include "trace/trace.hpp"

#include <hotscope/hotscope.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include <map>
#include <random>
#include <sstream>
#include <string>

namespace {

using namespace hotscope;
namespace ht = hotscope::testing;

config::Parsed parse(const std::map<std::string, std::string>& env) {
  return config::parse([&](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(AgentConfig, OnByDefaultInTheXdgRuntimeDirectory) {
  const auto parsed = parse({{"XDG_RUNTIME_DIR", "/run/user/7"}});
  EXPECT_TRUE(parsed.errors.empty());
  EXPECT_TRUE(parsed.config.agent);
  EXPECT_EQ(parsed.config.runtime_dir, "/run/user/7/hotscope");
  EXPECT_EQ(parsed.config.agent_tcp_host, "");
}

TEST(AgentConfig, RuntimeDirectoryFallsBackToTmpPerUser) {
  EXPECT_EQ(config::runtime_dir(nullptr, nullptr, 1000), "/tmp/hotscope-1000");
  EXPECT_EQ(config::runtime_dir("", "", 1000), "/tmp/hotscope-1000");
  EXPECT_EQ(config::runtime_dir("/x/y", "/run/user/1000", 1000), "/x/y");
  EXPECT_EQ(agent::socket_path("/x", 42), "/x/42.sock");
  EXPECT_EQ(agent::info_path("/x", 42), "/x/42.json");
}

TEST(AgentConfig, ReadsEveryAgentVariable) {
  const auto parsed = parse({{"HOTSCOPE_AGENT", "0"},
                             {"HOTSCOPE_RUNTIME_DIR", "/tmp/rt"},
                             {"HOTSCOPE_AGENT_TCP", "127.0.0.1:9464"}});
  EXPECT_TRUE(parsed.errors.empty());
  EXPECT_FALSE(parsed.config.agent);
  EXPECT_EQ(parsed.config.runtime_dir, "/tmp/rt");
  EXPECT_EQ(parsed.config.agent_tcp_host, "127.0.0.1");
  EXPECT_EQ(parsed.config.agent_tcp_port, 9464);
  const auto v6 = parse({{"HOTSCOPE_AGENT_TCP", "[::1]:0"}});
  EXPECT_TRUE(v6.errors.empty());
  EXPECT_EQ(v6.config.agent_tcp_host, "::1");
  EXPECT_EQ(v6.config.agent_tcp_port, 0);
}

TEST(AgentConfig, RemoteAddressesOnlyWhenExplicitlyAllowed) {
  const auto refused = parse({{"HOTSCOPE_AGENT_TCP", "0.0.0.0:9464"}});
  ASSERT_EQ(refused.errors.size(), 1u);
  EXPECT_NE(refused.errors[0].find("not a loopback address"), std::string::npos);
  EXPECT_NE(refused.errors[0].find("HOTSCOPE_AGENT_TCP_ALLOW_REMOTE=1"), std::string::npos);
  EXPECT_EQ(refused.config.agent_tcp_host, "");
  const auto allowed =
      parse({{"HOTSCOPE_AGENT_TCP", "0.0.0.0:9464"}, {"HOTSCOPE_AGENT_TCP_ALLOW_REMOTE", "1"}});
  EXPECT_TRUE(allowed.errors.empty());
  EXPECT_EQ(allowed.config.agent_tcp_host, "0.0.0.0");
}

TEST(AgentConfig, EachBadValueGetsOneLineNamingTheVariable) {
  const auto parsed = parse({{"HOTSCOPE_AGENT", "yes"},
                             {"HOTSCOPE_RUNTIME_DIR", ""},
                             {"HOTSCOPE_AGENT_TCP_ALLOW_REMOTE", "2"},
                             {"HOTSCOPE_AGENT_TCP", "localhost:9464"}});
  ASSERT_EQ(parsed.errors.size(), 4u);
  EXPECT_NE(parsed.errors[0].find("HOTSCOPE_AGENT=\"yes\" is not 0 or 1; using 1"),
            std::string::npos);
  EXPECT_NE(parsed.errors[1].find("HOTSCOPE_RUNTIME_DIR is set but empty"), std::string::npos);
  EXPECT_NE(parsed.errors[2].find("HOTSCOPE_AGENT_TCP_ALLOW_REMOTE=\"2\""), std::string::npos);
  EXPECT_NE(parsed.errors[3].find("HOTSCOPE_AGENT_TCP=\"localhost:9464\""), std::string::npos);
  for (const auto& bad : {"127.0.0.1", "127.0.0.1:65536", "127.0.0.1:", "[::1:9464", ":9464"}) {
    EXPECT_EQ(parse({{"HOTSCOPE_AGENT_TCP", bad}}).errors.size(), 1u) << bad;
  }
  for (const auto& line : parsed.errors) {
    EXPECT_EQ(line.find('\n'), std::string::npos);
    EXPECT_EQ(line.rfind("hotscope: ", 0), 0u);
  }
  EXPECT_TRUE(parsed.config.agent);
}

// Thread 0 runs "outer" from 1 ms to 9 ms with "inner" from 2 to 3 ms and from 6 to 7 ms;
// thread 1 runs "load" from 1.5 to 4.5 ms. The snapshot ends at 10 ms.
Snapshot nested_snapshot() {
  ht::SnapshotBuilder b;
  const std::uint32_t main_thread = b.thread(4242, "main");
  const std::uint32_t loader = b.thread(4243, "loader");
  b.begin(main_thread, 1'000'000, "outer")
      .begin(main_thread, 2'000'000, "inner")
      .end(main_thread, 3'000'000, "inner")
      .begin(main_thread, 6'000'000, "inner")
      .message(main_thread, 6'500'000, "hello")
      .end(main_thread, 7'000'000, "inner")
      .end(main_thread, 9'000'000, "outer")
      .begin(loader, 1'500'000, "load")
      .end(loader, 4'500'000, "load");
  return b.build();
}

TEST(RecentTrace, ScopesOpenAtTheCutStartThere) {
  Snapshot snapshot = nested_snapshot();
  agent::keep_recent_trace(snapshot, 6'500'000); // the cut is at 3.5 ms
  EXPECT_EQ(snapshot.trace_start_ns, 3'500'000u);
  std::vector<std::string> seen;
  for (const TraceEvent& event : snapshot.trace) {
    EXPECT_GE(event.ns, 3'500'000u);
    const char* kind = event.kind == EventKind::Begin ? ">"
                       : event.kind == EventKind::End ? "<"
                                                      : "-";
    seen.push_back(std::to_string(event.thread) + kind + snapshot.names[event.name] + "@" +
                   std::to_string(event.ns / 100'000));
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"0>outer@35", "1>load@35", "1<load@45", "0>inner@60",
                                            "0-hello@65", "0<inner@70", "0<outer@90"}));
  std::ostringstream folded;
  exporters::write_folded(snapshot, folded);
  EXPECT_NE(folded.str().find("demo;main;outer 4500000\n"), std::string::npos) << folded.str();
  EXPECT_NE(folded.str().find("demo;loader;load 1000000\n"), std::string::npos) << folded.str();
}

// A lock wait that began before the cut counts from the cut in the folded stacks, as a frame
// inside the scope reopened there.
TEST(RecentTrace, ALockWaitAcrossTheCutCountsFromTheCut) {
  Snapshot snapshot = ht::known_snapshot_with_locks();
  snapshot.duration_ns = 4'000;
  agent::keep_recent_trace(snapshot, 2'700); // the cut is at 1300 ns, in a wait inside "update"
  std::ostringstream folded;
  exporters::write_folded(snapshot, folded);
  EXPECT_NE(folded.str().find("demo;locker-b;update;wait for cache_mutex 300\n"), std::string::npos)
      << folded.str();
  EXPECT_NE(folded.str().find("demo;locker-b;update 400\n"), std::string::npos) << folded.str();
}

TEST(RecentTrace, AWindowLongerThanTheTraceKeepsEverything) {
  const Snapshot original = nested_snapshot();
  Snapshot snapshot = original;
  agent::keep_recent_trace(snapshot, 10'000'000);
  EXPECT_EQ(snapshot.trace.size(), original.trace.size());
  EXPECT_EQ(snapshot.trace_start_ns, original.trace_start_ns);
  agent::keep_recent_trace(snapshot, 50'000'000);
  EXPECT_EQ(snapshot.trace.size(), original.trace.size());
}

TEST(RecentTrace, ACutAfterEveryEventLeavesOnlyOpenScopes) {
  Snapshot snapshot = nested_snapshot();
  snapshot.trace.pop_back(); // "outer" still open at the end
  agent::keep_recent_trace(snapshot, 500'000);
  ASSERT_EQ(snapshot.trace.size(), 1u);
  EXPECT_EQ(snapshot.names[snapshot.trace[0].name], "outer");
  EXPECT_EQ(snapshot.trace[0].ns, 9'500'000u);
}

// Per thread: B minus E in the Chrome JSON of `snapshot`, and whether it ever went below 0.
std::map<std::int64_t, int> open_scopes(const Snapshot& snapshot, bool& negative) {
  std::ostringstream out;
  exporters::write_chrome_json(snapshot, out);
  std::map<std::int64_t, int> depth;
  const auto chrome = nlohmann::json::parse(out.str());
  for (const auto& event : chrome.at("traceEvents")) {
    if (event.at("ph") == "B" || event.at("ph") == "E") {
      int& open = depth[event.at("tid").get<std::int64_t>()];
      open += event.at("ph") == "B" ? 1 : -1;
      negative = negative || open < 0;
    }
  }
  std::erase_if(depth, [](const auto& entry) { return entry.second == 0; });
  return depth;
}

TEST(RecentTrace, RandomNestedTracesStayBalancedAtEveryCut) {
  std::mt19937 random(7);
  for (int round = 0; round < 50; ++round) {
    ht::SnapshotBuilder b;
    const std::string names[] = {"a", "b", "c", "d"};
    std::uint64_t last = 0;
    for (int t = 0; t < 3; ++t) {
      const std::uint32_t thread = b.thread(100 + t, "t" + std::to_string(t));
      std::vector<std::string> stack;
      std::uint64_t now = random() % 1000;
      for (int step = 0; step < 40; ++step) {
        now += 1 + random() % 1000;
        if (stack.empty() || (stack.size() < 4 && random() % 2 == 0)) {
          stack.push_back(names[random() % 4]);
          b.begin(thread, now, stack.back());
        } else if (random() % 5 == 0) {
          b.message(thread, now, "m");
        } else {
          b.end(thread, now, stack.back());
          stack.pop_back();
        }
      }
      while (!stack.empty()) {
        now += 1 + random() % 1000;
        b.end(thread, now, stack.back());
        stack.pop_back();
      }
      last = std::max(last, now);
    }
    b.snapshot().duration_ns = last + 1;
    const Snapshot full = b.build();
    for (std::uint64_t cut = 0; cut <= last + 1; cut += 1 + random() % 2000) {
      Snapshot recent = full;
      agent::keep_recent_trace(recent, full.duration_ns - cut);
      bool negative = false;
      EXPECT_EQ(open_scopes(recent, negative), (std::map<std::int64_t, int>{})) << cut;
      EXPECT_FALSE(negative) << cut;
    }
  }
}

agent::Response get(const std::string& path,
                    std::vector<std::pair<std::string, std::string>> query = {},
                    agent::Listener listener = agent::Listener::Unix) {
  agent::Process process;
  process.pid = 42;
  process.trace_window_bytes = 1 << 20;
  return agent::route(process, listener, {"GET", path, std::move(query), false});
}

TEST(Routes, EveryEndpointAnswers) {
  EXPECT_EQ(get("/v1/info").status, 200u);
  EXPECT_EQ(get("/v1/stats").content_type, "application/json");
  EXPECT_EQ(get("/v1/stats", {{"format", "table"}}).content_type, "text/plain; charset=utf-8");
  EXPECT_EQ(get("/v1/trace", {{"format", "folded"}, {"seconds", "0.5"}}).status, 200u);
  EXPECT_EQ(get("/v1/metrics").content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(get("/v1/threads", {{"stuck_ms", "0"}}).content_type, "application/json");
  EXPECT_EQ(get("/v1/threads", {{"format", "text"}}).content_type, "text/plain; charset=utf-8");
  const auto threads = nlohmann::json::parse(get("/v1/threads", {{"stuck_ms", "2.5"}}).body);
  EXPECT_EQ(threads.at("stuck_threshold_ns"), 2'500'000);
  EXPECT_EQ(threads.at("deadlocks"), nlohmann::json::array());
  const auto stats = nlohmann::json::parse(get("/v1/stats").body);
  EXPECT_TRUE(stats.contains("functions"));
  const auto locks = nlohmann::json::parse(get("/v1/locks").body);
  EXPECT_EQ(locks.at("locks"), nlohmann::json::array());
  EXPECT_EQ(locks.at("lock_figures").at("order_edges"), 0);
  EXPECT_EQ(get("/v1/locks", {{"format", "json"}}).status, 400u);
  EXPECT_EQ(get("/debug/pprof/mutex", {}, agent::Listener::Tcp).content_type,
            "application/octet-stream");
  EXPECT_EQ(nlohmann::json::parse(get("/v1/info").body).at("api_version"), agent::kApiVersion);
}

TEST(Routes, ErrorsNameTheProblem) {
  const auto missing = get("/v2/info");
  EXPECT_EQ(missing.status, 404u);
  EXPECT_EQ(nlohmann::json::parse(missing.body).at("endpoints").size(), 15u);
  EXPECT_EQ(get("/v1/stats", {{"format", "xml"}}).status, 400u);
  EXPECT_EQ(get("/v1/stats", {{"colour", "red"}}).status, 400u);
  for (const char* bad : {"0", "-1", "x", "1e400", "nan", "2s", ""}) {
    EXPECT_EQ(get("/v1/trace", {{"seconds", bad}}).status, 400u) << bad;
  }
  for (const char* bad : {"-1", "x", "1e400", "nan", ""}) {
    EXPECT_EQ(get("/v1/threads", {{"stuck_ms", bad}}).status, 400u) << bad;
  }
  EXPECT_EQ(get("/v1/threads", {{"format", "xml"}}).status, 400u);
  // A CPU profile takes whole seconds, 1 to 300; the wall profile any time up to an hour.
  for (const char* bad : {"0", "-1", "x", "1.5", "301", "1e400", "nan", "2s", ""}) {
    const auto cpu = get("/debug/pprof/profile", {{"seconds", bad}});
    EXPECT_EQ(cpu.status, 400u) << bad;
    EXPECT_EQ(nlohmann::json::parse(cpu.body).at("error"),
              fmt::format("seconds=\"{}\" is not a whole number of seconds from 1 to 300", bad));
  }
  for (const char* bad : {"0", "-1", "x", "3601", ""}) {
    EXPECT_EQ(get("/debug/pprof/wall", {{"seconds", bad}}).status, 400u) << bad;
  }
  // This test program is not linked with hotscope::heap: the answer says how to get a profile.
  const auto heap = get("/v1/heap");
  EXPECT_EQ(heap.status, 501u);
  EXPECT_NE(heap.body.find("link it with the CMake target hotscope::heap"), std::string::npos);
  EXPECT_NE(heap.body.find("HOTSCOPE_HEAP_MODE=full"), std::string::npos);
  EXPECT_NE(heap.body.find("hotscope run --heap"), std::string::npos);
  EXPECT_EQ(get("/v1/heap", {{"format", "svg"}}).status, 400u);
  EXPECT_EQ(nlohmann::json::parse(get("/v1/info").body).at("enabled").at("heap"), "not linked");
  const auto wrong_method = get("/v1/reset");
  EXPECT_EQ(wrong_method.status, 405u);
  EXPECT_EQ(wrong_method.allow, "POST");

  agent::Process no_trace;
  const auto off = agent::route(no_trace, agent::Listener::Unix, {"GET", "/v1/trace", {}, false});
  EXPECT_EQ(off.status, 501u);
  EXPECT_NE(off.body.find("HOTSCOPE_TRACE_MIB"), std::string::npos);
  const auto body = agent::route(no_trace, agent::Listener::Unix, {"POST", "/v1/reset", {}, true});
  EXPECT_EQ(body.status, 413u);
}

// POST /v1/instrument (docs/agent.md): a state of on or off, a non-empty pattern, and a pattern
// only where there are XRay functions (this test program has none); GET is refused. Without a
// pattern, the -finstrument-functions hooks are switched: the filter says so.
TEST(Routes, InstrumentRefusesBadRequests) {
  const auto post = [](std::vector<std::pair<std::string, std::string>> query) {
    return agent::route(agent::Process{}, agent::Listener::Unix,
                        {"POST", "/v1/instrument", std::move(query), false});
  };
  const auto error = [](const agent::Response& response) {
    return nlohmann::json::parse(response.body).at("error").get<std::string>();
  };
  for (const char* bad : {"", "yes", "ON", "1"}) {
    const auto response = post({{"state", bad}});
    EXPECT_EQ(response.status, 400u) << bad;
    EXPECT_EQ(error(response), fmt::format("state=\"{}\" is not on or off (POST "
                                           "/v1/instrument?state=on|off&function=PATTERN)",
                                           bad));
  }
  EXPECT_EQ(post({}).status, 400u);
  EXPECT_EQ(post({{"state", "on"}, {"function", ""}}).status, 400u);
  const auto no_xray = post({{"state", "off"}, {"function", "*"}});
  EXPECT_EQ(no_xray.status, 409u);
  EXPECT_NE(error(no_xray).find("no XRay function"), std::string::npos);
  EXPECT_EQ(post({{"state", "on"}, {"colour", "red"}}).status, 400u);
  const auto wrong_method = get("/v1/instrument", {{"state", "on"}});
  EXPECT_EQ(wrong_method.status, 405u);
  EXPECT_EQ(wrong_method.allow, "POST");

  const auto off = post({{"state", "off"}});
  ASSERT_EQ(off.status, 200u) << off.body;
  const auto answer = nlohmann::json::parse(off.body);
  EXPECT_EQ(answer.at("state"), "off");
  EXPECT_EQ(answer.at("xray_functions"), 0);
  EXPECT_TRUE(instrument::hooks_off.load());
  EXPECT_TRUE(instrument::filtered(0x1234)) << "every function's calls skipped";
  ASSERT_EQ(post({{"state", "on"}}).status, 200u);
  EXPECT_FALSE(instrument::hooks_off.load());
  EXPECT_FALSE(instrument::filtered(0x1234));
}

// Each format of export/formats.hpp is answered at its path, by its name, with its MIME type; the
// heap formats say why not without a heap library (this program has none; AgentDemo asks one).
TEST(Routes, EveryFormatAnswersWithTheTablesMimeType) {
  for (const exporters::FormatInfo& format : exporters::kFormats) {
    if (*format.path == '\0') {
      continue; // a file only
    }
    std::vector<std::pair<std::string, std::string>> query;
    if (*format.name != '\0') {
      query.emplace_back("format", format.name);
    }
    if (format.format == exporters::Format::PprofWall) {
      query.emplace_back("seconds", "0.001");
    }
    if (std::string(format.path) == "/debug/pprof/profile") {
      query.emplace_back("seconds", "1"); // its default is Go's 30
    }
    const auto response = get(format.path, query);
    if (std::string(format.path) == "/v1/heap") {
      EXPECT_EQ(response.status, 501u) << format.name;
      continue;
    }
    EXPECT_EQ(response.status, 200u) << format.path << " " << format.name;
    EXPECT_EQ(response.content_type, format.mime) << format.path << " " << format.name;
    if (*format.name != '\0') {
      const auto bad = get(format.path, {{"format", "x"}});
      EXPECT_EQ(nlohmann::json::parse(bad.body).at("error"),
                "format=\"x\" is not one of " + exporters::format_names(format.path, ", "));
    }
  }
  EXPECT_EQ(nlohmann::json::parse(get("/v1/stats", {{"format", ""}}).body).at("error"),
            "format=\"\" is not one of json, table, columns");
}

// The usage 404 lists, with each endpoint's formats from the table.
TEST(Routes, NotFoundListsEveryEndpointsUsage) {
  EXPECT_EQ(
      nlohmann::json::parse(get("/v2/info").body).at("endpoints"),
      nlohmann::json::array(
          {"GET /v1/info", "GET /v1/stats?format=json|table|columns",
           "GET /v1/trace?format=chrome|folded|text&seconds=N",
           "GET /v1/threads?format=json|text&stuck_ms=N",
           "GET /v1/slow?format=text|json&function=NAME&top=N", "GET /v1/locks", "GET /v1/metrics",
           "GET /v1/heap?format=dhat|pprof", "GET /v1/cpu?format=folded|pprof", "POST /v1/reset",
           "POST /v1/instrument?state=on|off&function=NAME", "GET /debug/pprof/heap",
           "GET /debug/pprof/profile?format=pprof|folded&seconds=N",
           "GET /debug/pprof/wall?seconds=N", "GET /debug/pprof/mutex"}));
  EXPECT_EQ(nlohmann::json::parse(get("/v1/trace", {{"colour", "red"}}).body).at("error"),
            "/v1/trace takes no parameter \"colour\" (see GET "
            "/v1/trace?format=chrome|folded|text&seconds=N)");
}

TEST(Routes, TheTcpListenerServesMetricsAndPprofOnly) {
  EXPECT_EQ(get("/v1/metrics", {}, agent::Listener::Tcp).status, 200u);
  const auto stats = get("/v1/stats", {}, agent::Listener::Tcp);
  EXPECT_EQ(stats.status, 404u);
  EXPECT_EQ(nlohmann::json::parse(stats.body).at("endpoints"),
            nlohmann::json::array({"GET /v1/metrics", "GET /debug/pprof/heap",
                                   "GET /debug/pprof/profile?format=pprof|folded&seconds=N",
                                   "GET /debug/pprof/wall?seconds=N", "GET /debug/pprof/mutex"}));
}

// A scraper that ranks OpenMetrics first gets it, on either listener (docs/agent.md).
TEST(Routes, MetricsInOpenMetricsWhenTheAcceptHeaderAsks) {
  agent::Process process;
  process.pid = 42;
  agent::Request request{"GET", "/v1/metrics", {}, false};
  request.accept = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5";
  for (const agent::Listener listener : {agent::Listener::Unix, agent::Listener::Tcp}) {
    const agent::Response response = agent::route(process, listener, request);
    EXPECT_EQ(response.status, 200u);
    EXPECT_EQ(response.content_type, "application/openmetrics-text; version=1.0.0; charset=utf-8");
    EXPECT_TRUE(response.body.ends_with("\n# EOF\n")) << response.body;
    EXPECT_NE(response.body.find("\n# TYPE hotscope_records_written counter\n"), std::string::npos)
        << response.body;
  }
  request.accept = "text/plain;version=0.0.4,application/openmetrics-text;q=0.5";
  const agent::Response text = agent::route(process, agent::Listener::Unix, request);
  EXPECT_EQ(text.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(text.body.find("# EOF"), std::string::npos);
}

// The CPU profile of the next N seconds: a sampler that was off runs for them only, one that
// was on stays on.
TEST(Routes, TheCpuProfileRunsTheSamplerForItsSecondsOnly) {
  ASSERT_EQ(cpu::hz(), 0u);
  const auto started = get("/debug/pprof/profile", {{"seconds", "1"}}, agent::Listener::Tcp);
  ASSERT_EQ(started.status, 200u) << started.body;
  EXPECT_EQ(started.content_type, "application/octet-stream");
  ASSERT_GT(started.body.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(started.body[0]), 0x1f); // gzip
  EXPECT_EQ(cpu::hz(), 0u);
  ASSERT_EQ(cpu::start(250), "");
  EXPECT_EQ(get("/debug/pprof/profile", {{"seconds", "1"}}).status, 200u);
  EXPECT_EQ(cpu::hz(), 250u);
  cpu::stop();
}

// `hotscope info` printed trace.events 0 whatever the window held: /v1/info takes a
// statistics-only snapshot, whose trace it does not convert.
TEST(Routes, InfoCountsTheEventsInTheTraceWindow) {
  for (int i = 0; i < 5; ++i) {
    HOTSCOPE_SCOPE("counted_in_the_window");
  }
  trace::collect_now();
  const auto info = nlohmann::json::parse(get("/v1/info").body);
  const std::uint64_t events = info.at("trace").at("events");
  EXPECT_GE(events, 10u); // each scope's begin and end
  EXPECT_LE(events, trace::snapshot().trace.size());
}

// GET /v1/slow: the kept slowest calls of this test program, of one function, `top` per function;
// an unknown function has none, a bad parameter is a 400 that says why.
TEST(Routes, SlowAnswersTheKeptCallsOfOneFunction) {
  for (int i = 0; i < 3; ++i) {
    HOTSCOPE_SCOPE("slow_route_probe");
    HOTSCOPE_MESSAGE("inside the probe");
  }
  trace::collect_now();
  const auto probe = get("/v1/slow", {{"format", "json"}, {"function", "slow_route_probe"}});
  ASSERT_EQ(probe.status, 200u) << probe.body;
  const auto json = nlohmann::json::parse(probe.body);
  ASSERT_EQ(json.at("calls").size(), 3u);
  for (const auto& call : json.at("calls")) {
    EXPECT_EQ(call.at("function"), "slow_route_probe");
    EXPECT_NE(call.at("tree").get<std::string>().find("  - inside the probe\n"), std::string::npos);
  }
  const auto top =
      get("/v1/slow", {{"format", "json"}, {"function", "slow_route_probe"}, {"top", "1"}});
  EXPECT_EQ(nlohmann::json::parse(top.body).at("calls").size(), 1u);
  const auto text = get("/v1/slow", {{"function", "slow_route_probe"}});
  EXPECT_EQ(text.content_type, "text/plain; charset=utf-8");
  EXPECT_NE(text.body.find("\nslow_route_probe: "), std::string::npos);
  const auto unknown = get("/v1/slow", {{"format", "json"}, {"function", "no_such_function"}});
  EXPECT_EQ(unknown.status, 200u);
  EXPECT_EQ(nlohmann::json::parse(unknown.body).at("calls"), nlohmann::json::array());
  for (const char* bad : {"0", "-1", "x", "1.5", ""}) {
    const auto refused = get("/v1/slow", {{"top", bad}});
    EXPECT_EQ(refused.status, 400u) << bad;
    EXPECT_EQ(nlohmann::json::parse(refused.body).at("error"),
              fmt::format("top=\"{}\" is not a whole number above 0", bad));
  }
  EXPECT_EQ(get("/v1/slow", {{"function", ""}}).status, 400u);
  EXPECT_EQ(get("/v1/slow", {{"format", "xml"}}).status, 400u);
  EXPECT_EQ(get("/v1/slow", {{"seconds", "1"}}).status, 400u);
}

TEST(Routes, AQueryCutForItsLengthIs414) {
  agent::Process process;
  agent::Request request{"GET", "/v1/stats", {}, false, true};
  const auto response = agent::route(process, agent::Listener::Unix, request);
  EXPECT_EQ(response.status, 414u);
  EXPECT_NE(response.body.find("more than 64 parameters"), std::string::npos) << response.body;
}

// The start time that tells a reused pid apart (hotscope list) is the process's own: a child
// started now started between two readings of the time since boot.
TEST(AgentFiles, StartTicksAreTheProcessStartTime) {
  const auto uptime_ticks = [] {
    double seconds = 0;
    std::ifstream("/proc/uptime") >> seconds;
    return seconds * static_cast<double>(sysconf(_SC_CLK_TCK));
  };
  const double before = uptime_ticks();
  const pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  const double after = uptime_ticks();
  const auto ticks = static_cast<double>(agent::process_start_ticks(child));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_GE(ticks, before - 2) << "before " << before << " after " << after;
  EXPECT_LE(ticks, after + 2) << "before " << before << " after " << after;
  EXPECT_EQ(agent::process_start_ticks(child), 0u); // gone
}

TEST(Routes, ForbiddenNamesBothUids) {
  const auto response = agent::forbidden(65534, 1000);
  EXPECT_EQ(response.status, 403u);
  EXPECT_NE(response.body.find("uid 65534"), std::string::npos);
  EXPECT_NE(response.body.find("uid 1000"), std::string::npos);
}

} // namespace
