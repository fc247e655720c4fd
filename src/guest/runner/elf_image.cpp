#include "guest/runner/elf_image.hpp"

#include "names/names.hpp"

#include <gelf.h>
#include <libelf.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace hotscope::guest {
namespace {

constexpr std::uint64_t kMaxFileBytes = 64u << 20;
constexpr std::size_t kMaxProgramHeaders = 64;
constexpr std::size_t kMaxSymbols = 1u << 20;

struct ElfHandle {
  Elf* elf;
  ~ElfHandle() { elf_end(elf); }
};

const char* file_kind(mode_t mode) {
  switch (mode & S_IFMT) {
  case S_IFDIR:
    return "a directory";
  case S_IFCHR:
    return "a character device";
  case S_IFBLK:
    return "a block device";
  case S_IFIFO:
    return "a FIFO";
  case S_IFSOCK:
    return "a socket";
  default:
    return "not a regular file";
  }
}

// The whole file into `bytes`, its size checked before reading: only a regular file of at most
// kMaxFileBytes (a device or a FIFO never ends; a huge file would fill the memory). Opened
// without blocking, so a FIFO with no writer is refused instead of waited for.
std::string read_bounded(const std::string& path, std::string& bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    return std::string("cannot be read: ") + std::strerror(errno) + " (is the path right?)";
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat status {};
  if (fstat(fd, &status) != 0) {
    return std::string("cannot be examined: ") + std::strerror(errno);
  }
  if (!S_ISREG(status.st_mode)) {
    return std::string("is ") + file_kind(status.st_mode) +
           ", not a guest image file; give the path of a guest ELF executable";
  }
  if (static_cast<std::uint64_t>(status.st_size) > kMaxFileBytes) {
    return "is " + std::to_string(status.st_size >> 20) +
           " MiB, larger than 64 MiB; a guest image is small";
  }
  // Read at most one byte more than fstat said: a file growing meanwhile is not followed.
  bytes.resize(static_cast<std::size_t>(status.st_size) + 1);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got < 0) {
      return std::string("cannot be read: ") + std::strerror(errno);
    }
    if (got == 0) {
      break;
    }
    done += static_cast<std::size_t>(got);
  }
  if (done > static_cast<std::size_t>(status.st_size)) {
    return "grew while it was read; a guest image must not change while it is loaded";
  }
  bytes.resize(done);
  return "";
}

// "" when `header` is a static x86-64 executable, else what it is instead.
std::string check_header(const GElf_Ehdr& header) {
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB ||
      header.e_machine != EM_X86_64) {
    return "not a 64-bit little-endian x86-64 ELF; guests are built for x86-64";
  }
  if (header.e_type != ET_EXEC) {
    return "not a static executable (ET_EXEC); link the guest with -static -no-pie";
  }
  return "";
}

// The loadable segments of `elf` (a file of `file_size` bytes) into `segments`, each checked to
// lie inside the file and be identity-mapped; "" or what is wrong, the entry point outside every
// executable segment included.
std::string load_segments(Elf* elf, const GElf_Ehdr& header, std::uint64_t file_size,
                          std::vector<LoadSegment>& segments) {
  std::size_t program_headers = 0;
  if (elf_getphdrnum(elf, &program_headers) != 0 || program_headers == 0 ||
      program_headers > kMaxProgramHeaders) {
    return "has no program headers, or more than 64";
  }
  bool entry_found = false;
  for (std::size_t i = 0; i < program_headers; ++i) {
    GElf_Phdr program;
    if (gelf_getphdr(elf, static_cast<int>(i), &program) == nullptr) {
      return "program header " + std::to_string(i) + " cannot be read";
    }
    if (program.p_type != PT_LOAD) {
      continue;
    }
    const std::string which = "segment " + std::to_string(i);
    if (program.p_filesz > program.p_memsz) {
      return which + " has more file bytes than memory bytes";
    }
    if (program.p_offset > file_size || program.p_filesz > file_size - program.p_offset) {
      return which + " extends past the end of the file (truncated image?)";
    }
    if (program.p_vaddr + program.p_memsz < program.p_vaddr) {
      return which + " wraps around the address space";
    }
    if (program.p_vaddr != program.p_paddr) {
      return which + " has a physical address unlike its virtual one; guests are identity-mapped";
    }
    const LoadSegment segment{program.p_vaddr, program.p_offset, program.p_filesz, program.p_memsz,
                              (program.p_flags & PF_X) != 0};
    if (segment.executable && header.e_entry >= segment.address &&
        header.e_entry - segment.address < segment.memory_size) {
      entry_found = true;
    }
    segments.push_back(segment);
  }
  return entry_found ? "" : "its entry point is not inside an executable loadable segment";
}

