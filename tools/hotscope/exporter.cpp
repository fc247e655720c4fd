#include "exporter.hpp"

#include "agent/http_parser.hpp"
#include "agent/protocol.hpp"
#include "agent_client.hpp"
#include "export/export.hpp"
#include "export/formats.hpp"
#include "scrape.hpp"

#include <fmt/format.h>
#include <microhttpd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

namespace hotscope::cli {
namespace {

constexpr unsigned kConnectionLimit = 16;
constexpr unsigned kConnectionTimeoutSeconds = 30;

struct Exporter {
  std::string dir;
  std::chrono::milliseconds timeout;
  std::mutex mutex;                  // guards `down`
  std::map<std::int64_t, bool> down; // by pid: whether its last scrape failed (reported once)
};

MHD_Result send(MHD_Connection* connection, unsigned status, const char* content_type,
                std::string text, const char* allow = nullptr) {
  auto* body = new std::string(std::move(text));
  MHD_Response* reply = MHD_create_response_from_buffer_with_free_callback_cls(
      body->size(), body->data(), [](void* data) { delete static_cast<std::string*>(data); }, body);
  if (reply == nullptr) {
    delete body;
    return MHD_NO;
  }
  MHD_add_response_header(reply, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
  if (allow != nullptr) {
    MHD_add_response_header(reply, MHD_HTTP_HEADER_ALLOW, allow);
  }
  const MHD_Result queued = MHD_queue_response(connection, status, reply);
  MHD_destroy_response(reply);
  return queued;
}

// One line on stderr when a target stops answering, and one when it answers again.
void report(Exporter& exporter, const std::vector<TargetScrape>& scrapes) {
  const std::lock_guard lock(exporter.mutex);
  std::map<std::int64_t, bool> now;
  for (const TargetScrape& scrape : scrapes) {
    const std::int64_t pid = scrape.process.pid;
    const auto before = exporter.down.find(pid);
    const bool was_down = before != exporter.down.end() && before->second;
    if (!scrape.up && !was_down) {
      std::fprintf(stderr, "hotscope exporter: process %lld (%s) did not answer: %s\n",
                   static_cast<long long>(pid), scrape.process.name().c_str(),
                   scrape.problem.c_str());
    } else if (scrape.up && was_down) {
      std::fprintf(stderr, "hotscope exporter: process %lld (%s) answers again\n",
                   static_cast<long long>(pid), scrape.process.name().c_str());
    }
    now[pid] = !scrape.up;
  }
  exporter.down = std::move(now); // processes that are gone are forgotten
}

MHD_Result on_request(void* context, MHD_Connection* connection, const char* url,
                      const char* method, const char*, const char*, std::size_t* upload_size,
                      void** request_state) {
  static int headers_seen;
  if (*request_state == nullptr) {
    *request_state = &headers_seen;
    return MHD_YES;
  }
  if (*upload_size != 0) { // a body is read and ignored
    *upload_size = 0;
    return MHD_YES;
  }
  const std::string_view path = url;
  if (path != "/metrics") {
    return send(connection, 404, "text/plain; charset=utf-8",
                fmt::format("no {} here: the hotscope exporter serves GET /metrics\n", path));
  }
  const std::string_view verb = method;
  if (verb != "GET" && verb != "HEAD") {
    return send(connection, 405, "text/plain; charset=utf-8",
                fmt::format("/metrics takes GET, not {}\n", verb), "GET, HEAD");
  }
  auto& exporter = *static_cast<Exporter*>(context);
  try {
    // A scraper that ranks OpenMetrics first (Prometheus does) gets the agents' exemplars.
    const char* accept = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Accept");
    const bool openmetrics = accept != nullptr && agent::wants_openmetrics(accept);
    const std::vector<TargetScrape> scrapes =
        scrape_all(live_agents(exporter.dir), exporter.timeout, openmetrics);
    report(exporter, scrapes);
    return send(connection, 200,
                openmetrics ? exporters::kOpenMetricsMime
                            : exporters::format_info(exporters::Format::Prometheus).mime,
                join_expositions(scrapes, openmetrics));
  } catch (const std::exception& failure) {
    return send(connection, 500, "text/plain; charset=utf-8",
                fmt::format("hotscope exporter: {}\n", failure.what()));
  }
}

// A listening socket on the endpoint; `bound` becomes "HOST:PORT" with the port in use.
int listen_on(const config::TcpAddress& endpoint, std::string& bound) {
  std::string reason;
  const int fd = agent::listen_tcp(endpoint, 16, bound, reason);
  if (fd < 0) {
    throw Failure(kFailed, fmt::format("exporter: cannot listen on {}:{}: {}",
                                       endpoint.v6 ? "[" + endpoint.host + "]" : endpoint.host,
                                       endpoint.port, reason));
  }
  return fd;
}

} // namespace

int run_exporter(const ExporterOptions& options) {
  try {
    const auto endpoint = config::parse_tcp_address(options.listen);
    if (!endpoint) {
      throw Failure(kUsage, fmt::format("exporter: --listen {} is not a numeric address and port "
                                        "such as 127.0.0.1:9464 or [::1]:9464",
                                        options.listen));
    }
    if (!endpoint->loopback && !options.allow_remote) {
      throw Failure(kUsage,
                    fmt::format("exporter: --listen {} is not a loopback address: add "
                                "--allow-remote to serve the metrics (function names, timings) "
                                "to other hosts, without any access control",
                                options.listen));
    }
    Exporter exporter{runtime_dir(), options.timeout, {}, {}};
    // Blocked here, so libmicrohttpd's threads inherit the mask and sigwait() below gets them.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    std::string bound;
    const int fd = listen_on(*endpoint, bound);
    MHD_Daemon* daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, nullptr, nullptr,
        &on_request, &exporter, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT,
        kConnectionLimit, MHD_OPTION_CONNECTION_TIMEOUT, kConnectionTimeoutSeconds, MHD_OPTION_END);
    if (daemon == nullptr) {
      close(fd);
      throw Failure(kFailed, "exporter: cannot start the HTTP server");
    }
    std::fprintf(stderr,
                 "hotscope exporter: serving http://%s/metrics for the agents in %s "
                 "(timeout %lld ms per process)\n",
                 bound.c_str(), exporter.dir.c_str(),
                 static_cast<long long>(options.timeout.count()));
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    MHD_stop_daemon(daemon); // closes the listening socket too
    return kOk;
  } catch (const Failure& failure) {
    std::fprintf(stderr, "hotscope: %s\n", failure.what());
    return failure.code;
  }
}

} // namespace hotscope::cli
