#include "symbols/unit_dwarf.hpp"

#include <dwarf.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace hotscope::symbols {
namespace {

// A value of `size` bytes at `at` in the machine's byte order (the debug information of this
// process's own objects); false past `end`.
bool read(const unsigned char*& at, const unsigned char* end, std::size_t size,
          std::uint64_t& value) {
  if (static_cast<std::size_t>(end - at) < size || size > sizeof value) {
    return false;
  }
  value = 0;
  std::memcpy(&value, at, size); // little-endian: the low bytes
  at += size;
  return true;
}

// A unit's initial length: its size after the length field, and the size of its offsets (4, or 8
// in 64-bit DWARF). False when it does not fit.
bool unit_length(const unsigned char*& at, const unsigned char* end, std::uint64_t& length,
                 std::size_t& offset_size) {
  offset_size = 4;
  if (!read(at, end, 4, length)) {
    return false;
  }
  if (length == 0xffffffff) {
    offset_size = 8;
    if (!read(at, end, 8, length)) {
      return false;
    }
  }
  return length <= static_cast<std::uint64_t>(end - at);
}

} // namespace

struct UnitDwarf::Unit {
  std::string section_names;
  Elf* elf = nullptr;
  Dwarf* dwarf = nullptr;
  Dwarf_Die die{};

  ~Unit() {
    if (dwarf != nullptr) {
      dwarf_end(dwarf);
    }
    if (elf != nullptr) {
      elf_end(elf);
    }
  }
};

UnitDwarf::UnitDwarf(Dwarf* dwarf) {
  Elf* elf = dwarf == nullptr ? nullptr : dwarf_getelf(dwarf);
  std::size_t names = 0;
  if (elf == nullptr || elf_getshdrstrndx(elf, &names) != 0 ||
      gelf_getehdr(elf, &module_header_) == nullptr) {
    return;
  }
  module_class_ = gelf_getclass(elf);
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr header;
    const char* name =
        gelf_getshdr(scn, &header) == nullptr ? nullptr : elf_strptr(elf, names, header.sh_name);
    if (name == nullptr || std::strncmp(name, ".debug_", 7) != 0 || header.sh_type == SHT_NOBITS) {
      continue;
    }
    if ((header.sh_flags & SHF_COMPRESSED) != 0) {
      sections_.clear(); // left to libdw's whole-module lookup, which inflates them
      return;
    }
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data != nullptr && data->d_buf != nullptr) {
      sections_.push_back(Section{name, data->d_buf, data->d_size});
    }
  }
  const Section* aranges = nullptr;
  for (const Section& section : sections_) {
    if (section.name == ".debug_info") {
      info_ = &section;
    } else if (section.name == ".debug_aranges") {
      aranges = &section;
    }
  }
  if (info_ != nullptr && aranges != nullptr) {
    read_aranges(*aranges);
  }
}

UnitDwarf::~UnitDwarf() = default;

// Each set: its header (length, version 2, the unit's offset, address and segment sizes), padded
// to twice the address size, then (address, length) pairs up to a (0, 0).
void UnitDwarf::read_aranges(const Section& aranges) {
  const auto* const begin = static_cast<const unsigned char*>(aranges.bytes);
  const unsigned char* const end = begin + aranges.size;
  const unsigned char* set = begin;
  while (set < end) {
    const unsigned char* at = set;
    std::uint64_t length = 0;
    std::size_t offset_size = 0;
    if (!unit_length(at, end, length, offset_size)) {
      return;
    }
    const unsigned char* const set_end = at + length;
    std::uint64_t version = 0;
    std::uint64_t unit = 0;
    std::uint64_t address_size = 0;
    std::uint64_t segment_size = 0;
    if (!read(at, set_end, 2, version) || !read(at, set_end, offset_size, unit) ||
        !read(at, set_end, 1, address_size) || !read(at, set_end, 1, segment_size)) {
      return;
    }
    if (version == 2 && segment_size == 0 && (address_size == 4 || address_size == 8)) {
      const std::size_t tuple = 2 * address_size;
      at = begin + ((at - begin) + tuple - 1) / tuple * tuple;
      std::uint64_t low = 0;
      std::uint64_t size = 0;
      while (at < set_end && read(at, set_end, address_size, low) &&
             read(at, set_end, address_size, size) && (low != 0 || size != 0)) {
        if (size > 0) {
          ranges_.push_back(Range{low, low + size, unit});
        }
      }
    }
    set = set_end;
  }
  std::sort(ranges_.begin(), ranges_.end(),
            [](const Range& a, const Range& b) { return a.low < b.low; });
}

