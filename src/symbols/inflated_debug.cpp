#include "symbols/inflated_debug.hpp"

#include "atomic_file/atomic_file.hpp"
#include "symbols/symbols.hpp"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libdeflate.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <numeric>
#include <string_view>
#include <system_error>
#include <utility>

namespace hotscope::symbols {

std::string hex_of(const unsigned char* bytes, int size) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string hex;
  for (int i = 0; i < size; ++i) {
    hex += digits[bytes[i] >> 4];
    hex += digits[bytes[i] & 0xF];
  }
  return hex;
}

namespace {

// Sections libdw would inflate that the symbolizer never reads: variable locations and macros.
constexpr std::array<std::string_view, 4> unread_sections = {".debug_loc", ".debug_loclists",
                                                             ".debug_macro", ".debug_macinfo"};

// A file descriptor and the ELF handle on it, closed together.
struct ElfFile {
  int fd = -1;
  Elf* elf = nullptr;

  explicit ElfFile(int descriptor) : fd(descriptor) {
    if (fd >= 0) {
      elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
      if (elf != nullptr && elf_kind(elf) != ELF_K_ELF) {
        elf_end(elf);
        elf = nullptr;
      }
    }
  }
  ~ElfFile() {
    if (elf != nullptr) {
      elf_end(elf);
    }
    if (fd >= 0) {
      close(fd);
    }
  }
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;
  // Hands the descriptor over: it stays open.
  int release() {
    if (elf != nullptr) {
      elf_end(elf);
      elf = nullptr;
    }
    return std::exchange(fd, -1);
  }
};

bool has_build_id(Elf* elf, const std::string& build_id) {
  const void* bits = nullptr;
  const ssize_t size = dwelf_elf_gnu_build_id(elf, &bits);
  return size > 0 &&
         hex_of(static_cast<const unsigned char*>(bits), static_cast<int>(size)) == build_id;
}

const char* section_name(Elf* elf, const GElf_Shdr& header) {
  std::size_t names = 0;
  if (elf_getshdrstrndx(elf, &names) != 0) {
    return nullptr;
  }
  return elf_strptr(elf, names, header.sh_name);
}

bool is_compressed_dwarf(Elf* elf, Elf_Scn* section, const GElf_Shdr& header) {
  GElf_Chdr compression;
  const char* name = section_name(elf, header);
  return (header.sh_flags & SHF_COMPRESSED) != 0 && header.sh_type != SHT_NOBITS &&
         name != nullptr && std::string_view(name).starts_with(".debug_") &&
         gelf_getchdr(section, &compression) != nullptr && compression.ch_type == ELFCOMPRESS_ZLIB;
}

bool has_compressed_dwarf(Elf* elf) {
  for (Elf_Scn* section = nullptr; (section = elf_nextscn(elf, section)) != nullptr;) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) != nullptr && is_compressed_dwarf(elf, section, header)) {
      return true;
    }
  }
  return false;
}

// A copy to trust: a regular file of this user that nobody else may write, an ELF file of the
// expected build id, every section within the file and none compressed. Anything else (a link,
// a truncated or foreign file) is made again.
bool trustworthy(const ElfFile& file, const std::string& build_id) {
  struct stat status {};
  if (file.elf == nullptr || fstat(file.fd, &status) != 0 || !S_ISREG(status.st_mode) ||
      status.st_uid != geteuid() || (status.st_mode & (S_IWGRP | S_IWOTH)) != 0 ||
      !has_build_id(file.elf, build_id)) {
    return false;
  }
  // libelf reads a section header table that lies past the end of the file as no sections.
  const auto size = static_cast<std::uint64_t>(status.st_size);
  GElf_Ehdr file_header;
  std::size_t count = 0;
  if (gelf_getehdr(file.elf, &file_header) == nullptr || elf_getshdrnum(file.elf, &count) != 0 ||
      count < 2 || file_header.e_shoff > size ||
      count * file_header.e_shentsize > size - file_header.e_shoff) {
    return false;
  }
  for (Elf_Scn* section = nullptr; (section = elf_nextscn(file.elf, section)) != nullptr;) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr || (header.sh_flags & SHF_COMPRESSED) != 0) {
      return false;
    }
    if (header.sh_type != SHT_NOBITS &&
        (header.sh_offset > size || header.sh_size > size - header.sh_offset)) {
      return false;
    }
  }
  return true;
}

