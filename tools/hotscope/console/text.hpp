// Text helpers every tab uses: aligned columns, widths in code points, rates, sparklines, bars.
// Durations and bytes come from the exporters (export/common.hpp) so the console writes them as
// report.txt and `hotscope stats` do.
#pragma once

#include "view.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace hotscope::cli::console {

using Cells = std::vector<std::string>;

// Screen columns of UTF-8 text (one per code point; the console prints no wide characters).
std::size_t columns(std::string_view text);
// `text` cut to `width` columns, the cut marked with "…" (or "~" without Unicode).
std::string clip(std::string_view text, std::size_t width, const Glyphs& glyphs);

// Rows padded to their widest cell, two spaces apart: the first column left-aligned and cut at
// `first_width` (0: never cut), the others right-aligned.
std::vector<std::string> align(const std::vector<Cells>& rows, std::size_t first_width,
                               const Glyphs& glyphs);

std::string duration(double ns);
std::string bytes(double bytes);
// A wall-clock time of day, local: "14:03:27.512".
std::string time_of_day(std::uint64_t unix_ns);
// Per-second figures: "0", "12.5", "3.40k", "1.20M".
std::string per_second(double value);
std::string percent(double value);

// The last `width` values as one character each, scaled from 0 to the largest.
std::string sparkline(const std::deque<double>& values, std::size_t width, const Glyphs& glyphs);
// A horizontal bar `fraction` (0..1) of `width` columns.
std::string bar(double fraction, std::size_t width, const Glyphs& glyphs);

} // namespace hotscope::cli::console
