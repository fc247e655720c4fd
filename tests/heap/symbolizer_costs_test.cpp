// The symbolizer (symbols::Symbolizer) against elfutils' eu-addr2line on the same addresses:
// function names and file:line in the C library (its compressed separate debug file), in this
// test program and in a shared library loaded with dlopen; and what symbolizing a few C library
// addresses costs in memory once its debug file is in the cache: the units of those addresses are
// read, not the whole debug information (docs/heap.md, "Stacks and symbols").
#include "support/child_process.hpp"
#include "support/scratch_dir.hpp"
#include "symbols/symbols.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using hotscope::symbols::Symbolizer;
using hotscope::symbols::SymbolizerOptions;
using hotscope::test_support::output_of;

// The loaded object whose path is `path`: its load bias (loaded minus link-time address).
std::uintptr_t bias_of(const fs::path& path) {
  struct Search {
    fs::path path;
    std::uintptr_t bias = 0;
  } search{fs::canonical(path), 0};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto& search = *static_cast<Search*>(data);
        const fs::path name = *info->dlpi_name != '\0' ? fs::path(info->dlpi_name)
                                                       : fs::read_symlink("/proc/self/exe");
        std::error_code error;
        if (fs::canonical(name, error) == search.path) {
          search.bias = info->dlpi_addr;
          return 1;
        }
        return 0;
      },
      &search);
  return search.bias;
}

// `count` link-time addresses inside the functions `nm` lists in `object` (dynamic ones with
// `dynamic`): the middle of every n-th function that has a size.
std::vector<std::uint64_t> inside_functions(const fs::path& object, bool dynamic,
                                            std::size_t count) {
  std::istringstream listing(
      output_of("nm --defined-only -S " + std::string(dynamic ? "-D " : "") + object.string()));
  std::vector<std::uint64_t> all;
  std::string line;
  while (std::getline(listing, line)) {
    std::istringstream fields(line);
    std::string value, size, type;
    if ((fields >> value >> size >> type) && (type == "T" || type == "t")) {
      all.push_back(std::stoull(value, nullptr, 16) + std::stoull(size, nullptr, 16) / 2);
    }
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  std::vector<std::uint64_t> chosen;
  for (std::size_t i = 0; i < count && !all.empty(); ++i) {
    chosen.push_back(all[i * all.size() / count]);
  }
  return chosen;
}

std::string base_name(const std::string& path) {
  return path.substr(path.rfind('/') + 1);
}

// Where eu-addr2line and the symbolizer disagree on `object`'s `addresses` (link-time), one line
// each: the symbol (-S, demangled) against the outermost frame's function, and the source
// position against the innermost frame's file and line.
std::string disagreements(const fs::path& object, const std::vector<std::uint64_t>& addresses,
                          const fs::path& scratch, std::size_t& with_lines) {
  const fs::path input = scratch / "addresses";
  {
    std::ofstream out(input);
    for (const std::uint64_t address : addresses) {
      out << "0x" << std::hex << address << "\n";
    }
  }
  std::istringstream output(output_of(std::string(EU_ADDR2LINE) + " -S -C -e " + object.string() +
                                      " < " + input.string() + " 2>/dev/null"));
  const std::uintptr_t bias = bias_of(object);
  Symbolizer symbolizer;
  std::vector<std::uintptr_t> loaded;
  for (const std::uint64_t address : addresses) {
    loaded.push_back(bias + address);
  }
  symbolizer.resolve_all(loaded);
  std::ostringstream out;
  with_lines = 0;
  std::string symbol;
  std::string source;
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    if (!std::getline(output, symbol) || !std::getline(output, source)) {
      return "eu-addr2line answered " + std::to_string(i) + " addresses";
    }
    symbol = symbol.substr(0, symbol.find("+0x"));
    std::string file = "??";
    unsigned line = 0;
    if (!source.starts_with("??")) { // "path:line[:column]"
      std::istringstream fields(source);
      std::getline(fields, file, ':');
      std::string number;
      std::getline(fields, number, ':');
      file = base_name(file);
      line = static_cast<unsigned>(std::stoul(number));
    }
    const std::vector<hotscope::symbols::Frame>& frames = symbolizer.resolve(loaded[i]);
    const std::string got_file = frames.front().file.empty() ? "??" : frames.front().file;
    with_lines += frames.front().line != 0 ? 1 : 0;
    if (frames.back().function != symbol || got_file != file || frames.front().line != line) {
      out << "0x" << std::hex << addresses[i] << std::dec << ": " << frames.back().function << " "
          << got_file << ":" << frames.front().line << ", eu-addr2line " << symbol << " " << file
          << ":" << line << "\n";
    }
  }
  return out.str();
}

// The C library's separate debug file by build id, "" when it is not installed.
fs::path libc_debug_file(const fs::path& libc) {
  std::string id = output_of("readelf -n " + libc.string() +
                             " | sed -n 's/.*Build ID: *\\([0-9a-f]*\\).*/\\1/p'");
  id.erase(id.find_last_not_of('\n') + 1);
  const fs::path file =
      id.size() > 2 ? "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug"
                    : "";
  return !file.empty() && fs::exists(file) ? file : "";
}

