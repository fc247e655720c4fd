#include "symbols/symbols.hpp"

#include "names/names.hpp"
#include "symbols/inflated_debug.hpp"
#include "symbols/unit_dwarf.hpp"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <unordered_map>

namespace hotscope::symbols {
namespace {

std::string base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash == nullptr ? path : slash + 1;
}

// The linkage name where there is one (it carries the parameter types, as valgrind shows them),
// else the plain name; both looked up through abstract origins and specifications.
std::string die_function_name(Dwarf_Die* die) {
  Dwarf_Attribute attribute;
  for (int name : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name}) {
    if (dwarf_attr_integrate(die, name, &attribute) != nullptr) {
      if (const char* text = dwarf_formstring(&attribute)) {
        return names::demangle(text);
      }
    }
  }
  return {};
}

// The call site of an inlined subroutine: the location in its caller.
void call_site(Dwarf_Die* cu, Dwarf_Die* inlined, std::string& file, unsigned& line) {
  Dwarf_Attribute attribute;
  Dwarf_Word value = 0;
  file.clear();
  line = 0;
  Dwarf_Files* files = nullptr;
  std::size_t file_count = 0;
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attribute), &value) == 0 &&
      dwarf_getsrcfiles(cu, &files, &file_count) == 0 && value < file_count) {
    if (const char* path = dwarf_filesrc(files, value, nullptr, nullptr)) {
      file = base_name(path);
    }
  }
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attribute), &value) == 0) {
    line = static_cast<unsigned>(value);
  }
}

// The code scopes of one compilation unit, read in one walk of its DIE tree and kept: the
// functions and inlined subroutines, each with its address ranges. libdw's dwarf_getscopes walks
// the whole unit (types included) on every call, which in a unit of many template instances costs
// millions of instructions per address.
class UnitScopes {
public:
  explicit UnitScopes(Dwarf_Die* unit) {
    walk(unit, -1, 0);
    std::sort(ranges_.begin(), ranges_.end(), [&](const Range& a, const Range& b) {
      if (a.low != b.low) {
        return a.low < b.low;
      }
      if (a.high != b.high) {
        return a.high > b.high;
      }
      return scopes_[a.scope].depth < scopes_[b.scope].depth;
    });
    // Each range's nearest earlier range that contains it: in well-formed DWARF ranges nest, so a
    // lookup that misses a range goes on to the one enclosing it, not to its earlier siblings.
    std::vector<int> open;
    for (std::size_t i = 0; i < ranges_.size(); ++i) {
      while (!open.empty() && ranges_[i].high > ranges_[open.back()].high) {
        open.pop_back();
      }
      ranges_[i].enclosing = open.empty() ? -1 : open.back();
      open.push_back(static_cast<int>(i));
    }
  }

  // The innermost scope containing `address` (a DWARF address), then its enclosing scopes out to
  // the function, as DIEs; empty outside every function of the unit.
  std::vector<Dwarf_Die> containing(Dwarf_Addr address) const {
    auto after =
        std::upper_bound(ranges_.begin(), ranges_.end(), address,
                         [](Dwarf_Addr value, const Range& range) { return value < range.low; });
    int i = static_cast<int>(after - ranges_.begin()) - 1;
    while (i >= 0 && address >= ranges_[i].high) {
      i = ranges_[i].enclosing;
    }
    std::vector<Dwarf_Die> chain;
    for (int scope = i < 0 ? -1 : ranges_[i].scope; scope >= 0; scope = scopes_[scope].parent) {
      chain.push_back(scopes_[scope].die);
    }
    return chain;
  }

private:
  struct Scope {
    Dwarf_Die die;
    int parent; // the enclosing function or inlined subroutine; -1 for a function
    int depth;
  };
  struct Range {
    Dwarf_Addr low;
    Dwarf_Addr high;
    int scope;
    int enclosing = -1;
  };
  // Deeper nesting than this is not real code: malformed debug info stops the walk there.
  static constexpr int max_depth = 256;

