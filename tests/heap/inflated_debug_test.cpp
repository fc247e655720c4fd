// Separate debug files with compressed DWARF (as Debian's -dbg packages ship them), inflated once
// and kept in a cache (symbols/inflated_debug.hpp): every frame of a library whose debug
// information is in such a file is named as from the same file uncompressed, inlined frames and
// lines included; a cached copy that cannot be trusted (truncated, of another build, writable by
// others, a planted link) is made again, never used or followed.
#include "support/child_process.hpp"
#include "support/scratch_dir.hpp"
#include "symbols/symbols.hpp"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using hotscope::symbols::Symbolizer;
using hotscope::symbols::SymbolizerOptions;
using hotscope::test_support::output_of;
using hotscope::test_support::shell;

std::string contents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// A stripped copy of the test library, loaded, with its debug information in two directories
// found by build id: `plain/` uncompressed, `compressed/` with SHF_COMPRESSED DWARF.
class InflatedDebug : public ::testing::Test {
protected:
  const hotscope::testing::ScratchDir scratch{"inflated-debug"};
  const fs::path dir = scratch.path();
  const fs::path cache = dir / "cache";
  std::string build_id;
  void* handle = nullptr;
  std::vector<std::uintptr_t> addresses; // every byte of the library's function

  void SetUp() override {
    const fs::path library = dir / "libsplit.so";
    fs::copy_file(HEAP_SPLIT_DEBUG, library);
    build_id = output_of("readelf -n " + library.string() +
                         " | sed -n 's/.*Build ID: *\\([0-9a-f]*\\).*/\\1/p'");
    build_id.erase(build_id.find_last_not_of('\n') + 1);
    ASSERT_GT(build_id.size(), 2u) << "the library has no build id";
    const std::string name = ".build-id/" + build_id.substr(0, 2) + "/" + build_id.substr(2);
    fs::create_directories(dir / "plain" / name);
    fs::create_directories(dir / "compressed" / name);
    const std::string l = library.string();
    ASSERT_EQ(shell("objcopy --only-keep-debug " + l + " " + (dir / "plain" / name).string() +
                    ".debug && objcopy --only-keep-debug --compress-debug-sections=zlib " + l +
                    " " + (dir / "compressed" / name).string() + ".debug && strip --strip-all " +
                    l),
              0);
    fs::remove(dir / "plain" / name);
    fs::remove(dir / "compressed" / name);
    ASSERT_NE(output_of("readelf -tW " + (dir / "compressed" / name).string() + ".debug")
                  .find("COMPRESSED"),
              std::string::npos)
        << "objcopy did not compress the DWARF";

    handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << dlerror();
    void* function = dlsym(handle, "split_debug_allocates");
    ASSERT_NE(function, nullptr);
    Dl_info info{};
    void* entry = nullptr;
    ASSERT_NE(dladdr1(function, &info, &entry, RTLD_DL_SYMENT), 0);
    const auto* symbol = static_cast<const ElfW(Sym)*>(entry);
    ASSERT_NE(symbol, nullptr);
    ASSERT_GT(symbol->st_size, 0u);
    for (std::uintptr_t offset = 0; offset < symbol->st_size; ++offset) {
      addresses.push_back(reinterpret_cast<std::uintptr_t>(function) + offset);
    }
  }
  void TearDown() override {
    if (handle != nullptr) {
      dlclose(handle);
    }
  }

  fs::path cached_copy() const { return cache / (build_id + ".debug"); }

  // Every address's frames, one line each: "function (file:line)" innermost first.
  static std::string frames_of(Symbolizer& symbolizer, const std::vector<std::uintptr_t>& at) {
    std::ostringstream text;
    for (const std::uintptr_t address : at) {
      text << std::hex << address << std::dec << ":";
      for (const auto& frame : symbolizer.resolve(address)) {
        text << " " << frame.function << " (" << frame.file << ":" << frame.line << ")";
      }
      text << "\n";
    }
    return text.str();
  }

  std::string reference() const {
    Symbolizer plain(SymbolizerOptions{(dir / "plain").string(), "", ""});
    const std::string frames = frames_of(plain, addresses);
    EXPECT_EQ(plain.debug_files_inflated() + plain.debug_files_from_cache(), 0u);
    // What the comparison rests on: the lines, and an inlined frame, come from the debug file.
    EXPECT_NE(frames.find("inlined_allocation (split_debug.c:"), std::string::npos) << frames;
    EXPECT_NE(frames.find("split_debug_allocates (split_debug.c:"), std::string::npos) << frames;
    return frames;
  }

