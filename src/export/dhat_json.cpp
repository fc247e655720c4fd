// DHAT JSON (valgrind's dhat/dh_main.c writes the format; docs/heap.md), as the recommended C++
// heap mode: mode "cpp-heap", lifetimes recorded, no access counts, times in µs. Written by hand
// into one string, so a profile of many sites needs no document tree. Its strings are escaped as
// valgrind escapes them, not as the other JSON outputs (src/text).
#include "export/export.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <string_view>

namespace hotscope::exporters {
namespace {

// valgrind's json_escape: '"' and '\' escaped, control bytes as \u00XX, everything else as is.
void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) <= 0x1f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  out += '"';
}

// Text written into a buffer on the stack and appended to `out` a few kilobytes at a time: a
// site's numbers appended one by one each checked the string's capacity and called memcpy for a
// few bytes, 3 M times for cc1plus's 82,500 sites.
class BufferedText {
public:
  explicit BufferedText(std::string& out) : out_(out) {}
  BufferedText(const BufferedText&) = delete;
  BufferedText& operator=(const BufferedText&) = delete;
  ~BufferedText() { flush(); }

  void add(std::string_view text) {
    if (text.size() > room()) {
      flush();
    }
    if (text.size() > room()) {
      out_ += text;
      return;
    }
    end_ = std::copy(text.begin(), text.end(), end_);
  }
  void add(std::uint64_t value) {
    if (room() < 20) { // the digits of the largest value
      flush();
    }
    end_ = std::to_chars(end_, buffer_.data() + buffer_.size(), value).ptr;
  }
  void flush() {
    out_.append(buffer_.data(), end_);
    end_ = buffer_.data();
  }

private:
  std::size_t room() const {
    return static_cast<std::size_t>(buffer_.data() + buffer_.size() - end_);
  }

  std::string& out_;
  std::array<char, 4096> buffer_;
  char* end_ = buffer_.data();
};

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

// The JSON of `profile` appended to `out`, handed to `hand_over` (which may empty it) whenever it
// holds `piece` bytes or more, between two sites or frames.
void append_dhat_json(const HeapProfile& profile, std::string& out, std::size_t piece,
                      const std::function<void(std::string&)>& hand_over) {
  const auto handed_over_if_full = [&] {
    if (out.size() >= piece) {
      hand_over(out);
    }
  };
  out += "{\"dhatFileVersion\":2\n"
         ",\"mode\":\"cpp-heap\",\"verb\":\"Allocated\"\n"
         ",\"bklt\":true,\"bkacc\":false\n"
         ",\"tu\":\"µs\",\"Mtu\":\"s\"\n"
         ",\"tuth\":10\n"
         ",\"cmd\":";
  append_json_string(out, profile.command);
  out += "\n,\"pid\":";
  out += std::to_string(profile.pid);
  {
    BufferedText text(out);
    text.add("\n,\"te\":");
    text.add(profile.end_us);
    text.add("\n,\"tg\":");
    text.add(profile.gmax_us);
    if (profile.attached) {
      // hotscope's own key (DHAT's viewer ignores it): what `hotscope attach` could not see.
      text.add("\n,\"attached\":{\"freesBeforeAttach\":");
      text.add(profile.frees_before_attach);
      text.add(",\"reallocsBeforeAttach\":");
      text.add(profile.reallocs_before_attach);
      text.add("}");
    }
    text.add("\n,\"pps\":\n [");
  }
  bool first = true;
  for (const HeapSite& site : profile.sites) {
    const std::pair<std::string_view, std::uint64_t> fields[] = {
        {"{\"tb\":", site.total_bytes},  {",\"tbk\":", site.total_blocks},
        {",\"tl\":", site.lifetimes_us}, {",\"mb\":", site.max_bytes},
        {",\"mbk\":", site.max_blocks},  {",\"gb\":", site.gmax_bytes},
        {",\"gbk\":", site.gmax_blocks}, {",\"eb\":", site.end_bytes},
        {",\"ebk\":", site.end_blocks}};
    {
      BufferedText text(out);
      text.add(first ? "" : "\n ,");
      for (const auto& [key, value] : fields) {
        text.add(key);
        text.add(value);
      }
      text.add(",\"fs\":[");
      for (std::size_t i = 0; i < site.frames.size(); ++i) {
        if (i > 0) {
          text.add(",");
        }
        text.add(std::uint64_t{site.frames[i]});
      }
      text.add("]}");
    }
    first = false;
    handed_over_if_full();
  }
  out += "\n ]\n,\"ftbl\":\n [";
  first = true;
  for (const std::string& frame : profile.frames) {
    out += first ? "" : "\n ,";
    append_json_string(out, frame);
    first = false;
    handed_over_if_full();
  }
  out += "\n ]\n}\n";
}

} // namespace

