// Crashes in the way its first argument names, with scopes open, for crash_test.cpp.
#include <hotscope/hotscope.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

// Not null: UBSan reports a store through a null pointer itself and ends the process.
volatile int* volatile nowhere = reinterpret_cast<int*>(64);
struct sigaction hotscope_action {}; // what was installed before the program's own handler

// Says on stderr whether hotscope's report was there when the program's handler ran.
void say_whether_reported() {
  const std::string json =
      std::string(std::getenv("HOTSCOPE_OUT")) + "/crash." + std::to_string(getpid()) + ".json";
  const char* line = std::filesystem::exists(json) ? "program handler: after the report\n"
                                                   : "program handler: before the report\n";
  [[maybe_unused]] const ssize_t written = write(2, line, std::strlen(line));
}

// Installed before hotscope: runs after its report, then ends the process with the default action.
void own_handler_first(int signal) {
  say_whether_reported();
  ::signal(signal, SIG_DFL);
}

// Installed after hotscope: runs first, then hands the signal to hotscope's handler.
void own_handler_chained(int signal, siginfo_t* info, void* context) {
  say_whether_reported();
  hotscope_action.sa_sigaction(signal, info, context);
}

__attribute__((constructor(101))) void install_before_hotscope() {
  const char* mode = std::getenv("CRASH_PROGRAM_HANDLER");
  if (mode != nullptr && std::strcmp(mode, "before") == 0) {
    ::signal(SIGSEGV, own_handler_first);
  }
}

void null_deref() {
  HOTSCOPE_SCOPE("crash_site");
  *nowhere = 1;
}

#pragma GCC diagnostic ignored "-Winfinite-recursion"
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
int recurse(int depth) {
  HOTSCOPE_SCOPE("recurse");
  volatile char frame[512];
  frame[0] = static_cast<char>(depth);
  return recurse(depth + 1) + frame[0];
}

[[noreturn]] void throw_uncaught() {
  HOTSCOPE_SCOPE("thrower");
  throw std::runtime_error("nobody catches this");
}

void worker_null_deref() {
  HOTSCOPE_THREAD_NAME("crasher");
  HOTSCOPE_SCOPE("worker_job");
  // The collector drains meanwhile: the counter's value is in its figures.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  HOTSCOPE_MESSAGE("about to crash");
  null_deref();
}

int fork_and_crash_child() {
  const pid_t child = fork();
  if (child == 0) {
    HOTSCOPE_SCOPE("child_work");
    null_deref();
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("child %d status %d\n", static_cast<int>(child), status);
  return 0;
}

// A location whose name the collector cannot read: it crashes while it drains, holding its lock.
void crash_the_collector() {
  static const hotscope_source_location unreadable{reinterpret_cast<const char*>(16), "nowhere", 1,
                                                   0};
  const hotscope::detail::Scope scope(&unreadable);
  std::this_thread::sleep_for(std::chrono::seconds(30));
}

} // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  HOTSCOPE_SCOPE("main_scope");
  HOTSCOPE_COUNTER("crash_counter", 42);
  if (mode == "worker") {
    std::thread idle([] {
      HOTSCOPE_THREAD_NAME("idler");
      HOTSCOPE_SCOPE("idle_wait");
      std::this_thread::sleep_for(std::chrono::seconds(30));
    });
    std::thread(worker_null_deref).join();
    idle.join();
  } else if (mode == "abort") {
    HOTSCOPE_SCOPE("before_abort");
    std::abort();
  } else if (mode == "throw") {
    throw_uncaught();
  } else if (mode == "overflow") {
    return recurse(0);
  } else if (mode == "fork") {
    return fork_and_crash_child();
  } else if (mode == "segv") {
    if (const char* handler = std::getenv("CRASH_PROGRAM_HANDLER");
        handler != nullptr && std::strcmp(handler, "after") == 0) {
      struct sigaction own {};
      own.sa_sigaction = own_handler_chained;
      own.sa_flags = SA_SIGINFO;
      sigemptyset(&own.sa_mask);
      sigaction(SIGSEGV, &own, &hotscope_action);
      if ((hotscope_action.sa_flags & SA_SIGINFO) == 0) {
        return 3; // hotscope's handler is not there
      }
    }
    null_deref();
  } else if (mode == "drain") {
    crash_the_collector();
  } else if (mode == "heap") {
    std::thread allocator([] {
      for (;;) {
        std::vector<char> block(static_cast<std::size_t>(std::rand() % 4096 + 1));
        block[0] = 1;
      }
    });
    allocator.detach();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    HOTSCOPE_SCOPE("bad_free");
    char* block = static_cast<char*>(std::calloc(1, 64));
    std::free(block + 16); // a chunk of size 0: the allocator aborts inside free()
  }
  return 2;
}
