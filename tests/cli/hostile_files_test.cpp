// `hotscope diff`, `report` and `flame` on hostile files made here: wrong types, nulls, strings
// for numbers, negative and fractional counts, files cut at several offsets, deep nesting, deep
// stacks, huge lines, files of the wrong kind. Each must end with exit 2 and one line on stderr
// naming the file (docs/diff-and-report.md, "Malformed input and limits"), never a crash, and
// large valid input must give a bounded picture with bounded memory.
#include "support/files.hpp"
#include "support/scratch_dir.hpp"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using hotscope::test_support::lines_of;
using hotscope::test_support::slurp;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

struct Result {
  bool exited = false;
  int status = -1;
  std::string out, err;
  std::uint64_t peak_bytes = 0; // the command's peak resident memory
};

Result run_hotscope(const fs::path& dir, const std::string& args) {
  // exec: a signal that ends the command is seen here, not turned into the shell's 128 + n.
  const std::string command = "exec " + std::string(HOTSCOPE_CLI) + " " + args + " >" +
                              (dir / "run.out").string() + " 2>" + (dir / "run.err").string();
  const pid_t child = fork();
  if (child == 0) {
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = -1;
  rusage usage{}; // this command's alone, not the largest of every child so far
  while (child > 0 && wait4(child, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  return Result{WIFEXITED(status), WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                slurp(dir / "run.out"), slurp(dir / "run.err"),
                static_cast<std::uint64_t>(usage.ru_maxrss) * 1024};
}

void write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

const std::string kStats = R"({"hotscope_version": "0.1.0", "pid": 7, "process_name": "w",
 "duration_ns": 1000000, "clock": {"source": "tsc", "ticks_per_second": 3e9},
 "records": {"written": 2, "kept": 2, "dropped": 0},
 "functions": [{"name": "f", "file": "w.cpp", "line": 3, "calls": 12, "mean_ns": 10.5,
   "p50_ns": 10, "p95_ns": 11, "p99_ns": 12, "self_ns": 100, "total_ns": 126,
   "cpu_self_ns": 90, "cpu_total_ns": 110}],
 "cpu": {"hz": 99, "period_ns": 10101010, "samples": 3, "lost": 0, "problem": ""},
 "threads": [{"index": 0, "os_tid": 7, "name": "main", "exited": false, "cpu_samples": 3,
   "records": {"written": 2, "kept": 2, "dropped": 0},
   "functions": [{"name": "f", "calls": 12, "total_ns": 126}]}]})";

const std::string kHeap = R"json({"dhatFileVersion": 2, "cmd": "w", "pid": 7,
 "pps": [{"tb": 4096, "tbk": 2, "gb": 2048, "gbk": 1, "eb": 2048, "ebk": 1, "fs": [1, 2]}],
 "ftbl": ["[root]", "0x10: leak(int) (w.cpp:30)", "0x20: main (w.cpp:90)"]})json";

const std::string kFolded = "w;main;f 100\nw;main 20\n# hotscope 0.1.0\n";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

std::string deep_json(std::size_t depth) {
  return R"({"hotscope_version": "1", "dhatFileVersion": 2, "pps": [], "ftbl": [], "functions": )" +
         std::string(depth, '[') + std::string(depth, ']') + "}";
}

std::string stack_of(std::size_t frames, const std::string& count) {
  std::string line = "w";
  for (std::size_t i = 1; i < frames; ++i) {
    line += ";f" + std::to_string(i % 10);
  }
  return line + " " + count + "\n";
}

// The damaged variants of a valid file: cut at several offsets, and each replacement.
std::vector<std::pair<std::string, std::string>>
variants(const std::string& valid, const std::vector<std::pair<std::string, std::string>>& edits) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const double share : {0.0, 0.1, 0.5, 0.9}) {
    out.emplace_back("cut at " + std::to_string(share),
                     valid.substr(0, static_cast<std::size_t>(share * valid.size())));
  }
  out.emplace_back("cut before the last byte", valid.substr(0, valid.size() - 1));
  for (const auto& [from, to] : edits) {
    out.emplace_back(from + " -> " + to, replaced(valid, from, to));
  }
  return out;
}

class HostileFiles : public ::testing::Test {
protected:
  HostileFiles() : scratch_("hostile-files") {
    fs::create_directories(dir() / "good");
    write(dir() / "good" / "stats.json", kStats);
    write(dir() / "good" / "heap.json", kHeap);
    write(dir() / "good" / "trace.folded", kFolded);
  }
  const fs::path& dir() const { return scratch_.path(); }

  // `args` on the bad file `bad`: exit 2, one line on stderr naming `named`, nothing on stdout.
  Result refused(const std::string& what, const std::string& args, const fs::path& named) {
    Result result = run_hotscope(dir(), args);
    SCOPED_TRACE(what + ": hotscope " + args + "\nstderr: " + result.err.substr(0, 2000));
    EXPECT_TRUE(result.exited) << "killed by a signal";
    EXPECT_EQ(result.status, 2);
    EXPECT_EQ(lines_of(result.err).size(), 1U);
    EXPECT_EQ(result.err.rfind("hotscope: ", 0), 0U);
    EXPECT_NE(result.err.find(named.string()), std::string::npos) << "does not name the file";
    EXPECT_TRUE(result.out.empty());
    return result;
  }

