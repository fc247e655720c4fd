// SymbolTable (symbols.hpp): one object's symbols, as libdw reads them, scanned once a batch.
#include "symbols/symbols.hpp"

#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <algorithm>
#include <memory>
#include <string>
#include <tuple>

namespace hotscope::symbols {
namespace {

// dwfl_module_addrinfo's preference among symbols of one range; -1: a local symbol, which only
// counts where no other symbol contains the address.
int binding_rank(const GElf_Sym& symbol) {
  switch (GELF_ST_BIND(symbol.st_info)) {
  case STB_LOCAL:
    return -1;
  case STB_GLOBAL:
    return 3;
  case STB_GNU_UNIQUE:
    return 2;
  case STB_WEAK:
    return 1;
  default:
    return 0;
  }
}

// The best symbol found so far for one address, of one kind (global or local ranges).
struct Best {
  std::uint64_t low = 0;
  std::uint64_t high = 0;
  const char* name = nullptr;
  int rank = 0;

  // dwfl_module_addrinfo's order: the closest start, then the smallest, then the strongest
  // binding; of equals the first in the table, which is seen first.
  bool worse_than(std::uint64_t l, std::uint64_t h, int r) const {
    return name == nullptr || std::tie(l, high, r) > std::tie(low, h, rank);
  }
};

// A sizeless label: counts for the addresses after it up to its section's end.
struct Label {
  std::uint64_t address = 0;
  std::uint64_t section_end = 0;
  const char* name = nullptr;
};

} // namespace

SymbolTable::SymbolTable(Dwfl_Module* module) : module_(module) {
  Dwarf_Addr low = 0;
  dwfl_module_info(module, nullptr, &low, nullptr, nullptr, nullptr, nullptr, nullptr);
  GElf_Addr main_bias = 0;
  bias_ = dwfl_module_getelf(module, &main_bias) != nullptr ? main_bias : low;
}

std::size_t SymbolTable::size() const {
  const int count = module_ == nullptr ? 0 : dwfl_module_getsymtab(module_);
  return count < 0 ? 0 : static_cast<std::size_t>(count);
}

namespace {

// A libdw session on one file, with what libdw keeps pointers to: it reads the symbol table when
// first asked, after of_file returned.
struct FileSession {
  std::string directories;
  char* debuginfo_path = nullptr;
  Dwfl_Callbacks callbacks{};
  Dwfl* dwfl = nullptr;

  explicit FileSession(const std::string& debug_directories)
      : directories(debug_directories), debuginfo_path(directories.data()) {
    callbacks.find_elf = dwfl_build_id_find_elf;
    callbacks.find_debuginfo = dwfl_build_id_find_debuginfo;
    callbacks.section_address = dwfl_offline_section_address;
    callbacks.debuginfo_path = &debuginfo_path;
    dwfl = dwfl_begin(&callbacks);
  }
  ~FileSession() {
    if (dwfl != nullptr) {
      dwfl_end(dwfl);
    }
  }
  FileSession(const FileSession&) = delete;
  FileSession& operator=(const FileSession&) = delete;
};

} // namespace

SymbolTable SymbolTable::of_file(const std::string& path, const std::string& debug_directories) {
  const auto session = std::make_shared<FileSession>(debug_directories);
  Dwfl* dwfl = session->dwfl;
  if (dwfl == nullptr) {
    return {};
  }
  dwfl_report_begin(dwfl);
  // At base 0: a shared object or position-independent program keeps its link-time addresses.
  Dwfl_Module* module = dwfl_report_elf(dwfl, path.c_str(), path.c_str(), -1, 0, false);
  dwfl_report_end(dwfl, nullptr, nullptr);
  SymbolTable table;
  if (module != nullptr) {
    table = SymbolTable(module);
    table.file_ = session;
    const unsigned char* bits = nullptr;
    GElf_Addr vaddr = 0;
    if (const int size = dwfl_module_build_id(module, &bits, &vaddr); size > 0) {
      table.build_id_ = hex_of(bits, size);
    }
  }
  return table;
}

// Calls `visit(low, high, label_section_end, name, binding)` for every symbol
// dwfl_module_addrinfo would consider: named, defined, not a section, file or thread-local symbol
// ("named" judged by the offset of the name, 0 being the empty string). A sized symbol has
// label_section_end 0; a label (no size) has high == low and counts only within its own section.
template <class Visit> void SymbolTable::each_symbol(Visit&& visit) const {
  const int count = module_ == nullptr ? 0 : dwfl_module_getsymtab(module_);
  for (int i = 0; i < count; ++i) {
    GElf_Sym symbol;
    GElf_Addr value = 0;
    GElf_Word section = 0;
    Elf* elf = nullptr;
    Dwarf_Addr bias = 0;
    const char* name = dwfl_module_getsym_info(module_, i, &symbol, &value, &section, &elf, &bias);
    const int type = GELF_ST_TYPE(symbol.st_info);
    if (name == nullptr || symbol.st_name == 0 || symbol.st_shndx == SHN_UNDEF ||
        type == STT_SECTION || type == STT_FILE || type == STT_TLS) {
      continue;
    }
    if (symbol.st_size > 0) {
      visit(value, value + symbol.st_size, 0, name, binding_rank(symbol));
      continue;
    }
    GElf_Shdr header;
    Elf_Scn* scn = elf == nullptr || section == SHN_ABS ? nullptr : elf_getscn(elf, section);
    if (scn != nullptr && gelf_getshdr(scn, &header) != nullptr) {
      visit(value, value, header.sh_addr + bias + header.sh_size, name, 0);
    }
  }
}

std::vector<std::string_view>
SymbolTable::names_at(std::span<const std::uint64_t> addresses) const {
  if (++batches_ == indexed_from_batch && module_ != nullptr) {
    index_boundaries();
  }
  std::vector<std::string_view> names(addresses.size());
  if (!boundaries_.empty()) {
    for (std::size_t i = 0; i < addresses.size(); ++i) {
      const auto after = std::upper_bound(
          boundaries_.begin(), boundaries_.end(), addresses[i],
          [](std::uint64_t value, const auto& entry) { return value < entry.first; });
      names[i] = after == boundaries_.begin() ? std::string_view() : std::prev(after)->second;
    }
    return names;
  }
  std::vector<std::uint64_t> sorted(addresses.begin(), addresses.end());
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  const std::vector<std::string_view> found = scan(sorted);
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    names[i] = found[static_cast<std::size_t>(
        std::lower_bound(sorted.begin(), sorted.end(), addresses[i]) - sorted.begin())];
  }
  return names;
}

