// SymbolTable (symbols.hpp): one object's symbols, as libdw reads them, sorted once.
#include "symbols/symbols.hpp"

#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <algorithm>
#include <tuple>

namespace hotscope::symbols {
namespace {

// dwfl_module_addrinfo's preference among symbols of one range.
int binding_rank(const GElf_Sym& symbol) {
  switch (GELF_ST_BIND(symbol.st_info)) {
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

struct Candidate {
  std::uint64_t low;
  std::uint64_t high;
  const char* name;
  int rank;
  int index;
};

} // namespace

SymbolTable::SymbolTable(Dwfl_Module* module) {
  add(module);
  index();
}

SymbolTable SymbolTable::of_file(const std::string& path, const std::string& debug_directories) {
  std::string directories = debug_directories; // libdw keeps the pointer, not a copy
  char* debuginfo_path = directories.data();
  Dwfl_Callbacks callbacks{};
  callbacks.find_elf = dwfl_build_id_find_elf;
  callbacks.find_debuginfo = dwfl_build_id_find_debuginfo;
  callbacks.section_address = dwfl_offline_section_address;
  callbacks.debuginfo_path = &debuginfo_path;
  const std::shared_ptr<Dwfl> dwfl(dwfl_begin(&callbacks), [](Dwfl* session) {
    if (session != nullptr) {
      dwfl_end(session);
    }
  });
  if (dwfl == nullptr) {
    return {};
  }
  dwfl_report_begin(dwfl.get());
  // At base 0: a shared object or position-independent program keeps its link-time addresses.
  Dwfl_Module* module = dwfl_report_elf(dwfl.get(), path.c_str(), path.c_str(), -1, 0, false);
  dwfl_report_end(dwfl.get(), nullptr, nullptr);
  SymbolTable table;
  if (module != nullptr) {
    table = SymbolTable(module);
    table.file_ = dwfl;
    const unsigned char* bits = nullptr;
    GElf_Addr vaddr = 0;
    if (const int size = dwfl_module_build_id(module, &bits, &vaddr); size > 0) {
      table.build_id_ = hex_of(bits, size);
    }
  }
  return table;
}

// Every symbol dwfl_module_addrinfo would consider: named, defined, not a section, file or
// thread-local symbol. "Named" is judged by the offset of the name (0 is the empty string), not by
// reading it.
void SymbolTable::add(Dwfl_Module* module) {
  Dwarf_Addr low = 0;
  dwfl_module_info(module, nullptr, &low, nullptr, nullptr, nullptr, nullptr, nullptr);
  GElf_Addr main_bias = 0;
  bias_ = dwfl_module_getelf(module, &main_bias) != nullptr ? main_bias : low;
  const int count = dwfl_module_getsymtab(module);
  std::vector<Candidate> globals;
  std::vector<Candidate> locals;
  for (int i = 0; i < count; ++i) {
    GElf_Sym symbol;
    GElf_Addr value = 0;
    GElf_Word section = 0;
    Elf* elf = nullptr;
    Dwarf_Addr bias = 0;
    const char* name = dwfl_module_getsym_info(module, i, &symbol, &value, &section, &elf, &bias);
    const int type = GELF_ST_TYPE(symbol.st_info);
    if (name == nullptr || symbol.st_name == 0 || symbol.st_shndx == SHN_UNDEF ||
        type == STT_SECTION || type == STT_FILE || type == STT_TLS) {
      continue;
    }
    if (symbol.st_size == 0) {
      // A label counts only within its own section.
      GElf_Shdr header;
      Elf_Scn* scn = elf == nullptr || section == SHN_ABS ? nullptr : elf_getscn(elf, section);
      if (scn == nullptr || gelf_getshdr(scn, &header) == nullptr) {
        continue;
      }
      labels_.push_back(Label{value, header.sh_addr + bias + header.sh_size, name});
    } else {
      (GELF_ST_BIND(symbol.st_info) == STB_LOCAL ? locals : globals)
          .push_back(Candidate{value, value + symbol.st_size, name, binding_rank(symbol), i});
    }
  }
  // By low, the largest first; of equal ranges the one dwfl_module_addrinfo picks (the strongest
  // binding, then the first in the table) last, and kept alone.
  const auto keep = [](std::vector<Candidate>& candidates, std::vector<Range>& ranges) {
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      return std::tie(a.low, b.high, a.rank, b.index) < std::tie(b.low, a.high, b.rank, a.index);
    });
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const bool superseded = i + 1 < candidates.size() &&
                              candidates[i + 1].low == candidates[i].low &&
                              candidates[i + 1].high == candidates[i].high;
      if (!superseded) {
        ranges.push_back(Range{candidates[i].low, candidates[i].high, candidates[i].name});
      }
    }
  };
  keep(globals, globals_);
  keep(locals, locals_);
  std::sort(labels_.begin(), labels_.end(),
            [](const Label& a, const Label& b) { return a.address < b.address; });
}

void SymbolTable::index() {
  // Ranges may nest or overlap: a lookup that misses the range starting closest below the address
  // goes on to the nearest earlier one that ends later (the only ones that can still contain it).
  for (std::vector<Range>* ranges : {&globals_, &locals_}) {
    std::vector<std::int32_t> open;
    for (std::size_t i = 0; i < ranges->size(); ++i) {
      Range& range = (*ranges)[i];
      while (!open.empty() && range.high > (*ranges)[open.back()].high) {
        open.pop_back();
      }
      range.enclosing = open.empty() ? -1 : open.back();
      open.push_back(static_cast<std::int32_t>(i));
    }
  }
  // Both kinds are sorted by low already: merged, not sorted again (the order among equal lows
  // does not change the reach).
  std::vector<Range> starts(globals_.size() + locals_.size());
  std::merge(globals_.begin(), globals_.end(), locals_.begin(), locals_.end(), starts.begin(),
             [](const Range& a, const Range& b) { return a.low < b.low; });
  std::uint64_t reach = 0;
  for (const Range& range : starts) {
    const std::uint64_t low = range.low;
    reach = std::max(reach, range.high);
    if (!reach_.empty() && reach_.back().first == low) {
      reach_.back().second = reach;
    } else {
      reach_.emplace_back(low, reach);
    }
  }
}

const SymbolTable::Range* SymbolTable::containing(const std::vector<Range>& ranges,
                                                  std::uint64_t address) {
  const auto after =
      std::upper_bound(ranges.begin(), ranges.end(), address,
                       [](std::uint64_t value, const Range& range) { return value < range.low; });
  std::int32_t i = static_cast<std::int32_t>(after - ranges.begin()) - 1;
  while (i >= 0 && address >= ranges[i].high) {
    i = ranges[i].enclosing;
  }
  return i < 0 ? nullptr : &ranges[i];
}

std::string_view SymbolTable::name_at(std::uint64_t address) const {
  const Range* range = containing(globals_, address);
  if (range == nullptr) {
    range = containing(locals_, address);
  }
  if (range != nullptr) {
    return range->name;
  }
  const auto label = std::upper_bound(
      labels_.begin(), labels_.end(), address,
      [](std::uint64_t value, const Label& label) { return value < label.address; });
  if (label == labels_.begin() || address >= std::prev(label)->section_end) {
    return {};
  }
  // A sized symbol starting before the address and ending after the label hides it.
  const auto reach =
      std::upper_bound(reach_.begin(), reach_.end(), address,
                       [](std::uint64_t value, const auto& entry) { return value < entry.first; });
  if (reach != reach_.begin() && std::prev(reach)->second > std::prev(label)->address) {
    return {};
  }
  return std::prev(label)->name;
}

} // namespace hotscope::symbols