std::uint64_t aligned(std::uint64_t offset, std::uint64_t alignment) {
  return alignment <= 1 ? offset : (offset + alignment - 1) / alignment * alignment;
}

// One section of the copy: its header and where its bytes come from.
struct Section {
  GElf_Shdr header;
  const void* bytes = nullptr;
  std::unique_ptr<unsigned char[]> inflated; // not zeroed first: every byte is written
  bool changed = false;                      // inflated or left out: its size changes
};

// The sections of `source` with the compressed DWARF inflated and the unread sections left out
// (as SHT_NOBITS, so that every section keeps its index). False when the file is not as expected.
bool read_sections(Elf* source, libdeflate_decompressor* decompressor,
                   std::vector<Section>& sections) {
  std::size_t count = 0;
  if (elf_getshdrnum(source, &count) != 0 || count >= SHN_LORESERVE) {
    return false;
  }
  const std::size_t header_size =
      gelf_getclass(source) == ELFCLASS64 ? sizeof(Elf64_Chdr) : sizeof(Elf32_Chdr);
  sections.resize(count);
  for (std::size_t i = 1; i < count; ++i) {
    Section& section = sections[i];
    Elf_Scn* scn = elf_getscn(source, i);
    if (scn == nullptr || gelf_getshdr(scn, &section.header) == nullptr) {
      return false;
    }
    GElf_Shdr& header = section.header;
    if (header.sh_type == SHT_NOBITS || header.sh_size == 0) {
      continue;
    }
    const char* name = section_name(source, header);
    if (name != nullptr &&
        std::find(unread_sections.begin(), unread_sections.end(), name) != unread_sections.end()) {
      header.sh_type = SHT_NOBITS;
      header.sh_flags &= ~static_cast<GElf_Xword>(SHF_COMPRESSED);
      header.sh_size = 0;
      section.changed = true;
      continue;
    }
    Elf_Data* raw = elf_rawdata(scn, nullptr);
    if (raw == nullptr || raw->d_size != header.sh_size) {
      return false;
    }
    if (!is_compressed_dwarf(source, scn, header)) {
      section.bytes = raw->d_buf;
      continue;
    }
    GElf_Chdr compression;
    gelf_getchdr(scn, &compression);
    section.inflated.reset(new unsigned char[compression.ch_size]);
    std::size_t inflated_size = 0;
    if (raw->d_size < header_size ||
        libdeflate_zlib_decompress(decompressor,
                                   static_cast<const unsigned char*>(raw->d_buf) + header_size,
                                   raw->d_size - header_size, section.inflated.get(),
                                   compression.ch_size, &inflated_size) != LIBDEFLATE_SUCCESS ||
        inflated_size != compression.ch_size) {
      return false;
    }
    header.sh_flags &= ~static_cast<GElf_Xword>(SHF_COMPRESSED);
    header.sh_size = compression.ch_size;
    header.sh_addralign = compression.ch_addralign;
    section.bytes = section.inflated.get();
    section.changed = true;
  }
  return true;
}

