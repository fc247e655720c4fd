// `hotscope attach`'s refusals (docs/heap.md, "Attach to a running program"): one line naming the
// reason and the fix, for each fact /proc shows about a process hotscope cannot attach to.
#include "attach/target.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

namespace {

using hotscope::cli::attach::Facts;
using hotscope::cli::attach::refusal;
using hotscope::cli::attach::refusal_for_errno;

Facts attachable() {
  Facts facts;
  facts.owner = facts.self = 1000;
  facts.yama_scope = 0;
  return facts;
}

void expect_line(const std::string& line, const std::string& reason, const std::string& fix) {
  EXPECT_NE(line.find("process 42"), std::string::npos) << line;
  EXPECT_NE(line.find(reason), std::string::npos) << line;
  EXPECT_NE(line.find(fix), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
}

TEST(AttachRefusal, NoneForAnAttachableProcess) {
  EXPECT_EQ(refusal(42, attachable()), "");
  Facts root = attachable();
  root.owner = 0;
  root.self = 0;
  root.can_trace_any = true;
  root.yama_scope = 2;
  EXPECT_EQ(refusal(42, root), "") << "CAP_SYS_PTRACE is what ptrace_scope=2 asks for";
  Facts child = attachable();
  child.yama_scope = 1;
  child.descendant = true;
  EXPECT_EQ(refusal(42, child), "") << "ptrace_scope=1 lets a process trace its descendants";
}

TEST(AttachRefusal, NamesTheReasonAndTheFix) {
  Facts gone = attachable();
  gone.exists = false;
  expect_line(refusal(42, gone), "no such process", "ps -p 42");

  Facts other_user = attachable();
  other_user.owner = 0;
  expect_line(refusal(42, other_user), "belongs to user 0", "run hotscope as that user");

  Facts scope1 = attachable();
  scope1.yama_scope = 1;
  expect_line(refusal(42, scope1), "ptrace_scope is 1", "kernel.yama.ptrace_scope=0");
  Facts scope2 = attachable();
  scope2.yama_scope = 2;
  expect_line(refusal(42, scope2), "ptrace_scope is 2", "cap_sys_ptrace");
  Facts scope3 = attachable();
  scope3.yama_scope = 3;
  scope3.can_trace_any = true;
  expect_line(refusal(42, scope3), "ptrace_scope is 3", "hotscope run --heap");

  Facts traced = attachable();
  traced.tracer = 77;
  expect_line(refusal(42, traced), "process 77 traces it", "detach that one first");

  Facts linked = attachable();
  linked.linked_heap = true;
  expect_line(refusal(42, linked), "linked with hotscope's heap library", "hotscope heap -p 42");
  Facts preloaded = attachable();
  preloaded.preloaded = true;
  expect_line(refusal(42, preloaded), "hotscope run --heap", "hotscope heap -p 42");

  Facts static_binary = attachable();
  static_binary.has_dlopen = false;
  expect_line(refusal(42, static_binary), "no dlopen", "hotscope run --heap");
}

TEST(AttachRefusal, TheKernelsRefusal) {
  expect_line(refusal_for_errno(42, EPERM), "refused", "CAP_SYS_PTRACE");
  expect_line(refusal_for_errno(42, ESRCH), "no such process", "ended");
}

} // namespace
