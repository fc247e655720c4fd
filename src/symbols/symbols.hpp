// Code addresses of the current process to function names and source lines, with libdw
// (elfutils). Used at write time only, never on an allocating thread's fast path.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hotscope::symbols {

// One source-level frame. An address inside inlined code gives several, sharing the address.
struct Frame {
  std::string function; // demangled; empty when unknown
  std::string file;     // base name of the source file; empty without debug info
  unsigned line = 0;
  std::string object; // path of the loaded object containing the address
};

// "0x4011A6: make_node(int) (tree.cpp:12)", "0x4011A6: f (in /usr/lib/libx.so)" or
// "0x4011A6: ??? (in /usr/lib/libx.so)": valgrind's frame syntax (formats.md §1.4).
std::string describe(std::uintptr_t address, const Frame& frame);

// Not thread-safe: one thread at a time.
class Symbolizer {
public:
  // Reads the current process's memory map: objects loaded later are not known until refresh().
  Symbolizer();
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // The frames at a code address, innermost (most deeply inlined) first; never empty. Results
  // are cached. For return addresses pass the address of the call instruction (return - 1).
  const std::vector<Frame>& resolve(std::uintptr_t address);

  // When objects were loaded or unloaded (dlopen, dlclose) since the memory map was read:
  // rereads it, forgets the cached results it may change (all after an unload, those of
  // addresses inside the new objects after loads only; references from resolve() become
  // invalid) and returns true. A symbolizer kept across profiles calls it before each, so no
  // cached result outlives the object it came from.
  bool refresh();

  // How many addresses are cached.
  std::size_t cached() const { return cache_.size(); }

private:
  struct Session;
  void read_memory_map();
  std::unique_ptr<Session> session_;
  std::map<std::uintptr_t, std::vector<Frame>> cache_; // ordered: refresh() erases ranges
};

} // namespace hotscope::symbols
