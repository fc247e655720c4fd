// What symbolizing the frames of stripped distribution binaries costs (docs/performance.md,
// "Symbolizing stripped programs"), cold each time:
// 1. a heap profile (build_profile, a fresh symbolizer) of 1,000 sites whose 10 frames each are
//    10,000 distinct code addresses spread over the C++ runtime this program has loaded
//    (Debian's libstdc++ is stripped: .dynsym only);
// 2. a stripped program's file (by default GCC's cc1plus, 30,000 .dynsym symbols): 10,000
//    addresses spread over its code, looked up in one batch in a SymbolTable of it, then with
//    libdw's dwfl_module_addrinfo, what the symbolizer used before (it scans the table per
//    address).
//   hotscope-symbolize-bench [PROGRAM]
#include "heap/engine.hpp"
#include "heap/profile.hpp"
#include "symbols/symbols.hpp"

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <link.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// This thread's CPU time: on a loaded machine the wall time also counts the waits for a core.
double cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

constexpr std::size_t frames = 10000;

// The executable segments of the loaded objects whose path contains one of `names`.
std::vector<std::pair<std::uintptr_t, std::uintptr_t>> code_of(std::vector<const char*> names) {
  struct Search {
    std::vector<const char*> names;
    std::vector<std::pair<std::uintptr_t, std::uintptr_t>> segments;
  } search{std::move(names), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto& search = *static_cast<Search*>(data);
        for (const char* name : search.names) {
          if (std::strstr(info->dlpi_name, name) == nullptr) {
            continue;
          }
          for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr)& header = info->dlpi_phdr[i];
            if (header.p_type == PT_LOAD && (header.p_flags & PF_X) != 0) {
              const std::uintptr_t begin = info->dlpi_addr + header.p_vaddr;
              search.segments.emplace_back(begin, begin + header.p_memsz);
            }
          }
        }
        return 0;
      },
      &search);
  return search.segments;
}

// `count` addresses spread evenly over `segments`, each segment getting its share.
std::vector<std::uintptr_t>
spread(const std::vector<std::pair<std::uintptr_t, std::uintptr_t>>& segments, std::size_t count) {
  std::vector<std::uintptr_t> addresses;
  for (std::size_t s = 0; s < segments.size(); ++s) {
    const std::size_t share = count / segments.size() + (s < count % segments.size() ? 1 : 0);
    const auto [begin, end] = segments[s];
    for (std::size_t i = 0; i < share; ++i) {
      addresses.push_back(begin + (end - begin) / share * i + 1);
    }
  }
  return addresses;
}

void loaded_libraries() {
  const auto segments = code_of({"libstdc++.so"});
  if (segments.empty()) {
    throw std::runtime_error("the C++ runtime is not loaded");
  }
  const std::vector<std::uintptr_t> addresses = spread(segments, frames);
  hotscope::heap::RawProfile raw;
  for (std::size_t i = 0; i < addresses.size(); i += 10) {
    hotscope::heap::RawSite& site = raw.sites.emplace_back();
    site.stack = std::span(addresses).subspan(i, 10);
    site.counts.total_bytes = site.counts.total_blocks = 1;
  }
  const Clock::time_point start = Clock::now();
  const double cpu_start = cpu_seconds();
  hotscope::symbols::Symbolizer symbolizer;
  const hotscope::HeapProfile profile = hotscope::heap::build_profile(raw, "bench", 1, symbolizer);
  const double took = seconds_since(start);
  std::printf("heap profile of %zu distinct frames in the stripped libstdc++: %.3f s "
              "wall, %.3f s CPU (%zu frames in its table)\n",
              addresses.size(), took, cpu_seconds() - cpu_start, profile.frames.size() - 1);
}

// The extent of the .text section of `module`'s file; {0, 0} without one.
std::pair<std::uintptr_t, std::uintptr_t> text_of(Dwfl_Module* module) {
  GElf_Addr bias = 0;
  Elf* elf = dwfl_module_getelf(module, &bias);
  std::size_t names = 0;
  if (elf == nullptr || elf_getshdrstrndx(elf, &names) != 0) {
    return {0, 0};
  }
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr header;
    const char* name =
        gelf_getshdr(scn, &header) == nullptr ? nullptr : elf_strptr(elf, names, header.sh_name);
    if (name != nullptr && std::strcmp(name, ".text") == 0) {
      return {header.sh_addr + bias, header.sh_addr + bias + header.sh_size};
    }
  }
  return {0, 0};
}

void program_file(const std::string& path) {
  char* debuginfo_path = nullptr;
  Dwfl_Callbacks callbacks{};
  callbacks.find_elf = dwfl_build_id_find_elf;
  callbacks.find_debuginfo = dwfl_build_id_find_debuginfo;
  callbacks.debuginfo_path = &debuginfo_path;
  Dwfl* dwfl = dwfl_begin(&callbacks);
  dwfl_report_begin(dwfl);
  Dwfl_Module* module = dwfl_report_elf(dwfl, path.c_str(), path.c_str(), -1, 0, false);
  dwfl_report_end(dwfl, nullptr, nullptr);
  const auto text =
      module == nullptr ? std::pair<std::uintptr_t, std::uintptr_t>{} : text_of(module);
  if (text.second <= text.first) {
    std::printf("%s: no code to look up\n", path.c_str());
    dwfl_end(dwfl);
    return;
  }
  const std::vector<std::uintptr_t> addresses = spread({text}, frames);

  Clock::time_point start = Clock::now();
  const hotscope::symbols::SymbolTable table = hotscope::symbols::SymbolTable::of_file(path);
  const double read = seconds_since(start);
  start = Clock::now();
  std::size_t named = 0;
  for (const std::string_view name : table.names_at(addresses)) {
    named += name.empty() ? 0 : 1;
  }
  const double looked_up = seconds_since(start);
  std::printf("%s: %zu symbols, opened in %.3f s; %zu addresses looked up in one scan in %.4f s "
              "(%zu named)\n",
              path.c_str(), table.size(), read, addresses.size(), looked_up, named);

  start = Clock::now();
  std::size_t libdw_named = 0;
  for (const std::uintptr_t address : addresses) {
    GElf_Off offset = 0;
    GElf_Sym symbol;
    libdw_named += dwfl_module_addrinfo(module, address, &offset, &symbol, nullptr, nullptr,
                                        nullptr) != nullptr
                       ? 1
                       : 0;
  }
  std::printf("  the same with dwfl_module_addrinfo: %.3f s (%zu named)\n", seconds_since(start),
              libdw_named);
  dwfl_end(dwfl);
}

} // namespace

int main(int argc, char** argv) {
  try {
    loaded_libraries();
    program_file(argc > 1 ? argv[1] : "/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus");
  } catch (const std::exception& error) {
    std::fprintf(stderr, "hotscope-symbolize-bench: %s\n", error.what());
    return 1;
  }
  return 0;
}