fs::path libc_path() {
  Dl_info info{};
  dladdr(reinterpret_cast<void*>(&qsort), &info);
  return fs::canonical(info.dli_fname);
}

TEST(SymbolizerAgainstEuAddr2line, TheCLibraryWithItsDebugFile) {
  const fs::path libc = libc_path();
  if (libc_debug_file(libc).empty()) {
    GTEST_SKIP() << "no debug file for " << libc << " (libc6-dbg, scripts/packages.txt)";
  }
  const hotscope::testing::ScratchDir scratch("symbolizer-libc");
  std::size_t with_lines = 0;
  const std::vector<std::uint64_t> addresses = inside_functions(libc, true, 60);
  EXPECT_EQ(disagreements(libc, addresses, scratch.path(), with_lines), "");
  EXPECT_GT(with_lines, addresses.size() / 2) << "the debug file gives lines";
}

TEST(SymbolizerAgainstEuAddr2line, ThisProgram) {
  const fs::path self = fs::read_symlink("/proc/self/exe");
  const hotscope::testing::ScratchDir scratch("symbolizer-self");
  std::size_t with_lines = 0;
  const std::vector<std::uint64_t> addresses = inside_functions(self, false, 200);
  EXPECT_EQ(disagreements(self, addresses, scratch.path(), with_lines), "");
  EXPECT_GT(with_lines, addresses.size() / 2);
}

TEST(SymbolizerAgainstEuAddr2line, ALoadedLibrary) {
  void* library = dlopen(HEAP_LOADED_A, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  const hotscope::testing::ScratchDir scratch("symbolizer-library");
  std::size_t with_lines = 0;
  const std::vector<std::uint64_t> addresses = inside_functions(HEAP_LOADED_A, false, 20);
  ASSERT_FALSE(addresses.empty());
  EXPECT_EQ(disagreements(HEAP_LOADED_A, addresses, scratch.path(), with_lines), "");
  EXPECT_GT(with_lines, 0u);
  dlclose(library);
}

// The growth of this process's peak RSS (VmHWM, KiB) while `work` runs, measured in a child
// process so that nothing the test did before counts; -1 when the child failed.
template <class Work> long peak_growth_kib(Work work) {
  const auto peak = [] {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.starts_with("VmHWM:")) {
        return std::stol(line.substr(6));
      }
    }
    return -1L;
  };
  int pipe_ends[2];
  if (pipe(pipe_ends) != 0) {
    return -1;
  }
  const pid_t child = fork();
  if (child == 0) {
    const long before = peak();
    work();
    const long growth = peak() - before;
    const ssize_t written = write(pipe_ends[1], &growth, sizeof growth);
    _exit(written == sizeof growth ? 0 : 1);
  }
  close(pipe_ends[1]);
  long growth = -1;
  if (read(pipe_ends[0], &growth, sizeof growth) != sizeof growth) {
    growth = -1;
  }
  close(pipe_ends[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? growth : -1;
}

// 36 addresses in a dozen C library functions, with the inflated copy of its debug file cached
// (as every run after a program's first finds it): their units are opened alone. Reading the
// whole debug information through libdw (every unit's header, a record and an abbreviation table
// for each up to the one looked up, the file's pages) took 12 MiB.
TEST(SymbolizerCosts, AFewCLibraryAddressesReadTheirUnitsNotTheWholeDebugFile) {
  const fs::path libc = libc_path();
  if (libc_debug_file(libc).empty()) {
    GTEST_SKIP() << "no debug file for " << libc << " (libc6-dbg, scripts/packages.txt)";
  }
  const hotscope::testing::ScratchDir scratch("symbolizer-costs");
  SymbolizerOptions options;
  options.inflated_debug_cache = scratch.path().string();
  std::vector<std::uintptr_t> addresses;
  for (const char* name : {"malloc", "free", "printf", "fopen", "qsort", "strtod", "getaddrinfo",
                           "regcomp", "pthread_create", "iconv_open", "setlocale", "fwrite"}) {
    const auto function = reinterpret_cast<std::uintptr_t>(dlsym(RTLD_DEFAULT, name));
    ASSERT_NE(function, 0u) << name;
    for (int i = 1; i <= 3; ++i) {
      addresses.push_back(function + 7 * i);
    }
  }
  // The copy made and cached, in a process of its own.
  ASSERT_GE(peak_growth_kib([&] { Symbolizer(options).resolve_all(addresses); }), 0);
  ASSERT_EQ(std::distance(fs::directory_iterator(scratch.path()), fs::directory_iterator()), 1);
  const long growth = peak_growth_kib([&] {
    Symbolizer symbolizer(options);
    std::size_t named = 0;
    symbolizer.resolve_all(addresses);
    for (const std::uintptr_t address : addresses) {
      named += symbolizer.resolve(address).front().line != 0 ? 1 : 0;
    }
    if (named < addresses.size() / 2) {
      _exit(2); // the lines must come from the debug file
    }
  });
  ASSERT_GE(growth, 0) << "the child failed, or found few lines";
  // 7 MiB here; the bound leaves room for another machine's page sizes and allocator, and still
  // fails the whole-file reading (12 MiB).
  EXPECT_LT(growth, 10 * 1024) << "KiB of peak RSS for " << addresses.size() << " addresses";
}

} // namespace