  Symbolizer compressed(const fs::path& cache_directory) const {
    return Symbolizer(
        SymbolizerOptions{(dir / "compressed").string(), cache_directory.string(), ""});
  }
};

TEST_F(InflatedDebug, FramesAreNamedAsFromTheUncompressedFile) {
  const std::string expected = reference();
  Symbolizer symbolizer = compressed("");
  EXPECT_EQ(frames_of(symbolizer, addresses), expected);
  EXPECT_EQ(symbolizer.debug_files_inflated(), 1u);
  EXPECT_EQ(symbolizer.debug_files_from_cache(), 0u);
  EXPECT_FALSE(fs::exists(cache)) << "no cache asked for, none written";
}

TEST_F(InflatedDebug, TheNextSymbolizerMapsTheCachedCopy) {
  const std::string expected = reference();
  {
    Symbolizer first = compressed(cache);
    EXPECT_EQ(frames_of(first, addresses), expected);
    EXPECT_EQ(first.debug_files_inflated(), 1u);
    EXPECT_TRUE(first.take_problems().empty());
  }
  struct stat status {};
  ASSERT_EQ(lstat(cached_copy().c_str(), &status), 0);
  EXPECT_TRUE(S_ISREG(status.st_mode));
  EXPECT_EQ(status.st_mode & 0777, 0600u);
  EXPECT_EQ(output_of("readelf -tW " + cached_copy().string()).find("COMPRESSED"),
            std::string::npos);
  Symbolizer second = compressed(cache);
  EXPECT_EQ(frames_of(second, addresses), expected);
  EXPECT_EQ(second.debug_files_from_cache(), 1u);
  EXPECT_EQ(second.debug_files_inflated(), 0u);
}

// Each kind of copy not to trust is replaced by a good one, and the frames stay as they are.
TEST_F(InflatedDebug, ACachedCopyNotToTrustIsMadeAgain) {
  const std::string expected = reference();
  {
    Symbolizer first = compressed(cache);
    frames_of(first, addresses);
  }
  const std::string good = contents(cached_copy());
  ASSERT_FALSE(good.empty());
  const fs::path elsewhere = dir / "not-to-touch";
  std::ofstream(elsewhere) << "keep me";
  const std::vector<std::pair<std::string, std::function<void()>>> spoilers = {
      {"truncated", [&] { fs::resize_file(cached_copy(), good.size() / 2); }},
      {"of another build id",
       [&] { fs::copy_file(HEAP_LOADED_A, cached_copy(), fs::copy_options::overwrite_existing); }},
      {"writable by others",
       [&] { fs::permissions(cached_copy(), fs::perms::others_write, fs::perm_options::add); }},
      {"a planted link",
       [&] {
         fs::remove(cached_copy());
         fs::create_symlink(elsewhere, cached_copy());
       }},
      {"not an ELF file", [&] { std::ofstream(cached_copy(), std::ios::trunc) << "garbage"; }},
  };
  for (const auto& [what, spoil] : spoilers) {
    SCOPED_TRACE(what);
    spoil();
    Symbolizer symbolizer = compressed(cache);
    EXPECT_EQ(frames_of(symbolizer, addresses), expected);
    EXPECT_EQ(symbolizer.debug_files_from_cache(), 0u);
    EXPECT_EQ(symbolizer.debug_files_inflated(), 1u);
    struct stat status {};
    ASSERT_EQ(lstat(cached_copy().c_str(), &status), 0);
    EXPECT_TRUE(S_ISREG(status.st_mode));
    EXPECT_EQ(status.st_mode & 0777, 0600u);
    EXPECT_TRUE(contents(cached_copy()) == good) << "the copy made again differs from the first";
  }
  EXPECT_EQ(contents(elsewhere), "keep me");
}

TEST_F(InflatedDebug, ACacheThatCannotBeWrittenIsReportedOnceAndTheFramesStay) {
  const std::string expected = reference();
  std::ofstream(dir / "a-file") << "x";
  const fs::path unusable = dir / "a-file" / "cache";
  Symbolizer symbolizer = compressed(unusable);
  EXPECT_EQ(frames_of(symbolizer, addresses), expected);
  EXPECT_EQ(symbolizer.debug_files_inflated(), 1u);
  const std::vector<std::string> problems = symbolizer.take_problems();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].find("hotscope: cannot keep inflated debug information in " +
                             unusable.string() + ": "),
            0u)
      << problems[0];
  EXPECT_NE(problems[0].find("HOTSCOPE_HEAP_DEBUG_CACHE=0"), std::string::npos);
  EXPECT_TRUE(symbolizer.take_problems().empty());
}

} // namespace
