#include "objects/objects.hpp"

#include "names/names.hpp"
#include "text/text.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>

namespace hotscope::objects {
namespace {

// The GNU build id in a PT_NOTE segment's notes, in hex; empty if none.
std::string build_id_note(const unsigned char* notes, std::size_t size, std::size_t align) {
  unsigned char bytes[kBuildIdMax];
  const std::size_t count = build_id_bytes(notes, size, align, bytes);
  std::string id;
  for (std::size_t i = 0; i < count; ++i) {
    id += text::hex(bytes[i], 2);
  }
  return id;
}

// The object's GNU build id in hex, from its first PT_NOTE segment holding one; empty if none.
std::string object_build_id(const dl_phdr_info* info) {
  std::string id;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum && id.empty(); ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type == PT_NOTE) {
      id = build_id_note(reinterpret_cast<const unsigned char*>(info->dlpi_addr + header.p_vaddr),
                         header.p_memsz, header.p_align == 8 ? 8 : 4);
    }
  }
  return id;
}

int add_object_build_id(dl_phdr_info* info, std::size_t, void* data) noexcept try {
  auto& mappings = *static_cast<std::vector<CodeMapping>*>(data);
  const std::string id = object_build_id(info);
  // The object's executable segments are the mappings it owns.
  for (ElfW(Half) i = 0; i < info->dlpi_phnum && !id.empty(); ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type == PT_LOAD && (header.p_flags & PF_X) != 0) {
      const std::uint64_t begin = info->dlpi_addr + header.p_vaddr;
      for (CodeMapping& mapping : mappings) {
        if (mapping.limit > begin && mapping.start < begin + header.p_memsz) {
          mapping.build_id = id;
        }
      }
    }
  }
  return 0;
} catch (const std::bad_alloc&) {
  return 1; // no exception crosses the C library; a build id is an extra
}

// What object_of looks for, and what it found.
struct ObjectSearch {
  std::uint64_t address = 0;
  bool held = false; // an object's loaded segment holds it
  CodeMapping object;
};

// dl_iterate_phdr's callback for object_of: stops at the object one of whose loaded segments
// holds the address.
int find_object(dl_phdr_info* info, std::size_t, void* data) noexcept try {
  auto& search = *static_cast<ObjectSearch*>(data);
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    const std::uint64_t begin = info->dlpi_addr + header.p_vaddr;
    if (header.p_type == PT_LOAD && search.address >= begin &&
        search.address < begin + header.p_memsz) {
      search.held = true;
      search.object.path = info->dlpi_name != nullptr ? info->dlpi_name : "";
      search.object.build_id = object_build_id(info);
      return 1;
    }
  }
  return 0;
} catch (const std::bad_alloc&) {
  return 1;
}

} // namespace

// Each note's name and description are padded to the segment's alignment (4, or 8 in an
// 8-aligned segment).
std::size_t build_id_bytes(const unsigned char* notes, std::size_t size, std::size_t align,
                           unsigned char (&out)[kBuildIdMax]) noexcept {
  const auto padded = [align](std::size_t n) { return (n + align - 1) / align * align; };
  std::size_t at = 0;
  while (at + sizeof(ElfW(Nhdr)) <= size) {
    ElfW(Nhdr) header;
    std::memcpy(&header, notes + at, sizeof header);
    const std::size_t name_at = at + sizeof header;
    const std::size_t desc_at = name_at + padded(header.n_namesz);
    if (desc_at + header.n_descsz > size) {
      break;
    }
    if (header.n_type == NT_GNU_BUILD_ID && header.n_namesz == 4 &&
        std::memcmp(notes + name_at, "GNU", 4) == 0) {
      const std::size_t count = std::min<std::size_t>(header.n_descsz, kBuildIdMax);
      std::memcpy(out, notes + desc_at, count);
      return count;
    }
    at = desc_at + padded(header.n_descsz);
  }
  return 0;
}

std::vector<CodeMapping> code_mappings() {
  std::ifstream maps("/proc/self/maps");
  return code_mappings(maps);
}

std::vector<CodeMapping> code_mappings(std::istream& maps) {
  std::vector<CodeMapping> mappings;
  // "start-end perms offset dev inode path"
  for (std::string line; std::getline(maps, line);) {
    CodeMapping mapping;
    char perms[5] = {};
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %*s %*s %n",
                    &mapping.start, &mapping.limit, perms, &mapping.offset, &path_at) < 4 ||
        perms[2] != 'x' || path_at <= 0 || static_cast<std::size_t>(path_at) >= line.size() ||
        line[static_cast<std::size_t>(path_at)] != '/') {
      continue; // not code, or code of no file ([vdso], JIT code)
    }
    mapping.path = line.substr(static_cast<std::size_t>(path_at));
    mappings.push_back(std::move(mapping));
  }
  std::sort(mappings.begin(), mappings.end(),
            [](const CodeMapping& a, const CodeMapping& b) { return a.start < b.start; });
  return mappings;
}

void add_build_ids(std::vector<CodeMapping>& mappings) {
  dl_iterate_phdr(add_object_build_id, &mappings);
}

std::size_t mapping_of(const std::vector<CodeMapping>& mappings, std::uint64_t address) {
  const auto after = std::upper_bound(
      mappings.begin(), mappings.end(), address,
      [](std::uint64_t value, const CodeMapping& mapping) { return value < mapping.start; });
  if (after == mappings.begin() || address >= std::prev(after)->limit) {
    return 0;
  }
  return static_cast<std::size_t>(after - mappings.begin());
}

