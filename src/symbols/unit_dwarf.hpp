// A module's DWARF opened one compilation unit at a time (docs/heap.md, "Stacks and symbols").
// libdw's lookup of the unit at an address (dwfl_module_addrdie, dwfl_module_getsrc) reads the
// header of every unit before it and keeps a record and an abbreviation table for each: for the
// C library's debug information, megabytes of memory and of file pages for a frame or two. Here
// the module's .debug_aranges gives the unit's offset, and the unit is opened alone: a Dwarf of its
// own over an ELF image whose .debug_info is that unit's bytes and whose other sections are the
// module's (nothing is copied; the pages read are those of the units looked up).
#pragma once

#include <elfutils/libdw.h>
#include <gelf.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace hotscope::symbols {

class UnitDwarf {
public:
  // `dwarf`: the module's (dwfl_module_getdwarf), which must outlive this.
  explicit UnitDwarf(Dwarf* dwarf);
  ~UnitDwarf();
  UnitDwarf(const UnitDwarf&) = delete;
  UnitDwarf& operator=(const UnitDwarf&) = delete;

  enum class Found {
    unit,     // the unit's DIE
    none,     // .debug_aranges lists no unit there: neither would libdw's lookup, which reads it
    ask_libdw // no .debug_aranges, or a unit that cannot stand alone (it imports partial units)
  };
  // The compilation unit containing `address` (a DWARF address), as its DIE in `unit`.
  Found unit_at(Dwarf_Addr address, Dwarf_Die* unit);
  // How many units were opened so far.
  std::size_t units_opened() const { return units_.size(); }

private:
  struct Range {
    Dwarf_Addr low;
    Dwarf_Addr high;
    std::uint64_t unit_offset; // in .debug_info
  };
  struct Section {
    std::string name;
    const void* bytes;
    std::size_t size;
  };
  struct Unit; // its ELF image and Dwarf
  void read_aranges(const Section& aranges);
  std::unique_ptr<Unit> open_unit(std::uint64_t offset) const;
  bool make_image(Unit& unit, const void* info, std::size_t info_size) const;

  GElf_Ehdr module_header_{};
  int module_class_ = 0;
  std::vector<Section> sections_; // the module's .debug_* sections
  const Section* info_ = nullptr;
  std::vector<Range> ranges_; // by low
  // By unit offset; nullptr: the unit cannot stand alone.
  std::unordered_map<std::uint64_t, std::unique_ptr<Unit>> units_;
};

} // namespace hotscope::symbols
