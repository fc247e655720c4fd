// Code addresses of the current process to function names and source lines, with libdw
// (elfutils). Used at write time only, never on an allocating thread's fast path.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

struct Dwfl_Module; // libdw's

namespace hotscope::symbols {

// One object's symbols, read once and sorted: address to symbol name by binary search. libdw's
// own lookup (dwfl_module_addrinfo) scans the whole table for every address, which on a stripped
// program of 30,000 .dynsym symbols costs more than the program's run.
// The symbols are those libdw finds for the module: the .symtab of the separate debug file (by
// build id) or of the object itself, else its .dynsym plus the .gnu_debugdata MiniDebugInfo
// (xz-compressed) where there is one. The choice among them follows dwfl_module_addrinfo: a
// global symbol containing the address, else a local one, the closest start first, the smallest
// first at equal starts; else the closest sizeless label in the same section with no sized symbol
// between it and the address. The names are not read while the table is built: they stay in
// libdw's string tables, and only the names looked up are touched (reading each name of a 1.4 MB
// string table in symbol order misses the cache for nearly every one).
class SymbolTable {
public:
  SymbolTable() = default;
  // The names point into the module's ELF data: the table must not outlive the module.
  explicit SymbolTable(Dwfl_Module* module);
  // The symbols of the ELF file at `path`, at its link-time addresses; the table keeps the file
  // open. Separate debug files are looked for by build id under `debug_directories`
  // (':'-separated, as libdw takes them). Empty when the file cannot be read.
  static SymbolTable of_file(const std::string& path,
                             const std::string& debug_directories = "/usr/lib/debug");

  // The (mangled) name of the symbol containing `address`, NUL-terminated; empty when none does.
  std::string_view name_at(std::uint64_t address) const;
  // The file's GNU build id in lowercase hex (of_file's; "" when it has none).
  const std::string& build_id() const { return build_id_; }
  // Loaded address minus link-time address.
  std::uint64_t bias() const { return bias_; }
  std::size_t size() const { return globals_.size() + locals_.size() + labels_.size(); }

private:
  struct Range {
    std::uint64_t low;
    std::uint64_t high;
    const char* name;
    std::int32_t enclosing = -1; // the nearest earlier range ending later; -1: none
  };
  struct Label { // a symbol without a size (hand-written assembly)
    std::uint64_t address;
    std::uint64_t section_end;
    const char* name;
  };
  static const Range* containing(const std::vector<Range>& ranges, std::uint64_t address);
  void add(Dwfl_Module* module);
  void index();

  std::vector<Range> globals_; // by low, then high descending
  std::vector<Range> locals_;
  std::vector<Label> labels_; // by address
  // By low, over both kinds of range: the largest high of those starting at or before it.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> reach_;
  std::uint64_t bias_ = 0;
  std::string build_id_;
  std::shared_ptr<void> file_; // of_file's: the libdw session the names point into
};

// Bytes in lowercase hex: a build id as file names and reports spell it.
std::string hex_of(const unsigned char* bytes, int size);

// One source-level frame. An address inside inlined code gives several, sharing the address.
struct Frame {
  std::string function; // demangled; "object+0xoffset" when no symbol names it; empty outside
                        // every object
  std::string file;     // base name of the source file; empty without debug info
  unsigned line = 0;
  std::string object; // path of the loaded object containing the address
};

// "0x4011A6: make_node(int) (tree.cpp:12)", "0x4011A6: f (in /usr/lib/libx.so)" or
// "0x4011A6: ??? (in /usr/lib/libx.so)": valgrind's frame syntax (docs/formats-output.md,
// "heap.json (DHAT)").
std::string describe(std::uintptr_t address, const Frame& frame);

struct SymbolizerOptions {
  // Where separate debug files are looked for by build id (':'-separated, as libdw takes them).
  std::string debug_directories = "/usr/lib/debug";
  // Where inflated copies of compressed debug files are kept by build id (docs/heap.md, "Stacks
  // and symbols"); "" keeps none: each symbolizer inflates them again.
  std::string inflated_debug_cache;
};

// Not thread-safe: one thread at a time.
class Symbolizer {
public:
  // Reads the current process's memory map: objects loaded later are not known until refresh().
  explicit Symbolizer(SymbolizerOptions options = {});
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
  // How many times refresh() returned true: a caller that keeps what it resolved sees that the
  // cache forgot results since.
  std::uint64_t forgetting_refreshes() const { return forgetting_refreshes_; }

  // Compressed debug files opened so far: inflated copies found in the cache, and files
  // inflated (into the cache where it could be written).
  std::size_t debug_files_from_cache() const;
  std::size_t debug_files_inflated() const;
  // One line per problem met since the last call (the cache directory could not be written).
  std::vector<std::string> take_problems();

private:
  struct Session;
  void read_memory_map();
  std::unique_ptr<Session> session_;
  // Hashed: a profile looks up every frame of every site. Its elements stay where they are as it
  // grows, so references from resolve() stay valid.
  std::unordered_map<std::uintptr_t, std::vector<Frame>> cache_;
  std::uint64_t forgetting_refreshes_ = 0;
};

} // namespace hotscope::symbols
