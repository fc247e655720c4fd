// The child-process transport: the guest is a static executable (HOTSCOPE_GUEST_PROCESS) started
// with the memfd channel on fd 3 and a SOCK_SEQPACKET socket on fd 4. Its records sit in the
// shared memfd; the host reads them, and the static data they point at, with process_vm_readv,
// which the kernel bounds-checks against the child's address space.
#include "clock/clock.hpp"
#include "guest/runner/elf_image.hpp"
#include "guest/runner/runner.hpp"
#include "guest/runner/session.hpp"
#include "runtime/runtime.hpp"

#include "hotscope_guest_abi.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <x86intrin.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

namespace hotscope::guest {
namespace {

std::string errno_text() {
  return std::strerror(errno);
}

// The child's address space, read with process_vm_readv: all of [address, address + size) or
// nothing (a partial read is a failure).
class ProcessMemory final : public GuestMemory {
public:
  explicit ProcessMemory(pid_t pid) : pid_(pid) {}
  bool read(std::uint64_t address, void* out, std::size_t size) const override {
    if (size == 0) {
      return true;
    }
    if (address + size < address) {
      return false;
    }
    iovec local{out, size};
    iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)), size};
    return process_vm_readv(pid_, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(size);
  }

private:
  pid_t pid_;
};

// The TSC rate: the guest reads the same TSC as the host (one machine, no VM in between).
double tsc_ticks_per_second() {
  if (clock::info().source == "tsc") {
    return clock::ticks_per_second();
  }
  if (const std::optional<double> hz = clock::cpuid_tsc_hz()) {
    return *hz;
  }
  const std::uint64_t ticks = __rdtsc();
  const std::uint64_t ns = clock::monotonic_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return static_cast<double>(__rdtsc() - ticks) * 1e9 /
         static_cast<double>(clock::monotonic_ns() - ns);
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) {
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  }
  if (WIFSIGNALED(status)) {
    return "crashed: killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  }
  return "ended (wait status " + std::to_string(status) + ")";
}

class ProcessRunner final : public SessionRunner {
public:
  explicit ProcessRunner(const RunnerOptions& options) : options_(options) {}
  ~ProcessRunner() override {
    session_.reset();
    end_child();
    if (channel_ != nullptr) {
      munmap(channel_, HOTSCOPE_GUEST_CHANNEL_BYTES);
    }
  }

  std::string start(const std::string& path) {
    std::string error;
    std::optional<ElfImage> image = ElfImage::open(path, error);
    if (!image) {
      return error;
    }
    if (std::string problem = image->wrong_kind(path, true); !problem.empty()) {
      return problem;
    }
    if (std::string problem = spawn(path); !problem.empty()) {
      return "guest process " + path + ": " + problem;
    }
    runtime::ensure_started();
    ClockAnchor anchor;
    anchor.guest_ticks = __rdtsc();
    anchor.host_ticks = clock::now_ticks();
    anchor.host_ticks_per_second = clock::ticks_per_second();
    anchor.guest_ticks_per_second = tsc_ticks_per_second();
    memory_.emplace(pid_);
    entry_ = image->entry();
    session_.emplace(options_,
                     options_.track_name.empty() ? default_track_name(path) : options_.track_name,
                     *memory_, anchor, image->symbolizer(), image->identity(path));
    if (!enter(HOTSCOPE_GUEST_OP_INIT, 0).returned) {
      return "guest process " + path + ": its init entry did not return (see the diagnostic above)";
    }
    return "";
  }

private:
  std::string spawn(const std::string& path) {
    // Above the fds the child gets, so dup2 in the child always clears close-on-exec.
    const int memfd = memfd_create("hotscope-guest-channel", MFD_CLOEXEC);
    if (memfd < 0) {
      return "memfd_create failed: " + errno_text();
    }
    memfd_ = fcntl(memfd, F_DUPFD_CLOEXEC, 10);
    close(memfd);
    if (memfd_ < 0 || ftruncate(memfd_, HOTSCOPE_GUEST_CHANNEL_BYTES) < 0) {
      return "cannot size the channel memfd: " + errno_text();
    }
    void* channel =
        mmap(nullptr, HOTSCOPE_GUEST_CHANNEL_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, memfd_, 0);
    if (channel == MAP_FAILED) {
      return "cannot map the channel memfd: " + errno_text();
    }
    channel_ = static_cast<hotscope_guest_channel*>(channel);
    int sockets[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sockets) < 0) {
      return "socketpair failed: " + errno_text();
    }
    socket_ = fcntl(sockets[0], F_DUPFD_CLOEXEC, 10);
    const int child_socket = fcntl(sockets[1], F_DUPFD_CLOEXEC, 10);
    close(sockets[0]);
    close(sockets[1]);
    if (socket_ < 0 || child_socket < 0) {
      return "cannot move the channel socket: " + errno_text();
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, memfd_, HOTSCOPE_GUEST_CHANNEL_FD);
    posix_spawn_file_actions_adddup2(&actions, child_socket, HOTSCOPE_GUEST_WAKE_FD);
    posix_spawn_file_actions_addclosefrom_np(&actions, HOTSCOPE_GUEST_WAKE_FD + 1);
    char* argv[] = {const_cast<char*>(path.c_str()), nullptr};
    char* envp[] = {nullptr};
    const int failed = posix_spawn(&pid_, path.c_str(), &actions, nullptr, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    close(child_socket);
    if (failed != 0) {
      pid_ = -1;
      return std::string("cannot start it: ") + std::strerror(failed);
    }
    return "";
  }

