// The output formats, listed once (docs/architecture.md, "Output formats"): what each is called,
// its file in HOTSCOPE_OUT, the agent endpoint that answers it and its MIME type. write_all, the
// agent's routes and the CLI's choices and requests are driven by this table; libhotscope binds
// each format to its writer in export/writers.hpp. Header-only and free of the snapshot, so the
// `hotscope` command, which does not link libhotscope, reads the same table.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hotscope::exporters {

enum class Format {
  StatsJson,
  Table,
  Columns,
  Chrome,
  Folded,
  TextTree,
  ThreadsJson,
  ThreadsText,
  Locks,
  Prometheus,
  Dhat,
  PprofHeap,
  PprofWall,
  PprofCpu,
  CpuFolded,
  PprofMutex,
  SlowText,
  SlowJson,
};

inline constexpr const char* kJsonMime = "application/json";
inline constexpr const char* kTextMime = "text/plain; charset=utf-8";
inline constexpr const char* kPrometheusMime = "text/plain; version=0.0.4; charset=utf-8";
inline constexpr const char* kBinaryMime = "application/octet-stream";

struct FormatInfo {
  Format format;
  const char* path; // the agent endpoint that answers it; "" when none does
  const char* name; // its value of the endpoint's `format` parameter; "" when it takes none
  const char* file; // its file in HOTSCOPE_OUT; "" when none is written
  const char* mime;
  bool snapshot; // saved by the console's `s` key (docs/console.md)
};

// One row per format. The formats of one endpoint are in the order its `format` parameter lists
// them (its usage, its 400 answer); the first is what it answers without one. write_all writes
// the files of the formats that libhotscope writes from a snapshot, in this order (the CPU
// profile's only when the snapshot has CPU samples). The heap files are the heap library's
// (docs/heap.md). /debug/pprof/heap answers PprofHeap too, at Go's path; /debug/pprof/profile
// answers the CPU samples of the next N seconds.
inline constexpr FormatInfo kFormats[] = {
    {Format::StatsJson, "/v1/stats", "json", "stats.json", kJsonMime, true},
    {Format::Table, "/v1/stats", "table", "report.txt", kTextMime, true},
    {Format::Columns, "/v1/stats", "columns", "", kJsonMime, false},
    {Format::Chrome, "/v1/trace", "chrome", "trace.json", kJsonMime, true},
    {Format::Folded, "/v1/trace", "folded", "trace.folded", kTextMime, true},
    {Format::TextTree, "/v1/trace", "text", "trace.txt", kTextMime, false},
    {Format::SlowText, "/v1/slow", "text", "slow.txt", kTextMime, true},
    {Format::SlowJson, "/v1/slow", "json", "slow.json", kJsonMime, true},
    {Format::ThreadsJson, "/v1/threads", "json", "", kJsonMime, false},
    {Format::ThreadsText, "/v1/threads", "text", "", kTextMime, false},
    {Format::Locks, "/v1/locks", "", "", kJsonMime, false},
    {Format::Prometheus, "/v1/metrics", "", "", kPrometheusMime, false},
    {Format::Dhat, "/v1/heap", "dhat", "heap.json", kJsonMime, true},
    {Format::PprofHeap, "/v1/heap", "pprof", "heap.pb.gz", kBinaryMime, false},
    {Format::PprofWall, "/debug/pprof/wall", "", "", kBinaryMime, false},
    {Format::PprofCpu, "/debug/pprof/profile", "pprof", "cpu.pb.gz", kBinaryMime, false},
    {Format::CpuFolded, "/debug/pprof/profile", "folded", "cpu.folded", kTextMime, false},
    {Format::PprofMutex, "/debug/pprof/mutex", "", "", kBinaryMime, false},
};

constexpr const FormatInfo& format_info(Format format) {
  for (const FormatInfo& info : kFormats) {
    if (info.format == format) {
      return info;
    }
  }
  throw "a Format without a row in kFormats"; // at compile time: does not compile
}

// The format `path` answers for `name` ("" or absent: its first), or nullptr if it has none.
constexpr const FormatInfo* find_format(std::string_view path, std::string_view name) {
  for (const FormatInfo& info : kFormats) {
    if (info.path == path && (name.empty() || info.name == name)) {
      return &info;
    }
  }
  return nullptr;
}

// `path`'s format names in order ({"json", "table", "columns"}), none if it takes no `format`.
inline std::vector<std::string> format_choices(std::string_view path) {
  std::vector<std::string> names;
  for (const FormatInfo& info : kFormats) {
    if (info.path == path && *info.name != '\0') {
      names.emplace_back(info.name);
    }
  }
  return names;
}

// The same joined by `separator` ("json|table|columns").
inline std::string format_names(std::string_view path, std::string_view separator) {
  std::string joined;
  for (const std::string& name : format_choices(path)) {
    joined += (joined.empty() ? "" : std::string(separator)) + name;
  }
  return joined;
}

// What to ask the agent for `format`: "/v1/trace?format=chrome", "/v1/metrics".
inline std::string agent_target(const FormatInfo& format) {
  return *format.name == '\0' ? std::string(format.path)
                              : std::string(format.path) + "?format=" + format.name;
}
inline std::string agent_target(Format format) {
  return agent_target(format_info(format));
}

} // namespace hotscope::exporters