std::string dhat_json(const HeapProfile& profile) {
  std::string out;
  // About 120 bytes per site plus its frame indices, 60 per frame: one allocation for most.
  std::size_t frames = 0;
  for (const HeapSite& site : profile.sites) {
    frames += site.frames.size();
  }
  out.reserve(4096 + profile.sites.size() * 120 + frames * 6 + profile.frames.size() * 60);
  append_dhat_json(profile, out, SIZE_MAX, [](std::string&) {});
  return out;
}

void write_dhat_json(const HeapProfile& profile, std::ostream& out) {
  // In pieces of 256 KiB, one buffer reused: a large profile's text whole (19 MB for cc1plus)
  // was fresh memory, a page fault per page, at the program's exit.
  constexpr std::size_t piece = 256 * 1024;
  std::string text;
  text.reserve(2 * piece);
  const auto write = [&out](std::string& written) {
    out.write(written.data(), static_cast<std::streamsize>(written.size()));
    written.clear();
  };
  append_dhat_json(profile, text, piece, write);
  write(text);
}

void write_heap_summary(const HeapProfile& profile, std::string_view prefix, std::ostream& out) {
  HeapSite sum;
  for (const HeapSite& site : profile.sites) {
    sum.total_bytes += site.total_bytes;
    sum.total_blocks += site.total_blocks;
    sum.gmax_bytes += site.gmax_bytes;
    sum.gmax_blocks += site.gmax_blocks;
    sum.end_bytes += site.end_bytes;
    sum.end_blocks += site.end_blocks;
  }
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
  if (profile.frees_before_attach + profile.reallocs_before_attach > 0) {
    out << prefix << "Blocks allocated before the attach: " << grouped(profile.frees_before_attach)
        << " frees, " << grouped(profile.reallocs_before_attach) << " reallocs (not profiled)\n";
  }
}

std::string heap_report_summary(const HeapProfile& profile, const HeapReportFacts& facts) {
  std::ostringstream summary;
  // Which process of a run that starts many (a compiler driver, a shim) each line is about.
  const std::string prefix =
      "==" + std::to_string(profile.pid) + "== " + facts.program + ": hotscope heap: ";
  const bool unsampled = facts.sampling && facts.sampled_allocations == 0;
  if (facts.sampling) {
    summary << prefix << "sampled, one sample point per " << facts.sample_bytes
            << " bytes on average";
  }
  if (unsampled) {
    // Estimates from no sample would read "0 bytes": say why there are none instead.
    summary << ": no allocation was sampled, the run was too short to be sampled at this rate; "
               "lower HOTSCOPE_HEAP_SAMPLE_BYTES or use HOTSCOPE_HEAP_MODE=full for figures\n";
  } else {
    if (facts.sampling) {
      summary << " (" << facts.sampled_allocations
              << " allocations sampled): the figures are estimates\n";
    }
    write_heap_summary(profile, prefix, summary);
  }
  summary << prefix << "symbolized " << facts.addresses << " code addresses "
          << (facts.by_launcher ? "after exit, by hotscope run" : "at exit") << " (" << facts.ahead
          << " ahead), profile built in " << std::fixed << std::setprecision(3) << facts.seconds
          << " s";
  if (facts.debug_files_inflated + facts.debug_files_from_cache > 0) {
    summary << "; compressed debug files: " << facts.debug_files_inflated << " inflated, "
            << facts.debug_files_from_cache << " from the cache";
  }
  summary << "\n" << prefix << "wrote " << facts.json_path << "\n";
  if (!facts.pprof_path.empty()) {
    summary << prefix << "wrote " << facts.pprof_path << "\n";
  }
  return summary.str();
}

} // namespace hotscope::exporters