// Where the sections go: those before the first changed one stay where they are (with the program
// headers pointing into them), the rest follow it in file order. Returns the end of the last
// section, or 0 when something the copy keeps lies beyond the first change.
std::uint64_t lay_out(Elf* source, std::vector<Section>& sections) {
  std::vector<std::size_t> order(sections.size() - 1);
  std::iota(order.begin(), order.end(), 1);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return sections[a].header.sh_offset < sections[b].header.sh_offset;
  });
  std::uint64_t first_change = ~std::uint64_t{0};
  for (const Section& section : sections) {
    if (section.changed) {
      first_change = std::min(first_change, section.header.sh_offset);
    }
  }
  GElf_Ehdr file_header;
  std::size_t program_headers = 0;
  if (gelf_getehdr(source, &file_header) == nullptr ||
      elf_getphdrnum(source, &program_headers) != 0 ||
      file_header.e_phoff + program_headers * file_header.e_phentsize > first_change) {
    return 0;
  }
  for (std::size_t i = 0; i < program_headers; ++i) {
    GElf_Phdr header;
    if (gelf_getphdr(source, static_cast<int>(i), &header) == nullptr ||
        (header.p_filesz > 0 && header.p_offset + header.p_filesz > first_change)) {
      return 0;
    }
  }
  std::uint64_t end = first_change;
  for (const std::size_t i : order) {
    GElf_Shdr& header = sections[i].header;
    if (header.sh_type == SHT_NOBITS) {
      continue;
    }
    if (header.sh_offset < first_change) {
      if (header.sh_offset + header.sh_size > first_change) {
        return 0;
      }
      continue;
    }
    header.sh_offset = aligned(end, header.sh_addralign);
    end = header.sh_offset + header.sh_size;
  }
  return end;
}

// `source` with its compressed DWARF inflated, in a new memory file; -1 when it cannot be made.
int inflated_copy(Elf* source, libdeflate_decompressor* decompressor) {
  std::vector<Section> sections;
  if (!read_sections(source, decompressor, sections)) {
    return -1;
  }
  const std::uint64_t end = lay_out(source, sections);
  if (end == 0) {
    return -1;
  }
  ElfFile copy(-1);
  copy.fd = memfd_create("hotscope-inflated-debug", MFD_CLOEXEC);
  if (copy.fd < 0) {
    return -1;
  }
  Elf* out = elf_begin(copy.fd, ELF_C_WRITE, nullptr);
  if (out == nullptr) {
    return -1;
  }
  copy.elf = out;
  GElf_Ehdr file_header;
  std::size_t program_headers = 0;
  gelf_getehdr(source, &file_header);
  elf_getphdrnum(source, &program_headers);
  if (gelf_newehdr(out, gelf_getclass(source)) == nullptr ||
      (program_headers > 0 && gelf_newphdr(out, program_headers) == nullptr)) {
    return -1;
  }
  elf_flagelf(out, ELF_C_SET, ELF_F_LAYOUT);
  for (std::size_t i = 0; i < program_headers; ++i) {
    GElf_Phdr header;
    gelf_getphdr(source, static_cast<int>(i), &header);
    gelf_update_phdr(out, static_cast<int>(i), &header);
  }
  for (std::size_t i = 1; i < sections.size(); ++i) {
    Elf_Scn* scn = elf_newscn(out);
    if (scn == nullptr || gelf_update_shdr(scn, &sections[i].header) == 0) {
      return -1;
    }
    if (sections[i].header.sh_type != SHT_NOBITS && sections[i].header.sh_size > 0) {
      Elf_Data* data = elf_newdata(scn);
      if (data == nullptr) {
        return -1;
      }
      data->d_buf = const_cast<void*>(sections[i].bytes);
      data->d_size = sections[i].header.sh_size;
      data->d_type = ELF_T_BYTE;
      data->d_align = 1;
      data->d_off = 0;
      data->d_version = EV_CURRENT;
    }
  }
  file_header.e_shoff = aligned(end, 8);
  if (gelf_update_ehdr(out, &file_header) == 0 || elf_update(out, ELF_C_WRITE) < 0) {
    return -1;
  }
  return copy.release();
}

} // namespace

InflatedDebugFiles::InflatedDebugFiles(std::string debug_directories, std::string cache_directory)
    : debug_directories_(std::move(debug_directories)),
      cache_directory_(std::move(cache_directory)) {
  elf_version(EV_CURRENT);
}

InflatedDebugFiles::~InflatedDebugFiles() {
  if (decompressor_ != nullptr) {
    libdeflate_free_decompressor(decompressor_);
  }
}

std::vector<std::string> InflatedDebugFiles::take_problems() {
  return std::exchange(problems_, {});
}