  void walk(Dwarf_Die* parent_die, int parent, int depth) {
    Dwarf_Die child;
    if (depth > max_depth || dwarf_child(parent_die, &child) != 0) {
      return;
    }
    do {
      switch (dwarf_tag(&child)) {
      case DW_TAG_subprogram:
      case DW_TAG_inlined_subroutine:
        add_scope(child, parent, depth);
        break;
      case DW_TAG_namespace:
      case DW_TAG_lexical_block:
        walk(&child, parent, depth + 1);
        break;
      case DW_TAG_imported_unit: { // a unit shared between objects (dwz): walked in place
        Dwarf_Attribute attribute;
        Dwarf_Die imported;
        if (dwarf_formref_die(dwarf_attr(&child, DW_AT_import, &attribute), &imported) != nullptr) {
          walk(&imported, parent, depth + 1);
        }
        break;
      }
      default: // types, variables, parameters: no code of their own
        break;
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }

  // A function or inlined subroutine with code: its ranges, then the scopes inside it. Without
  // code (declarations, abstract instances) there is nothing inside to find either.
  void add_scope(Dwarf_Die die, int parent, int depth) {
    const int scope = static_cast<int>(scopes_.size());
    Dwarf_Addr base = 0;
    Dwarf_Addr low = 0;
    Dwarf_Addr high = 0;
    for (ptrdiff_t offset = 0; (offset = dwarf_ranges(&die, offset, &base, &low, &high)) > 0;) {
      if (low < high) {
        ranges_.push_back(Range{low, high, scope});
      }
    }
    if (ranges_.empty() || ranges_.back().scope != scope) {
      return;
    }
    const bool function = dwarf_tag(&die) == DW_TAG_subprogram;
    scopes_.push_back(Scope{die, function ? -1 : parent, depth});
    walk(&die, scope, depth + 1);
  }

  std::vector<Scope> scopes_;
  std::vector<Range> ranges_;
};

// Code no symbol names: the object's file name and the link-time address, as `nm` and
// `addr2line -e object` take it.
std::string unnamed_code(const std::string& object, std::uint64_t offset) {
  char hex[24];
  std::snprintf(hex, sizeof hex, "+0x%" PRIx64, offset);
  return base_name(object.c_str()) + hex;
}

} // namespace

std::string describe(std::uintptr_t address, const Frame& frame) {
  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%" PRIXPTR ": ", address);
  if (frame.function.empty()) {
    return hex + ("??? (in " + frame.object + ")");
  }
  if (frame.file.empty() || frame.line == 0) {
    return hex + frame.function + " (in " + frame.object + ")";
  }
  return hex + frame.function + " (" + frame.file + ":" + std::to_string(frame.line) + ")";
}

namespace {

// The loaded objects as the loader lists them, in one pass under its lock: its counts of
// objects loaded and unloaded so far, which change with every dlopen or dlclose that maps or
// unmaps one, and each object's loaded segments. `known` is false when the loader keeps no
// counts (too old) or the list could not be made (no memory): then nothing cached is trusted.
struct LoadedObjects {
  struct Segment {
    std::uintptr_t begin;
    std::uintptr_t end;
    bool operator==(const Segment&) const = default;
  };
  unsigned long long adds = 0;
  unsigned long long subs = 0;
  bool known = false;
  std::vector<Segment> segments;

