// The KVM transport: one VM, one vCPU in 64-bit mode on identity-mapped RAM. The host builds the
// page tables and the GDT below 1 MiB, loads the guest image above it, and enters the guest's
// entry point once per call with rdi = operation, rsi = argument, until it returns (an `outb` to
// HOTSCOPE_GUEST_PORT_RETURN). The guest runs in ring 3 with IOPL 3: port I/O is its only way
// out, privileged instructions fault, and code runs natively even where KVM emulates ring 0
// (nested KVM on PVM, for one).
#include "clock/clock.hpp"
#include "guest/runner/elf_image.hpp"
#include "guest/runner/runner.hpp"
#include "guest/runner/session.hpp"
#include "runtime/runtime.hpp"
#include "text/text.hpp"

#include "hotscope_guest_abi.h"

#include <fcntl.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

namespace hotscope::guest {
namespace {

// Guest-physical layout of the host's structures (guest/vm.ld puts the image at 1 MiB).
constexpr std::uint64_t kPml4 = 0x1000;
constexpr std::uint64_t kPdpt = 0x2000;
constexpr std::uint64_t kPageDirectory = 0x3000;
constexpr std::uint64_t kGdt = 0x4000;
constexpr std::uint64_t kLowPageTable = 0x5000; // 4 KiB pages for the first 2 MiB
constexpr std::uint64_t kPage = 4096;
constexpr std::uint64_t kImageStart = 0x100000;
constexpr std::uint64_t kLargePage = 2u << 20;
constexpr std::uint64_t kMaxMemory = 1u << 30; // one page directory of 2 MiB pages

constexpr std::uint64_t kPresent = 1, kWritable = 2, kUser = 4, kLargePageFlag = 0x80;
constexpr std::uint64_t kRflagsReserved = 0x2, kRflagsIopl3 = 0x3000;
constexpr std::uint64_t kCr0Pe = 1, kCr0Mp = 2, kCr0Et = 0x10, kCr0Ne = 0x20, kCr0Wp = 1u << 16,
                        kCr0Pg = 1u << 31;
constexpr std::uint64_t kCr4Pae = 1u << 5, kCr4Osfxsr = 1u << 9, kCr4Osxmmexcpt = 1u << 10;
constexpr std::uint64_t kEferLme = 1u << 8, kEferLma = 1u << 10;
constexpr std::uint32_t kMsrTsc = 0x10;

// The signal that kicks the vCPU thread out of KVM_RUN when the time limit passes.
int kick_signal() {
  return SIGRTMIN + 3;
}

void install_kick_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_handler = [](int) {}; // only interrupts KVM_RUN (no SA_RESTART)
    sigemptyset(&action.sa_mask);
    sigaction(kick_signal(), &action, nullptr);
  });
}

