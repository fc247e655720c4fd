// What the SVG and HTML writers share: escaping, and the compiled-in scripts and styles
// (assets/, embedded at build time by embed.cmake).
#pragma once

#include <string>
#include <string_view>

namespace hotscope::cli::report {

// `text` safe inside XML/HTML text and quoted attribute values.
std::string escape(std::string_view text);

namespace assets {
extern const char* const kFlameJs;
extern const char* const kFlameCss;
extern const char* const kReportJs;
extern const char* const kReportCss;
} // namespace assets

} // namespace hotscope::cli::report