  bool same_counts(const LoadedObjects& other) const {
    return known && other.known && adds == other.adds && subs == other.subs;
  }
  bool contains(const Segment& segment) const {
    return std::find(segments.begin(), segments.end(), segment) != segments.end();
  }
  // Whether `address` lies in a loaded segment (segments sorted by their start).
  bool covers(std::uintptr_t address) const {
    const auto after = std::upper_bound(
        segments.begin(), segments.end(), address,
        [](std::uintptr_t value, const Segment& segment) { return value < segment.begin; });
    return after != segments.begin() && address < std::prev(after)->end;
  }
};

LoadedObjects loaded_objects() {
  LoadedObjects objects;
  objects.known = true;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t size, void* out) {
        auto& objects = *static_cast<LoadedObjects*>(out);
        if (size < offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
          objects.known = false;
          return 1;
        }
        objects.adds = info->dlpi_adds;
        objects.subs = info->dlpi_subs;
        try {
          for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr)& header = info->dlpi_phdr[i];
            if (header.p_type == PT_LOAD) {
              const std::uintptr_t begin = info->dlpi_addr + header.p_vaddr;
              objects.segments.push_back({begin, begin + header.p_memsz});
            }
          }
        } catch (const std::bad_alloc&) {
          objects.known = false; // no exception crosses the C library
          return 1;
        }
        return 0;
      },
      &objects);
  std::sort(objects.segments.begin(), objects.segments.end(),
            [](const LoadedObjects::Segment& a, const LoadedObjects::Segment& b) {
              return a.begin < b.begin;
            });
  return objects;
}

} // namespace

struct Symbolizer::Session {
  explicit Session(SymbolizerOptions options)
      : debug_directories(std::move(options.debug_directories)),
        debug_files(debug_directories, std::move(options.inflated_debug_cache)),
        memory_map(std::move(options.memory_map)) {}

  Dwfl_Callbacks callbacks{};
  std::string debug_directories; // libdw keeps the pointer, not a copy
  char* debuginfo_path = debug_directories.data();
  InflatedDebugFiles debug_files; // each module's userdata, for its find_debuginfo
  std::string memory_map;         // SymbolizerOptions::memory_map
  Dwfl* dwfl = nullptr;
  LoadedObjects loaded; // when the memory map was read
  // By the address of the unit's DIE; valid while the map is not read again.
  std::unordered_map<const void*, UnitScopes> units;
  // By module: kept across rereads of the map for the modules libdw keeps (reported again with
  // the same name and addresses), dropped with the others, whose ELF data their names point into.
  // A module freed at one reread cannot share its address with a module kept at a later one.
  std::unordered_map<Dwfl_Module*, SymbolTable> tables;
  // By module, each module's DWARF (its bias and its units opened one by one); dropped whenever the
  // map is read again, with the units' scopes.
  struct ModuleDwarf {
    Dwarf_Addr bias = 0;
    std::unique_ptr<UnitDwarf> units;
  };
  std::unordered_map<Dwfl_Module*, ModuleDwarf> dwarfs;

  ModuleDwarf& dwarf(Dwfl_Module* module) {
    auto found = dwarfs.find(module);
    if (found == dwarfs.end()) {
      ModuleDwarf opened;
      opened.units = std::make_unique<UnitDwarf>(dwfl_module_getdwarf(module, &opened.bias));
      found = dwarfs.emplace(module, std::move(opened)).first;
    }
    return found->second;
  }

  const SymbolTable& table(Dwfl_Module* module) {
    auto found = tables.find(module);
    if (found == tables.end()) {
      found = tables.emplace(module, SymbolTable(module)).first;
    }
    return found->second;
  }
};

