// Reads the agent's statistics (GET /v1/stats, either layout of its functions) in one pass of
// nlohmann's SAX parser: the functions straight into rows, without a JSON tree of 10,000
// functions' figures built and freed at every refresh, and the rest into a JSON tree.
#pragma once

#include "model.hpp"

#include <nlohmann/json.hpp>

#include <string_view>
#include <vector>

namespace hotscope::cli::console {

struct StatsAnswer {
  nlohmann::json rest;                // the answer without its "functions"
  std::vector<FunctionRow> functions; // name, file, line and the figures; no key, no rates
};

// Reads `text` into `answer`. Rows already in `answer` are reused, their strings' memory too
// (Model::update_stats gives the previous rows back), so a refresh allocates almost nothing.
// A syntax error throws nlohmann::json::parse_error, as nlohmann::json::parse does.
void read_stats(std::string_view text, StatsAnswer& answer);

} // namespace hotscope::cli::console