  // A report directory like good/ with `file` replaced by `text`.
  fs::path report_dir(const std::string& file, const std::string& text) {
    const fs::path report = dir() / "report";
    fs::remove_all(report);
    fs::copy(dir() / "good", report);
    write(report / file, text);
    return report;
  }

private:
  hotscope::testing::ScratchDir scratch_;
};

TEST_F(HostileFiles, StatsJsonWithWrongTypesTruncatedOrDeep) {
  auto cases = variants(kStats, {{"\"pid\": 7", "\"pid\": \"7\""},
                                 {"\"pid\": 7", "\"pid\": null"},
                                 {"\"calls\": 12", "\"calls\": -5"},
                                 {"\"calls\": 12", "\"calls\": 1.5"},
                                 {"\"calls\": 12", "\"calls\": \"12\""},
                                 {"\"name\": \"f\"", "\"name\": 5"},
                                 {"\"mean_ns\": 10.5", "\"mean_ns\": {}"},
                                 {"\"duration_ns\": 1000000", "\"duration_ns\": -1"},
                                 {"\"source\": \"tsc\"", "\"source\": []"},
                                 {"\"dropped\": 0}", "\"dropped\": null}"},
                                 {"\"exited\": false", "\"exited\": 0"},
                                 {"\"threads\": [", "\"threads\": 3, \"x\": ["},
                                 {"\"index\": 0", "\"index\": \"0\""},
                                 {"\"cpu_self_ns\": 90", "\"cpu_self_ns\": -90"},
                                 {"\"cpu_total_ns\": 110", "\"cpu_total_ns\": \"110\""},
                                 {"\"samples\": 3", "\"samples\": 2.5"},
                                 {"\"problem\": \"\"", "\"problem\": 0"},
                                 {"\"cpu\": {", "\"cpu\": 5, \"x\": {"},
                                 {"\"cpu_samples\": 3", "\"cpu_samples\": -3"}});
  cases.emplace_back("nested 100,000 deep", deep_json(100000));
  cases.emplace_back("not JSON", std::string("{\x01\xff garbage", 11));
  for (const auto& [what, text] : cases) {
    const fs::path bad = dir() / "bad-stats.json";
    write(bad, text);
    refused(what, "diff " + bad.string() + " " + (dir() / "good" / "stats.json").string(), bad);
    refused(what, "flame " + bad.string() + " -o " + (dir() / "x.svg").string(), bad);
    const fs::path report = report_dir("stats.json", text);
    refused(what, "report " + report.string(), report / "stats.json");
    EXPECT_FALSE(fs::exists(report / "report.html")) << what;
  }
}

TEST_F(HostileFiles, HeapJsonWithWrongTypesTruncatedOrDeep) {
  std::string deep_site = R"({"dhatFileVersion": 2, "pps": [{"tb": 1, "fs": [)";
  for (int i = 0; i < 10000; ++i) {
    deep_site += (i == 0 ? "" : ",") + std::to_string(1 + i % 2);
  }
  deep_site += R"json(]}], "ftbl": ["[root]", "0x1: a (a.cpp:1)", "0x2: b (b.cpp:2)"]})json";
  auto cases = variants(kHeap, {{"\"tb\": 4096", "\"tb\": \"4096\""},
                                {"\"eb\": 2048", "\"eb\": null"},
                                {"\"gb\": 2048", "\"gb\": {}"},
                                {"\"ebk\": 1", "\"ebk\": -1"},
                                {"\"tbk\": 2", "\"tbk\": 2.5"},
                                {"\"pid\": 7", "\"pid\": \"7\""},
                                {"\"fs\": [1, 2]", "\"fs\": [1, 99]"},
                                {"\"fs\": [1, 2]", "\"fs\": [\"1\"]"},
                                {"\"fs\": [1, 2]", "\"fs\": 1"},
                                {"\"[root]\"", "1"},
                                {"\"pps\": [", "\"pps\": [3, "}});
  cases.emplace_back("a site of 10,000 frames", deep_site);
  for (const auto& [what, text] : cases) {
    const fs::path bad = dir() / "bad-heap.json";
    write(bad, text);
    refused(what, "diff " + bad.string() + " " + (dir() / "good" / "heap.json").string(), bad);
    refused(what, "flame " + bad.string() + " -o " + (dir() / "x.svg").string(), bad);
    const fs::path report = report_dir("heap.json", text);
    refused(what, "report " + report.string(), report / "heap.json");
  }
}

