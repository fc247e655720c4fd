#pragma once
// What the console's unit tests share: a /v1/stats answer of one function, read into a model as
// the console reads it, and searches in a page's lines.
#include "console/model.hpp"
#include "console/source.hpp"
#include "console/view.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace hotscope::cli::console::testing {

using Json = nlohmann::json;

inline const std::string kStatsAnswer = "the agent's answer to GET /v1/stats";

inline Json stats(std::uint64_t duration_ns, std::uint64_t calls, std::uint64_t total_ns,
                  std::uint64_t self_ns) {
  return Json{{"duration_ns", duration_ns},
              {"records", {{"written", 1}, {"kept", 1}, {"dropped", 0}}},
              {"functions",
               {{{"name", "work"},
                 {"file", "a.cpp"},
                 {"line", 7},
                 {"calls", calls},
                 {"total_ns", total_ns},
                 {"self_ns", self_ns},
                 {"p50_ns", 1000},
                 {"p99_ns", 5000}}}}};
}

// The statistics as the console reads the agent's answer.
inline void update(Model& model, const Json& stats) {
  profiles::Stats answer;
  profiles::read_stats(stats.dump(), kStatsAnswer, answer);
  model.update_stats(answer);
}

// The page with every row's text, as `--once` prints it.
inline Page all_rows(Page page) {
  format_rows(page, 0, page.rows.size());
  return page;
}

inline std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string word; in >> word;) {
    out.push_back(word);
  }
  return out;
}

inline bool contains(const std::vector<Line>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const Line& line) { return line.text.find(text) != std::string::npos; });
}

} // namespace hotscope::cli::console::testing
