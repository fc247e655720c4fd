#include "text.hpp"

#include "export/common.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <ctime>

namespace hotscope::cli::console {

std::size_t columns(std::string_view text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string clip(std::string_view text, std::size_t width, const Glyphs& glyphs) {
  if (columns(text) <= width) {
    return std::string(text);
  }
  if (width == 0) {
    return "";
  }
  std::size_t kept = 0;
  std::size_t end = 0;
  while (end < text.size() && ((text[end] & 0xC0) == 0x80 || kept++ < width - 1)) {
    ++end;
  }
  return std::string(text.substr(0, end)) + (glyphs.unicode ? "…" : "~");
}

std::vector<std::string> align(const std::vector<Cells>& rows, std::size_t first_width,
                               const Glyphs& glyphs) {
  std::vector<std::size_t> widths;
  std::vector<Cells> cut = rows;
  for (Cells& row : cut) {
    if (!row.empty() && first_width > 0) {
      row[0] = clip(row[0], first_width, glyphs);
    }
    widths.resize(std::max(widths.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], columns(row[i]));
    }
  }
  std::vector<std::string> lines;
  lines.reserve(cut.size());
  for (const Cells& row : cut) {
    std::string line = " ";
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::string padding(widths[i] - columns(row[i]), ' ');
      line += i == 0 ? row[i] + padding : "  " + padding + row[i];
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

std::string duration(double ns) {
  return exporters::detail::human_duration(ns);
}

std::string bytes(double value) {
  return exporters::detail::human_bytes(static_cast<std::uint64_t>(std::max(0.0, value)));
}

std::string time_of_day(std::uint64_t unix_ns) {
  const auto seconds = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  return fmt::format("{:%H:%M:%S}.{:03}", fmt::localtime(seconds), unix_ns / 1'000'000 % 1000);
}

std::string per_second(double value) {
  if (value < 0.05) {
    return "0";
  }
  if (value < 999.95) {
    return fmt::format("{:.1f}", value);
  }
  if (value < 999'995.0) {
    return fmt::format("{:.2f}k", value / 1e3);
  }
  return fmt::format("{:.2f}M", value / 1e6);
}

std::string percent(double value) {
  return fmt::format("{:.1f}%", value);
}

std::string sparkline(const std::deque<double>& values, std::size_t width, const Glyphs& glyphs) {
  static constexpr std::array<const char*, 8> kBlocks{"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  static constexpr std::string_view kAscii = "_.-~=*#@";
  const std::size_t count = std::min(values.size(), width);
  const auto first = values.end() - static_cast<std::ptrdiff_t>(count);
  const double top = count == 0 ? 0 : *std::max_element(first, values.end());
  std::string line;
  for (auto value = first; value != values.end(); ++value) {
    const std::size_t level =
        top <= 0 ? 0 : std::min<std::size_t>(7, static_cast<std::size_t>(*value / top * 7.0 + 0.5));
    line += glyphs.unicode ? std::string(kBlocks[level]) : std::string(1, kAscii[level]);
  }
  return line;
}

std::string bar(double fraction, std::size_t width, const Glyphs& glyphs) {
  const double clamped = std::clamp(std::isfinite(fraction) ? fraction : 0.0, 0.0, 1.0);
  const auto filled = static_cast<std::size_t>(std::lround(clamped * static_cast<double>(width)));
  std::string line;
  for (std::size_t i = 0; i < filled; ++i) {
    line += glyphs.unicode ? "█" : "#";
  }
  return line;
}

} // namespace hotscope::cli::console
