#include "profiles.hpp"

#include "agent_client.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace hotscope::cli::profiles {
namespace {

// The frame without its "0xADDR: " prefix.
std::string without_address(const std::string& text) {
  const std::size_t colon = text.find(": ");
  return text.rfind("0x", 0) == 0 && colon != std::string::npos ? text.substr(colon + 2) : text;
}

// Where the trailing " (location)" of a frame starts, or npos.
std::size_t location_start(const std::string& text) {
  if (text.empty() || text.back() != ')') {
    return std::string::npos;
  }
  return text.rfind(" (");
}

} // namespace

Frame parse_frame(const std::string& text) {
  Frame frame;
  std::string rest = without_address(text);
  const std::size_t open = location_start(rest);
  if (open == std::string::npos) {
    frame.function = rest;
    return frame;
  }
  frame.function = rest.substr(0, open);
  std::string location = rest.substr(open + 2, rest.size() - open - 3);
  if (location.rfind("in ", 0) == 0) {
    frame.file = location.substr(3);
    return frame;
  }
  const std::size_t colon = location.rfind(':');
  int line = 0;
  if (colon != std::string::npos &&
      std::from_chars(location.data() + colon + 1, location.data() + location.size(), line).ptr ==
          location.data() + location.size()) {
    frame.line = line;
    location.resize(colon);
  }
  frame.file = location;
  return frame;
}

std::vector<Site> heap_sites(const nlohmann::json& dhat, const std::string& source,
                             std::uint64_t text_bytes) {
  const nlohmann::json& table = dhat.at("ftbl");
  std::vector<Site> sites;
  // The frames' text over all sites, which the commands join into stacks: a short entry of the
  // table can name a long frame, and every site can repeat it.
  const std::uint64_t max_frame_bytes =
      std::max(kMinSiteFrameBytes, kSiteFrameBytesPerByte * text_bytes);
  std::uint64_t frame_bytes = 0;
  for (const nlohmann::json& point : dhat.at("pps")) {
    const auto frames = point.find("fs");
    if (!point.is_object() || frames == point.end() || !frames->is_array()) {
      throw Failure(kUsage, fmt::format("{}: a program point without its frames (\"fs\"): the "
                                        "file is not a DHAT profile as hotscope writes it",
                                        source));
    }
    Site site;
    for (const nlohmann::json& index : *frames) {
      // A non-negative integer: unsigned when parsed from text, signed when made in code.
      if (!index.is_number_integer() || index.get<std::int64_t>() < 0 ||
          index.get<std::size_t>() >= table.size() ||
          !table[index.get<std::size_t>()].is_string()) {
        throw Failure(kUsage, fmt::format("{}: frame index {} is not in the frame table (\"ftbl\")",
                                          source, index.dump()));
      }
      const std::string& frame = table[index.get<std::size_t>()].get_ref<const std::string&>();
      frame_bytes += frame.size();
      if (frame_bytes > max_frame_bytes) {
        throw Failure(kUsage, fmt::format("{}: the sites' frames add up to more than {} bytes of "
                                          "text (the frame table's entries repeated; the limit is "
                                          "256 MiB or 32 times the file's size)",
                                          source, max_frame_bytes));
      }
      site.frames.push_back(&frame);
    }
    site.total_bytes = count_at(point, "tb");
    site.total_blocks = count_at(point, "tbk");
    site.gmax_bytes = count_at(point, "gb");
    site.gmax_blocks = count_at(point, "gbk");
    site.end_bytes = count_at(point, "eb");
    site.end_blocks = count_at(point, "ebk");
    sites.push_back(std::move(site));
  }
  return sites;
}

} // namespace hotscope::cli::profiles
