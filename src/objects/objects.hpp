// The loaded objects' code as this process sees it: the executable mappings of files, with their
// GNU build ids, and a name for a native code address. Read outside any hot path (the snapshot's
// writers, the heap profile's builder).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

namespace hotscope::objects {

// Where an object's code is mapped (an executable mapping of a file).
struct CodeMapping {
  std::uint64_t start = 0;
  std::uint64_t limit = 0;  // one past the end
  std::uint64_t offset = 0; // the file offset mapped at `start`
  std::string path;
  std::string build_id; // the GNU build id in lowercase hex; empty when unknown
};

// The longest GNU build id kept (SHA-1's 20 bytes are the usual; some linkers write more).
constexpr std::size_t kBuildIdMax = 64;

// The GNU build id among the notes of a PT_NOTE segment (`align`: the segment's, 4 or 8) into
// `out`: its length, 0 if none. Allocates nothing: a crash report reads it from a signal handler.
std::size_t build_id_bytes(const unsigned char* notes, std::size_t size, std::size_t align,
                           unsigned char (&out)[kBuildIdMax]) noexcept;

// The executable mappings of files in /proc/self/maps, by address (no [vdso], no anonymous JIT
// code); without build ids.
std::vector<CodeMapping> code_mappings();
// The same from the text of a /proc/PID/maps (a process's that has ended: docs/heap.md, "The
// report at exit").
std::vector<CodeMapping> code_mappings(std::istream& maps);

// The loaded objects' segments as lines of /proc/self/maps ("start-end perms offset dev inode
// path"), by address, from the loader's list (dl_iterate_phdr: the loader's lock) instead of
// /proc: the sampled heap profile's report at a program's exit, where reading /proc/self/maps
// took longer than the rest of it. Each object is named by the path the loader opened it by (the
// executable by `program_path`), with inode 1 + its place in the list so that its lines group.
std::string loaded_objects_map(const std::string& program_path);
// `maps` with each file's path resolved (realpath: the loader's /lib/x86_64-linux-gnu/libz.so.1 is
// the kernel's /usr/lib/x86_64-linux-gnu/libz.so.1.2.13); a path that resolves no more is kept.
std::string with_resolved_paths(const std::string& maps);

// Fills the mappings' build ids from the loaded objects' NT_GNU_BUILD_ID notes, as the loader
// lists them (dl_iterate_phdr: takes the loader's lock, never from a signal handler).
void add_build_ids(std::vector<CodeMapping>& mappings);

// 1 + the index of the mapping holding `address` (mappings by address), or 0.
std::size_t mapping_of(const std::vector<CodeMapping>& mappings, std::uint64_t address);

// The names of the native frames at `addresses` (the instructions' own: a return address less
// 1), one list per address, outermost first (a function, then those inlined into it). Through the
// symbolizer module, libhotscope-symbols.so (libdw: every symbol, inlined functions), when it can
// be loaded: HOTSCOPE_SYMBOLS_MODULE, else beside the object holding this code, else the installed
// library, else the build tree's; else name_from_dynamic_symbols.
std::vector<std::vector<std::string>> native_frame_names(std::span<const std::uint64_t> addresses,
                                                         const std::vector<CodeMapping>& mappings);
// The name native_frame_names gives without the module: the dynamic symbol, demangled (dladdr),
// else "object+0xOFFSET", else the address in hex.
std::string name_from_dynamic_symbols(std::uint64_t address,
                                      const std::vector<CodeMapping>& mappings);

// The loaded object one of whose segments holds `address`: its path (the executable's as
// /proc/self/exe gives it) and build id, `start` and `limit` 0; all empty when none holds it.
// Through dl_iterate_phdr (the loader's lock): never from a signal handler.
CodeMapping object_of(std::uint64_t address);

// A function named by its entry address (an instrumented function's, docs/instrument.md): its
// qualified name without parameters and ABI tags (names::short_function_name of the demangled
// symbol), the file and line of its entry where debug information gives them, and the object
// holding it (object_of). Through the symbolizer module, else the dynamic symbol (no file), else
// as name_from_dynamic_symbols.
struct FunctionName {
  std::string name;
  std::string file;
  std::uint32_t line = 0;
  std::string module;   // the object's path
  std::string build_id; // its GNU build id in lowercase hex; empty when it has none
};
FunctionName function_at(std::uint64_t entry);

// The name of the static variable holding `address` (a lock in a loaded object's data),
// demangled: the symbolizer module's (every symbol of the object, file-local ones too), else the
// dynamic symbol containing it (dladdr); "" when no symbol does, or no object holds the address
// (a lock on the heap or a stack).
std::string data_name(std::uint64_t address);

} // namespace hotscope::objects
