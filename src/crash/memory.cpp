#include "crash/memory.hpp"

#include "objects/objects.hpp"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hotscope::crash {
namespace {

// The mappings of files kept: the executable ones and those of an object's first page (where
// its ELF header is), by address as the kernel lists them.
struct Mapping {
  std::uint64_t start;
  std::uint64_t limit;
  std::uint64_t offset;
  std::uint32_t path; // into path_pool
  bool executable;
};
constexpr std::size_t kMappingsMax = 4096;
Mapping mappings[kMappingsMax];
std::size_t mapping_count = 0;
char path_pool[256 * 1024];
std::size_t pool_used = 0;

std::uint64_t parse_hex(const char*& at, const char* end) {
  std::uint64_t value = 0;
  for (; at < end; ++at) {
    const char c = *at;
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) {
      break;
    }
    value = value << 4 | static_cast<std::uint64_t>(digit);
  }
  return value;
}

const char* skip_field(const char* at, const char* end) {
  while (at < end && *at != ' ') {
    ++at;
  }
  while (at < end && *at == ' ') {
    ++at;
  }
  return at;
}

// "start-limit perms offset dev inode   path"
void add_line(const char* line, const char* end) {
  Mapping mapping{};
  const char* at = line;
  mapping.start = parse_hex(at, end);
  ++at; // '-'
  mapping.limit = parse_hex(at, end);
  at = skip_field(at, end);
  mapping.executable = end - at > 2 && at[2] == 'x';
  at = skip_field(at, end);
  mapping.offset = parse_hex(at, end);
  at = skip_field(skip_field(skip_field(at, end), end), end); // offset, dev, inode
  if (at >= end || *at != '/' || (!mapping.executable && mapping.offset != 0) ||
      mapping_count == kMappingsMax) {
    return; // no file, or nothing a code address needs
  }
  const std::size_t length = static_cast<std::size_t>(end - at);
  const Mapping* previous = mapping_count == 0 ? nullptr : &mappings[mapping_count - 1];
  if (previous != nullptr && std::strlen(path_pool + previous->path) == length &&
      std::memcmp(path_pool + previous->path, at, length) == 0) {
    mapping.path = previous->path;
  } else if (pool_used + length + 1 <= sizeof path_pool) {
    std::memcpy(path_pool + pool_used, at, length);
    path_pool[pool_used + length] = '\0';
    mapping.path = static_cast<std::uint32_t>(pool_used);
    pool_used += length + 1;
  } else {
    return;
  }
  mappings[mapping_count++] = mapping;
}

// The object's load bias (loaded address minus link-time address) and build id, from the ELF
// header mapped at `base`.
bool read_object(std::uint64_t base, std::uint64_t& bias,
                 char (&build_id)[2 * objects::kBuildIdMax + 1]) {
  build_id[0] = '\0';
  ElfW(Ehdr) header;
  if (!read_memory(base, &header, sizeof header) ||
      std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_phentsize != sizeof(ElfW(Phdr)) || header.e_phnum > 128) {
    return false;
  }
  ElfW(Phdr) program[128];
  if (!read_memory(base + header.e_phoff, program, header.e_phnum * sizeof(ElfW(Phdr)))) {
    return false;
  }
  bool loaded = false;
  for (std::size_t i = 0; i < header.e_phnum && !loaded; ++i) {
    if (program[i].p_type == PT_LOAD) {
      const std::uint64_t align = program[i].p_align > 1 ? program[i].p_align : 1;
      bias = base - (program[i].p_vaddr - program[i].p_offset) / align * align;
      loaded = true;
    }
  }
  for (std::size_t i = 0; i < header.e_phnum && loaded; ++i) {
    static unsigned char notes[4096];
    const ElfW(Phdr)& note = program[i];
    const std::size_t size = note.p_memsz < sizeof notes ? note.p_memsz : sizeof notes;
    if (note.p_type != PT_NOTE || !read_memory(bias + note.p_vaddr, notes, size)) {
      continue;
    }
    unsigned char bytes[objects::kBuildIdMax];
    const std::size_t count =
        objects::build_id_bytes(notes, size, note.p_align == 8 ? 8 : 4, bytes);
    for (std::size_t b = 0; b < count; ++b) {
      build_id[2 * b] = "0123456789abcdef"[bytes[b] >> 4];
      build_id[2 * b + 1] = "0123456789abcdef"[bytes[b] & 0xf];
    }
    build_id[2 * count] = '\0';
    if (count != 0) {
      break;
    }
  }
  return loaded;
}

} // namespace

bool read_memory(std::uint64_t address, void* out, std::size_t size) noexcept {
  iovec local{out, size};
  iovec remote{reinterpret_cast<void*>(address), size};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(size);
}

const char* read_text(std::uint64_t address, char* out, std::size_t size) noexcept {
  // Page by page: a text near the end of a mapping cannot be read as a whole `size`.
  std::size_t done = 0;
  while (done + 1 < size) {
    const std::uint64_t at = address + done;
    const std::size_t to_page_end = 4096 - (at & 4095);
    const std::size_t chunk = to_page_end < size - 1 - done ? to_page_end : size - 1 - done;
    if (!read_memory(at, out + done, chunk)) {
      break;
    }
    if (std::memchr(out + done, '\0', chunk) != nullptr) {
      return out;
    }
    done += chunk;
  }
  if (done == 0) {
    return "?";
  }
  out[done] = '\0';
  return out;
}

bool read_code_mappings() noexcept {
  mapping_count = 0;
  pool_used = 0;
  const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  static char chunk[8192];
  std::size_t kept = 0; // the start of a line the last read cut
  for (;;) {
    const ssize_t got = read(fd, chunk + kept, sizeof chunk - kept);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      break;
    }
    const char* line = chunk;
    const char* end = chunk + kept + got;
    for (const char* newline; (newline = static_cast<const char*>(std::memchr(
                                   line, '\n', static_cast<std::size_t>(end - line)))) != nullptr;
         line = newline + 1) {
      add_line(line, newline);
    }
    kept = static_cast<std::size_t>(end - line);
    if (kept == sizeof chunk) {
      kept = 0; // a line longer than the buffer: dropped
    }
    std::memmove(chunk, line, kept);
  }
  close(fd);
  return mapping_count != 0;
}

CodePlace code_place(std::uint64_t address) noexcept {
  CodePlace place;
  const Mapping* code = nullptr;
  for (std::size_t i = 0; i < mapping_count && code == nullptr; ++i) {
    if (mappings[i].executable && address >= mappings[i].start && address < mappings[i].limit) {
      code = &mappings[i];
    }
  }
  if (code == nullptr) {
    return place;
  }
  place.path = path_pool + code->path;
  place.file_address = address - code->start + code->offset; // without an ELF header
  const Mapping* first = nullptr; // the nearest mapping of the file's start below the code
  for (std::size_t i = 0; i < mapping_count && mappings[i].start <= code->start; ++i) {
    if (mappings[i].offset == 0 && std::strcmp(path_pool + mappings[i].path, place.path) == 0) {
      first = &mappings[i];
    }
  }
  static char build_id[2 * objects::kBuildIdMax + 1];
  std::uint64_t bias = 0;
  if (first != nullptr && read_object(first->start, bias, build_id)) {
    place.file_address = address - bias;
    place.build_id = build_id;
  }
  return place;
}

} // namespace hotscope::crash
