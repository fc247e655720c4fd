#include "symbols/symbols.hpp"

#include "trace/function_name.hpp"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

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
        return trace::demangle(text);
      }
    }
  }
  return {};
}

// The arrays libdw's scope functions return, which the caller frees.
struct FreeDies {
  void operator()(Dwarf_Die* dies) const { std::free(dies); }
};
using Dies = std::unique_ptr<Dwarf_Die[], FreeDies>;

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
  return objects;
}

} // namespace

struct Symbolizer::Session {
  Dwfl_Callbacks callbacks{};
  char* debuginfo_path = nullptr;
  Dwfl* dwfl = nullptr;
  LoadedObjects loaded; // when the memory map was read
};

Symbolizer::Symbolizer() : session_(std::make_unique<Session>()) {
  session_->callbacks.find_elf = dwfl_linux_proc_find_elf;
  session_->callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
  session_->callbacks.debuginfo_path = &session_->debuginfo_path;
  session_->dwfl = dwfl_begin(&session_->callbacks);
  session_->loaded = loaded_objects();
  read_memory_map();
}

Symbolizer::~Symbolizer() {
  if (session_->dwfl != nullptr) {
    dwfl_end(session_->dwfl);
  }
}

// Called after the objects were listed into session_->loaded: one loaded or unloaded meanwhile
// makes the next refresh() read the map again. Modules reported again unchanged keep what libdw
// has read of them.
void Symbolizer::read_memory_map() {
  if (session_->dwfl != nullptr) {
    dwfl_report_begin(session_->dwfl);
    dwfl_linux_proc_report(session_->dwfl, getpid());
    dwfl_report_end(session_->dwfl, nullptr, nullptr);
  }
}

bool Symbolizer::refresh() {
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
        cache_.erase(cache_.lower_bound(segment.begin), cache_.lower_bound(segment.end));
      }
    }
  } else {
    cache_.clear();
  }
  session_->loaded = std::move(now);
  read_memory_map();
  return true;
}

const std::vector<Frame>& Symbolizer::resolve(std::uintptr_t address) {
  const auto cached = cache_.find(address);
  if (cached != cache_.end()) {
    return cached->second;
  }
  // Built aside and cached only when complete: an exception midway (no memory) caches nothing.
  std::vector<Frame> frames;
  Dwfl_Module* module =
      session_->dwfl == nullptr ? nullptr : dwfl_addrmodule(session_->dwfl, address);
  std::string object = "???";
  if (module != nullptr) {
    if (const char* name = dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr, nullptr,
                                            nullptr, nullptr)) {
      object = name;
    }
  }
  // The innermost source position, then one frame per enclosing inlined subroutine, whose
  // call site is the position in the next frame out.
  std::string file;
  unsigned line = 0;
  if (Dwfl_Line* source = module == nullptr ? nullptr : dwfl_module_getsrc(module, address)) {
    int line_number = 0;
    if (const char* path =
            dwfl_lineinfo(source, nullptr, &line_number, nullptr, nullptr, nullptr)) {
      file = base_name(path);
      line = static_cast<unsigned>(line_number);
    }
  }
  // The function containing the address, as the ELF symbol table names it: unlike DWARF it
  // carries the enclosing namespaces and parameter types of every function, as valgrind shows.
  GElf_Off offset = 0;
  GElf_Sym symbol;
  const char* symbol_name =
      module == nullptr
          ? nullptr
          : dwfl_module_addrinfo(module, address, &offset, &symbol, nullptr, nullptr, nullptr);
  Dwarf_Addr bias = 0;
  Dwarf_Die* cu = module == nullptr ? nullptr : dwfl_module_addrdie(module, address, &bias);
  Dwarf_Die* scope_array = nullptr;
  const int scope_count = cu == nullptr ? 0 : dwarf_getscopes(cu, address - bias, &scope_array);
  const Dies scopes(scope_array);
  // dwarf_getscopes follows the innermost inlined subroutine into its abstract origin; the
  // concrete chain of callers comes from dwarf_getscopes_die on that subroutine.
  Dwarf_Die* chain_array = nullptr;
  int chain_count = 0;
  std::string subprogram; // the DWARF name, for objects without a symbol table
  for (int i = 0; i < scope_count && chain_count == 0; ++i) {
    const int tag = dwarf_tag(&scopes[i]);
    if (tag == DW_TAG_inlined_subroutine) {
      chain_count = dwarf_getscopes_die(&scopes[i], &chain_array);
    } else if (tag == DW_TAG_subprogram) {
      subprogram = die_function_name(&scopes[i]);
      break;
    }
  }
  const Dies chain(chain_array);
  for (int i = 0; i < chain_count; ++i) {
    const int tag = dwarf_tag(&chain[i]);
    if (tag == DW_TAG_inlined_subroutine) {
      frames.push_back(Frame{die_function_name(&chain[i]), file, line, object});
      call_site(cu, &chain[i], file, line);
    } else if (tag == DW_TAG_subprogram) {
      subprogram = die_function_name(&chain[i]);
      break;
    }
  }
  frames.push_back(Frame{symbol_name == nullptr ? subprogram : trace::demangle(symbol_name), file,
                         line, object});
  return cache_.emplace(address, std::move(frames)).first->second;
}

} // namespace hotscope::symbols