std::string name_from_dynamic_symbols(std::uint64_t address,
                                      const std::vector<CodeMapping>& mappings) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(address), &info) != 0 && info.dli_sname != nullptr) {
    return names::demangle(info.dli_sname);
  }
  if (const std::size_t index = mapping_of(mappings, address); index != 0) {
    const CodeMapping& mapping = mappings[index - 1];
    const std::size_t slash = mapping.path.rfind('/');
    return text::cat(mapping.path.substr(slash + 1), "+0x",
                     text::hex(address - mapping.start + mapping.offset));
  }
  return "0x" + text::hex(address);
}

namespace {

// symbols_module.cpp's entry point.
using Emit = void (*)(void* context, std::size_t index, const char* function, const char* file,
                      unsigned line);
using Symbolize = void (*)(const std::uint64_t* addresses, std::size_t count, Emit emit,
                           void* context);

// The module's entry point, loaded once (and kept: its symbolizer caches what it read); null
// when it cannot be found.
Symbolize symbolizer_module() {
  static const Symbolize loaded = []() -> Symbolize {
    std::vector<std::string> candidates;
    if (const char* chosen = std::getenv("HOTSCOPE_SYMBOLS_MODULE"); chosen && *chosen) {
      candidates.emplace_back(chosen);
    }
    Dl_info self{};
    if (dladdr(reinterpret_cast<const void*>(&name_from_dynamic_symbols), &self) != 0 &&
        self.dli_fname != nullptr) {
      const std::string object = self.dli_fname;
      candidates.push_back(object.substr(0, object.rfind('/') + 1) + "libhotscope-symbols.so");
    }
    candidates.emplace_back(HOTSCOPE_INSTALLED_SYMBOLS_MODULE);
    candidates.emplace_back(HOTSCOPE_BUILD_TREE_SYMBOLS_MODULE);
    for (const std::string& path : candidates) {
      // Never closed, even without the entry point: a call to dlclose here would take
      // libhotscope's own dlclose (trace/unloads.cpp), and the collector with it, into the heap
      // libraries, which link this file.
      if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        if (void* entry = dlsym(handle, "hotscope_symbolize")) {
          return reinterpret_cast<Symbolize>(entry);
        }
      }
    }
    return nullptr;
  }();
  return loaded;
}

} // namespace

std::vector<std::vector<std::string>> native_frame_names(std::span<const std::uint64_t> addresses,
                                                         const std::vector<CodeMapping>& mappings) {
  std::vector<std::vector<std::string>> names(addresses.size());
  if (const Symbolize symbolize = symbolizer_module()) {
    symbolize(
        addresses.data(), addresses.size(),
        [](void* context, std::size_t index, const char* function, const char*, unsigned) {
          auto& all = *static_cast<std::vector<std::vector<std::string>>*>(context);
          if (function != nullptr && *function != '\0') {
            all[index].emplace_back(function);
          }
        },
        &names);
  }
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    if (names[i].empty()) { // no module, or no object holds the address
      names[i].push_back(name_from_dynamic_symbols(addresses[i], mappings));
    }
  }
  return names;
}

CodeMapping object_of(std::uint64_t address) {
  ObjectSearch search;
  search.address = address;
  dl_iterate_phdr(find_object, &search);
  if (search.held && search.object.path.empty()) {
    // The loader names the executable "": its path as the system gives it.
    std::error_code error;
    search.object.path = std::filesystem::read_symlink("/proc/self/exe", error).string();
  }
  return search.object;
}

FunctionName function_at(std::uint64_t entry) {
  FunctionName found;
  if (const Symbolize symbolize = symbolizer_module()) {
    symbolize(
        &entry, 1,
        [](void* context, std::size_t, const char* function, const char* file, unsigned line) {
          auto& first = *static_cast<FunctionName*>(context);
          // The outermost frame is the function itself; the others are inlined into it.
          if (first.name.empty() && function != nullptr && *function != '\0') {
            first.name = function;
            first.file = file != nullptr ? file : "";
            first.line = line;
          }
        },
        &found);
  }
  if (found.name.empty()) {
    found.name = name_from_dynamic_symbols(entry, code_mappings());
  }
  found.name = names::short_function_name(found.name);
  // "handle_get[abi:cxx11]": the ABI tag of a function returning std::string, which the macros'
  // names (__PRETTY_FUNCTION__) do not carry.
  for (std::size_t tag = found.name.find("[abi:"); tag != std::string::npos;
       tag = found.name.find("[abi:", tag)) {
    found.name.erase(tag, found.name.find(']', tag) + 1 - tag);
  }
  CodeMapping object = object_of(entry);
  found.module = std::move(object.path);
  found.build_id = std::move(object.build_id);
  return found;
}

std::string data_name(std::uint64_t address) {
  Dl_info info{};
  void* entry = nullptr;
  if (dladdr1(reinterpret_cast<const void*>(address), &info, &entry, RTLD_DL_SYMENT) == 0 ||
      info.dli_fname == nullptr) {
    return "";
  }
  const auto* symbol = static_cast<const ElfW(Sym)*>(entry);
  if (const Symbolize symbolize = symbolizer_module()) {
    std::string found;
    symbolize(
        &address, 1,
        [](void* context, std::size_t, const char* function, const char*, unsigned) {
          *static_cast<std::string*>(context) = function != nullptr ? function : "";
        },
        &found);
    // An address no symbol holds is named "object+0xOFFSET" there.
    const std::string_view path = info.dli_fname;
    const std::string unnamed =
        text::cat(path.substr(path.rfind('/') + 1), "+0x"); // rfind npos + 1: the whole path
    if (!found.empty() && found.rfind(unnamed, 0) != 0) {
      return found;
    }
  }
  const auto start = reinterpret_cast<std::uintptr_t>(info.dli_saddr);
  if (info.dli_sname != nullptr && symbol != nullptr && address >= start &&
      address < start + symbol->st_size) {
    return names::demangle(info.dli_sname);
  }
  return "";
}

} // namespace hotscope::objects
