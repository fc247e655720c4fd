#include "symbols/symbols.hpp"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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
        return demangle(text);
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

} // namespace

std::string demangle(const char* name) {
  if (std::strncmp(name, "_Z", 2) != 0) {
    return name; // a C name such as "f" would demangle as a type ("float")
  }
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) {
    return name;
  }
  std::string result = demangled;
  std::free(demangled);
  return result;
}

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

struct Symbolizer::Session {
  Dwfl_Callbacks callbacks{};
  char* debuginfo_path = nullptr;
  Dwfl* dwfl = nullptr;
};

Symbolizer::Symbolizer() : session_(std::make_unique<Session>()) {
  session_->callbacks.find_elf = dwfl_linux_proc_find_elf;
  session_->callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
  session_->callbacks.debuginfo_path = &session_->debuginfo_path;
  session_->dwfl = dwfl_begin(&session_->callbacks);
  if (session_->dwfl != nullptr) {
    dwfl_report_begin(session_->dwfl);
    dwfl_linux_proc_report(session_->dwfl, getpid());
    dwfl_report_end(session_->dwfl, nullptr, nullptr);
  }
}

Symbolizer::~Symbolizer() {
  if (session_->dwfl != nullptr) {
    dwfl_end(session_->dwfl);
  }
}

const std::vector<Frame>& Symbolizer::resolve(std::uintptr_t address) {
  const auto cached = cache_.find(address);
  if (cached != cache_.end()) {
    return cached->second;
  }
  std::vector<Frame>& frames = cache_[address];
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
  Dwarf_Die* scopes = nullptr;
  const int scope_count = cu == nullptr ? 0 : dwarf_getscopes(cu, address - bias, &scopes);
  // dwarf_getscopes follows the innermost inlined subroutine into its abstract origin; the
  // concrete chain of callers comes from dwarf_getscopes_die on that subroutine.
  Dwarf_Die* chain = nullptr;
  int chain_count = 0;
  std::string subprogram; // the DWARF name, for objects without a symbol table
  for (int i = 0; i < scope_count && chain_count == 0; ++i) {
    const int tag = dwarf_tag(&scopes[i]);
    if (tag == DW_TAG_inlined_subroutine) {
      chain_count = dwarf_getscopes_die(&scopes[i], &chain);
    } else if (tag == DW_TAG_subprogram) {
      subprogram = die_function_name(&scopes[i]);
      break;
    }
  }
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
  std::free(chain);
  std::free(scopes);
  frames.push_back(
      Frame{symbol_name == nullptr ? subprogram : demangle(symbol_name), file, line, object});
  return frames;
}

} // namespace hotscope::symbols
