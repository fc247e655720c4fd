// DHAT JSON (valgrind's dhat/dh_main.c writes the format; docs/heap.md), as the recommended C++
// heap mode: mode "cpp-heap", lifetimes recorded, no access counts, times in µs. Written by hand,
// streaming, so a profile of many sites needs no document tree. No fmt here: the preload library
// links this file and must not bring a shared C++ library into a C program.
#include "export/export.hpp"

#include <cstdio>
#include <ostream>
#include <string_view>

namespace hotscope::exporters {
namespace {

// valgrind's json_escape: '"' and '\' escaped, control bytes as \u00XX, everything else as is.
std::string json_string(std::string_view text) {
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (static_cast<unsigned char>(c) <= 0x1f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
      quoted += escaped;
    } else {
      quoted += c;
    }
  }
  quoted += '"';
  return quoted;
}

// "1,234,567", as DHAT prints its summary.
std::string grouped(std::uint64_t value) {
  const std::string digits = std::to_string(value);
  std::string text;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) {
      text += ',';
    }
    text += digits[i];
  }
  return text;
}

} // namespace

void write_dhat_json(const HeapProfile& profile, std::ostream& out) {
  out << "{\"dhatFileVersion\":2\n"
      << ",\"mode\":\"cpp-heap\",\"verb\":\"Allocated\"\n"
      << ",\"bklt\":true,\"bkacc\":false\n"
      << ",\"tu\":\"µs\",\"Mtu\":\"s\"\n"
      << ",\"tuth\":10\n"
      << ",\"cmd\":" << json_string(profile.command) << "\n"
      << ",\"pid\":" << profile.pid << "\n"
      << ",\"te\":" << profile.end_us << "\n"
      << ",\"tg\":" << profile.gmax_us << "\n"
      << ",\"pps\":\n [";
  bool first = true;
  for (const HeapSite& site : profile.sites) {
    out << (first ? "" : "\n ,") << "{\"tb\":" << site.total_bytes
        << ",\"tbk\":" << site.total_blocks << ",\"tl\":" << site.lifetimes_us
        << ",\"mb\":" << site.max_bytes << ",\"mbk\":" << site.max_blocks
        << ",\"gb\":" << site.gmax_bytes << ",\"gbk\":" << site.gmax_blocks
        << ",\"eb\":" << site.end_bytes << ",\"ebk\":" << site.end_blocks << ",\"fs\":[";
    for (std::size_t i = 0; i < site.frames.size(); ++i) {
      out << (i == 0 ? "" : ",") << site.frames[i];
    }
    out << "]}";
    first = false;
  }
  out << "\n ]\n,\"ftbl\":\n [";
  first = true;
  for (const std::string& frame : profile.frames) {
    out << (first ? "" : "\n ,") << json_string(frame);
    first = false;
  }
  out << "\n ]\n}\n";
}

void write_heap_summary(const HeapProfile& profile, std::ostream& out) {
  HeapSite sum;
  for (const HeapSite& site : profile.sites) {
    sum.total_bytes += site.total_bytes;
    sum.total_blocks += site.total_blocks;
    sum.gmax_bytes += site.gmax_bytes;
    sum.gmax_blocks += site.gmax_blocks;
    sum.end_bytes += site.end_bytes;
    sum.end_blocks += site.end_blocks;
  }
  const std::string prefix = "==" + std::to_string(profile.pid) + "== hotscope heap: ";
  out << prefix << "Total:     " << grouped(sum.total_bytes) << " bytes in "
      << grouped(sum.total_blocks) << " blocks\n"
      << prefix << "At t-gmax: " << grouped(sum.gmax_bytes) << " bytes in "
      << grouped(sum.gmax_blocks) << " blocks\n"
      << prefix << "At t-end:  " << grouped(sum.end_bytes) << " bytes in "
      << grouped(sum.end_blocks) << " blocks\n";
  if (profile.unknown_frees + profile.unknown_reallocs > 0) {
    out << prefix << "Unknown pointers: " << grouped(profile.unknown_frees) << " frees, "
        << grouped(profile.unknown_reallocs) << " reallocs (passed on)\n";
  }
}

} // namespace hotscope::exporters
