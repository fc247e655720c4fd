// The naming rule of heap sites (docs/heap.md, "Site names") on frames as builds with and without
// -g give them, and the one name every view shows: `hotscope diff`'s rows, report.html and the
// console's memory tab.
#include "console/model.hpp"
#include "diff/diff.hpp"
#include "report/report.hpp"

#include <gtest/gtest.h>

namespace {

using namespace hotscope::cli;
using profiles::FrameRole;
using Json = nlohmann::json;

// A worker thread's stack in a Release build without -g: only the objects' symbol tables.
const std::vector<std::string> kWorkerWithoutDebug = {
    "0x7F1C2A4B1D30: operator new(unsigned long) (in "
    "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30)",
    "0x4016A2: void std::vector<int, std::allocator<int> >::_M_realloc_insert<int>"
    "(__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, int&&) "
    "(in /work/svc)",
    "0x4011D6: svc::render_response(int) (in /work/svc)",
    "0x401254: svc::worker_loop() (in /work/svc)",
    "0x401C3A: std::thread::_State_impl<std::thread::_Invoker<std::tuple<void (*)()> > >::_M_run() "
    "(in /work/svc)",
    "0x7F1C2A4E6253: libstdc++.so.6.0.30+0xd44a2 (in "
    "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30)",
    "0x7F1C2A294AC3: start_thread (pthread_create.c:442)",
    "0x7F1C2A326850: __clone3 (clone3.S:81)"};

// A lambda run by a thread in a -g build, below the standard library's inlined frames.
const std::vector<std::string> kLambdaWithDebug = {
    "0x401A20: __gnu_cxx::new_allocator<char>::allocate(unsigned long, void const*) "
    "(new_allocator.h:137)",
    "0x401A20: std::vector<int, std::allocator<int> >::_M_realloc_insert<int>(int&&) "
    "(stl_vector.h:512)",
    "0x401A20: main::{lambda()#1}::operator()() const (service.cpp:40)",
    "0x401B10: void std::__invoke_impl<void, main::{lambda()#1}>(std::__invoke_other, "
    "main::{lambda()#1}&&) (invoke.h:61)",
    "0x7F1C2A294AC3: start_thread (pthread_create.c:442)",
    "0x7F1C2A326850: clone3 (clone3.S:81)"};

// git's main thread: the program without -g, the C library with its debug information.
const std::vector<std::string> kGitMain = {
    "0x55D1C0A1B2C3: xmalloc (in /usr/bin/git)",
    "0x55D1C0A1B400: cmd_main (in /usr/bin/git)",
    "0x7F1C2A229D90: __libc_start_call_main (libc_start_call_main.h:58)",
    "0x7F1C2A229E40: __libc_start_main_impl (libc-start.c:392)",
    "0x7F1C2A229E40: __libc_start_main (in /usr/lib/x86_64-linux-gnu/libc.so.6)",
    "0x55D1C0A0F0A5: _start (in /usr/bin/git)"};

// A static initializer's allocation without -g, the C library with its debug information.
const std::vector<std::string> kStaticInitializer = {
    "0x5615EECB41CD: _GLOBAL__sub_I__ZN3svc4keptB5cxx11E (in /work/svc)",
    "0x7F490CC45375: call_init (libc-start.c:145)",
    "0x7F490CC45375: __libc_start_main@@GLIBC_2.34 (libc-start.c:347)",
    "0x5615EECB4210: _start (in /work/svc)"};

profiles::Site site_of(const std::vector<std::string>& frames) {
  profiles::Site site;
  for (const std::string& frame : frames) {
    site.frames.push_back(&frame);
  }
  return site;
}

// A DHAT profile of one site with these frames, its bytes all live at the end.
Json dhat(const std::vector<std::string>& frames, std::uint64_t bytes, std::uint64_t end_us) {
  Json table = Json::array({"[root]"});
  Json indexes = Json::array();
  for (const std::string& frame : frames) {
    indexes.push_back(table.size());
    table.push_back(frame);
  }
  return Json{{"dhatFileVersion", 2},
              {"mode", "cpp-heap"},
              {"cmd", "svc"},
              {"pid", 1},
              {"te", end_us},
              {"ftbl", table},
              {"pps", Json::array({Json{{"tb", bytes},
                                        {"tbk", 1},
                                        {"gb", bytes},
                                        {"gbk", 1},
                                        {"eb", bytes},
                                        {"ebk", 1},
                                        {"fs", indexes}}})}};
}

TEST(SiteNames, FramesAreTheProgramsTheLibrarysOrAThreadsEntry) {
  EXPECT_EQ(profiles::frame_role("0x4011D6: svc::render_response(int) (in /work/svc)"),
            FrameRole::Program);
  EXPECT_EQ(profiles::frame_role("0x401A20: main::{lambda()#1}::operator()() const "
                                 "(service.cpp:40)"),
            FrameRole::Program);
  // A program's own header is the program's.
  EXPECT_EQ(profiles::frame_role("0x401A20: svc::Cache::grow(std::string const&) (cache.h:12)"),
            FrameRole::Program);
  EXPECT_EQ(profiles::frame_role("0x401A20: ??? (in /work/svc)"), FrameRole::Program);
  EXPECT_EQ(profiles::frame_role("0x7F1C2A4B1D30: operator new(unsigned long) (in "
                                 "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30)"),
            FrameRole::Allocator);
  EXPECT_EQ(profiles::frame_role("0x7F1C2A4B1D30: operator new[](unsigned long) (new_op.cc:50)"),
            FrameRole::Allocator);
  EXPECT_EQ(profiles::frame_role("0x401A20: malloc (in /work/libhotscope-preload.so)"),
            FrameRole::Allocator);
  EXPECT_EQ(profiles::frame_role(kLambdaWithDebug[0]), FrameRole::Library);
  EXPECT_EQ(profiles::frame_role(kLambdaWithDebug[1]), FrameRole::Library);
  EXPECT_EQ(profiles::frame_role(kLambdaWithDebug[3]), FrameRole::Library);
  EXPECT_EQ(profiles::frame_role(kWorkerWithoutDebug[1]), FrameRole::Library); // in the program
  EXPECT_EQ(profiles::frame_role(kWorkerWithoutDebug[5]), FrameRole::Library);
  EXPECT_EQ(profiles::frame_role("0x7F1C2A4B1D30: strdup (in /usr/lib/x86_64-linux-gnu/libc.so.6)"),
            FrameRole::Library);
  EXPECT_EQ(profiles::frame_role("0x7F1C2A4B1D30: __GI___strdup (strdup.c:42)"),
            FrameRole::Library);
  EXPECT_EQ(profiles::frame_role("0x7F1C2A4B1D30: _dl_init (in /lib64/ld-linux-x86-64.so.2)"),
            FrameRole::Library);
  // A program's own call_init is the program's; the C library's and the loader's run
  // constructors.
  EXPECT_EQ(profiles::frame_role("0x401A20: call_init (in /work/svc)"), FrameRole::Program);
  for (const std::string& entry :
       {kWorkerWithoutDebug[6], kWorkerWithoutDebug[7], kGitMain[2], kGitMain[3], kGitMain[4],
        kGitMain[5], kStaticInitializer[1], kStaticInitializer[2],
        std::string("0x7F490D325A1D: call_init (dl-init.c:74)")}) {
    EXPECT_EQ(profiles::frame_role(entry), FrameRole::ThreadEntry) << entry;
  }
}

TEST(SiteNames, ASiteIsNamedByItsFirstFrameOfTheProgram) {
  EXPECT_EQ(profiles::site_name(site_of(kWorkerWithoutDebug)), "svc::render_response (in svc)");
  EXPECT_EQ(profiles::site_name(site_of(kLambdaWithDebug)),
            "main::{lambda()#1}::operator() (service.cpp:40)");
  EXPECT_EQ(profiles::site_name(site_of(kGitMain)), "xmalloc (in git)");
  const std::vector<std::string> with_debug = {
      "0x401A20: __gnu_cxx::new_allocator<char>::allocate(unsigned long, void const*) "
      "(new_allocator.h:137)",
      "0x4011D6: svc::render_response[abi:cxx11](int) (service.cpp:88)",
      "0x7F1C2A294AC3: start_thread (pthread_create.c:442)"};
  EXPECT_EQ(profiles::site_name(site_of(with_debug)), "svc::render_response[abi:cxx11] "
                                                      "(service.cpp:88)");
}

TEST(SiteNames, WithoutTheProgramsFramesTheLibraryThenTheAllocatorThenTheEntry) {
  EXPECT_EQ(profiles::site_name(site_of(kStaticInitializer)),
            "_GLOBAL__sub_I__ZN3svc4keptB5cxx11E (in svc)");
  const std::vector<std::string> library = {
      "0x7F1C2A4B1D30: operator new(unsigned long) (in /usr/lib/libstdc++.so.6.0.30)",
      "0x7F1C2A4C0000: std::locale::_Impl::_Impl(unsigned long) (in /usr/lib/libstdc++.so.6.0.30)",
      "0x7F1C2A5D0000: _dl_init (dl-init.c:70)",
      "0x7F1C2A5E0000: _start (in /lib64/ld-linux-x86-64.so.2)"};
  EXPECT_EQ(profiles::site_name(site_of(library)),
            "std::locale::_Impl::_Impl (in libstdc++.so.6.0.30)");
  const std::vector<std::string> allocator = {
      "0x7F1C2A4B1D30: malloc (in /usr/lib/libhotscope-preload.so)",
      "0x7F1C2A294AC3: start_thread (pthread_create.c:442)"};
  EXPECT_EQ(profiles::site_name(site_of(allocator)), "malloc (in libhotscope-preload.so)");
  const std::vector<std::string> entry = {"0x7F1C2A294AC3: start_thread (pthread_create.c:442)",
                                          "0x7F1C2A326850: clone3 (clone3.S:81)"};
  EXPECT_EQ(profiles::site_name(site_of(entry)), "start_thread (pthread_create.c:442)");
  EXPECT_EQ(profiles::site_name(profiles::Site{}), "(no frames)");
}

TEST(SiteNames, EveryViewShowsTheSameName) {
  const profiles::Profile base =
      profiles::classify(dhat(kWorkerWithoutDebug, 4096, 1'000'000), "base.json");
  const profiles::Profile now =
      profiles::classify(dhat(kWorkerWithoutDebug, 8192, 1'000'000), "new.json");
  const diff::Comparison comparison = diff::compare(base, now, {});
  ASSERT_EQ(comparison.rows.size(), 1U);
  EXPECT_EQ(comparison.rows[0].name, "svc::render_response (in svc)");

  const profiles::Profile stats = profiles::classify(Json{{"hotscope_version", "0.1.0"},
                                                          {"pid", 1},
                                                          {"process_name", "svc"},
                                                          {"duration_ns", 1000000},
                                                          {"functions", Json::array()}},
                                                     "stats.json");
  const std::string page = report::html_page(stats, now, {});
  EXPECT_NE(page.find("<summary>svc::render_response (in svc)</summary>"), std::string::npos);

  console::Model model;
  model.update_heap(dhat(kWorkerWithoutDebug, 8192, 1'000'000));
  ASSERT_EQ(model.memory().sites.size(), 1U);
  EXPECT_EQ(model.memory().sites[0].where, "svc::render_response (in svc)");
}

} // namespace