namespace {

// dwfl_linux_proc_find_elf, its descriptor closed on exec: libdw keeps each object's file open,
// and a program the profiled one starts must not inherit it (docs/heap.md, "Live").
int find_elf_closed_on_exec(Dwfl_Module* module, void** userdata, const char* name, Dwarf_Addr base,
                            char** file_name, Elf** elf) {
  const int fd = dwfl_linux_proc_find_elf(module, userdata, name, base, file_name, elf);
  if (fd >= 0) {
    fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  return fd;
}

} // namespace

Symbolizer::Symbolizer(SymbolizerOptions options)
    : session_(std::make_unique<Session>(std::move(options))) {
  session_->callbacks.find_elf = find_elf_closed_on_exec;
  // Separate debug information by build id, under the debug directories, compressed files
  // inflated once: the standard search falls back to debuginfod, which loads libdebuginfod (and
  // with it curl and a TLS library) into the profiled process even where no server is configured.
  session_->callbacks.find_debuginfo = InflatedDebugFiles::find_debuginfo;
  session_->callbacks.debuginfo_path = &session_->debuginfo_path;
  session_->dwfl = dwfl_begin(&session_->callbacks);
  if (session_->memory_map.empty()) {
    session_->loaded = loaded_objects();
  }
  read_memory_map();
}

Symbolizer::~Symbolizer() {
  if (session_->dwfl != nullptr) {
    session_->dwarfs.clear(); // their units point into the modules' files
    dwfl_end(session_->dwfl);
  }
}

// Called after the objects were listed into session_->loaded: one loaded or unloaded meanwhile
// makes the next refresh() read the map again. Modules reported again unchanged keep what libdw
// has read of them.
void Symbolizer::read_memory_map() {
  if (session_->dwfl != nullptr) {
    session_->units.clear(); // modules no longer reported are freed with their units
    session_->dwarfs.clear();
    dwfl_report_begin(session_->dwfl);
    if (session_->memory_map.empty()) {
      dwfl_linux_proc_report(session_->dwfl, getpid());
    } else if (FILE* maps =
                   fmemopen(session_->memory_map.data(), session_->memory_map.size(), "r")) {
      dwfl_linux_proc_maps_report(session_->dwfl, maps);
      std::fclose(maps);
    }
    dwfl_report_end(session_->dwfl, nullptr, nullptr);
    // The tables of modules no longer reported go; each module's userdata is where its
    // find_debuginfo looks for compressed debug files.
    using Tables = decltype(session_->tables);
    struct Pass {
      Tables old;
      Tables kept;
      InflatedDebugFiles* debug_files;
    } pass{std::move(session_->tables), {}, &session_->debug_files};
    dwfl_getmodules(
        session_->dwfl,
        [](Dwfl_Module* module, void** userdata, const char*, Dwarf_Addr, void* data) -> int {
          auto& pass = *static_cast<Pass*>(data);
          *userdata = pass.debug_files;
          if (auto found = pass.old.extract(module)) {
            pass.kept.insert(std::move(found));
          }
          return DWARF_CB_OK;
        },
        &pass, 0);
    session_->tables = std::move(pass.kept);
  }
}

std::size_t Symbolizer::debug_files_from_cache() const {
  return session_->debug_files.from_cache();
}

std::size_t Symbolizer::debug_files_inflated() const {
  return session_->debug_files.inflated();
}

std::vector<std::string> Symbolizer::take_problems() {
  return session_->debug_files.take_problems();
}

bool Symbolizer::refresh() {
  if (!session_->memory_map.empty()) {
    return false; // an ended process's objects: they change no more
  }
  LoadedObjects now = loaded_objects();
  const LoadedObjects& before = session_->loaded;
  if (now.same_counts(before)) {
    return false;
  }
  if (now.known && before.known && now.subs == before.subs) {
    // Objects were only added (libdw itself loads libdebuginfod on first use): results outside
    // them still hold. Inside them an old result may name no object, or the one whose address
    // range in the old map spanned the hole the new object went into.
    for (const LoadedObjects::Segment& segment : now.segments) {
      if (!before.contains(segment)) {
        std::erase_if(cache_, [&](const auto& entry) {
          return entry.first >= segment.begin && entry.first < segment.end;
        });
      }
    }
  } else {
    cache_.clear();
  }
  session_->loaded = std::move(now);
  read_memory_map();
  ++forgetting_refreshes_;
  return true;
}

const std::vector<Frame>& Symbolizer::resolve(std::uintptr_t address) {
  resolve_all({&address, 1});
  return cache_.at(address);
}

void Symbolizer::resolve_all(std::span<const std::uintptr_t> addresses) {
  // The addresses not cached, by module (nullptr: no object's), each module's in one batch.
  std::unordered_map<Dwfl_Module*, std::vector<std::uintptr_t>> by_module;
  for (const std::uintptr_t address : addresses) {
    if (cache_.contains(address)) {
      continue;
    }
    // libdw's module may reach past the object's last segment, where another object can be
    // loaded later: such an address is no object's until the map is read again.
    Dwfl_Module* module =
        session_->dwfl == nullptr || (session_->loaded.known && !session_->loaded.covers(address))
            ? nullptr
            : dwfl_addrmodule(session_->dwfl, address);
    by_module[module].push_back(address);
  }
  for (auto& [module, batch] : by_module) {
    std::sort(batch.begin(), batch.end());
    batch.erase(std::unique(batch.begin(), batch.end()), batch.end());
    const SymbolTable* table = module == nullptr ? nullptr : &session_->table(module);
    const std::vector<std::string_view> names = table == nullptr
                                                    ? std::vector<std::string_view>(batch.size())
                                                    : table->names_at({batch.data(), batch.size()});
    for (std::size_t i = 0; i < batch.size(); ++i) {
      // Built aside and cached only when complete: an exception midway (no memory) caches none.
      cache_.emplace(batch[i], frames_at(batch[i], module, table, names[i]));
    }
  }
}

// The frames at `address`, in `module` (nullptr: no object's), whose symbol table `table`
// names it `symbol_name` ("": no symbol).
std::vector<Frame> Symbolizer::frames_at(std::uintptr_t address, Dwfl_Module* module,
                                         const SymbolTable* table, std::string_view symbol_name) {
  std::vector<Frame> frames;
  const char* name = module == nullptr ? nullptr
                                       : dwfl_module_info(module, nullptr, nullptr, nullptr,
                                                          nullptr, nullptr, nullptr, nullptr);
  const std::string object = name == nullptr ? "???" : name;
  // The innermost source position, then one frame per enclosing inlined subroutine, whose
  // call site is the position in the next frame out.
  // The unit is opened alone where .debug_aranges lists it; libdw finds it (reading the whole
  // module's units) where the module has no .debug_aranges.
  std::string file;
  unsigned line = 0;
  Dwarf_Addr bias = 0;
  Dwarf_Die alone;
  Dwarf_Die* cu = nullptr;
  const char* path = nullptr;
  int line_number = 0;
  if (module != nullptr) {
    Session::ModuleDwarf& dwarf = session_->dwarf(module);
    const UnitDwarf::Found found = dwarf.units->unit_at(address - dwarf.bias, &alone);
    if (found == UnitDwarf::Found::unit) {
      cu = &alone;
      bias = dwarf.bias;
      if (Dwarf_Line* source = dwarf_getsrc_die(cu, address - bias)) {
        path = dwarf_linesrc(source, nullptr, nullptr);
        dwarf_lineno(source, &line_number);
      }
    } else if (found == UnitDwarf::Found::ask_libdw) {
      cu = dwfl_module_addrdie(module, address, &bias);
      if (Dwfl_Line* source = dwfl_module_getsrc(module, address)) {
        path = dwfl_lineinfo(source, nullptr, &line_number, nullptr, nullptr, nullptr);
      }
    }
  }
  if (path != nullptr) {
    file = base_name(path);
    line = static_cast<unsigned>(line_number);
  }
  // The function containing the address is named as the ELF symbol table names it: unlike DWARF
  // it carries the enclosing namespaces and parameter types of every function, as valgrind shows.
  std::string subprogram; // the DWARF name, for objects without a symbol table
  if (cu != nullptr) {
    auto unit = session_->units.find(cu->addr);
    if (unit == session_->units.end()) {
      unit = session_->units.emplace(cu->addr, UnitScopes(cu)).first;
    }
    for (Dwarf_Die& scope : unit->second.containing(address - bias)) {
      if (dwarf_tag(&scope) == DW_TAG_subprogram) {
        subprogram = die_function_name(&scope);
        break;
      }
      frames.push_back(Frame{die_function_name(&scope), file, line, object});
      call_site(cu, &scope, file, line);
    }
  }
  std::string function = symbol_name.empty() ? subprogram : names::demangle(symbol_name.data());
  if (function.empty() && table != nullptr) {
    function = unnamed_code(object, address - table->bias()); // never dropped
  }
  frames.push_back(Frame{std::move(function), file, line, object});
  return frames;
}

} // namespace hotscope::symbols
