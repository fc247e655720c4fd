// `hotscope vm run` end to end: the sample guest in a VM (skipped without /dev/kvm) and as a
// child process; the reports it writes show the guest's nested calls beside the host's scopes.
#include "guest/runner/runner.hpp"
#include "support/files.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

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
  const std::string guest = std::string(HOTSCOPE_GUEST_DIR) +
                            (process ? "/sample-guest-process --process" : "/sample-guest.elf");
  const Result result =
      run(std::string(HOTSCOPE_CLI) + " vm run " + guest + " --calls 3 --out " + out.string());
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_NE(result.output.find("guest: sample guest ready"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("3 of 3 calls returned"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("0 rejected"), std::string::npos) << result.output;

  // The host's scopes, then the guest's track with its calls nested and its messages.
  const std::string tree = hotscope::test_support::slurp(out / "trace.txt");
  EXPECT_NE(tree.find("] > dispatch_function"), std::string::npos) << tree;
  EXPECT_NE(tree.find("]   > call_guest_function"), std::string::npos) << tree;
  EXPECT_NE(tree.find("guest: sample-guest"), std::string::npos) << tree;
  EXPECT_NE(tree.find("] > hotscope_guest_dispatch"), std::string::npos) << tree;
  EXPECT_NE(tree.find("]   > handle_request"), std::string::npos) << tree;
  EXPECT_NE(tree.find("]     > parse_request"), std::string::npos) << tree;
  EXPECT_NE(tree.find("]       - request 2"), std::string::npos) << tree;
  EXPECT_NE(tree.find("]     - slow path"), std::string::npos) << tree;

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
  std::filesystem::remove_all(out);
}

TEST(VmCli, ABadGuestPathIsOneClearLine) {
  const Result result = run(std::string(HOTSCOPE_CLI) + " vm run /nonexistent/guest.elf");
  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_NE(result.output.find("/nonexistent/guest.elf"), std::string::npos) << result.output;
}

INSTANTIATE_TEST_SUITE_P(Transports, VmCliTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Process" : "Kvm"; });

} // namespace