int InflatedDebugFiles::find_debuginfo(Dwfl_Module* module, void** userdata,
                                       const char* module_name, GElf_Addr base,
                                       const char* file_name, const char* debuglink_file,
                                       GElf_Word debuglink_crc, char** debuginfo_file_name) {
  // A module's debug file is asked for once; asked again, it is its dwz file, which libdw's own
  // lookup finds.
  const char* debug_file = nullptr;
  dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &debug_file);
  if (userdata != nullptr && *userdata != nullptr && debug_file == nullptr) {
    // No exception crosses libdw: without memory (or for a section claiming more than there
    // is) libdw reads the file as it is.
    try {
      const int fd =
          static_cast<InflatedDebugFiles*>(*userdata)->open_inflated(module, debuginfo_file_name);
      if (fd >= 0) {
        return fd;
      }
    } catch (const std::exception&) {
    }
  }
  return dwfl_build_id_find_debuginfo(module, userdata, module_name, base, file_name,
                                      debuglink_file, debuglink_crc, debuginfo_file_name);
}

int InflatedDebugFiles::open_inflated(Dwfl_Module* module, char** debuginfo_file_name) {
  const unsigned char* bits = nullptr;
  GElf_Addr note_address = 0;
  const int size = dwfl_module_build_id(module, &bits, &note_address);
  if (size <= 1) {
    return -1;
  }
  const std::string build_id = hex_of(bits, size);
  std::string_view directories = debug_directories_;
  while (!directories.empty()) {
    const std::size_t colon = directories.find(':');
    const std::string directory(directories.substr(0, colon));
    directories.remove_prefix(colon == std::string_view::npos ? directories.size() : colon + 1);
    if (!directory.starts_with('/')) {
      continue; // as libdw: build ids are looked up in absolute directories only
    }
    const std::string path =
        directory + "/.build-id/" + build_id.substr(0, 2) + "/" + build_id.substr(2) + ".debug";
    ElfFile original(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (original.elf == nullptr) {
      continue;
    }
    if (!has_build_id(original.elf, build_id) || !has_compressed_dwarf(original.elf)) {
      return -1; // libdw's lookup finds the same file and reads it as it is
    }
    const std::string cached =
        cache_directory_.empty() ? "" : cache_directory_ + "/" + build_id + ".debug";
    int fd = cached.empty() ? -1 : open_cached(cached, build_id);
    if (fd >= 0) {
      ++from_cache_;
    } else {
      if (decompressor_ == nullptr &&
          (decompressor_ = libdeflate_alloc_decompressor()) == nullptr) {
        return -1;
      }
      fd = inflated_copy(original.elf, decompressor_);
      if (fd < 0) {
        return -1;
      }
      ++inflated_;
      if (!cached.empty()) {
        keep(cached, fd);
      }
    }
    *debuginfo_file_name = strdup(path.c_str()); // libdw frees it; named as the file it shows
    return fd;
  }
  return -1;
}

int InflatedDebugFiles::open_cached(const std::string& path, const std::string& build_id) const {
  ElfFile copy(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  return trustworthy(copy, build_id) ? copy.release() : -1;
}

// Writes the copy into the cache, replacing whatever was there (a link is replaced, not
// followed). A failure is reported once per directory; this run uses the copy in memory.
void InflatedDebugFiles::keep(const std::string& path, int inflated_fd) {
  if (cache_failed_) {
    return;
  }
  struct stat status {};
  std::string reason;
  if (fstat(inflated_fd, &status) != 0) {
    reason = std::system_category().message(errno);
  } else {
    const auto size = static_cast<std::size_t>(status.st_size);
    void* bytes = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, inflated_fd, 0);
    if (bytes == MAP_FAILED) {
      reason = std::system_category().message(errno);
    } else {
      std::error_code error;
      std::filesystem::create_directories(cache_directory_, error);
      reason = error ? error.message()
                     : atomic_file::write(path, {static_cast<const char*>(bytes), size}, 0600);
      munmap(bytes, size);
    }
  }
  if (!reason.empty()) {
    cache_failed_ = true;
    problems_.push_back("hotscope: cannot keep inflated debug information in " + cache_directory_ +
                        ": " + reason +
                        " (each run inflates it again; HOTSCOPE_HEAP_DEBUG_CACHE=0 stops trying)");
  }
}

} // namespace hotscope::symbols
