// `hotscope exporter`'s scrape: every agent of the runtime directory asked for /v1/metrics at
// once over its Unix socket, each bounded by its own timeout, and the answers joined into one
// exposition with `process` and `pid` labels (docs/agent.md, "One scrape target per host").
#pragma once

#include "agent_client.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace hotscope::cli {

// One agent's answer to one scrape.
struct TargetScrape {
  AgentProcess process;
  bool up = false;     // it answered 200 within the timeout
  double seconds = 0;  // how long it took (at most about the timeout)
  std::string metrics; // its exposition, when up
  std::string problem; // why not, when down
};

// Asks every process for GET /v1/metrics concurrently; none takes longer than `timeout`. With
// `openmetrics`, asks for OpenMetrics text, whose duration buckets carry exemplars.
std::vector<TargetScrape> scrape_all(const std::vector<AgentProcess>& processes,
                                     std::chrono::milliseconds timeout, bool openmetrics);

// The union of the expositions: `hotscope_up` and `hotscope_scrape_duration_seconds` for every
// target, then each family once (HELP and TYPE from the first target that has it), every sample
// with `process` and `pid` labels first and its exemplar, if any, kept. With `openmetrics`, the
// expositions are OpenMetrics text and so is the union (ended by `# EOF`).
std::string join_expositions(const std::vector<TargetScrape>& scrapes, bool openmetrics);

} // namespace hotscope::cli