std::string hex(std::uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

class Fd {
public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) {
      close(fd_);
    }
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd& operator=(Fd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  int get() const { return fd_; }

private:
  int fd_ = -1;
};

// Arms a deadline per call; when it passes, makes KVM_RUN return (immediate_exit + a signal to
// the vCPU thread: the signal interrupts a running guest, the flag a guest about to be entered).
// The signal is blocked in the vCPU thread except inside KVM_RUN.
class Watchdog {
public:
  Watchdog() : thread_([this] { watch(); }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      quit_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  void arm(kvm_run* run, std::chrono::milliseconds limit) {
    std::lock_guard lock(mutex_);
    run_ = run;
    std::atomic_ref<std::uint8_t>(run_->immediate_exit).store(0);
    target_ = pthread_self();
    deadline_ = std::chrono::steady_clock::now() + limit;
    fired_ = false;
    wake_.notify_one();
  }
  void disarm() {
    std::lock_guard lock(mutex_);
    deadline_.reset();
  }
  bool fired() const { return fired_.load(); }

private:
  void watch() {
    std::unique_lock lock(mutex_);
    while (!quit_) {
      if (!deadline_) {
        wake_.wait(lock);
        continue;
      }
      if (wake_.wait_until(lock, *deadline_) == std::cv_status::timeout && deadline_ &&
          std::chrono::steady_clock::now() >= *deadline_) {
        fired_ = true;
        std::atomic_ref<std::uint8_t>(run_->immediate_exit).store(1);
        pthread_kill(target_, kick_signal());
        deadline_.reset();
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  kvm_run* run_ = nullptr;
  pthread_t target_{};
  std::atomic<bool> fired_{false};
  bool quit_ = false;
  std::thread thread_;
};

class KvmRunner final : public SessionRunner {
public:
  KvmRunner(const RunnerOptions& options) : options_(options) {}
  ~KvmRunner() override {
    watchdog_.reset();
    session_.reset();
    if (run_ != nullptr) {
      munmap(run_, run_bytes_);
    }
    if (memory_ != nullptr) {
      munmap(memory_, options_.memory_bytes);
    }
  }

  std::string start(const std::string& path) {
    if (options_.memory_bytes < 2 * kLargePage || options_.memory_bytes > kMaxMemory ||
        options_.memory_bytes % kLargePage != 0) {
      return "guest memory of " + std::to_string(options_.memory_bytes) +
             " bytes: use a multiple of 2 MiB from 4 MiB to 1 GiB";
    }
    std::string error;
    std::optional<ElfImage> image = ElfImage::open(path, error);
    if (!image) {
      return error;
    }
    if (std::string problem = image->wrong_kind(path, false); !problem.empty()) {
      return problem;
    }
    if (std::string problem = create_vm(); !problem.empty()) {
      return problem;
    }
    if (std::string problem = load(*image, path); !problem.empty()) {
      return problem;
    }
    if (std::string problem = setup_vcpu(); !problem.empty()) {
      return problem;
    }
    entry_ = image->entry();
    state_address_ = image->symbol_address("hotscope_guest_state");
    flat_.emplace(memory_, 0, options_.memory_bytes);
    std::optional<ClockAnchor> anchor = clock_anchor();
    if (!anchor) {
      return "cannot read the vCPU's TSC (KVM_GET_MSRS): " + text::errno_text();
    }
    session_.emplace(options_,
                     options_.track_name.empty() ? default_track_name(path) : options_.track_name,
                     *flat_, *anchor, image->symbolizer(), image->identity(path));
    install_kick_handler();
    watchdog_.emplace();
    if (!enter(HOTSCOPE_GUEST_OP_INIT, 0).returned) {
      return "guest image " + path + ": its init entry did not return (see the diagnostic above)";
    }
    return "";
  }

private:
  std::string create_vm() {
    kvm_ = Fd(open("/dev/kvm", O_RDWR | O_CLOEXEC));
    if (kvm_.get() < 0) {
      return "cannot open /dev/kvm: " + text::errno_text() +
             "; a KVM guest needs read-write access to it (or run the guest's process build "
             "as a child process: hotscope vm run --process)";
    }
    if (ioctl(kvm_.get(), KVM_GET_API_VERSION, 0) != KVM_API_VERSION) {
      return "/dev/kvm speaks an unexpected API version";
    }
    if (ioctl(kvm_.get(), KVM_CHECK_EXTENSION, KVM_CAP_IMMEDIATE_EXIT) <= 0) {
      return "KVM lacks KVM_CAP_IMMEDIATE_EXIT (needed for the time limit); kernel too old";
    }
    vm_ = Fd(ioctl(kvm_.get(), KVM_CREATE_VM, 0));
    if (vm_.get() < 0) {
      return "KVM_CREATE_VM failed: " + text::errno_text();
    }
    void* memory = mmap(nullptr, options_.memory_bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED) {
      return "cannot map " + std::to_string(options_.memory_bytes) + " bytes of guest memory";
    }
    memory_ = static_cast<unsigned char*>(memory);
    kvm_userspace_memory_region region{};
    region.slot = 0;
    region.guest_phys_addr = 0;
    region.memory_size = options_.memory_bytes;
    region.userspace_addr = reinterpret_cast<std::uintptr_t>(memory_);
    if (ioctl(vm_.get(), KVM_SET_USER_MEMORY_REGION, &region) < 0) {
      return "KVM_SET_USER_MEMORY_REGION failed: " + text::errno_text();
    }
    vcpu_ = Fd(ioctl(vm_.get(), KVM_CREATE_VCPU, 0));
    if (vcpu_.get() < 0) {
      return "KVM_CREATE_VCPU failed: " + text::errno_text();
    }
    const int run_bytes = ioctl(kvm_.get(), KVM_GET_VCPU_MMAP_SIZE, 0);
    if (run_bytes < static_cast<int>(sizeof(kvm_run))) {
      return "KVM_GET_VCPU_MMAP_SIZE failed: " + text::errno_text();
    }
    run_bytes_ = static_cast<std::size_t>(run_bytes);
    void* run = mmap(nullptr, run_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu_.get(), 0);
    if (run == MAP_FAILED) {
      return "cannot map the vCPU's kvm_run: " + text::errno_text();
    }
    run_ = static_cast<kvm_run*>(run);
    return "";
  }

  // The image is untrusted: every segment must fit in guest RAM above the host's structures.
  std::string load(const ElfImage& image, const std::string& path) {
    for (const LoadSegment& segment : image.segments()) {
      if (segment.address < kImageStart || segment.address > options_.memory_bytes ||
          segment.memory_size > options_.memory_bytes - segment.address) {
        return "guest image " + path + ": a segment at " + hex(segment.address) + " (" +
               std::to_string(segment.memory_size) + " bytes) is outside guest memory [" +
               hex(kImageStart) + ", " + hex(options_.memory_bytes) +
               "); link the guest with guest/vm.ld";
      }
      const std::string_view bytes = image.segment_bytes(segment);
      std::memcpy(memory_ + segment.address, bytes.data(), bytes.size());
    }
    return "";
  }

  // The guest sees the CPU features KVM supports (SSE among them: compilers use it).
  std::string set_cpuid() {
    // kvm_cpuid2 spelled out, for the reason given in clock_anchor().
    struct CpuidHeader {
      std::uint32_t nent;
      std::uint32_t padding;
    };
    constexpr std::uint32_t kEntries = 256;
    struct {
      CpuidHeader header{kEntries, 0};
      kvm_cpuid_entry2 entries[kEntries];
    } cpuid{};
    cpuid.header.nent = kEntries;
    if (ioctl(kvm_.get(), _IOWR(KVMIO, 0x05, CpuidHeader) /* KVM_GET_SUPPORTED_CPUID */, &cpuid) <
        0) {
      return "KVM_GET_SUPPORTED_CPUID failed: " + text::errno_text();
    }
    if (ioctl(vcpu_.get(), _IOW(KVMIO, 0x90, CpuidHeader) /* KVM_SET_CPUID2 */, &cpuid) < 0) {
      return "KVM_SET_CPUID2 failed: " + text::errno_text();
    }
    return "";
  }

  std::string setup_vcpu() {
    if (std::string problem = set_cpuid(); !problem.empty()) {
      return problem;
    }
    auto* pml4 = reinterpret_cast<std::uint64_t*>(memory_ + kPml4);
    auto* pdpt = reinterpret_cast<std::uint64_t*>(memory_ + kPdpt);
    auto* directory = reinterpret_cast<std::uint64_t*>(memory_ + kPageDirectory);
    pml4[0] = kPdpt | kPresent | kWritable | kUser;
    pdpt[0] = kPageDirectory | kPresent | kWritable | kUser;
    // The first 2 MiB in 4 KiB pages: the host's structures below 1 MiB are supervisor-only,
    // out of the ring-3 guest's reach; the rest is the guest's, in 2 MiB pages.
    auto* low = reinterpret_cast<std::uint64_t*>(memory_ + kLowPageTable);
    for (std::uint64_t i = 0; i < kLargePage / kPage; ++i) {
      low[i] = i * kPage | kPresent | kWritable | (i * kPage >= kImageStart ? kUser : 0);
    }
    directory[0] = kLowPageTable | kPresent | kWritable | kUser;
    for (std::uint64_t i = 1; i < options_.memory_bytes / kLargePage; ++i) {
      directory[i] = i * kLargePage | kPresent | kWritable | kUser | kLargePageFlag;
    }
    // Null, then ring-3 64-bit code (selector 0x08 | 3) and ring-3 data (0x10 | 3).
    auto* gdt = reinterpret_cast<std::uint64_t*>(memory_ + kGdt);
    gdt[0] = 0;
    gdt[1] = 0x00affa000000ffffull;
    gdt[2] = 0x00cff2000000ffffull;

    kvm_sregs sregs{};
    if (ioctl(vcpu_.get(), KVM_GET_SREGS, &sregs) < 0) {
      return "KVM_GET_SREGS failed: " + text::errno_text();
    }
    kvm_segment code{};
    code.base = 0;
    code.limit = 0xffffffff;
    code.selector = 0x8 | 3;
    code.type = 11; // execute/read, accessed
    code.dpl = 3;
    code.present = 1;
    code.s = 1;
    code.l = 1;
    code.g = 1;
    kvm_segment data = code;
    data.selector = 0x10 | 3;
    data.type = 3; // read/write, accessed
    data.l = 0;
    data.db = 1;
    sregs.cs = code;
    sregs.ds = sregs.es = sregs.fs = sregs.gs = sregs.ss = data;
    sregs.gdt.base = kGdt;
    sregs.gdt.limit = 3 * 8 - 1;
    sregs.cr3 = kPml4;
    sregs.cr4 = kCr4Pae | kCr4Osfxsr | kCr4Osxmmexcpt;
    sregs.cr0 = kCr0Pe | kCr0Mp | kCr0Et | kCr0Ne | kCr0Wp | kCr0Pg;
    sregs.efer = kEferLme | kEferLma;
    if (ioctl(vcpu_.get(), KVM_SET_SREGS, &sregs) < 0) {
      return "KVM_SET_SREGS failed: " + text::errno_text();
    }
    return "";
  }

  // The guest's TSC now (read from the vCPU) against hotscope's clock now; the vCPU's TSC
  // frequency from KVM_GET_TSC_KHZ.
  std::optional<ClockAnchor> clock_anchor() {
    runtime::ensure_started();
    // struct kvm_msrs with one entry, spelled out: in C++ the header's flexible array makes
    // sizeof(kvm_msrs) 16 instead of the kernel's 8, and the ioctl number encodes that size
    // (the same holds for kvm_cpuid2 and kvm_signal_mask).
    struct MsrsHeader {
      std::uint32_t nmsrs;
      std::uint32_t pad;
    };
    struct {
      MsrsHeader header{1, 0};
      kvm_msr_entry entry{kMsrTsc, 0, 0};
    } msrs;
    if (ioctl(vcpu_.get(), _IOWR(KVMIO, 0x88, MsrsHeader) /* KVM_GET_MSRS */, &msrs) != 1) {
      return std::nullopt;
    }
    ClockAnchor anchor;
    anchor.host_ticks = clock::now_ticks();
    anchor.guest_ticks = msrs.entry.data;
    anchor.host_ticks_per_second = clock::ticks_per_second();
    const int khz = ioctl(vcpu_.get(), KVM_GET_TSC_KHZ, 0);
    anchor.guest_ticks_per_second =
        khz > 0 ? 1000.0 * khz : clock::cpuid_tsc_hz().value_or(anchor.host_ticks_per_second);
    return anchor;
  }

  CallResult enter(std::uint64_t op, std::uint64_t argument) override {
    if (session_->stopped()) {
      return {};
    }
    session_->begin_call();
    kvm_regs regs{};
    regs.rip = entry_;
    regs.rdi = op;
    regs.rsi = argument;
    regs.rflags = kRflagsReserved | kRflagsIopl3; // IOPL 3: `outb` works in ring 3
    if (ioctl(vcpu_.get(), KVM_SET_REGS, &regs) < 0) {
      session_->stop("KVM_SET_REGS failed: " + text::errno_text());
      return {};
    }
    // The kick signal is blocked in this thread outside KVM_RUN (it must not interrupt the
    // host's own system calls) and unblocked inside it (KVM_SET_SIGNAL_MASK).
    sigset_t kick, outside;
    sigemptyset(&kick);
    sigaddset(&kick, kick_signal());
    pthread_sigmask(SIG_BLOCK, &kick, &outside);
    CallResult result;
    if (set_run_signal_mask(outside)) {
      watchdog_->arm(run_, options_.time_limit);
      result = run_until_return();
      watchdog_->disarm();
    }
    const timespec no_wait{};
    while (sigtimedwait(&kick, nullptr, &no_wait) == kick_signal()) {
      // a kick that came after the guest returned: consumed here
    }
    pthread_sigmask(SIG_SETMASK, &outside, nullptr);
    return result;
  }

  // The signal mask inside KVM_RUN: this thread's usual one, the kick signal not blocked.
  bool set_run_signal_mask(sigset_t inside) {
    sigdelset(&inside, kick_signal());
    // struct kvm_signal_mask spelled out (see clock_anchor()); the kernel's sigset is 8 bytes.
    struct SignalMaskHeader {
      std::uint32_t len;
    };
    struct {
      SignalMaskHeader header{8};
      unsigned char sigset[8];
    } mask{};
    static_assert(sizeof(sigset_t) >= sizeof mask.sigset);
    std::memcpy(mask.sigset, &inside, sizeof mask.sigset);
    if (ioctl(vcpu_.get(), _IOW(KVMIO, 0x8b, SignalMaskHeader) /* KVM_SET_SIGNAL_MASK */, &mask) <
        0) {
      session_->stop("KVM_SET_SIGNAL_MASK failed: " + text::errno_text());
      return false;
    }
    return true;
  }

  CallResult run_until_return() {
    for (;;) {
      if (ioctl(vcpu_.get(), KVM_RUN, 0) < 0) {
        if (errno == EINTR || errno == EAGAIN) {
          if (watchdog_->fired()) {
            session_->stop("ran longer than the " + std::to_string(options_.time_limit.count()) +
                           " ms time limit (at rip " + hex(rip()) +
                           "): stopped. A guest that needs longer: raise the limit "
                           "(RunnerOptions::time_limit, hotscope vm run --time-limit-ms)");
            return {};
          }
          continue; // another signal
        }
        session_->stop("KVM_RUN failed: " + text::errno_text());
        return {};
      }
      switch (run_->exit_reason) {
      case KVM_EXIT_IO:
        if (std::optional<CallResult> done = handle_io()) {
          return *done;
        }
        break;
      case KVM_EXIT_SHUTDOWN:
        crashed("crashed: the vCPU shut down (an exception with no handler, e.g. a page fault "
                "outside guest memory) at rip " +
                hex(rip()));
        return {};
      case KVM_EXIT_MMIO:
        crashed("accessed " + hex(run_->mmio.phys_addr) + ", outside guest memory, at rip " +
                hex(rip()) + ": stopped");
        return {};
      case KVM_EXIT_FAIL_ENTRY:
        session_->stop("the vCPU could not be entered (hardware reason " +
                       hex(run_->fail_entry.hardware_entry_failure_reason) + ")");
        return {};
      case KVM_EXIT_INTERNAL_ERROR:
        crashed("KVM internal error " + std::to_string(run_->internal.suberror) + " at rip " +
                hex(rip()) + " (an instruction KVM cannot emulate)");
        return {};
      default:
        session_->stop("unexpected VM exit " + std::to_string(run_->exit_reason) + " at rip " +
                       hex(rip()));
        return {};
      }
    }
  }

  // Port I/O: the guest's exits. Nothing while the guest runs on; else how the call ends.
  std::optional<CallResult> handle_io() {
    const auto& io = run_->io;
    kvm_regs regs{};
    if (ioctl(vcpu_.get(), KVM_GET_REGS, &regs) < 0) {
      session_->stop("KVM_GET_REGS failed: " + text::errno_text());
      return CallResult{};
    }
    const bool out = io.direction == KVM_EXIT_IO_OUT;
    if (out && io.port == HOTSCOPE_GUEST_PORT_FLUSH) {
      return session_->flush(regs.rdi, regs.rsi) ? std::nullopt
                                                 : std::optional<CallResult>(CallResult{});
    }
    if (out && io.port == HOTSCOPE_GUEST_PORT_PRINT) {
      session_->print(regs.rdi, regs.rsi);
      return std::nullopt;
    }
    if (out && io.port == HOTSCOPE_GUEST_PORT_HOST_CALL) {
      regs.rax = session_->host_call(regs.rdi, regs.rsi);
      if (ioctl(vcpu_.get(), KVM_SET_REGS, &regs) < 0) {
        session_->stop("KVM_SET_REGS failed: " + text::errno_text());
        return CallResult{};
      }
      return std::nullopt;
    }
    if (out && io.port == HOTSCOPE_GUEST_PORT_RETURN) {
      return returned(regs);
    }
    session_->stop(std::string(out ? "wrote to" : "read from") + " I/O port " + hex(io.port) +
                   ", which is not a hotscope port (flush " + hex(HOTSCOPE_GUEST_PORT_FLUSH) +
                   ", print " + hex(HOTSCOPE_GUEST_PORT_PRINT) + ", return " +
                   hex(HOTSCOPE_GUEST_PORT_RETURN) + ", host call " +
                   hex(HOTSCOPE_GUEST_PORT_HOST_CALL) + "), at rip " + hex(regs.rip) + ": stopped");
    return CallResult{};
  }

  // The guest's hotscope_guest_state: its buffer and the records in it not flushed yet.
  struct GuestState {
    std::uint64_t records;
    std::uint32_t capacity;
    std::uint32_t count;
  };
  std::optional<GuestState> guest_state() const {
    GuestState state{};
    if (!state_address_ || !flat_->read(*state_address_, &state, sizeof state)) {
      return std::nullopt;
    }
    return state;
  }

  // The entry is done, rax is its result. Records still in the guest's buffer were
  // never flushed: they are lost, and said so.
  CallResult returned(const kvm_regs& regs) {
    if (const std::optional<GuestState> state = guest_state(); state && state->count != 0) {
      session_->report("returned with " + std::to_string(state->count) +
                       " records it never flushed: they are lost (a guest must flush before it "
                       "returns; hotscope_guest_entry does)");
    }
    return {true, regs.rax};
  }

  // A crash exit (docs/crash.md, "Guests"): the vCPU's registers, and the records the guest had
  // not flushed, for the crash report; then the guest is stopped.
  void crashed(const std::string& exit) {
    GuestCrash crash;
    crash.transport = "kvm";
    crash.exit = exit;
    crash.pid = getpid();
    if (kvm_regs r{}; ioctl(vcpu_.get(), KVM_GET_REGS, &r) == 0) {
      crash.registers = {{"rip", r.rip}, {"rsp", r.rsp}, {"rbp", r.rbp}, {"rflags", r.rflags},
                         {"rax", r.rax}, {"rbx", r.rbx}, {"rcx", r.rcx}, {"rdx", r.rdx},
                         {"rsi", r.rsi}, {"rdi", r.rdi}, {"r8", r.r8},   {"r9", r.r9},
                         {"r10", r.r10}, {"r11", r.r11}, {"r12", r.r12}, {"r13", r.r13},
                         {"r14", r.r14}, {"r15", r.r15}};
    }
    if (kvm_sregs sregs{}; ioctl(vcpu_.get(), KVM_GET_SREGS, &sregs) == 0) {
      crash.registers.emplace_back("cr2", sregs.cr2); // a page fault's address
    }
    const std::optional<GuestState> state = guest_state();
    session_->crash(std::move(crash), state ? state->records : 0, state ? state->count : 0);
  }

  std::uint64_t rip() {
    kvm_regs regs{};
    return ioctl(vcpu_.get(), KVM_GET_REGS, &regs) < 0 ? 0 : regs.rip;
  }

  RunnerOptions options_;
  Fd kvm_, vm_, vcpu_;
  unsigned char* memory_ = nullptr;
  kvm_run* run_ = nullptr;
  std::size_t run_bytes_ = 0;
  std::uint64_t entry_ = 0;
  std::optional<std::uint64_t> state_address_;
  std::optional<FlatMemory> flat_;
  std::optional<Watchdog> watchdog_;
};

} // namespace

std::unique_ptr<Runner> start_kvm_guest(const std::string& elf_path, const RunnerOptions& options,
                                        std::string& error) {
  auto runner = std::make_unique<KvmRunner>(options);
  error = runner->start(elf_path);
  if (!error.empty()) {
    return nullptr;
  }
  return runner;
}

std::string kvm_unavailable_reason() {
  const Fd kvm(open("/dev/kvm", O_RDWR | O_CLOEXEC));
  if (kvm.get() < 0) {
    return "cannot open /dev/kvm: " + text::errno_text();
  }
  if (ioctl(kvm.get(), KVM_GET_API_VERSION, 0) != KVM_API_VERSION) {
    return "/dev/kvm speaks an unexpected API version";
  }
  return "";
}

} // namespace hotscope::guest
