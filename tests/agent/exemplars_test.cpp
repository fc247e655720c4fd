// Exemplars (docs/slow.md, "Exemplars") read by a real Prometheus server (Debian `prometheus`)
// with exemplar storage: it scrapes hotscope-demo's TCP listener, which answers it OpenMetrics,
// and its /api/v1/query_exemplars gives call ids that the demo's GET /v1/slow lists; the same
// through `hotscope exporter`.
#include "background.hpp"
#include "demo_process.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <set>

namespace {

using namespace hotscope::testing;
using Json = nlohmann::json;

// Each exemplar Prometheus holds for the function duration buckets: its series' labels (`le`
// among them) and the exemplar itself.
std::vector<std::pair<Json, Json>> stored_exemplars(int port) {
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const CommandResult answer =
      run({CURL, "--silent", "--max-time", "10", "--get",
           "http://127.0.0.1:" + std::to_string(port) + "/api/v1/query_exemplars",
           "--data-urlencode", "query=hotscope_function_duration_seconds_bucket",
           "--data-urlencode", "start=" + std::to_string(now - 3600), "--data-urlencode",
           "end=" + std::to_string(now + 60)});
  const Json json = Json::parse(answer.out, nullptr, false);
  std::vector<std::pair<Json, Json>> found;
  if (json.is_object() && json.value("status", "") == "success") {
    for (const Json& series : json["data"]) {
      for (const Json& exemplar : series["exemplars"]) {
        found.emplace_back(series["seriesLabels"], exemplar);
      }
    }
  }
  return found;
}

// A Prometheus with exemplar storage scraping `target` (HOST:PORT) at `metrics_path` stores
// exemplars naming calls that `demo` keeps now, each inside its bucket; their series carry
// `labels` (the exporter's target labels) among their own.
void expect_exemplars_of_kept_calls(const Demo& demo, const std::string& target,
                                    const std::string& metrics_path,
                                    const std::map<std::string, std::string>& labels = {}) {
  ScratchDir scratch;
  const int port = free_port();
  const fs::path config = scratch.path() / "prometheus.yml";
  std::ofstream(config) << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                        << "scrape_configs:\n  - job_name: hotscope\n    metrics_path: "
                        << metrics_path << "\n    static_configs:\n      - targets: ['" << target
                        << "']\n";
  const Background prometheus({PROMETHEUS, "--config.file=" + config.string(),
                               "--storage.tsdb.path=" + (scratch.path() / "tsdb").string(),
                               "--web.listen-address=127.0.0.1:" + std::to_string(port),
                               "--enable-feature=exemplar-storage", "--log.level=warn"},
                              {}, scratch.path() / "prometheus.log");

  // The calls kept change while the demo runs: some exemplar must name a call kept now.
  std::vector<std::pair<Json, Json>> exemplars;
  std::set<std::string> kept;
  const bool found = eventually(90, [&] {
    exemplars = stored_exemplars(port);
    kept.clear();
    const Json slow = Json::parse(demo.get("/v1/slow?format=json"), nullptr, false);
    for (const Json& call : slow.value("calls", Json::array())) {
      kept.insert(call.value("id", ""));
    }
    return std::any_of(exemplars.begin(), exemplars.end(), [&](const auto& exemplar) {
      return kept.count(exemplar.second["labels"].value("call_id", "")) != 0;
    });
  });
  ASSERT_TRUE(found) << prometheus.log() << "\n" << exemplars.size() << " exemplars";

  // Each exemplar is inside its bucket: at most its bound, and a call of the series' function.
  const double start_seconds =
      static_cast<double>(
          Json::parse(demo.get("/v1/info")).at("window").at("start_unix_ns").get<std::uint64_t>()) /
      1e9;
  for (const auto& [series, exemplar] : exemplars) {
    const std::string le = series.value("le", "");
    const double value = std::stod(exemplar.value("value", "0"));
    EXPECT_GT(value, 0) << exemplar;
    EXPECT_LE(value, le == "+Inf" ? INFINITY : std::stod(le)) << series << exemplar;
    EXPECT_GE(exemplar.value("timestamp", 0.0), start_seconds - 1) << exemplar;
    EXPECT_FALSE(series.value("function", "").empty()) << series;
    for (const auto& [name, value] : labels) {
      EXPECT_EQ(series.value(name, ""), value) << series;
    }
  }
}

TEST(Exemplars, PrometheusStoresCallIdsThatTheAgentLists) {
  if (std::string(PROMETHEUS).empty()) {
    GTEST_SKIP() << "prometheus not found (Debian: apt-get install prometheus)";
  }
  const Demo demo(Env{{"HOTSCOPE_AGENT_TCP", "127.0.0.1:0"}});
  const std::string address =
      Json::parse(slurp(demo.info_path())).at("enabled").at("metrics_tcp").get<std::string>();
  expect_exemplars_of_kept_calls(demo, address, "/v1/metrics");
}

#if defined(HOTSCOPE_CLI)
// The same through `hotscope exporter`, which asks the agents for OpenMetrics when Prometheus
// asks it, and keeps each bucket's exemplar next to the target labels it adds.
TEST(Exemplars, PrometheusStoresThemThroughTheExporter) {
  if (std::string(PROMETHEUS).empty()) {
    GTEST_SKIP() << "prometheus not found (Debian: apt-get install prometheus)";
  }
  ScratchDir scratch;
  const fs::path runtime_dir = scratch.path() / "rt";
  const Demo demo(Env{{"HOTSCOPE_RUNTIME_DIR", runtime_dir}});
  const Background exporter({HOTSCOPE_CLI, "exporter", "--listen", "127.0.0.1:0"},
                            {{"HOTSCOPE_RUNTIME_DIR", runtime_dir}},
                            scratch.path() / "exporter.log");
  const std::string address = exporter_address(exporter);
  ASSERT_FALSE(address.empty()) << exporter.log();

  // Asked for the Prometheus text, the exporter answers it, without exemplars; asked for
  // OpenMetrics, OpenMetrics, ended once.
  const CommandResult text = run({CURL, "--silent", "--include", "http://" + address + "/metrics"});
  EXPECT_NE(text.out.find("text/plain; version=0.0.4"), std::string::npos)
      << text.out.substr(0, 300);
  EXPECT_EQ(text.out.find(" # {call_id="), std::string::npos);
  const CommandResult open =
      run({CURL, "--silent", "--include", "--header", "Accept: application/openmetrics-text",
           "http://" + address + "/metrics"});
  EXPECT_NE(open.out.find("application/openmetrics-text"), std::string::npos)
      << open.out.substr(0, 300);
  EXPECT_TRUE(open.out.ends_with("\n# EOF\n")) << open.out.substr(open.out.size() - 300);
  EXPECT_EQ(open.out.find("# EOF"), open.out.size() - 6);

  expect_exemplars_of_kept_calls(
      demo, address, "/metrics",
      {{"process", "hotscope-demo"}, {"pid", std::to_string(demo.pid())}});
}
#endif

} // namespace
