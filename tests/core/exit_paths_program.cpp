// Records from a thread that ends before the collector ever runs, then leaves the process in
// the way argv[1] says: "return" from main or "exit" from a worker thread.
#include <hotscope/hotscope.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

void early_thread_work() {
  HOTSCOPE_FUNCTION();
}
void exiting_thread_work() {
  HOTSCOPE_FUNCTION();
}

} // namespace

int main(int argc, char** argv) {
  const bool exit_from_thread = argc > 1 && std::strcmp(argv[1], "exit") == 0;
  std::thread early([] {
    for (int i = 0; i < 100; ++i) {
      early_thread_work();
    }
  });
  early.join();
  std::printf("program result 42\n");
  std::fflush(stdout);
  if (exit_from_thread) {
    std::thread exiting([] {
      for (int i = 0; i < 50; ++i) {
        exiting_thread_work();
      }
      std::exit(0);
    });
    exiting.join(); // never returns: the worker ends the process
  }
  HOTSCOPE_SCOPE("main_tail");
  return 0;
}
