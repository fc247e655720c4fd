// `hotscope exporter --listen 127.0.0.1:9464`: one Prometheus scrape target per host. Serves
// GET /metrics over HTTP: the union of every agent's /v1/metrics in the runtime directory
// (scrape.hpp), until SIGINT or SIGTERM (docs/agent.md).
#pragma once

#include <chrono>
#include <string>

namespace hotscope::cli {

struct ExporterOptions {
  std::string listen = "127.0.0.1:9464";   // numeric address and port; port 0: the kernel picks
  bool allow_remote = false;               // a non-loopback address needs this
  std::chrono::milliseconds timeout{2000}; // per target, per scrape
};

// Serves until SIGINT or SIGTERM; returns the exit code (a Failure's code on a bad option or an
// address that cannot be bound).
int run_exporter(const ExporterOptions& options);

} // namespace hotscope::cli