  CallResult enter(std::uint64_t op, std::uint64_t argument) override {
    if (session_->stopped()) {
      return {};
    }
    session_->begin_call();
    const auto deadline = std::chrono::steady_clock::now() + options_.time_limit;
    channel_->op = op;
    channel_->argument = argument;
    if (!wake_guest()) {
      return {};
    }
    for (;;) {
      if (!wait_for_guest(deadline) || !check_readable()) {
        return {};
      }
      // The child may rewrite the channel at any time: each field is read once.
      const std::uint64_t request = std::atomic_ref(channel_->request).load();
      const std::uint64_t arg0 = std::atomic_ref(channel_->arg0).load();
      const std::uint64_t arg1 = std::atomic_ref(channel_->arg1).load();
      switch (request) {
      case HOTSCOPE_GUEST_REQUEST_FLUSH:
        if (!session_->flush(arg0, arg1)) {
          end_child();
          return {};
        }
        break;
      case HOTSCOPE_GUEST_REQUEST_PRINT:
        session_->print(arg0, arg1);
        break;
      case HOTSCOPE_GUEST_REQUEST_HOST_CALL:
        std::atomic_ref(channel_->reply).store(session_->host_call(arg0, arg1));
        break;
      case HOTSCOPE_GUEST_REQUEST_RETURN:
        return {true, arg0};
      default:
        session_->stop("sent request " + std::to_string(request) +
                       ", which is not a hotscope request (flush 1, print 2, return 3, host call "
                       "4): stopped");
        end_child();
        return {};
      }
      if (!wake_guest()) {
        return {};
      }
    }
  }

  // Once, at the child's first request (its image is surely mapped by then): without
  // permission to read the child (Yama's ptrace_scope 2 or 3, for one) every flush would be
  // rejected as outside its memory, so that is said once, plainly.
  bool check_readable() {
    if (readable_checked_) {
      return true;
    }
    readable_checked_ = true;
    unsigned char probe = 0;
    if (memory_->read(entry_, &probe, 1)) {
      return true;
    }
    session_->stop("its memory cannot be read (process_vm_readv: " + errno_text() +
                   "); see /proc/sys/kernel/yama/ptrace_scope");
    end_child();
    return false;
  }

  bool wake_guest() {
    const unsigned char byte = 1;
    if (send(socket_, &byte, 1, MSG_NOSIGNAL) == 1) {
      return true;
    }
    child_gone();
    return false;
  }

  // Waits for the child's next request, until the deadline.
  bool wait_for_guest(std::chrono::steady_clock::time_point deadline) {
    for (;;) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        session_->stop("ran longer than the " + std::to_string(options_.time_limit.count()) +
                       " ms time limit: killed. A guest that needs longer: raise the limit "
                       "(RunnerOptions::time_limit, hotscope vm run --time-limit-ms)");
        end_child();
        return false;
      }
      pollfd event{socket_, POLLIN, 0};
      const int ready = poll(&event, 1, static_cast<int>(left.count()));
      if (ready < 0 && errno == EINTR) {
        continue;
      }
      if (ready == 0) {
        continue; // the deadline check above reports it
      }
      unsigned char byte = 0;
      if (ready > 0 && recv(socket_, &byte, 1, 0) == 1) {
        return true;
      }
      child_gone();
      return false;
    }
  }

  // The child closed the channel or died in the middle of a call. A child that closed it but
  // lives on gets 200 ms to exit, then is killed: the host never waits on it unboundedly.
  void child_gone() {
    int status = 0;
    bool reaped = false;
    for (int waited_ms = 0; waited_ms < 200 && !reaped; ++waited_ms) {
      reaped = waitpid(pid_, &status, WNOHANG) == pid_;
      if (!reaped) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    const std::string why = (reaped ? describe_status(status)
                                    : std::string("closed its channel without exiting (killed)")) +
                            " during a call; records it had not flushed are lost";
    if (reaped && WIFSIGNALED(status)) {
      GuestCrash crash;
      crash.transport = "process";
      crash.exit = why;
      crash.pid = pid_;
      crash.signal = WTERMSIG(status);
      session_->crash(std::move(crash));
    }
    if (reaped) {
      pid_ = -1;
    }
    session_->stop(why);
    end_child();
  }

  void end_child() {
    if (socket_ >= 0) {
      close(socket_);
      socket_ = -1;
    }
    if (memfd_ >= 0) {
      close(memfd_);
      memfd_ = -1;
    }
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
      pid_ = -1;
    }
  }

  RunnerOptions options_;
  pid_t pid_ = -1;
  int memfd_ = -1;
  int socket_ = -1;
  std::uint64_t entry_ = 0;
  bool readable_checked_ = false;
  hotscope_guest_channel* channel_ = nullptr;
  std::optional<ProcessMemory> memory_;
};

} // namespace

std::unique_ptr<Runner> start_process_guest(const std::string& elf_path,
                                            const RunnerOptions& options, std::string& error) {
  auto runner = std::make_unique<ProcessRunner>(options);
  error = runner->start(elf_path);
  if (!error.empty()) {
    return nullptr;
  }
  return runner;
}

} // namespace hotscope::guest
