#include "profiles.hpp"

#include "agent_client.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

namespace hotscope::cli::profiles {

std::string kind_name(Kind kind) {
  return kind == Kind::Stats ? "a stats.json" : "a heap profile (DHAT)";
}

Profile classify(nlohmann::json document, const std::string& source) {
  const auto has = [&](const char* key, nlohmann::json::value_t type) {
    const auto found = document.find(key);
    return found != document.end() && found->type() == type;
  };
  if (document.is_object() && has("hotscope_version", nlohmann::json::value_t::string) &&
      has("functions", nlohmann::json::value_t::array)) {
    return Profile{Kind::Stats, source, std::move(document)};
  }
  if (document.is_object() && document.contains("dhatFileVersion") &&
      has("pps", nlohmann::json::value_t::array) && has("ftbl", nlohmann::json::value_t::array)) {
    return Profile{Kind::Heap, source, std::move(document)};
  }
  throw Failure(kUsage, fmt::format("{} is neither a hotscope stats.json nor a DHAT heap profile "
                                    "(heap.json): give files that hotscope wrote",
                                    source));
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Failure(kUsage, fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    throw Failure(kUsage, fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  }
  return text.str();
}

Profile read_profile(const std::string& path) {
  nlohmann::json document = nlohmann::json::parse(read_text(path), nullptr, false);
  if (document.is_discarded()) {
    throw Failure(kUsage, fmt::format("{} is not JSON: give a stats.json or a heap.json that "
                                      "hotscope wrote",
                                      path));
  }
  return classify(std::move(document), path);
}

std::vector<Stack> folded_stacks(std::string_view text) {
  std::vector<Stack> stacks;
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    const std::size_t space = line.rfind(' ');
    Stack stack;
    if (space == std::string_view::npos || space == 0 || line.front() == '#' ||
        std::from_chars(line.data() + space + 1, line.data() + line.size(), stack.count).ptr !=
            line.data() + line.size()) {
      continue;
    }
    const std::string_view frames = line.substr(0, space);
    for (std::size_t start = 0;;) {
      const std::size_t end = frames.find(';', start);
      stack.frames.emplace_back(frames.substr(start, end - start));
      if (end == std::string_view::npos) {
        break;
      }
      start = end + 1;
    }
    stacks.push_back(std::move(stack));
  }
  return stacks;
}

} // namespace hotscope::cli::profiles
