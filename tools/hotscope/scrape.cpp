#include "scrape.hpp"

#include "export/formats.hpp"

#include <curl/curl.h>
#include <fmt/format.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <map>
#include <memory>
#include <sstream>
#include <string_view>

namespace hotscope::cli {
namespace {

std::size_t append(char* data, std::size_t size, std::size_t count, void* body) {
  static_cast<std::string*>(body)->append(data, size * count);
  return size * count;
}

using Easy = std::unique_ptr<CURL, void (*)(CURL*)>;

// One family of the union: its HELP and TYPE lines and the samples of every target.
struct Family {
  std::string help_line;
  std::string type_line;
  std::string samples;
};

// `process="NAME",pid="PID"`, escaped as a label value must be.
std::string target_labels(const AgentProcess& process) {
  std::string name;
  for (const char c : process.name()) {
    name += c == '\\' ? "\\\\" : c == '"' ? "\\\"" : c == '\n' ? "\\n" : std::string(1, c);
  }
  return fmt::format("process=\"{}\",pid=\"{}\"", name, process.pid);
}

// The agent writes each family as one group, HELP and TYPE first, then its samples (the format
// every Prometheus exposition follows); a sample line starts with the metric name, ended by
// `{` or a space. Adds the target's labels in front of the sample's own.
void add_exposition(const std::string& text, const std::string& labels,
                    std::vector<std::string>& order, std::map<std::string, Family>& families) {
  std::istringstream lines(text);
  Family* current = nullptr;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
      const std::string name = line.substr(7, line.find(' ', 7) - 7);
      const auto [it, added] = families.try_emplace(name);
      if (added) {
        order.push_back(name);
      }
      current = &it->second;
      std::string& kept = line[2] == 'H' ? current->help_line : current->type_line;
      if (kept.empty()) {
        kept = line;
      }
    } else if (!line.empty() && line[0] != '#' && current != nullptr) {
      const std::size_t name_end = line.find_first_of("{ ");
      if (name_end == std::string::npos) {
        continue;
      }
      current->samples += line.substr(0, name_end);
      current->samples +=
          line[name_end] == '{'
              ? "{" + labels + (line[name_end + 1] == '}' ? "" : ",") + line.substr(name_end + 1)
              : "{" + labels + "}" + line.substr(name_end);
      current->samples += '\n';
    }
  }
}

} // namespace

std::vector<TargetScrape> scrape_all(const std::vector<AgentProcess>& processes,
                                     std::chrono::milliseconds timeout, bool openmetrics) {
  static const bool initialized = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  std::vector<TargetScrape> scrapes(processes.size());
  const std::unique_ptr<CURLM, CURLMcode (*)(CURLM*)> multi(
      initialized ? curl_multi_init() : nullptr, curl_multi_cleanup);
  std::vector<Easy> handles;
  const std::unique_ptr<curl_slist, void (*)(curl_slist*)> accept(
      openmetrics ? curl_slist_append(nullptr, "Accept: application/openmetrics-text") : nullptr,
      curl_slist_free_all);
  const std::string url =
      "http://localhost" + exporters::agent_target(exporters::Format::Prometheus);
  for (std::size_t i = 0; i < processes.size(); ++i) {
    scrapes[i].process = processes[i];
    Easy easy(multi ? curl_easy_init() : nullptr, curl_easy_cleanup);
    if (!easy) {
      scrapes[i].problem = "cannot initialize libcurl";
      continue;
    }
    curl_easy_setopt(easy.get(), CURLOPT_UNIX_SOCKET_PATH, processes[i].socket.c_str());
    curl_easy_setopt(easy.get(), CURLOPT_URL, url.c_str());
    curl_easy_setopt(easy.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
    curl_easy_setopt(easy.get(), CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy.get(), CURLOPT_HTTPHEADER, accept.get());
    curl_easy_setopt(easy.get(), CURLOPT_WRITEFUNCTION, append);
    curl_easy_setopt(easy.get(), CURLOPT_WRITEDATA, &scrapes[i].metrics);
    curl_easy_setopt(easy.get(), CURLOPT_PRIVATE, &scrapes[i]);
    curl_multi_add_handle(multi.get(), easy.get());
    handles.push_back(std::move(easy));
  }
  int running = 0;
  do {
    if (curl_multi_perform(multi.get(), &running) != CURLM_OK) {
      break;
    }
    int messages = 0;
    while (CURLMsg* message = curl_multi_info_read(multi.get(), &messages)) {
      if (message->msg != CURLMSG_DONE) {
        continue;
      }
      TargetScrape* scrape = nullptr;
      curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, &scrape);
      curl_easy_getinfo(message->easy_handle, CURLINFO_TOTAL_TIME, &scrape->seconds);
      long status = 0;
      curl_easy_getinfo(message->easy_handle, CURLINFO_RESPONSE_CODE, &status);
      if (message->data.result != CURLE_OK) {
        scrape->problem = curl_easy_strerror(message->data.result);
      } else if (status != 200) {
        scrape->problem = fmt::format("answered {}", status);
      }
      scrape->up = scrape->problem.empty();
      if (!scrape->up) {
        scrape->metrics.clear();
      }
    }
    if (running > 0) {
      curl_multi_poll(multi.get(), nullptr, 0, 100, nullptr);
    }
  } while (running > 0);
  for (const Easy& easy : handles) {
    curl_multi_remove_handle(multi.get(), easy.get());
  }
  return scrapes;
}

std::string join_expositions(const std::vector<TargetScrape>& scrapes, bool openmetrics) {
  using prometheus::ClientMetric;
  using prometheus::MetricFamily;
  using prometheus::MetricType;
  MetricFamily up{"hotscope_up",
                  "1 if the process's agent answered this scrape, else 0.",
                  MetricType::Gauge,
                  {}};
  MetricFamily duration{"hotscope_scrape_duration_seconds",
                        "How long the process's agent took to answer (or to time out).",
                        MetricType::Gauge,
                        {}};
  std::vector<std::string> order;
  std::map<std::string, Family> families;
  for (const TargetScrape& scrape : scrapes) {
    const std::vector<ClientMetric::Label> labels = {{"process", scrape.process.name()},
                                                     {"pid", std::to_string(scrape.process.pid)}};
    up.metric.emplace_back().label = labels;
    up.metric.back().gauge.value = scrape.up ? 1 : 0;
    duration.metric.emplace_back().label = labels;
    duration.metric.back().gauge.value = scrape.seconds;
    if (scrape.up) {
      add_exposition(scrape.metrics, target_labels(scrape.process), order, families);
    }
  }
  std::string text = prometheus::TextSerializer().Serialize({up, duration});
  for (const std::string& name : order) {
    const Family& family = families[name];
    text += family.help_line.empty() ? "" : family.help_line + '\n';
    text += family.type_line.empty() ? "" : family.type_line + '\n';
    text += family.samples;
  }
  // Each target's own `# EOF` was left out with its other comments: the union has one.
  return openmetrics ? text + "# EOF\n" : text;
}

} // namespace hotscope::cli