// The function and data symbols of `elf`'s symbol tables, sorted by address. Optional: a
// stripped guest has no names in its stack traces.
std::vector<ElfImage::Entry> read_symbols(Elf* elf) {
  std::vector<ElfImage::Entry> symbols;
  for (Elf_Scn* section = elf_nextscn(elf, nullptr); section != nullptr;
       section = elf_nextscn(elf, section)) {
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
      const char* name = elf_strptr(elf, section_header.sh_link, symbol.st_name);
      if (name == nullptr || *name == '\0') {
        continue;
      }
      if (type == STT_FUNC) {
        symbols.push_back({symbol.st_value, symbol.st_size, names::demangle(name), name});
      } else {
        symbols.push_back({symbol.st_value, 0, {}, name}); // data: found by name only
      }
    }
  }
  std::sort(symbols.begin(), symbols.end(),
            [](const ElfImage::Entry& a, const ElfImage::Entry& b) { return a.start < b.start; });
  return symbols;
}

} // namespace

std::optional<ElfImage> ElfImage::open(const std::string& path, std::string& error) {
  const auto fail = [&](const std::string& problem) {
    error = "guest image " + path + ": " + problem;
    return std::nullopt;
  };
  ElfImage image;
  if (std::string problem = read_bounded(path, image.bytes_); !problem.empty()) {
    return fail(problem);
  }
  elf_version(EV_CURRENT);
  ElfHandle handle{elf_memory(image.bytes_.data(), image.bytes_.size())};
  GElf_Ehdr header;
  if (handle.elf == nullptr || elf_kind(handle.elf) != ELF_K_ELF ||
      gelf_getehdr(handle.elf, &header) == nullptr) {
    return fail("not an ELF file; build the guest with guest/CMakeLists.txt");
  }
  if (std::string problem = check_header(header); !problem.empty()) {
    return fail(problem);
  }
  if (std::string problem = load_segments(handle.elf, header, image.bytes_.size(), image.segments_);
      !problem.empty()) {
    return fail(problem);
  }
  image.entry_ = header.e_entry;
  image.symbols_ = std::make_shared<const std::vector<Entry>>(read_symbols(handle.elf));
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

std::string ElfImage::wrong_kind(const std::string& path, bool run_as_process) const {
  // Symbols only the other transport's runtime defines (guest/hotscope_guest.h); a stripped
  // image has neither and is taken as it comes.
  if (run_as_process && symbol_address("hotscope_guest_stack_area")) {
    return "guest image " + path +
           " is a VM guest (HOTSCOPE_GUEST_VM, linked with guest/vm.ld), not a process guest: run "
           "it without --process (hotscope vm run " +
           path + "), or run its process build with --process";
  }
  if (!run_as_process && symbol_address("hotscope_guest_process_main")) {
    return "guest image " + path +
           " is a process guest (HOTSCOPE_GUEST_PROCESS), not a VM guest: run it with --process "
           "(hotscope vm run --process " +
           path + "), or run its VM build (guest/vm.ld) without --process";
  }
  return "";
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
