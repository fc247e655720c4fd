// A daemon as many are written: once told to (the file <dir>/close appears), it closes every
// descriptor below 1024 and opens files of its own on the lowest numbers (0, 1 and 2 among them),
// then keeps working for 1.5 s, then calls hotscope::start_agent(), then waits for <dir>/exit and
// returns from main. It writes a line to each of its files in every phase, and two markers for
// the test: <dir>/stopped ("<CPU seconds of the 1.5 s> <1 if the agent's socket file remained>")
// and <dir>/restarted (what start_agent() returned).
#include <hotscope/control.hpp>
#include <hotscope/hotscope.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kFiles = 12;

bool exists(const std::string& path) {
  struct stat status {};
  return stat(path.c_str(), &status) == 0;
}

void wait_for(const std::string& path) {
  for (int i = 0; i < 3000 && !exists(path); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void write_marker(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  const int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd >= 0) {
    static_cast<void>(write(fd, text.data(), text.size()));
    close(fd);
    rename(temporary.c_str(), path.c_str());
  }
}

void write_line(const std::vector<int>& files, const std::string& line) {
  for (const int fd : files) {
    static_cast<void>(write(fd, line.data(), line.size()));
  }
}

double cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: daemon_program WORK_DIR AGENT_SOCKET\n");
    return 2;
  }
  const std::string dir = argv[1];
  const std::string socket = argv[2];
  wait_for(dir + "/close");
  for (int fd = 0; fd < 1024; ++fd) {
    close(fd);
  }
  std::vector<int> files;
  for (int i = 0; i < kFiles; ++i) {
    const std::string path = dir + "/file" + std::to_string(i);
    files.push_back(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600));
  }
  write_line(files, "before\n");
  const double cpu_before = cpu_seconds();
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  while (std::chrono::steady_clock::now() < until) {
    HOTSCOPE_SCOPE("daemon_work");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double cpu = cpu_seconds() - cpu_before;
  write_line(files, "during\n");
  write_marker(dir + "/stopped", std::to_string(cpu) + " " + (exists(socket) ? "1" : "0"));
  write_marker(dir + "/restarted", hotscope::start_agent().problem());
  wait_for(dir + "/exit");
  write_line(files, "after\n");
  return 0;
}
