#include "profiles.hpp"

#include "agent_client.hpp"

#include <fmt/format.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>

namespace hotscope::cli::profiles {
namespace {

using Json = nlohmann::json;

// What the parsed tree may cost beyond the text: docs/diff-and-report.md, "Limits".
constexpr std::uint64_t kJsonBudgetPerByte = 16;
constexpr std::uint64_t kJsonBudgetFloor = 64ULL << 20;

// A rough upper bound of what one parser event adds to the tree: a value's slot (twice, as
// arrays grow by doubling), a key's map node, a string's buffer.
std::uint64_t event_cost(Json::parse_event_t event, const Json& parsed) {
  switch (event) {
  case Json::parse_event_t::key:
    return 96 + parsed.get_ref<const std::string&>().size();
  case Json::parse_event_t::value:
    return 32 + (parsed.is_string() ? 32 + parsed.get_ref<const std::string&>().size() : 0);
  case Json::parse_event_t::object_start:
  case Json::parse_event_t::array_start:
    return 80;
  default:
    return 0;
  }
}

// "line 3, column 17: syntax error ..." out of nlohmann's "[json.exception.parse_error.101]
// parse error at line 3, column 17: ...".
std::string parse_error_text(const Json::parse_error& error) {
  const std::string what = error.what();
  const std::size_t at = what.find(" at line ");
  return at == std::string::npos ? what : what.substr(at + 4);
}

bool starts_like_json(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && (text[first] == '{' || text[first] == '[');
}

// How many frames `frames`, joined by `separator`, holds.
std::size_t frame_count(std::string_view frames, char separator) {
  return static_cast<std::size_t>(std::count(frames.begin(), frames.end(), separator)) + 1;
}

// The line that starts at `start`, without its line end.
std::string_view line_at(std::string_view text, std::size_t start) {
  std::string_view line = text.substr(start);
  line = line.substr(0, line.find('\n'));
  if (!line.empty() && line.back() == '\r') {
    line.remove_suffix(1);
  }
  return line;
}

} // namespace

std::string kind_name(Kind kind) {
  return kind == Kind::Stats ? "a stats.json" : "a heap profile (DHAT)";
}

std::string read_text(const std::string& path) {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                             &std::fclose);
  struct stat about {};
  if (!file || fstat(fileno(file.get()), &about) != 0) {
    throw Failure(kUsage, fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  }
  if (S_ISDIR(about.st_mode)) {
    throw Failure(kUsage, fmt::format("cannot read {}: it is a directory", path));
  }
  // Read in one piece into a string of the right size (no second copy); a file whose size
  // is not known ahead (a pipe) grows as it is read, up to the same limit.
  std::string text;
  if (S_ISREG(about.st_mode)) {
    if (static_cast<std::uint64_t>(about.st_size) > kMaxFileBytes) {
      throw Failure(kUsage, fmt::format("{} is {} bytes, larger than the {} MiB a file given to "
                                        "hotscope may have",
                                        path, about.st_size, kMaxFileBytes >> 20));
    }
    text.reserve(static_cast<std::size_t>(about.st_size));
  }
  char buffer[65536];
  std::size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, file.get())) > 0) {
    if (text.size() + got > kMaxFileBytes) {
      throw Failure(kUsage, fmt::format("{} is larger than the {} MiB a file given to hotscope "
                                        "may have",
                                        path, kMaxFileBytes >> 20));
    }
    text.append(buffer, got);
  }
  if (std::ferror(file.get()) != 0) {
    throw Failure(kUsage, fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  }
  return text;
}

