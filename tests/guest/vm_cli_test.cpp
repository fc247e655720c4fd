// `hotscope vm run` end to end: the sample guest in a VM (skipped without /dev/kvm) and as a
// child process; the reports it writes show the guest's nested calls beside the host's scopes.
#include "guest/runner/runner.hpp"
#include "support/child_process.hpp"
#include "support/files.hpp"
#include "support/scratch_dir.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Result {
  int status = -1;
  std::string output; // stdout and stderr
};

Result run(const std::string& command) {
  Result result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    return result;
  }
  char buffer[4096];
  std::size_t read = 0;
  while ((read = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) {
    result.output.append(buffer, read);
  }
  const int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

class VmCliTest : public ::testing::TestWithParam<bool> {}; // true: --process

TEST_P(VmCliTest, WritesTheReportsWithTheGuestsNestedCalls) {
  const bool process = GetParam();
  if (!process) {
    if (const std::string why = hotscope::guest::kvm_unavailable_reason(); !why.empty()) {
      GTEST_SKIP() << "hotscope vm run on KVM needs /dev/kvm: " << why;
    }
  }
  const std::filesystem::path out =
      std::filesystem::temp_directory_path() /
      ("hotscope-vm-cli-" + std::to_string(getpid()) + (process ? "-process" : "-kvm"));
  std::filesystem::remove_all(out);
  const std::string image =
      std::string(HOTSCOPE_GUEST_DIR) + (process ? "/sample-guest-process" : "/sample-guest.elf");
  const Result result = run(std::string(HOTSCOPE_CLI) + " vm run " + image +
                            (process ? " --process" : "") + " --calls 3 --out " + out.string());
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_NE(result.output.find("guest: sample guest ready"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("3 of 3 calls returned"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("0 rejected"), std::string::npos) << result.output;

  // The image's identity begins trace.txt and is in the JSON files' metadata: path, size and
  // SHA-256, as sha256sum computes it.
  const std::string bytes = std::to_string(std::filesystem::file_size(image));
  FILE* pipe = popen(("sha256sum " + image).c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char digest[65] = {};
  ASSERT_EQ(std::fread(digest, 1, 64, pipe), 64u);
  pclose(pipe);
  const std::string tree = hotscope::test_support::slurp(out / "trace.txt");
  const std::string track = process ? "guest: sample-guest-process" : "guest: sample-guest";
  EXPECT_EQ(tree.rfind("guest image " + image + ": " + bytes + " bytes, sha256 " + digest +
                           ", track " + track + "\n",
                       0),
            0u)
      << tree.substr(0, 300);
  const nlohmann::json expected_image = {
      {"track", track}, {"path", image}, {"bytes", std::stoull(bytes)}, {"sha256", digest}};
  const auto stats = nlohmann::json::parse(hotscope::test_support::slurp(out / "stats.json"));
  EXPECT_EQ(stats.at("guest_images"), nlohmann::json::array({expected_image}));

  // The guest's heap: DHAT JSON beside the reports, and the summary line (the figures of three
  // requests, worked out in runner_test.cpp).
  EXPECT_NE(result.output.find("hotscope vm: guest heap: Total: 604 bytes in 10 blocks; At "
                               "t-gmax: 180 bytes in 3 blocks; At t-end: 16 bytes in 1 blocks; 0 "
                               "unknown frees, 0 double frees, 0 unknown reallocs"),
            std::string::npos)
      << result.output;
  const std::string name = std::filesystem::path(image).stem().string();
  const auto dhat =
      nlohmann::json::parse(hotscope::test_support::slurp(out / ("guest-" + name + ".heap.json")));
  EXPECT_EQ(dhat.at("dhatFileVersion"), 2);
  std::uint64_t total_bytes = 0, end_bytes = 0;
  for (const auto& site : dhat.at("pps")) {
    total_bytes += site.at("tb").get<std::uint64_t>();
    end_bytes += site.at("eb").get<std::uint64_t>();
  }
  EXPECT_EQ(total_bytes, 604u);
  EXPECT_EQ(end_bytes, 16u);

  // The host's scopes, then the guest's track with its calls nested and its messages.
  EXPECT_NE(tree.find("] > dispatch_function"), std::string::npos) << tree;
  EXPECT_NE(tree.find("]   > call_guest_function"), std::string::npos) << tree;
  EXPECT_NE(tree.find("guest: sample-guest"), std::string::npos) << tree;
  EXPECT_NE(tree.find("] > hotscope_guest_dispatch"), std::string::npos) << tree;
  EXPECT_NE(tree.find("]   > handle_request"), std::string::npos) << tree;
  EXPECT_NE(tree.find("]     > parse_request"), std::string::npos) << tree;
  EXPECT_NE(tree.find("]       - request 2"), std::string::npos) << tree;
  EXPECT_NE(tree.find("]     - slow path"), std::string::npos) << tree;
  EXPECT_NE(tree.find("]     > host_call host_time_ns"), std::string::npos) << tree;
  EXPECT_NE(tree.find("]   > host_call print"), std::string::npos) << tree;

  const std::string report = hotscope::test_support::slurp(out / "report.txt");
  EXPECT_NE(report.find("handle_request"), std::string::npos) << report;
  EXPECT_NE(report.find("dispatch_function"), std::string::npos) << report;

  // Chrome JSON: the guest's track is a thread of its own beside the host's.
  const auto trace = nlohmann::json::parse(hotscope::test_support::slurp(out / "trace.json"));
  std::int64_t host_tid = -1, guest_tid = -1;
  for (const auto& event : trace.at("traceEvents")) {
    if (event.value("ph", "") == "X" || event.value("ph", "") == "B") {
      const std::string name = event.value("name", "");
      if (name == "dispatch_function") {
        host_tid = event.at("tid").get<std::int64_t>();
      } else if (name.find("handle_request") != std::string::npos) {
        guest_tid = event.at("tid").get<std::int64_t>();
      }
    }
  }
  EXPECT_NE(host_tid, -1);
  EXPECT_NE(guest_tid, -1);
  EXPECT_NE(host_tid, guest_tid);
  EXPECT_EQ(trace.at("otherData").at("guest_images"), nlohmann::json::array({expected_image}));
  std::filesystem::remove_all(out);
}

// One line on stderr (and nothing else), starting "hotscope:" and holding `text`.
void expect_one_line(const Result& result, int status, const std::string& text) {
  EXPECT_EQ(result.status, status) << result.output;
  EXPECT_EQ(result.output.rfind("hotscope: ", 0), 0u) << result.output;
  EXPECT_EQ(std::count(result.output.begin(), result.output.end(), '\n'), 1) << result.output;
  EXPECT_NE(result.output.find(text), std::string::npos) << result.output;
}

TEST(VmCli, ABadGuestPathIsOneClearLine) {
  const Result result = run(std::string(HOTSCOPE_CLI) + " vm run /nonexistent/guest.elf");
  expect_one_line(result, 3, "guest image /nonexistent/guest.elf: cannot be read");
}

// A device, a FIFO or a directory is refused before anything is read (/dev/zero never ends, a
// FIFO without a writer would block), and a huge file by its size, before it is read: in an
// address space of 1 GB, reading a 1 GiB file could not even be tried.
TEST(VmCli, ImagesThatAreNotSmallRegularFilesAreRefusedBeforeReading) {
  const hotscope::testing::ScratchDir scratch("vm-images");
  const std::filesystem::path& dir = scratch.path();
  ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0600), 0);
  std::filesystem::create_directory(dir / "directory");
  std::ofstream(dir / "huge").close();
  std::filesystem::resize_file(dir / "huge", 1ull << 30); // sparse: no disk space taken
  const std::string vm = "timeout 20 " + std::string(HOTSCOPE_CLI) + " vm run ";
  expect_one_line(run(vm + "/dev/zero"), 3, "guest image /dev/zero: is a character device, not");
  expect_one_line(run(vm + (dir / "fifo").string() + " --process"), 3, "is a FIFO, not");
  expect_one_line(run(vm + (dir / "directory").string()), 3, "is a directory, not");
  // Under ASan the address space is not limited: its shadow memory needs terabytes of it.
#if defined(__SANITIZE_ADDRESS__)
  const std::string limit;
#else
  const std::string limit = "ulimit -v 1000000; ";
#endif
  expect_one_line(run(limit + vm + (dir / "huge").string()), 3, "is 1024 MiB, larger than 64 MiB");
}

TEST(VmCli, OutOfRangeNumbersAreRejectedInWords) {
  const std::string vm = std::string(HOTSCOPE_CLI) + " vm run " + HOTSCOPE_GUEST_DIR +
                         "/sample-guest-process --process --out /tmp/unused ";
  for (const char* calls : {"-1", "18446744073709551616", "0", "1.5"}) {
    expect_one_line(run("timeout 20 " + vm + "--calls " + calls), 2,
                    std::string("hotscope: --calls must be a whole number from 1 to 1000000000 "
                                "(not ") +
                        calls + ")");
  }
  expect_one_line(run(vm + "--max-flushes -5"), 2, "--max-flushes must be a whole number");
  expect_one_line(run(vm + "--time-limit-ms 0"), 2, "--time-limit-ms must be a whole number");
}

// --out naming a file fails at once: the guest never runs (it would print that it is ready).
TEST(VmCli, AnOutThatIsAFileFailsBeforeTheGuestRuns) {
  const hotscope::testing::ScratchDir scratch("vm-out-file");
  const std::filesystem::path file = scratch.path() / "a-file";
  std::ofstream(file) << "not a directory";
  const Result result = run(std::string(HOTSCOPE_CLI) + " vm run " + HOTSCOPE_GUEST_DIR +
                            "/sample-guest-process --process --out " + file.string());
  expect_one_line(result, 2,
                  "hotscope: --out " + file.string() + ": exists and is not a directory");
  EXPECT_EQ(hotscope::test_support::slurp(file), "not a directory");
}

// Each kind of guest image run as the other kind: said so, with the command to run instead.
TEST(VmCli, AGuestImageOfTheWrongKindIsNamedWithWhatToRun) {
  const std::string guests = HOTSCOPE_GUEST_DIR;
  expect_one_line(run(std::string(HOTSCOPE_CLI) + " vm run " + guests + "/sample-guest-process"), 3,
                  "is a process guest (HOTSCOPE_GUEST_PROCESS), not a VM guest: run it with "
                  "--process (hotscope vm run --process " +
                      guests + "/sample-guest-process)");
  expect_one_line(
      run(std::string(HOTSCOPE_CLI) + " vm run " + guests + "/sample-guest.elf --process"), 3,
      "is a VM guest (HOTSCOPE_GUEST_VM, linked with guest/vm.ld), not a process guest: run it "
      "without --process (hotscope vm run " +
          guests + "/sample-guest.elf)");
}

// `hotscope vm run` writes the reports when SIGTERM ends it (HOTSCOPE_ON_SIGNAL=report by
// default there), and ends killed by it.
TEST(VmCli, SigtermWritesTheReportsOfTheCallsSoFar) {
  const hotscope::testing::ScratchDir scratch("vm-sigterm");
  const std::filesystem::path& dir = scratch.path();
  const pid_t vm = hotscope::test_support::start_command(
      {HOTSCOPE_CLI, "vm", "run", std::string(HOTSCOPE_GUEST_DIR) + "/sample-guest-process",
       "--process", "--calls", "1000000000", "--out", (dir / "out").string()},
      dir / "output");
  ASSERT_NE(hotscope::test_support::wait_for_text(dir / "output", "sample guest ready"), "")
      << hotscope::test_support::slurp(dir / "output");
  // "ready" is printed during the guest's init, before its first call: on an idle machine a
  // SIGTERM sent at once came before any call had returned (and flushed its records).
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  kill(vm, SIGTERM);
  const int status = hotscope::test_support::wait_for_child(vm);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM)
      << status << hotscope::test_support::slurp(dir / "output");
  const std::string report = hotscope::test_support::slurp(dir / "out" / "report.txt");
  EXPECT_NE(report.find("dispatch_function"), std::string::npos) << report;
  EXPECT_NE(report.find("handle_request"), std::string::npos) << report;
}

// The open scopes of a crash report's thread, outermost first.
std::vector<std::string> open_scopes(const nlohmann::json& thread) {
  std::vector<std::string> names;
  for (const auto& scope : thread.at("open_scopes")) {
    names.push_back(scope.at("name"));
  }
  return names;
}

// A guest that crashes at its third call: the host writes crash.<pid>.txt and .json with how it
// ended, where (the vCPU's registers), and the guest's open scopes and last records beside the
// host thread's (docs/crash.md, "Guests").
TEST_P(VmCliTest, AGuestsCrashIsReportedByTheHost) {
  const bool process = GetParam();
  if (!process) {
    if (const std::string why = hotscope::guest::kvm_unavailable_reason(); !why.empty()) {
      GTEST_SKIP() << "hotscope vm run on KVM needs /dev/kvm: " << why;
    }
  }
  const hotscope::testing::ScratchDir scratch(process ? "vm-crash-process" : "vm-crash-kvm");
  const std::filesystem::path out = scratch.path() / "out";
  const std::string image =
      std::string(HOTSCOPE_GUEST_DIR) + (process ? "/crash-guest-process" : "/crash-guest.elf");
  const Result result = run(std::string(HOTSCOPE_CLI) + " vm run " + image +
                            (process ? " --process" : "") + " --calls 4 --out " + out.string());
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_NE(result.output.find("2 of 4 calls returned"), std::string::npos) << result.output;
  std::filesystem::path json_file;
  for (const auto& entry : std::filesystem::directory_iterator(out)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("crash.", 0) == 0 && entry.path().extension() == ".json") {
      json_file = entry.path();
    }
  }
  ASSERT_FALSE(json_file.empty()) << result.output;
  EXPECT_NE(result.output.find("the guest's crash report: " + out.string() + "/crash."),
            std::string::npos)
      << result.output;
  const auto report = nlohmann::json::parse(hotscope::test_support::slurp(json_file));
  const nlohmann::json& guest = report.at("guest");
  EXPECT_EQ(report.at("format"), "hotscope-crash");
  EXPECT_EQ(guest.at("transport"), process ? "process" : "kvm");
  EXPECT_EQ(guest.at("exit").get<std::string>().rfind("crashed: ", 0), 0u) << guest.dump();
  const std::string track = process ? "guest: crash-guest-process" : "guest: crash-guest";
  EXPECT_EQ(guest.at("track"), track);
  EXPECT_EQ(report.at("thread").at("name"), track);
  const nlohmann::json& threads = report.at("threads");
  ASSERT_EQ(threads.size(), 2u) << report.dump(1);
  EXPECT_TRUE(threads[0].at("crashed"));
  EXPECT_EQ(threads[0].at("tid"), report.at("thread").at("tid"));
  EXPECT_EQ(open_scopes(threads[1]),
            (std::vector<std::string>{"dispatch_function", "call_guest_function"}));
  const std::string text =
      hotscope::test_support::slurp(json_file.parent_path() / (json_file.stem().string() + ".txt"));
  if (process) {
    // The kernel tells the parent the signal only; what the child had not flushed is gone.
    EXPECT_EQ(report.at("signal").at("number"), SIGSEGV);
    EXPECT_EQ(report.at("pid"), std::stoll(json_file.stem().extension().string().substr(1)));
    EXPECT_EQ(open_scopes(threads[0]),
              (std::vector<std::string>{"hotscope_guest_dispatch", "request"}));
    EXPECT_NE(text.find("signal: SIGSEGV (11)\n"), std::string::npos) << text;
  } else {
    // The vCPU's registers, the faulting address in cr2, and the records the guest had not
    // flushed, taken from its buffer.
    EXPECT_EQ(guest.at("registers").at("cr2"), 0x40000000u) << guest.dump();
    EXPECT_EQ(guest.at("registers").at("rip"), report.at("backtrace").at(0).at("address"));
    EXPECT_EQ(report.at("backtrace").at(0).at("function"), "crash_here") << report.dump(1);
    EXPECT_GE(guest.at("unflushed_records"), 2u);
    EXPECT_EQ(open_scopes(threads[0]),
              (std::vector<std::string>{"hotscope_guest_dispatch", "request", "crash_site"}));
    EXPECT_EQ(threads[0].at("last_records").back().at("text"), "- about to crash");
    EXPECT_EQ(threads[0].at("last_records").back().at("depth"), 3);
    EXPECT_NE(text.find("\nat: 0x"), std::string::npos) << text;
    EXPECT_NE(text.find(" crash_here+0x"), std::string::npos) << text;
    // `hotscope crash` reads it like a process's report.
    const Result named = run(std::string(HOTSCOPE_CLI) + " crash " + json_file.string());
    EXPECT_EQ(named.status, 0) << named.output;
    EXPECT_NE(named.output.find("guest (kvm): crashed: the vCPU shut down"), std::string::npos)
        << named.output;
    EXPECT_NE(named.output.find(" crash_here+0x"), std::string::npos) << named.output;
  }
  EXPECT_NE(text.find("\nthread " + track + " (tid "), std::string::npos) << text;
  EXPECT_NE(text.find("    request (open "), std::string::npos) << text;
}

INSTANTIATE_TEST_SUITE_P(Transports, VmCliTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Process" : "Kvm"; });

} // namespace
