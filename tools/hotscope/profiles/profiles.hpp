// Reading the files hotscope writes, for the commands that compare and draw them (`hotscope
// diff`, `report`, `flame`): stats.json and heap.json (DHAT) told apart, trace.folded's stacks,
// and DHAT's frame strings taken apart (docs/formats-output.md, docs/heap.md).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hotscope::cli::profiles {

enum class Kind { Stats, Heap };

// "a stats.json", "a heap profile (DHAT)": for messages.
std::string kind_name(Kind kind);

struct Profile {
  Kind kind = Kind::Stats;
  std::string source; // the file's path, or "process 4242 (name)"
  nlohmann::json document;
  std::uint64_t text_bytes = 0; // the size of the text it was parsed from (0: made in code)
};

// What a file given to these commands may hold (docs/diff-and-report.md, "Limits"): past any of
// them the input is refused with a Failure (kUsage) naming the limit.
inline constexpr std::uint64_t kMaxFileBytes = 1ULL << 30; // any file read
inline constexpr std::size_t kMaxJsonDepth = 64;           // nested arrays and objects
inline constexpr std::size_t kMaxLineBytes = 1U << 20;     // a line of folded stacks
inline constexpr std::size_t kMaxStackFrames = 4096;       // frames of one stack or heap site
// A heap profile's frames over all its sites, as text: at most this or 32 times the file's size
// (a real compiler's profile has 11 times its size: deep stacks of long C++ names).
inline constexpr std::uint64_t kMinSiteFrameBytes = 256ULL << 20;
inline constexpr std::uint64_t kSiteFrameBytesPerByte = 32;

// The whole content of the file at `path`; a Failure (kUsage) naming it when it cannot be read
// or is larger than kMaxFileBytes.
std::string read_text(const std::string& path);

// `text` parsed as JSON with a bounded depth and a bounded memory (a small multiple of the
// text); a Failure (kUsage), one line naming `source`, when it is not JSON, is cut short, is
// nested deeper than kMaxJsonDepth or would take too much memory.
nlohmann::json parse_json(std::string_view text, const std::string& source);

// `document` classified and its figures checked (each key the commands read has the type and
// sign docs/formats-output.md gives it); a Failure (kUsage) naming `source` and the first wrong
// key when it is neither kind or malformed.
Profile classify(nlohmann::json document, const std::string& source);
// The checks classify() makes on a heap profile, and on the threads of a stats.json with those of
// GET /v1/threads (now_ns, stuck_threshold_ns, each thread's open_scopes and stuck): for the
// agent's answers, which the console reads (`source` names the request).
void check_heap(const nlohmann::json& document, const std::string& source);
void check_threads(const nlohmann::json& answer, const std::string& source);
// The file at `path` read, parsed and classified; a Failure (kUsage), one line, when it cannot be
// read, is not JSON or is neither kind.
Profile read_profile(const std::string& path);

// Stacks as lines of text, "frame;frame;frame count", root first: checked and indexed, not
// copied (a large trace.folded stays one string). `text` must outlive it.
struct StackLines {
  std::string_view text;
  char separator = ';';
  std::vector<std::uint32_t> starts; // where each stack's line starts in `text`
  std::uint64_t total = 0;           // the counts' sum
  // The frames of stack `i` (still joined by `separator`) and its count.
  std::string_view frames(std::size_t i) const { return frames_at(starts[i]); }
  std::uint64_t count(std::size_t i) const { return count_at(starts[i]); }
  // The same for the line that starts at `start`.
  std::string_view frames_at(std::uint32_t start) const;
  std::uint64_t count_at(std::uint32_t start) const;
};
// The stacks of a folded file: every line but the empty ones and the `#` comments must be a
// stack with a count (an integer >= 0); a Failure (kUsage) naming `source`, the line and what
// is wrong otherwise, or past kMaxLineBytes or kMaxStackFrames. A file that is JSON (or starts
// like JSON) is refused as the wrong kind. `separator` other than ';': text the commands made
// themselves (heap stacks), with no comment lines.
StackLines folded_stacks(std::string_view text, const std::string& source, char separator = ';');

// A DHAT frame string taken apart: "0x4011D6: ns::parse(std::string const&) (service.cpp:40)" is
// {"ns::parse(std::string const&)", "service.cpp", 40}; "0x4011D6: f (in /lib/libc.so.6)" is
// {"f", "/lib/libc.so.6", 0}. Other strings ("[root]") are all function.
struct Frame {
  std::string function;
  std::string file;
  int line = 0;
};
Frame parse_frame(const std::string& text);
// "ns::parse (service.cpp:40)", "ns::parse (in svc)": without the address, the parameter types
// and qualifiers, which make C++ frames too long to read in a row, and the object's directory.
std::string short_frame(const std::string& text);
// What a frame of a heap site's stack is to the site's name (docs/heap.md, "Site names"); in the
// order of preference, the program's code first.
enum class FrameRole {
  Program,
  Library,     // the standard library, the C and C++ runtime, the loader, hotscope
  Allocator,   // malloc, operator new, ...
  ThreadEntry, // start_thread, clone, __libc_start_main, _start, ...
};
FrameRole frame_role(const std::string& text);

// One allocation site of a DHAT profile: its frame strings, innermost first, and its figures.
struct Site {
  std::vector<const std::string*> frames; // into the profile's "ftbl", which must outlive it
  std::uint64_t total_bytes = 0, total_blocks = 0; // tb, tbk
  std::uint64_t gmax_bytes = 0, gmax_blocks = 0;   // gb, gbk: at the global peak
  std::uint64_t end_bytes = 0, end_blocks = 0;     // eb, ebk: at the end
};
// The sites of a DHAT profile (`dhat`, checked by check_heap, parsed from `text_bytes` of text or
// made in code: 0); a Failure (kUsage) naming `source` when a site is malformed or their frames
// as text pass max(kMinSiteFrameBytes, kSiteFrameBytesPerByte times `text_bytes`).
std::vector<Site> heap_sites(const nlohmann::json& dhat, const std::string& source,
                             std::uint64_t text_bytes);
// The same for a profile of Kind::Heap.
inline std::vector<Site> heap_sites(const Profile& heap) {
  return heap_sites(heap.document, heap.source, heap.text_bytes);
}
// A site's name in every view: its first frame of the best FrameRole, shortened
// (docs/heap.md, "Site names").
std::string site_name(const Site& site);

} // namespace hotscope::cli::profiles
