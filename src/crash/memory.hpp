// What a crash report reads from a signal handler: memory that may be gone (a record's reference
// into an unloaded library) and the loaded objects' code mappings, through system calls only,
// into static storage (docs/crash.md).
#pragma once

#include <cstddef>
#include <cstdint>

namespace hotscope::crash {

// Copies `size` bytes at `address` into `out` without touching them directly: a bad address is
// an error (false), not a second crash.
bool read_memory(std::uint64_t address, void* out, std::size_t size) noexcept;

// The NUL-terminated text at `address`, cut to fit `out`; "?" when it cannot be read.
const char* read_text(std::uint64_t address, char* out, std::size_t size) noexcept;

// Where a code address is: its object's path, build id (hex, "" when none) and the address as
// the object's file sees it (its link-time address: what symbolizers take). Valid until the
// next call.
struct CodePlace {
  const char* path = nullptr; // nullptr: in no file's mapping
  const char* build_id = "";
  std::uint64_t file_address = 0;
};

// Reads /proc/self/maps again (objects may have been loaded since the start). False when it
// could not be read: every place is then unknown.
bool read_code_mappings() noexcept;
CodePlace code_place(std::uint64_t address) noexcept;

} // namespace hotscope::crash