UnitDwarf::Found UnitDwarf::unit_at(Dwarf_Addr address, Dwarf_Die* unit) {
  if (ranges_.empty()) {
    return Found::ask_libdw;
  }
  const auto after =
      std::upper_bound(ranges_.begin(), ranges_.end(), address,
                       [](Dwarf_Addr value, const Range& range) { return value < range.low; });
  // Ranges of different units do not overlap: the closest start below is the only candidate.
  if (after == ranges_.begin() || address >= std::prev(after)->high) {
    return Found::none;
  }
  const std::uint64_t offset = std::prev(after)->unit_offset;
  auto found = units_.find(offset);
  if (found == units_.end()) {
    found = units_.emplace(offset, open_unit(offset)).first;
  }
  if (found->second == nullptr) {
    return Found::ask_libdw;
  }
  *unit = found->second->die;
  return Found::unit;
}

// `unit`'s ELF image in memory (never written): the module's sections, .debug_info cut down to
// `info_size` bytes at `info`, no .debug_aranges (whose offsets would point past them).
bool UnitDwarf::make_image(Unit& unit, const void* info, std::size_t info_size) const {
  // libelf keeps the descriptor of an image to write, and never uses it for one never written.
  const int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  unit.elf = fd < 0 ? nullptr : elf_begin(fd, ELF_C_WRITE, nullptr);
  if (fd >= 0) {
    close(fd);
  }
  if (unit.elf == nullptr || gelf_newehdr(unit.elf, module_class_) == nullptr) {
    return false;
  }
  std::vector<std::size_t> name_offsets;
  unit.section_names.assign(1, '\0');
  for (const Section& section : sections_) {
    name_offsets.push_back(unit.section_names.size());
    unit.section_names += section.name + '\0';
  }
  const std::size_t names_name = unit.section_names.size();
  unit.section_names += std::string(".shstrtab") + '\0';
  const auto add = [&](std::size_t name, GElf_Word type, const void* bytes, std::size_t size) {
    Elf_Scn* scn = elf_newscn(unit.elf);
    Elf_Data* data = scn == nullptr ? nullptr : elf_newdata(scn);
    if (data == nullptr) {
      return false;
    }
    data->d_buf = const_cast<void*>(bytes);
    data->d_size = size;
    data->d_type = ELF_T_BYTE;
    data->d_version = EV_CURRENT;
    data->d_align = 1;
    GElf_Shdr header{};
    header.sh_name = static_cast<GElf_Word>(name);
    header.sh_type = type;
    header.sh_size = size;
    return gelf_update_shdr(scn, &header) != 0;
  };
  for (std::size_t i = 0; i < sections_.size(); ++i) {
    const Section& section = sections_[i];
    if (section.name == ".debug_aranges") {
      continue;
    }
    const bool is_info = &section == info_;
    if (!add(name_offsets[i], SHT_PROGBITS, is_info ? info : section.bytes,
             is_info ? info_size : section.size)) {
      return false;
    }
  }
  if (!add(names_name, SHT_STRTAB, unit.section_names.data(), unit.section_names.size())) {
    return false;
  }
  GElf_Ehdr header;
  std::size_t count = 0;
  if (gelf_getehdr(unit.elf, &header) == nullptr || elf_getshdrnum(unit.elf, &count) != 0) {
    return false;
  }
  header.e_ident[EI_DATA] = module_header_.e_ident[EI_DATA];
  header.e_machine = module_header_.e_machine;
  header.e_type = ET_REL;
  header.e_version = EV_CURRENT;
  header.e_shstrndx = static_cast<GElf_Half>(count - 1); // the last section added
  return gelf_update_ehdr(unit.elf, &header) != 0;
}

// The unit at `offset` of .debug_info with its DIE, or nullptr when it cannot stand alone.
std::unique_ptr<UnitDwarf::Unit> UnitDwarf::open_unit(std::uint64_t offset) const {
  if (offset >= info_->size) {
    return nullptr;
  }
  const auto* const info = static_cast<const unsigned char*>(info_->bytes);
  const unsigned char* at = info + offset;
  std::uint64_t length = 0;
  std::size_t offset_size = 0;
  if (!unit_length(at, info + info_->size, length, offset_size)) {
    return nullptr;
  }
  auto unit = std::make_unique<Unit>();
  if (!make_image(*unit, info + offset, static_cast<std::size_t>(at - (info + offset)) + length)) {
    return nullptr;
  }
  Dwarf_Off next = 0;
  std::size_t header_size = 0;
  if ((unit->dwarf = dwarf_begin_elf(unit->elf, DWARF_C_READ, nullptr)) == nullptr ||
      dwarf_nextcu(unit->dwarf, 0, &next, &header_size, nullptr, nullptr, nullptr) != 0 ||
      dwarf_offdie(unit->dwarf, header_size, &unit->die) == nullptr ||
      dwarf_tag(&unit->die) != DW_TAG_compile_unit) {
    return nullptr;
  }
  Dwarf_Die child;
  if (dwarf_child(&unit->die, &child) == 0) {
    do {
      if (dwarf_tag(&child) == DW_TAG_imported_unit) {
        return nullptr;
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }
  return unit;
}

} // namespace hotscope::symbols
