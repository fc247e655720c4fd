// A guest's ELF image, read as untrusted input: the header and program headers checked, the
// loadable segments and the function symbols (for stack traces and for finding the runtime's
// state) extracted. Internal to the runners.
#pragma once

#include "guest/guest.hpp"
#include "snapshot/snapshot.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hotscope::guest {

struct LoadSegment {
  std::uint64_t address = 0; // virtual = physical: guests are identity-mapped
  std::uint64_t file_offset = 0;
  std::uint64_t file_size = 0;
  std::uint64_t memory_size = 0;
  bool executable = false;
};

class ElfImage {
public:
  // Reads `path` (a regular file of at most 64 MiB, its size checked before reading): a 64-bit
  // little-endian x86-64 executable (ET_EXEC) whose segments lie inside the file and whose entry
  // point is in an executable segment. nullopt and `error` otherwise.
  static std::optional<ElfImage> open(const std::string& path, std::string& error);

  std::uint64_t entry() const { return entry_; }
  const std::vector<LoadSegment>& segments() const { return segments_; }
  // The bytes a segment loads from the file (checked to be inside it).
  std::string_view segment_bytes(const LoadSegment& segment) const;
  std::optional<std::uint64_t> symbol_address(std::string_view name) const;
  // "" when the image is of the kind the runner takes (`run_as_process`: the child-process
  // runner, else the KVM one), or one line saying what it is and how to run it.
  std::string wrong_kind(const std::string& path, bool run_as_process) const;
  // Function symbols (demangled), for GuestTrace's stack traces; shares the table.
  Symbolizer symbolizer() const;
  // `path`, the size and the SHA-256 of the bytes read (image_identity.cpp): what ran, for the
  // reports.
  GuestImage identity(const std::string& path) const;

  struct Entry {
    std::uint64_t start = 0;
    std::uint64_t size = 0;
    std::string name;     // demangled
    std::string raw_name; // as in the symbol table
  };

private:
  std::string bytes_;
  std::uint64_t entry_ = 0;
  std::vector<LoadSegment> segments_;
  std::shared_ptr<const std::vector<Entry>> symbols_; // sorted by start
};

} // namespace hotscope::guest
