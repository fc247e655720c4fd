#include "guest/runner/elf_image.hpp"

#include "trace/function_name.hpp"

#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

namespace hotscope::guest {
namespace {

constexpr std::uint64_t kMaxFileBytes = 64u << 20;
constexpr std::size_t kMaxProgramHeaders = 64;
constexpr std::size_t kMaxSymbols = 1u << 20;

struct ElfHandle {
  Elf* elf;
  ~ElfHandle() { elf_end(elf); }
};

} // namespace

std::optional<ElfImage> ElfImage::open(const std::string& path, std::string& error) {
  const auto fail = [&](const std::string& problem) {
    error = "guest image " + path + ": " + problem;
    return std::nullopt;
  };
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return fail("cannot be read (is the path right?)");
  }
  ElfImage image;
  image.bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (image.bytes_.size() > kMaxFileBytes) {
    return fail("larger than 64 MiB; a guest image is small");
  }
  elf_version(EV_CURRENT);
  ElfHandle handle{elf_memory(image.bytes_.data(), image.bytes_.size())};
  GElf_Ehdr header;
  if (handle.elf == nullptr || elf_kind(handle.elf) != ELF_K_ELF ||
      gelf_getehdr(handle.elf, &header) == nullptr) {
    return fail("not an ELF file; build the guest with guest/CMakeLists.txt");
  }
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB ||
      header.e_machine != EM_X86_64) {
    return fail("not a 64-bit little-endian x86-64 ELF; guests are built for x86-64");
  }
  if (header.e_type != ET_EXEC) {
    return fail("not a static executable (ET_EXEC); link the guest with -static -no-pie");
  }
  std::size_t program_headers = 0;
  if (elf_getphdrnum(handle.elf, &program_headers) != 0 || program_headers == 0 ||
      program_headers > kMaxProgramHeaders) {
    return fail("has no program headers, or more than 64");
  }
  const std::uint64_t file_size = image.bytes_.size();
  bool entry_found = false;
  for (std::size_t i = 0; i < program_headers; ++i) {
    GElf_Phdr program;
    if (gelf_getphdr(handle.elf, static_cast<int>(i), &program) == nullptr) {
      return fail("program header " + std::to_string(i) + " cannot be read");
    }
    if (program.p_type != PT_LOAD) {
      continue;
    }
    const std::string which = "segment " + std::to_string(i);
    if (program.p_filesz > program.p_memsz) {
      return fail(which + " has more file bytes than memory bytes");
    }
    if (program.p_offset > file_size || program.p_filesz > file_size - program.p_offset) {
      return fail(which + " extends past the end of the file (truncated image?)");
    }
    if (program.p_vaddr + program.p_memsz < program.p_vaddr) {
      return fail(which + " wraps around the address space");
    }
    if (program.p_vaddr != program.p_paddr) {
      return fail(which + " has a physical address unlike its virtual one; guests are "
                          "identity-mapped");
    }
    const LoadSegment segment{program.p_vaddr, program.p_offset, program.p_filesz, program.p_memsz,
                              (program.p_flags & PF_X) != 0};
    if (segment.executable && header.e_entry >= segment.address &&
        header.e_entry - segment.address < segment.memory_size) {
      entry_found = true;
    }
    image.segments_.push_back(segment);
  }
  if (!entry_found) {
    return fail("its entry point is not inside an executable loadable segment");
  }
  image.entry_ = header.e_entry;

  // The symbol table is optional (a stripped guest has no names in its stack traces).
  auto symbols = std::make_shared<std::vector<Entry>>();
  for (Elf_Scn* section = elf_nextscn(handle.elf, nullptr); section != nullptr;
       section = elf_nextscn(handle.elf, section)) {
    GElf_Shdr section_header;
    if (gelf_getshdr(section, &section_header) == nullptr || section_header.sh_type != SHT_SYMTAB) {
      continue;
    }
    Elf_Data* data = elf_getdata(section, nullptr);
    if (data == nullptr || section_header.sh_entsize == 0) {
      continue;
    }
    const std::size_t count =
        std::min<std::size_t>(data->d_size / section_header.sh_entsize, kMaxSymbols);
    for (std::size_t i = 0; i < count; ++i) {
      GElf_Sym symbol;
      if (gelf_getsym(data, static_cast<int>(i), &symbol) == nullptr) {
        break;
      }
      const int type = GELF_ST_TYPE(symbol.st_info);
      if ((type != STT_FUNC && type != STT_OBJECT) || symbol.st_value == 0) {
        continue;
      }
      const char* name = elf_strptr(handle.elf, section_header.sh_link, symbol.st_name);
      if (name == nullptr || *name == '\0') {
        continue;
      }
      if (type == STT_FUNC) {
        symbols->push_back({symbol.st_value, symbol.st_size, trace::demangle(name), name});
      } else {
        symbols->push_back({symbol.st_value, 0, {}, name}); // data: found by name only
      }
    }
  }
  std::sort(symbols->begin(), symbols->end(),
            [](const Entry& a, const Entry& b) { return a.start < b.start; });
  image.symbols_ = std::move(symbols);
  return image;
}

std::string_view ElfImage::segment_bytes(const LoadSegment& segment) const {
  return std::string_view(bytes_).substr(segment.file_offset, segment.file_size);
}

std::optional<std::uint64_t> ElfImage::symbol_address(std::string_view name) const {
  for (const Entry& symbol : *symbols_) {
    if (symbol.raw_name == name) {
      return symbol.start;
    }
  }
  return std::nullopt;
}

Symbolizer ElfImage::symbolizer() const {
  return [symbols = symbols_](std::uint64_t address) -> std::optional<Symbol> {
    // The function whose [start, start + size) holds the address; data symbols have no name.
    auto after = std::upper_bound(symbols->begin(), symbols->end(), address,
                                  [](std::uint64_t a, const Entry& s) { return a < s.start; });
    while (after != symbols->begin()) {
      --after;
      if (!after->name.empty()) {
        if (address - after->start < after->size) {
          return Symbol{after->name, address - after->start};
        }
        return std::nullopt;
      }
    }
    return std::nullopt;
  };
}

} // namespace hotscope::guest
