// The symbol tables (symbols::SymbolTable, scanned and indexed) against elfutils' own lookup,
// eu-addr2line (dwfl_module_addrinfo, what the symbolizer called before): a few thousand addresses
// of a stripped system binary (GCC's cc1plus, .dynsym only), of the C++ runtime, and of this
// project's test program with and without its debug information, from a separate debug file by
// build id and from MiniDebugInfo (.gnu_debugdata).
#include "support/child_process.hpp"
#include "support/scratch_dir.hpp"
#include "symbols/symbols.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace fs = std::filesystem;
using hotscope::symbols::SymbolTable;
using hotscope::test_support::output_of;
using hotscope::test_support::shell;

// `count` addresses spread evenly over the code `nm` lists in `object` (its dynamic symbols with
// `dynamic`), plus the first byte and the last of up to 500 functions: inside functions, at their
// edges and in the gaps between them.
std::vector<std::uint64_t> code_addresses(const fs::path& object, bool dynamic, std::size_t count) {
  std::istringstream listing(
      output_of("nm --defined-only -S " + std::string(dynamic ? "-D " : "") + object.string()));
  std::vector<std::uint64_t> addresses;
  std::uint64_t low = ~std::uint64_t{0};
  std::uint64_t high = 0;
  std::string line;
  while (std::getline(listing, line)) {
    std::istringstream fields(line);
    std::string value, size, type;
    if (!(fields >> value >> size >> type) || (type != "T" && type != "t" && type != "W")) {
      continue;
    }
    const std::uint64_t start = std::stoull(value, nullptr, 16);
    const std::uint64_t length = std::stoull(size, nullptr, 16);
    low = std::min(low, start);
    high = std::max(high, start + length);
    if (addresses.size() < 1000 && length > 0) {
      addresses.push_back(start);
      addresses.push_back(start + length - 1);
    }
  }
  for (std::size_t i = 0; low < high && i < count; ++i) {
    addresses.push_back(low + (high - low) / count * i);
  }
  return addresses;
}

// eu-addr2line's symbol for each address, without its "+0x" offset; "" where it names none.
std::vector<std::string> addr2line_names(const fs::path& object,
                                         const std::vector<std::uint64_t>& addresses,
                                         const fs::path& scratch) {
  const fs::path input = scratch / "addresses";
  {
    std::ofstream out(input);
    for (const std::uint64_t address : addresses) {
      out << "0x" << std::hex << address << "\n";
    }
  }
  std::istringstream output(output_of(std::string(EU_ADDR2LINE) + " -S -e " + object.string() +
                                      " < " + input.string() + " 2>/dev/null"));
  std::vector<std::string> names;
  std::string symbol;
  std::string source;
  while (std::getline(output, symbol) && std::getline(output, source)) {
    symbol = symbol.substr(0, symbol.find("+0x"));
    // "??" or "(section)": no symbol
    names.push_back(symbol == "??" || symbol.starts_with('(') ? "" : symbol);
  }
  return names;
}

// The addresses where `table` and eu-addr2line on `reference` disagree, described; all of them
// are counted, the first 10 described.
std::string disagreements(const SymbolTable& table, const fs::path& reference,
                          const std::vector<std::uint64_t>& addresses, const fs::path& scratch,
                          std::size_t& named) {
  const std::vector<std::string> expected = addr2line_names(reference, addresses, scratch);
  if (expected.size() != addresses.size()) {
    return "eu-addr2line answered " + std::to_string(expected.size()) + " of " +
           std::to_string(addresses.size()) + " addresses";
  }
  std::ostringstream out;
  // The first batch is a scan of the table, the third is answered from its index.
  const std::vector<std::string_view> scanned = table.names_at(addresses);
  table.names_at({});
  const std::vector<std::string_view> indexed = table.names_at(addresses);
  for (const auto* got : {&scanned, &indexed}) {
    std::size_t wrong = 0;
    named = 0;
    for (std::size_t i = 0; i < addresses.size(); ++i) {
      named += (*got)[i].empty() ? 0 : 1;
      if ((*got)[i] != expected[i] && ++wrong <= 10) {
        out << "0x" << std::hex << addresses[i] << ": '" << (*got)[i] << "', eu-addr2line '"
            << expected[i] << "'\n";
      }
    }
    if (wrong > 0) {
      out << std::dec << wrong << " of " << addresses.size() << " addresses differ "
          << (got == &scanned ? "scanned" : "indexed") << "\n";
    }
  }
  return out.str();
}

TEST(SymbolTable, StrippedCompilerMatchesEuAddr2line) {
  const fs::path cc1plus = CC1PLUS;
  if (!fs::exists(cc1plus)) {
    GTEST_SKIP() << "no " << cc1plus << " (the tests were built with another compiler)";
  }
  const hotscope::testing::ScratchDir scratch("symbol-table-cc1plus");
  const SymbolTable table = SymbolTable::of_file(cc1plus);
  EXPECT_GT(table.size(), 10000u) << "cc1plus's .dynsym";
  const std::vector<std::uint64_t> addresses = code_addresses(cc1plus, true, 2000);
  std::size_t named = 0;
  EXPECT_EQ(disagreements(table, cc1plus, addresses, scratch.path(), named), "");
  EXPECT_GT(named, addresses.size() / 2);
}