Json parse_json(std::string_view text, const std::string& source) {
  const std::uint64_t budget = kJsonBudgetFloor + kJsonBudgetPerByte * text.size();
  std::uint64_t spent = 0;
  const Json::parser_callback_t check = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (static_cast<std::size_t>(depth) >= kMaxJsonDepth) {
      throw Failure(kUsage, fmt::format("{} nests arrays and objects more than {} deep: not a "
                                        "file hotscope wrote",
                                        source, kMaxJsonDepth));
    }
    spent += event_cost(event, parsed);
    if (spent > budget) {
      throw Failure(kUsage, fmt::format("{} would take more than {} MiB parsed (64 MiB plus 16 "
                                        "times its size): too many values for its size",
                                        source, budget >> 20));
    }
    return true;
  };
  try {
    return Json::parse(text, check);
  } catch (const Json::parse_error& error) {
    const bool cut = error.byte >= text.size();
    throw Failure(kUsage,
                  fmt::format("{} is not valid JSON{}: {}", source,
                              cut ? " (it ends early: truncated?)" : "", parse_error_text(error)));
  } catch (const Json::exception& error) { // a number too large for a double: 1e400
    throw Failure(kUsage,
                  fmt::format("{} is not JSON hotscope can read: {}", source, error.what()));
  }
}

Profile read_profile(const std::string& path) {
  const std::string text = read_text(path);
  Profile profile = classify(parse_json(text, path), path);
  profile.text_bytes = text.size();
  return profile;
}

// Lines were checked by folded_stacks(): each has a space before its count.
std::string_view StackLines::frames_at(std::uint32_t start) const {
  const std::string_view line = line_at(text, start);
  return line.substr(0, line.rfind(' '));
}

std::uint64_t StackLines::count_at(std::uint32_t start) const {
  const std::string_view line = line_at(text, start);
  std::uint64_t count = 0;
  std::from_chars(line.data() + line.rfind(' ') + 1, line.data() + line.size(), count);
  return count;
}

StackLines folded_stacks(std::string_view text, const std::string& source, char separator) {
  const bool folded = separator == ';';
  if (folded && starts_like_json(text)) {
    throw Failure(kUsage,
                  fmt::format("{} is JSON, not folded stacks{}", source,
                              Json::accept(text) ? "" : " (and not valid JSON: truncated?)"));
  }
  if (text.size() > kMaxFileBytes) {
    throw Failure(kUsage, fmt::format("{}: more than the {} MiB a file given to hotscope may have",
                                      source, kMaxFileBytes >> 20));
  }
  StackLines stacks;
  stacks.text = text;
  stacks.separator = separator;
  std::size_t number = 0;
  for (std::size_t start = 0; start < text.size();) {
    ++number;
    const std::size_t newline = text.find('\n', start);
    const std::size_t end = newline == std::string_view::npos ? text.size() : newline;
    std::string_view line = text.substr(start, end - start);
    const std::size_t line_start = start;
    start = end + 1;
    if (line.size() > kMaxLineBytes) {
      throw Failure(kUsage, fmt::format("{}:{}: a line of {} bytes, longer than the {} KiB a "
                                        "stack may have",
                                        source, number, line.size(), kMaxLineBytes >> 10));
    }
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.empty() || (folded && line.front() == '#')) {
      continue;
    }
    const std::size_t space = line.rfind(' ');
    if (space == std::string_view::npos || space == 0) {
      throw Failure(kUsage, fmt::format("{}:{}: not a stack ('frame;frame count'): give folded "
                                        "stacks (trace.folded) or a heap.json",
                                        source, number));
    }
    const std::string_view digits = line.substr(space + 1);
    std::uint64_t count = 0;
    const auto [end_of_count, error] =
        std::from_chars(digits.data(), digits.data() + digits.size(), count);
    if (digits.empty() || error == std::errc::result_out_of_range ||
        end_of_count != digits.data() + digits.size()) {
      throw Failure(kUsage, fmt::format("{}:{}: the count '{}' is not an integer from 0 to 2^64-1",
                                        source, number, digits.substr(0, 40)));
    }
    const std::size_t frames = frame_count(line.substr(0, space), separator);
    if (frames > kMaxStackFrames) {
      throw Failure(kUsage, fmt::format("{}:{}: a stack of {} frames, more than the {} a stack may "
                                        "have",
                                        source, number, frames, kMaxStackFrames));
    }
    if (stacks.total + count < stacks.total) {
      throw Failure(kUsage,
                    fmt::format("{}:{}: the counts add up to more than 2^64-1", source, number));
    }
    stacks.total += count;
    stacks.starts.push_back(static_cast<std::uint32_t>(line_start));
  }
  return stacks;
}

} // namespace hotscope::cli::profiles
