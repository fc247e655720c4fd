#include "attach/target.hpp"

#include <fmt/format.h>
#include <gelf.h>
#include <libelf.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace hotscope::cli::attach {
namespace {

namespace fs = std::filesystem;

// The value of `key` ("Uid:", "PPid:") in /proc/PID/status: its first number.
std::optional<std::uint64_t> status_field(const std::string& process, const std::string& key) {
  std::ifstream in("/proc/" + process + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      std::istringstream fields(line.substr(key.size()));
      std::uint64_t value = 0;
      if (fields >> value) {
        return value;
      }
    }
  }
  return std::nullopt;
}

bool capable_of_ptrace() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      const unsigned long long effective = std::stoull(line.substr(7), nullptr, 16);
      constexpr int cap_sys_ptrace = 19;
      return (effective >> cap_sys_ptrace) & 1;
    }
  }
  return false;
}

bool descends_from_self(pid_t pid) {
  const pid_t self = getpid();
  for (int depth = 0; pid > 1 && depth < 4096; ++depth) {
    const auto parent = status_field(std::to_string(pid), "PPid:");
    if (!parent) {
      return false;
    }
    pid = static_cast<pid_t>(*parent);
    if (pid == self) {
      return true;
    }
  }
  return false;
}

struct Mapping {
  std::uint64_t start = 0;
  std::uint64_t offset = 0;
  bool executable = false;
  std::string path;
};

// The file mappings of /proc/PID/maps ("start-end perms offset dev inode path").
std::vector<Mapping> file_mappings(pid_t pid) {
  std::vector<Mapping> mappings;
  std::ifstream in(fmt::format("/proc/{}/maps", pid));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string range, perms, offset, device, inode, path;
    if (!(fields >> range >> perms >> offset >> device >> inode >> path) || path[0] != '/') {
      continue;
    }
    Mapping mapping;
    mapping.start = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
    mapping.offset = std::stoull(offset, nullptr, 16);
    mapping.executable = perms.find('x') != std::string::npos;
    mapping.path = path;
    mappings.push_back(std::move(mapping));
  }
  return mappings;
}

// `name`'s value in the default version of the ELF file's dynamic symbols, and where its code
// segment is, page-aligned: at that file offset, that address before relocation.
struct ElfSymbol {
  std::uint64_t value = 0;
  std::uint64_t code_address = 0;
  std::uint64_t code_offset = 0;
};

std::optional<ElfSymbol> dynamic_symbol(const std::string& file, const std::string& name) {
  elf_version(EV_CURRENT);
  const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return std::nullopt;
  }
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  std::optional<ElfSymbol> found;
  std::size_t headers = 0;
  ElfSymbol symbol;
  bool loaded = false;
  if (elf != nullptr && elf_getphdrnum(elf, &headers) == 0) {
    for (std::size_t i = 0; i < headers && !loaded; ++i) {
      GElf_Phdr header;
      if (gelf_getphdr(elf, static_cast<int>(i), &header) != nullptr && header.p_type == PT_LOAD &&
          (header.p_flags & PF_X) != 0) {
        const auto page = ~(static_cast<std::uint64_t>(getpagesize()) - 1);
        symbol.code_address = header.p_vaddr & page;
        symbol.code_offset = header.p_offset & page;
        loaded = true;
      }
    }
  }
  Elf_Scn* versions = nullptr;
  Elf_Scn* symbols = nullptr;
  GElf_Shdr symbols_header{};
  for (Elf_Scn* section = elf == nullptr ? nullptr : elf_nextscn(elf, nullptr); section != nullptr;
       section = elf_nextscn(elf, section)) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr) {
      continue;
    }
    if (header.sh_type == SHT_DYNSYM) {
      symbols = section;
      symbols_header = header;
    } else if (header.sh_type == SHT_GNU_versym) {
      versions = section;
    }
  }
  Elf_Data* data = symbols == nullptr ? nullptr : elf_getdata(symbols, nullptr);
  Elf_Data* version_data = versions == nullptr ? nullptr : elf_getdata(versions, nullptr);
  const std::size_t count =
      symbols_header.sh_entsize == 0 ? 0 : symbols_header.sh_size / symbols_header.sh_entsize;
  for (std::size_t i = 0; data != nullptr && loaded && i < count && !found; ++i) {
    GElf_Sym entry;
    if (gelf_getsym(data, static_cast<int>(i), &entry) == nullptr || entry.st_shndx == SHN_UNDEF ||
        GELF_ST_TYPE(entry.st_info) != STT_FUNC) {
      continue;
    }
    const char* text = elf_strptr(elf, symbols_header.sh_link, entry.st_name);
    GElf_Versym version = 0;
    if (version_data != nullptr && gelf_getversym(version_data, static_cast<int>(i), &version) &&
        (version & 0x8000) != 0) {
      continue; // a hidden (non-default) version
    }
    if (text != nullptr && name == text) {
      symbol.value = entry.st_value;
      found = symbol;
    }
  }
  if (elf != nullptr) {
    elf_end(elf);
  }
  close(fd);
  return found;
}

bool maps_name(pid_t pid, const std::string& part) {
  for (const Mapping& mapping : file_mappings(pid)) {
    if (fs::path(mapping.path).filename().string().find(part) != std::string::npos) {
      return true;
    }
  }
  return false;
}

// LD_PRELOAD in the environment the process started with names hotscope's preload library.
bool started_preloaded(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/environ", pid), std::ios::binary);
  std::string variable;
  while (std::getline(in, variable, '\0')) {
    if (variable.rfind("LD_PRELOAD=", 0) == 0 &&
        variable.find("libhotscope-preload") != std::string::npos) {
      return true;
    }
  }
  return false;
}

} // namespace

