// Code addresses of the current process to function names and source lines, with libdw
// (elfutils). Used at write time only, never on an allocating thread's fast path.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

struct Dwfl_Module; // libdw's

namespace hotscope::symbols {

// One object's symbols, looked up for a batch of addresses in one pass over its symbol table:
// nothing of the table is kept between the first batches, so a profile naming a few addresses of
// a 10,000-symbol library costs one scan and memory for those addresses only (docs/heap.md,
// "Stacks and symbols"). A table asked again and again (the full mode's profile built ahead) is
// indexed at its third batch: the name from each symbol boundary on, found by one scan.
// libdw's own lookup (dwfl_module_addrinfo) scans the whole table for every address.
// The symbols are those libdw finds for the module: the .symtab of the separate debug file (by
// build id) or of the object itself, else its .dynsym plus the .gnu_debugdata MiniDebugInfo
// (xz-compressed) where there is one. The choice among them follows dwfl_module_addrinfo: a
// global symbol containing the address, else a local one, the closest start first, the smallest
// first at equal starts; else the closest sizeless label in the same section with no sized symbol
// between it and the address. Only the names found are read: they stay in libdw's string tables.
class SymbolTable {
public:
  SymbolTable() = default;
  // The names point into the module's ELF data: they must not outlive the module.
  explicit SymbolTable(Dwfl_Module* module);
  // The symbols of the ELF file at `path`, at its link-time addresses; the table keeps the file
  // open. Separate debug files are looked for by build id under `debug_directories`
  // (':'-separated, as libdw takes them). Empty when the file cannot be read.
  static SymbolTable of_file(const std::string& path,
                             const std::string& debug_directories = "/usr/lib/debug");

  // The (mangled) name of the symbol containing each of `addresses` (in any order),
  // NUL-terminated; empty where none does.
  std::vector<std::string_view> names_at(std::span<const std::uint64_t> addresses) const;
  // The file's GNU build id in lowercase hex (of_file's; "" when it has none).
  const std::string& build_id() const { return build_id_; }
  // Loaded address minus link-time address.
  std::uint64_t bias() const { return bias_; }
  // How many entries the table has (symbols of every kind).
  std::size_t size() const;

private:
  // From this batch on, names come from an index of the table (one repeated scan costs more).
  static constexpr unsigned indexed_from_batch = 3;
  template <class Visit> void each_symbol(Visit&& visit) const;
  std::vector<std::string_view> scan(const std::vector<std::uint64_t>& sorted) const;
  void index_boundaries() const;

  Dwfl_Module* module_ = nullptr;
  mutable unsigned batches_ = 0;
  // The name from each boundary on, by address (indexed_from_batch's); empty before.
  mutable std::vector<std::pair<std::uint64_t, std::string_view>> boundaries_;
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
  // The text of /proc/PID/maps of a process that has ended (its report, symbolized by its
  // launcher: docs/heap.md, "The report at exit"): its objects are read from their files, and
  // never refreshed. "": the current process's.
  std::string memory_map;
};

// Not thread-safe: one thread at a time.
class Symbolizer {
public:
  // Reads the current process's memory map (or options.memory_map): objects loaded later are not
  // known until refresh().
  explicit Symbolizer(SymbolizerOptions options = {});
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // The frames at a code address, innermost (most deeply inlined) first; never empty. Results
  // are cached. For return addresses pass the address of the call instruction (return - 1).
  const std::vector<Frame>& resolve(std::uintptr_t address);
  // Resolves and caches each of `addresses` not cached yet, reading each object's symbol table
  // once for all of them: a caller with many addresses at hand passes them here before
  // resolve(), which then finds them cached.
  void resolve_all(std::span<const std::uintptr_t> addresses);

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
  std::vector<Frame> frames_at(std::uintptr_t address, Dwfl_Module* module,
                               const SymbolTable* table, std::string_view symbol_name);
  std::unique_ptr<Session> session_;
  // Hashed: a profile looks up every frame of every site. Its elements stay where they are as it
  // grows, so references from resolve() stay valid.
  std::unordered_map<std::uintptr_t, std::vector<Frame>> cache_;
  std::uint64_t forgetting_refreshes_ = 0;
};

} // namespace hotscope::symbols