TEST(SymbolTable, CxxRuntimeMatchesEuAddr2line) {
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&std::terminate), &info), 0);
  const fs::path runtime = fs::canonical(info.dli_fname);
  const hotscope::testing::ScratchDir scratch("symbol-table-libstdcxx");
  const std::vector<std::uint64_t> addresses = code_addresses(runtime, true, 2000);
  std::size_t named = 0;
  EXPECT_EQ(disagreements(SymbolTable::of_file(runtime), runtime, addresses, scratch.path(), named),
            "");
  EXPECT_GT(named, addresses.size() / 2);
}

// This test program in four forms: as built (.symtab and DWARF), without DWARF, stripped with its
// symbols in a separate debug file found by build id, and stripped with MiniDebugInfo. Each
// names what eu-addr2line names, local functions included.
class OwnProgram : public ::testing::Test {
protected:
  const fs::path built = fs::read_symlink("/proc/self/exe");
  const hotscope::testing::ScratchDir scratch{"symbol-table-own"};
  const fs::path dir = scratch.path();
  std::vector<std::uint64_t> addresses = code_addresses(built, false, 2000);

  void expect_names_as_built(const SymbolTable& table) {
    std::size_t named = 0;
    EXPECT_EQ(disagreements(table, built, addresses, dir, named), "");
    EXPECT_GT(named, addresses.size() / 2);
  }
  fs::path copy(const std::string& name) {
    const fs::path path = dir / name;
    fs::copy_file(built, path, fs::copy_options::overwrite_existing);
    return path;
  }
};

TEST_F(OwnProgram, WithDebugInformation) {
  expect_names_as_built(SymbolTable::of_file(built));
}

TEST_F(OwnProgram, WithoutDebugInformation) {
  const fs::path program = copy("no-dwarf");
  ASSERT_EQ(shell("objcopy --strip-debug " + program.string()), 0);
  expect_names_as_built(SymbolTable::of_file(program));
}

TEST_F(OwnProgram, StrippedWithADebugFileFoundByBuildId) {
  const fs::path program = copy("stripped");
  std::string build_id = output_of("readelf -n " + program.string() +
                                   " | sed -n 's/.*Build ID: *\\([0-9a-f]*\\).*/\\1/p'");
  build_id.erase(build_id.find_last_not_of("\n") + 1);
  ASSERT_GT(build_id.size(), 2u) << "the program has no build id";
  const fs::path debug_file =
      dir / "debug" / ".build-id" / build_id.substr(0, 2) / (build_id.substr(2) + ".debug");
  fs::create_directories(debug_file.parent_path());
  ASSERT_EQ(shell("objcopy --only-keep-debug " + program.string() + " " + debug_file.string() +
                  " && strip --strip-all " + program.string()),
            0);
  const SymbolTable without = SymbolTable::of_file(program, (dir / "nowhere").string());
  const SymbolTable with = SymbolTable::of_file(program, (dir / "debug").string());
  EXPECT_LT(without.size(), with.size() / 2) << "stripped, only .dynsym remains";
  expect_names_as_built(with);
}

TEST_F(OwnProgram, StrippedWithMiniDebugInfo) {
  // The recipe of GDB's manual: the functions .dynsym lacks, in an xz-compressed symbol table.
  const fs::path program = copy("mini");
  const std::string p = program.string();
  const std::string d = dir.string();
  ASSERT_EQ(shell("cd " + d + " && nm -D " + p +
                  " --format=posix --defined-only | awk '{print $1}' | sort > dynsyms && nm " + p +
                  " --format=posix --defined-only | awk '$2 ~ /[TtW]/ {print $1}' | sort > funcsyms"
                  " && comm -13 dynsyms funcsyms > keep && objcopy --only-keep-debug " +
                  p +
                  " mini.debug && objcopy -S --remove-section .comment --keep-symbols=keep "
                  "mini.debug && xz -f mini.debug && strip --strip-all " +
                  p + " && objcopy --add-section .gnu_debugdata=mini.debug.xz " + p),
            0);
  // Against eu-addr2line on the same file: of two aliases (a constructor's C1 and C2 forms)
  // MiniDebugInfo may list the other first.
  const SymbolTable table = SymbolTable::of_file(program, (dir / "nowhere").string());
  std::size_t named = 0;
  EXPECT_EQ(disagreements(table, program, addresses, dir, named), "");
  EXPECT_GT(named, addresses.size() / 2);
}

TEST(SymbolTable, UnreadableFileIsEmpty) {
  const SymbolTable table = SymbolTable::of_file("/nonexistent/program");
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.names_at(std::vector<std::uint64_t>{0x1000}), std::vector<std::string_view>{""});
}

} // namespace
