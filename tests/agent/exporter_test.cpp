// `hotscope exporter` scraped by a real Prometheus server (Debian `prometheus`): three demos share
// a runtime directory, the exporter serves their union, Prometheus scrapes it every second and
// answers histogram_quantile over the demos' buckets; a killed demo's series go stale and a hung
// one is reported down, while the others keep coming.
#include "background.hpp"
#include "demo_process.hpp"
#include "prometheus_check.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <set>

namespace {

using namespace hotscope::testing;
using Json = nlohmann::json;

class ExporterWithPrometheus : public ::testing::Test {
protected:
  // The result vector of an instant query, or null when Prometheus does not answer yet.
  Json query(const std::string& promql) const {
    const CommandResult answer =
        run({CURL, "--silent", "--max-time", "10", "--get", fmt_url("/api/v1/query"),
             "--data-urlencode", "query=" + promql});
    const Json json = Json::parse(answer.out, nullptr, false);
    if (!json.is_object() || json.value("status", "") != "success") {
      return nullptr;
    }
    return json["data"]["result"];
  }
  std::string fmt_url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(prometheus_port) + path;
  }
  // The value of each series of `promql`, by its `pid` label.
  std::map<std::string, double> by_pid(const std::string& promql) const {
    std::map<std::string, double> values;
    const Json result = query(promql);
    if (result.is_array()) {
      for (const Json& series : result) {
        values[series["metric"].value("pid", "")] =
            std::stod(series["value"][1].get<std::string>());
      }
    }
    return values;
  }

  ScratchDir scratch;
  int prometheus_port = 0;
};

TEST_F(ExporterWithPrometheus, HistogramsAggregateAndTargetsComeAndGo) {
  if (std::string(PROMETHEUS).empty()) {
    GTEST_SKIP() << "prometheus not found (Debian: apt-get install prometheus)";
  }
  const fs::path runtime_dir = scratch.path() / "rt";
  std::vector<std::unique_ptr<Demo>> demos;
  for (int i = 0; i < 3; ++i) {
    demos.push_back(std::make_unique<Demo>(Env{{"HOTSCOPE_RUNTIME_DIR", runtime_dir}}));
  }
  const Background exporter(
      {HOTSCOPE_CLI, "exporter", "--listen", "127.0.0.1:0", "--timeout-ms", "500"},
      {{"HOTSCOPE_RUNTIME_DIR", runtime_dir}}, scratch.path() / "exporter.log");
  const std::string address = exporter_address(exporter);
  ASSERT_FALSE(address.empty()) << exporter.log();

  // The exporter's own answer: valid, with every demo up.
  const CommandResult metrics = run({CURL, "--silent", "--fail", "http://" + address + "/metrics"});
  ASSERT_EQ(metrics.status, 0) << metrics.err;
  EXPECT_EQ(prometheus_problems(metrics.out), std::vector<std::string>{});
  for (const auto& demo : demos) {
    EXPECT_NE(metrics.out.find("hotscope_up{process=\"hotscope-demo\",pid=\"" +
                               std::to_string(demo->pid()) + "\"} 1\n"),
              std::string::npos)
        << metrics.out.substr(0, 2000);
  }
  const CommandResult head = run({CURL, "--silent", "--head", "http://" + address + "/other"});
  EXPECT_NE(head.out.find("404"), std::string::npos);

  prometheus_port = free_port();
  const fs::path config = scratch.path() / "prometheus.yml";
  std::ofstream(config) << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                        << "scrape_configs:\n  - job_name: hotscope\n    static_configs:\n"
                        << "      - targets: ['" << address << "']\n";
  const Background prometheus({PROMETHEUS, "--config.file=" + config.string(),
                               "--storage.tsdb.path=" + (scratch.path() / "tsdb").string(),
                               "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port),
                               "--log.level=warn"},
                              {}, scratch.path() / "prometheus.log");

  // Buckets of three processes added up, as on a fleet: a number per demo function.
  const std::string p99 = "histogram_quantile(0.99, sum by (le, function) "
                          "(rate(hotscope_function_duration_seconds_bucket[5m])))";
  std::map<std::string, double> quantiles;
  ASSERT_TRUE(eventually(60,
                         [&] {
                           const Json result = query(p99);
                           quantiles.clear();
                           if (result.is_array()) {
                             for (const Json& series : result) {
                               const double value =
                                   std::stod(series["value"][1].get<std::string>());
                               if (std::isfinite(value) && value > 0) {
                                 quantiles[series["metric"].value("function", "")] = value;
                               }
                             }
                           }
                           return quantiles.count("demo::Service::handle") != 0 &&
                                  quantiles.count("parse_request") != 0;
                         }))
      << prometheus.log() << "\n"
      << query(p99).dump();
  for (const auto& [function, seconds] : quantiles) {
    EXPECT_LT(seconds, 100) << function; // within the largest finite bucket
  }
  // A wait, not a speed check: on a loaded machine Prometheus may take longer to see all three.
  EXPECT_TRUE(eventually(30, [&] { return by_pid("hotscope_up").size() == 3; }));

  // A killed demo disappears from the exporter: its series go stale; the others keep coming.
  const std::string killed = std::to_string(demos[0]->pid());
  demos[0]->kill_hard();
  const double killed_at =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_TRUE(eventually(15, [&] {
    const std::map<std::string, double> up = by_pid("hotscope_up");
    const std::map<std::string, double> when = by_pid("timestamp(hotscope_up)");
    bool others_fresh = when.size() == 2;
    for (const auto& [pid, at] : when) {
      others_fresh = others_fresh && at > killed_at + 1 && up.at(pid) == 1;
    }
    return up.count(killed) == 0 && others_fresh;
  })) << query("hotscope_up").dump();

  // A hung agent (its process stopped) costs the timeout and is reported down, not the scrape.
  const std::string hung = std::to_string(demos[1]->pid());
  kill(demos[1]->pid(), SIGSTOP);
  struct Resume { // whatever happens, so that the demo can end
    pid_t pid;
    ~Resume() { kill(pid, SIGCONT); }
  } resume{demos[1]->pid()};
  EXPECT_TRUE(eventually(15, [&] {
    const std::map<std::string, double> up = by_pid("hotscope_up");
    return up.size() == 2 && up.count(hung) != 0 && up.at(hung) == 0 &&
           up.at(std::to_string(demos[2]->pid())) == 1;
  })) << query("hotscope_up").dump();
  const std::map<std::string, double> took = by_pid("hotscope_scrape_duration_seconds");
  ASSERT_EQ(took.count(hung), 1u);
  EXPECT_GE(took.at(hung), 0.45);
  EXPECT_LT(took.at(hung), 1.0);
  const std::map<std::string, double> scrape = by_pid("scrape_duration_seconds");
  EXPECT_TRUE(scrape.empty() || scrape.begin()->second < 1.0);
  EXPECT_NE(exporter.log().find("process " + hung + " (hotscope-demo) did not answer"),
            std::string::npos)
      << exporter.log();
}

TEST(Exporter, RefusesARemoteAddressUnlessAllowed) {
  const CommandResult remote = run({HOTSCOPE_CLI, "exporter", "--listen", "0.0.0.0:0"});
  EXPECT_EQ(remote.status, 2);
  EXPECT_NE(remote.err.find("is not a loopback address: add --allow-remote"), std::string::npos)
      << remote.err;
  const CommandResult bad = run({HOTSCOPE_CLI, "exporter", "--listen", "localhost:9464"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("is not a numeric address and port"), std::string::npos) << bad.err;
}

} // namespace
