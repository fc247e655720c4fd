// A memory map of the loaded objects from the loader's list, and its paths resolved afterwards:
// the sampled heap profile's report at a program's exit (docs/heap.md, "The report at exit").
#include "objects/objects.hpp"

#include "text/text.hpp"

#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>

namespace hotscope::objects {
namespace {

struct Segment {
  std::uint64_t start;
  std::uint64_t limit;
  std::uint64_t offset;
  char perms[5];
  std::size_t object; // 1 + the object's place in the loader's list
  const char* path;
};

struct Listing {
  const char* program_path;
  std::uint64_t page;
  std::size_t objects; // listed so far
  std::vector<Segment> segments;
  std::deque<std::string> resolved; // the paths of objects opened by a relative name
};

// Each PT_LOAD segment as the kernel maps it: whole pages of the file from the segment's
// offset, up to its file size (what lies past it is anonymous memory, no file's).
int add_object_segments(dl_phdr_info* info, std::size_t, void* data) {
  auto& listing = *static_cast<Listing*>(data);
  const bool executable = info->dlpi_name == nullptr || info->dlpi_name[0] == '\0';
  const char* path = executable ? listing.program_path : info->dlpi_name;
  if (path[0] != '/') {
    char real[PATH_MAX];
    if (std::strchr(path, '/') == nullptr || realpath(path, real) == nullptr) {
      return 0; // the vDSO ("linux-vdso.so.1"): no file
    }
    path = listing.resolved.emplace_back(real).c_str(); // dlopen("./plugin.so")
  }
  const std::uint64_t page = listing.page;
  const std::size_t object = ++listing.objects;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type != PT_LOAD || header.p_filesz == 0) {
      continue;
    }
    const std::uint64_t address = info->dlpi_addr + header.p_vaddr;
    Segment segment{address & ~(page - 1),
                    (address + header.p_filesz + page - 1) & ~(page - 1),
                    header.p_offset & ~(page - 1),
                    {(header.p_flags & PF_R) != 0 ? 'r' : '-',
                     (header.p_flags & PF_W) != 0 ? 'w' : '-',
                     (header.p_flags & PF_X) != 0 ? 'x' : '-', 'p', '\0'},
                    object,
                    path};
    listing.segments.push_back(segment);
  }
  return 0;
}

} // namespace

std::string loaded_objects_map(const std::string& program_path) {
  Listing listing{
      program_path.c_str(), static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)), 0, {}, {}};
  dl_iterate_phdr(add_object_segments, &listing);
  std::sort(listing.segments.begin(), listing.segments.end(),
            [](const Segment& a, const Segment& b) { return a.start < b.start; });
  std::string maps;
  for (const Segment& segment : listing.segments) {
    text::append(maps, text::hex(segment.start, 8), '-', text::hex(segment.limit, 8), ' ',
                 segment.perms, ' ', text::hex(segment.offset, 8), " 00:00 ", segment.object,
                 "                   ", segment.path, '\n');
  }
  return maps;
}

std::string with_resolved_paths(const std::string& maps) {
  std::string resolved;
  std::size_t line_start = 0;
  while (line_start < maps.size()) {
    std::size_t line_end = maps.find('\n', line_start);
    if (line_end == std::string::npos) {
      line_end = maps.size();
    }
    const std::string line = maps.substr(line_start, line_end - line_start);
    line_start = line_end + 1;
    const std::size_t path_at = line.find(" /");
    char real[PATH_MAX];
    if (path_at != std::string::npos && realpath(line.c_str() + path_at + 1, real) != nullptr) {
      text::append(resolved, std::string_view(line).substr(0, path_at + 1), real, '\n');
    } else {
      text::append(resolved, line, '\n');
    }
  }
  return resolved;
}

} // namespace hotscope::objects
