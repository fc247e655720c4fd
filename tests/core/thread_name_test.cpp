// HOTSCOPE_THREAD_NAME names the OS thread too (top, perf, gdb, /proc), cut to 15 bytes, unless
// the program named it itself; the main thread keeps the process's name.
#include <hotscope/hotscope.hpp>

#include <gtest/gtest.h>

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

namespace {

std::string os_name_of(long tid) {
  std::ifstream comm("/proc/self/task/" + std::to_string(tid) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

std::string os_name_after(void (*name_it)()) {
  std::string seen;
  std::thread thread([&] {
    name_it();
    seen = os_name_of(syscall(SYS_gettid));
  });
  thread.join();
  return seen;
}

TEST(ThreadName, NamesTheOsThreadCutTo15Bytes) {
  EXPECT_EQ(os_name_after([] { HOTSCOPE_THREAD_NAME(std::string("worker-") + "1"); }), "worker-1");
  EXPECT_EQ(os_name_after([] { HOTSCOPE_THREAD_NAME("a-very-long-thread-name"); }),
            "a-very-long-thr");
}

TEST(ThreadName, KeepsANameTheProgramGave) {
  EXPECT_EQ(os_name_after([] {
              pthread_setname_np(pthread_self(), "own-name");
              HOTSCOPE_THREAD_NAME("hotscope-name");
            }),
            "own-name");
}

TEST(ThreadName, TheMainThreadKeepsTheProcesssName) {
  const std::string before = os_name_of(getpid());
  HOTSCOPE_THREAD_NAME("main-loop");
  EXPECT_EQ(os_name_of(getpid()), before);
}

} // namespace
