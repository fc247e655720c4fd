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
};

// The whole content of the file at `path`; a Failure (kUsage) naming it when it cannot be read.
std::string read_text(const std::string& path);

// `document` classified; a Failure (kUsage) naming `source` when it is neither kind.
Profile classify(nlohmann::json document, const std::string& source);
// The file at `path` read, parsed and classified; a Failure (kUsage), one line, when it cannot be
// read, is not JSON or is neither kind.
Profile read_profile(const std::string& path);

// One stack with its count: frames root first.
struct Stack {
  std::vector<std::string> frames;
  std::uint64_t count = 0;
};
// The stacks of a folded file; lines that are not `frame;frame count` (the comments) are skipped.
std::vector<Stack> folded_stacks(std::string_view text);

// A DHAT frame string taken apart: "0x4011D6: ns::parse(std::string const&) (service.cpp:40)" is
// {"ns::parse(std::string const&)", "service.cpp", 40}; "0x4011D6: f (in /lib/libc.so.6)" is
// {"f", "/lib/libc.so.6", 0}. Other strings ("[root]") are all function.
struct Frame {
  std::string function;
  std::string file;
  int line = 0;
};
Frame parse_frame(const std::string& text);
// "ns::parse (service.cpp:40)": without the address and the parameter types, which make C++
// frames too long to read in a row.
std::string short_frame(const std::string& text);
// A frame of the allocator or of the standard library's headers, which says nothing about who
// allocated.
bool inside_allocator(const std::string& text);

// One allocation site of a DHAT profile: its frame strings, innermost first, and its figures.
struct Site {
  std::vector<std::string> frames;
  std::uint64_t total_bytes = 0, total_blocks = 0; // tb, tbk
  std::uint64_t gmax_bytes = 0, gmax_blocks = 0;   // gb, gbk: at the global peak
  std::uint64_t end_bytes = 0, end_blocks = 0;     // eb, ebk: at the end
};
// The sites of a DHAT profile; a Failure (kUsage) naming `source` when a site is malformed.
std::vector<Site> heap_sites(const nlohmann::json& dhat, const std::string& source);
// "the first frame outside the allocator", shortened: how a site is named in a row.
std::string site_name(const Site& site);

} // namespace hotscope::cli::profiles