std::string refusal(pid_t pid, const Facts& facts) {
  const std::string head = fmt::format("hotscope attach: cannot attach to process {}: ", pid);
  if (!facts.exists) {
    return head + "no such process (it has ended, or the pid is wrong): check it with `ps -p " +
           std::to_string(pid) + "`";
  }
  if (facts.owner != facts.self && !facts.can_trace_any) {
    return head + fmt::format("it belongs to user {}, not to you ({}): run hotscope as that user, "
                              "or as root",
                              facts.owner, facts.self);
  }
  if (facts.yama_scope == 3) {
    return head + "ptrace is disabled on this machine (/proc/sys/kernel/yama/ptrace_scope is 3, "
                  "which only a reboot lowers): start the program under `hotscope run --heap`";
  }
  if (facts.yama_scope == 2 && !facts.can_trace_any) {
    return head + "only a process with CAP_SYS_PTRACE may trace (/proc/sys/kernel/yama/"
                  "ptrace_scope is 2): run hotscope as root, or give it the capability (setcap "
                  "cap_sys_ptrace+ep hotscope)";
  }
  if (facts.yama_scope == 1 && !facts.can_trace_any && !facts.descendant) {
    return head + "it is not a child of hotscope and /proc/sys/kernel/yama/ptrace_scope is 1: "
                  "run hotscope as root, give it CAP_SYS_PTRACE (setcap cap_sys_ptrace+ep "
                  "hotscope), or set kernel.yama.ptrace_scope=0 (sysctl)";
  }
  if (facts.tracer != 0) {
    return head + fmt::format("process {} traces it already (a debugger): detach that one first",
                              facts.tracer);
  }
  if (facts.linked_heap) {
    return head +
           "it is linked with hotscope's heap library, which profiles it already: ask it "
           "with `hotscope heap -p " +
           std::to_string(pid) + "`";
  }
  if (facts.preloaded) {
    return head +
           "it runs under `hotscope run --heap`, which profiles it already: ask it with "
           "`hotscope heap -p " +
           std::to_string(pid) + "`";
  }
  if (!facts.has_dlopen) {
    return head + "it has no dlopen to load the profiler with (a statically linked program, or a "
                  "C library older than glibc 2.34 without libdl loaded): start it under "
                  "`hotscope run --heap`, or link it with hotscope";
  }
  return "";
}

std::string refusal_for_errno(pid_t pid, int error) {
  const std::string head = fmt::format("hotscope attach: cannot attach to process {}: ", pid);
  if (error == ESRCH) {
    return head + "no such process (it has ended)";
  }
  if (error == EPERM || error == EACCES) {
    return head + "the kernel refused to let hotscope trace it (" + std::strerror(error) +
           "): in a container, give it CAP_SYS_PTRACE (docker run --cap-add=SYS_PTRACE) and a "
           "seccomp profile that allows ptrace; else check the security module (SELinux, "
           "AppArmor)";
  }
  return head + "ptrace failed: " + std::strerror(error);
}

Facts read_facts(pid_t pid) {
  Facts facts;
  const std::string process = std::to_string(pid);
  const auto owner = status_field(process, "Uid:");
  if (!owner || !fs::exists("/proc/" + process)) {
    facts.exists = false;
    return facts;
  }
  facts.owner = static_cast<uid_t>(*owner);
  facts.self = geteuid();
  facts.can_trace_any = capable_of_ptrace();
  if (std::ifstream yama("/proc/sys/kernel/yama/ptrace_scope"); yama) {
    yama >> facts.yama_scope;
  }
  facts.descendant = descends_from_self(pid);
  facts.tracer = static_cast<pid_t>(status_field(process, "TracerPid:").value_or(0));
  facts.linked_heap = maps_name(pid, "libhotscope-heap.so");
  facts.preloaded = started_preloaded(pid);
  facts.has_dlopen = libc_function(pid, "dlopen").has_value();
  return facts;
}

std::optional<std::uint64_t> libc_function(pid_t pid, const std::string& name) {
  for (const char* library : {"libc.so", "libdl.so"}) {
    // The library's code mapping: other mappings of the file may be copies a reader made.
    for (const Mapping& mapping : file_mappings(pid)) {
      if (!mapping.executable ||
          fs::path(mapping.path).filename().string().rfind(library, 0) != 0) {
        continue;
      }
      // Through the process's root: a process in a container sees its own files.
      const std::string inside = fmt::format("/proc/{}/root{}", pid, mapping.path);
      auto symbol = dynamic_symbol(inside, name);
      if (!symbol) {
        symbol = dynamic_symbol(mapping.path, name);
      }
      if (symbol && mapping.offset == symbol->code_offset) {
        return mapping.start - symbol->code_address + symbol->value;
      }
      break;
    }
  }
  return std::nullopt;
}

std::vector<pid_t> pids_named(const std::string& name) {
  std::vector<pid_t> pids;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc", error)) {
    const std::string file = entry.path().filename().string();
    pid_t pid = 0;
    const auto [end, problem] = std::from_chars(file.data(), file.data() + file.size(), pid);
    if (problem != std::errc{} || end != file.data() + file.size() || pid == getpid()) {
      continue;
    }
    std::ifstream comm(entry.path() / "comm");
    std::string line;
    if (std::getline(comm, line) && line == name) {
      pids.push_back(pid);
    }
  }
  return pids;
}

} // namespace hotscope::cli::attach