// The name is the same from one boundary to the next (a start or end of a symbol, a label, a
// label's section end): the names at the boundaries, found by one scan, answer every address.
void SymbolTable::index_boundaries() const {
  std::vector<std::uint64_t> points;
  each_symbol(
      [&](std::uint64_t low, std::uint64_t high, std::uint64_t section_end, const char*, int) {
        points.push_back(low);
        points.push_back(section_end == 0 ? high : section_end);
      });
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  const std::vector<std::string_view> found = scan(points);
  boundaries_.reserve(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (boundaries_.empty() || boundaries_.back().second.data() != found[i].data()) {
      boundaries_.emplace_back(points[i], found[i]);
    }
  }
}

// The names at `sorted` (ascending, distinct addresses), in one pass over the symbols. A sized
// symbol updates each address inside it; a label and the reach of sized symbols (the largest end
// of those starting at or before an address, which hides a label it passes) are noted at the
// first address at or after their start, and carried over to the later addresses afterwards.
std::vector<std::string_view> SymbolTable::scan(const std::vector<std::uint64_t>& sorted) const {
  std::vector<Best> globals(sorted.size());
  std::vector<Best> locals(sorted.size());
  std::vector<Label> labels(sorted.size());
  std::vector<std::uint64_t> reach(sorted.size());
  each_symbol([&](std::uint64_t low, std::uint64_t high, std::uint64_t section_end,
                  const char* name, int rank) {
    const auto first = static_cast<std::size_t>(
        std::lower_bound(sorted.begin(), sorted.end(), low) - sorted.begin());
    if (first == sorted.size()) {
      return;
    }
    if (section_end != 0) {
      if (labels[first].name == nullptr || low > labels[first].address) {
        labels[first] = Label{low, section_end, name};
      }
      return;
    }
    reach[first] = std::max(reach[first], high);
    std::vector<Best>& best = rank < 0 ? locals : globals;
    for (std::size_t a = first; a < sorted.size() && sorted[a] < high; ++a) {
      if (best[a].worse_than(low, high, rank)) {
        best[a] = Best{low, high, name, rank};
      }
    }
  });
  std::vector<std::string_view> found(sorted.size());
  Label label;
  std::uint64_t reached = 0;
  for (std::size_t a = 0; a < sorted.size(); ++a) {
    if (labels[a].name != nullptr && (label.name == nullptr || labels[a].address > label.address)) {
      label = labels[a];
    }
    reached = std::max(reached, reach[a]);
    if (globals[a].name != nullptr || locals[a].name != nullptr) {
      found[a] = globals[a].name != nullptr ? globals[a].name : locals[a].name;
    } else if (label.name != nullptr && sorted[a] < label.section_end && reached <= label.address) {
      found[a] = label.name; // no sized symbol starts before the address and ends after the label
    }
  }
  return found;
}

} // namespace hotscope::symbols