TEST_F(HostileFiles, HeapJsonThatRepeatsALongFrameIsRefusedInBoundedMemory) {
  // 1.6 MB whose sites repeat a 1 MB frame 300,000 times: 300 GB of frames if copied.
  std::string repeated = R"({"dhatFileVersion": 2, "pps": [)";
  for (int site = 0; site < 300; ++site) {
    repeated += std::string(site == 0 ? "" : ",") + R"({"tb": 1, "fs": [1)";
    for (int i = 1; i < 1000; ++i) {
      repeated += ",1";
    }
    repeated += "]}";
  }
  repeated += R"(], "ftbl": ["[root]", ")" + std::string(1 << 20, 'f') + R"("]})";
  const fs::path bad = dir() / "bad-heap.json";
  write(bad, repeated);
  const fs::path good = dir() / "good" / "heap.json";
  const std::uint64_t idle =
      run_hotscope(dir(), "diff " + good.string() + " " + good.string()).peak_bytes;
  const fs::path report = report_dir("heap.json", repeated);
  for (const auto& [args, named] : std::vector<std::pair<std::string, fs::path>>{
           {"diff " + bad.string() + " " + (dir() / "good" / "heap.json").string(), bad},
           {"flame " + bad.string() + " -o " + (dir() / "x.svg").string(), bad},
           {"report " + report.string(), report / "heap.json"}}) {
    const Result result = refused("a 1 MB frame repeated", args, named);
    EXPECT_NE(result.err.find("32 times the file's size"), std::string::npos) << result.err;
    // Over what the command takes on a small file: the text and its parsed JSON (16 bytes for
    // each 2-byte index), no frame copied.
    if (!kSanitized) {
      EXPECT_LT(result.peak_bytes, idle + 8 * repeated.size())
          << "peak memory of hotscope " << args;
    }
  }
}

TEST_F(HostileFiles, FoldedStacksMalformedHugeOrOfTheWrongKind) {
  std::vector<std::pair<std::string, std::string>> cases{
      {"negative count", "w;f -5\n"},
      {"fractional count", "w;f 1.5\n"},
      {"a word for a count", kFolded + "w;g many\n"},
      {"no count", "w;f\n"},
      {"counts past 2^64", "w;f 18446744073709551615\nw;g 1\n"},
      {"a count past 2^64", "w;f 18446744073709551616\n"},
      {"8,000 frames deep", stack_of(8000, "5")},
      {"one 20 MB line", "w;" + std::string(20 << 20, 'x') + " 1\n"},
      {"a stats.json", kStats},
      {"a truncated stats.json", kStats.substr(0, kStats.size() / 2)},
      {"a heap.json", kHeap},
  };
  for (const auto& [what, text] : cases) {
    const fs::path bad = dir() / "bad.folded";
    write(bad, text);
    if (what != "a heap.json") { // which `flame` draws: it has stacks
      refused(what, "flame " + bad.string() + " -o " + (dir() / "x.svg").string(), bad);
    }
    const fs::path report = report_dir("trace.folded", text);
    refused(what, "report " + report.string(), report / "trace.folded");
  }
  // A heap.json given where a stats.json is expected, and the two kinds compared.
  const fs::path report = report_dir("stats.json", kHeap);
  refused("heap.json as stats.json", "report " + report.string(), report / "stats.json");
  refused("two kinds",
          "diff " + (dir() / "good" / "stats.json").string() + " " +
              (dir() / "good" / "heap.json").string(),
          dir() / "good" / "heap.json");
}

TEST_F(HostileFiles, DeepAndLargeStacksGiveABoundedPicture) {
  // 4,000 frames deep: drawn, no recursion.
  write(dir() / "deep.folded", stack_of(4000, "5") + stack_of(3000, "7"));
  Result result = run_hotscope(dir(), "flame " + (dir() / "deep.folded").string() + " -o " +
                                          (dir() / "deep.svg").string());
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_NE(slurp(dir() / "deep.svg").find("data-depth=\"4000\""), std::string::npos);

  // 40 MB of distinct stacks (8 MB under ASan, slower and with memory of its own): at most
  // 20,000 frames drawn, in memory a small multiple of the input.
  const std::size_t size = kSanitized ? 8U << 20 : 40U << 20;
  std::string big;
  for (std::size_t i = 0; big.size() < size; ++i) {
    big += "w;thread-" + std::to_string(i % 97) + ";f" + std::to_string(i) + ";g" +
           std::to_string(i * 7919 % 100003) + " " + std::to_string(1 + i % 1000) + "\n";
  }
  write(dir() / "big.folded", big);
  result = run_hotscope(dir(), "flame " + (dir() / "big.folded").string() + " -o " +
                                   (dir() / "big.svg").string());
  ASSERT_EQ(result.status, 0) << result.err;
  const std::uintmax_t svg = fs::file_size(dir() / "big.svg");
  EXPECT_LT(svg, 16U << 20) << "the SVG grows with the input";
  const std::string head = slurp(dir() / "big.svg").substr(0, 4000);
  EXPECT_NE(head.find("narrow frames merged into their callers"), std::string::npos);
  if (!kSanitized) {
    EXPECT_LT(result.peak_bytes, 4 * big.size())
        << "peak memory of hotscope flame on " << big.size() << " bytes";
  }
}

} // namespace
