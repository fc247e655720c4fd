#include "heap/interposer/reports.hpp"

#include "atomic_file/atomic_file.hpp"
#include "export/export.hpp"
#include "heap/capture.hpp"
#include "heap/interposer/interposer.hpp"
#include "heap/interposer/real_allocator.hpp"
#include "heap/interposer/recording.hpp"
#include "heap/raw_report.hpp"
#include "heap/report_module.hpp"
#include "objects/objects.hpp"
#include "signals/signals.hpp"
#include "threads/threads.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <new>
#include <ostream>
#include <string_view>
#include <system_error>
#include <thread>

namespace hotscope::heap::interposer {
namespace {

// The stderr the program started with. Programs such as sort, ls and tar close fd 2 before they
// exit; the summary goes to a copy taken at load (close-on-exec), used only while it still names
// the same file: a program that closes every descriptor may have reopened one of its own files
// under that number.
struct ProgramStderr {
  int fd = -1;
  dev_t device = 0;
  ino_t inode = 0;
};
ProgramStderr program_stderr;

bool names(int fd, const ProgramStderr& original) {
  struct stat now {};
  return fd >= 0 && fstat(fd, &now) == 0 && now.st_dev == original.device &&
         now.st_ino == original.inode;
}

// The copy's lowest number: high in the table of 64 descriptors a process starts with, out of the
// way of the numbers a program picks, but in that table. A number past it grows the table, and in
// a process with threads (the agent's, hotscope-signal) the kernel then waits for an RCU grace
// period: 10 to 15 ms of the program's start (HeapRun.TheProgramsDescriptorTableKeepsItsSize).
constexpr int kStderrCopyFrom = 56;

__attribute__((constructor)) void keep_program_stderr() {
  struct stat status {};
  if (fstat(STDERR_FILENO, &status) != 0) {
    return;
  }
  program_stderr = {fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, kStderrCopyFrom), status.st_dev,
                    status.st_ino};
}

// fd 2 while it is still the program's stderr, else the copy while that is, else fd 2.
int stderr_fd() {
  if (names(STDERR_FILENO, program_stderr) || !names(program_stderr.fd, program_stderr)) {
    return STDERR_FILENO;
  }
  return program_stderr.fd;
}

// Text on the program's stderr, without allocating: a thread that a signal handler interrupted
// may hold the allocator's lock (report_from_handler).
void print(iovec* parts, int count) {
  const int fd = stderr_fd();
  while (count > 0) {
    const ssize_t written = writev(fd, parts, count);
    if (written < 0 && errno == EINTR) {
      continue;
    }
    if (written <= 0) {
      return;
    }
    auto left = static_cast<std::size_t>(written);
    for (; count > 0 && left >= parts->iov_len; ++parts, --count) {
      left -= parts->iov_len;
    }
    if (count > 0) {
      parts->iov_base = static_cast<char*>(parts->iov_base) + left;
      parts->iov_len -= left;
    }
  }
}

// One line, in one write.
void print_error(std::string_view line) {
  iovec parts[] = {{const_cast<char*>(line.data()), line.size()}, {const_cast<char*>("\n"), 1}};
  print(parts, 2);
}

// A /proc file of this process, whole ("" if it cannot be read). With read(), not a stream: the
// report at exit would otherwise build the C++ library's locale, for a program that never did.
std::string proc_file(const char* path) {
  std::string text;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return text;
  }
  char chunk[4096];
  for (;;) {
    const ssize_t got = read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      break;
    }
    text.append(chunk, static_cast<std::size_t>(got));
  }
  close(fd);
  return text;
}

// The command line the program was started with, copied at load: glibc passes the program's
// arguments to a library's constructors. Reading /proc/self/cmdline at exit took a tenth of the
// sampled report's time. nullptr in a process attached to (the arguments' memory is the
// program's by then), where /proc/self/cmdline says it.
const std::string* started_command = nullptr;

__attribute__((constructor)) void keep_command_line(int argc, char** argv, char**) {
  if (loaded_for_attach() || argv == nullptr) {
    return;
  }
  const Inside inside; // kept for the process's life, the profiler's
  auto* command = new (std::nothrow) std::string;
  if (command == nullptr) {
    return;
  }
  for (int i = 0; i < argc && argv[i] != nullptr; ++i) {
    command->append(i == 0 ? "" : " ").append(argv[i]);
  }
  started_command = command;
}

// The arguments, separated by spaces.
std::string command_line() {
  if (started_command != nullptr) {
    return *started_command;
  }
  std::string command = proc_file("/proc/self/cmdline");
  if (!command.empty() && command.back() == '\0') {
    command.pop_back();
  }
  std::replace(command.begin(), command.end(), '\0', ' ');
  return command;
}

// The program's file, as /proc/self/exe names it ("" if it cannot be read).
std::string executable_path() {
  char target[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", target, sizeof target);
  return std::string(target, length > 0 ? static_cast<std::size_t>(length) : 0);
}

// The program's file name (the executable's last part: "cc1plus" for the compiler g++ starts),
// with anything but letters, digits and ".+-_" made '_' so it fits in a file name.
std::string program_name(std::string_view executable = executable_path()) {
  std::string name(executable.substr(executable.rfind('/') + 1));
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '+' && c != '-') {
      c = '_';
    }
  }
  return name.empty() ? "program" : name;
}

// heap.json (or heap.pb.gz, by `extension`) for the profiled program; a process it starts
// (exec) under the same preload writes heap.<program>.<pid>.json beside it. `hotscope run`
// names the program's pid in HOTSCOPE_HEAP_PID.
// The directory is absolute (start_recording).
std::string report_path(const config::HeapOptions& options, const std::string& extension) {
  const char* profiled = getenv("HOTSCOPE_HEAP_PID");
  const std::string pid = std::to_string(getpid());
  const std::string name = profiled == nullptr || pid == profiled
                               ? "heap" + extension
                               : "heap." + program_name() + "." + pid + extension;
  const std::string& directory = options.out_dir;
  return directory + (directory.empty() || directory.back() == '/' ? "" : "/") + name;
}

// "" when `reason` is (the file was written, whole or not at all: atomic_file), else one line
// naming the path and the reason.
std::string problem_writing(const std::string& path, const std::string& reason) {
  return reason.empty() ? "" : "hotscope: cannot write the heap profile " + path + ": " + reason;
}

// libhotscope-pprof.so's entry points (heap/report_module.hpp), from this library's directory,
// loaded at the first profile; `error` says why there are none.
struct ReportModule {
  report_module::Build* build = nullptr;
  report_module::Prepare* prepare = nullptr;
  report_module::Add* add = nullptr;
  report_module::Pprof* pprof = nullptr;
  std::string error;
};

const ReportModule& report_module_loaded() {
  static const ReportModule module = [] {
    Dl_info self{};
    dladdr(reinterpret_cast<const void*>(&report_module_loaded), &self);
    const std::filesystem::path path =
        std::filesystem::path(self.dli_fname == nullptr ? "" : self.dli_fname).parent_path() /
        "libhotscope-pprof.so";
    ReportModule loaded;
    // exit() from a signal handler that interrupted dl_iterate_phdr: that thread holds the
    // loader's write lock for ever. dlopen would wait for it holding the loader's other lock,
    // which exit()'s _dl_fini takes once the report was given up (a deadlock); this waits for it
    // holding nothing (HeapPreload.ExitFromASignalHandlerHoldingTheLoadersLockGivesTheReportUp).
    dl_iterate_phdr([](dl_phdr_info*, std::size_t, void*) { return 1; }, nullptr);
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    const auto entry = [&](const char* name) {
      return handle == nullptr ? nullptr : dlsym(handle, name);
    };
    loaded.build = reinterpret_cast<report_module::Build*>(entry("hotscope_heap_build"));
    loaded.prepare = reinterpret_cast<report_module::Prepare*>(entry("hotscope_heap_prepare"));
    loaded.add = reinterpret_cast<report_module::Add*>(entry("hotscope_heap_add"));
    loaded.pprof = reinterpret_cast<report_module::Pprof*>(entry("hotscope_pprof_heap"));
    if (loaded.build == nullptr || loaded.prepare == nullptr || loaded.add == nullptr ||
        loaded.pprof == nullptr) {
      const char* reason = dlerror();
      loaded.error = "cannot load the heap report module " + path.string() + ": " +
                     (reason == nullptr ? "an entry point is missing" : reason);
    }
    return loaded;
  }();
  return module;
}

// heap.pb.gz's bytes, from the report module. "" or the reason it could not.
std::string pprof_bytes(const HeapProfile& profile, std::int64_t period, std::string& out) {
  const ReportModule& module = report_module_loaded();
  if (!module.error.empty()) {
    return module.error;
  }
  module.pprof(
      profile, period,
      [](void* text, const char* data, std::size_t size) {
        static_cast<std::string*>(text)->append(data, size);
      },
      &out);
  return "";
}

// The profile of `raw`, symbolized by one symbolizer kept for the process's life: repeated
// profiles resolve each address once. Its cache holds one entry per distinct return address of
// the interned stacks, which are never forgotten, so it grows no further than they do; after a
// dlopen or dlclose it forgets what they may have changed (build_profile). Its own mutex serializes
// profiles (agent threads, the library calls, the report at exit); the heap lock is never held with
// it. Called inside the profiler, which made the symbolizer and never destroys it (used by the
// report at exit).
std::mutex symbolizer_mutex;
// Profiles waiting for symbolizer_mutex: the collector, symbolizing ahead, gives way to them
// after the stack it is on, so a profile (the report at exit) never waits for a batch.
std::atomic<int> profiles_waiting{0};
// Set while this thread builds a profile, from before it takes the recorder's locks (take()) to
// after it lets go of symbolizer_mutex: a signal handler that calls exit() there must not wait
// for the locks its own thread holds (write_report_now).
__thread bool building_profile __attribute__((tls_model("initial-exec"))) = false;

// Marks the calling thread as building a profile while it lives. Set before any lock is taken
// and cleared after the last is released, so that no instant of holding one goes unmarked.
struct BuildingProfile {
  BuildingProfile() {
    building_profile = true;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  ~BuildingProfile() {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    building_profile = false;
  }
  BuildingProfile(const BuildingProfile&) = delete;
  BuildingProfile& operator=(const BuildingProfile&) = delete;
};

using report_module::Symbolized;

// Where the report module caches inflated debug files.
std::string debug_cache() {
  const Recorder* recorder = recorder_pointer;
  return recorder == nullptr ? "" : recorder->options().debug_cache;
}

// With a BuildingProfile alive on this thread: the profile of `raw` by the report module, whose
// symbolizer and builder are kept for the process's life (report_module.hpp), or the reason
// there is none. The report at exit is the builder's last profile: it takes the builder's tables
// rather than copying them.
std::string profile_of(const RawProfile& raw, bool at_exit, HeapProfile& profile,
                       Symbolized* symbolized = nullptr) {
  profiles_waiting.fetch_add(1, std::memory_order_relaxed);
  const std::lock_guard lock(symbolizer_mutex);
  profiles_waiting.fetch_sub(1, std::memory_order_relaxed);
  const ReportModule& module = report_module_loaded();
  if (!module.error.empty()) {
    return module.error;
  }
  Symbolized figures;
  module.build(raw, at_exit, command_line(), getpid(), debug_cache(), profile,
               symbolized == nullptr ? figures : *symbolized);
  return "";
}

// DHAT's summary lines on stderr, with what the symbolization took and where the files went.
void print_summary(const Recorder& recorder, const HeapProfile& profile,
                   std::uint64_t sampled_allocations, const Symbolized& symbolized,
                   const std::string& path, const std::string& pprof_path, bool pprof_written) {
  exporters::HeapReportFacts facts;
  facts.program = program_name();
  facts.sampling = recorder.sampling();
  facts.sample_bytes = recorder.options().sample_bytes;
  facts.sampled_allocations = sampled_allocations;
  facts.addresses = symbolized.addresses;
  facts.ahead = symbolized.ahead;
  facts.seconds = symbolized.seconds;
  facts.debug_files_inflated = symbolized.debug_files_inflated;
  facts.debug_files_from_cache = symbolized.debug_files_from_cache;
  facts.json_path = path;
  facts.pprof_path = pprof_written ? pprof_path : "";
  const std::string text = exporters::heap_report_summary(profile, facts);
  iovec part{const_cast<char*>(text.data()), text.size()};
  print(&part, 1);
}

// Whether `variable` holds the number `value`.
bool names_number(const char* variable, long value) {
  const char* text = getenv(variable);
  return text != nullptr && std::to_string(value) == text;
}

// The file the launcher waits for, where this report is the launcher's to symbolize; else
// nullptr.
const char* launcher_report_path(const Recorder& recorder) {
  const char* raw_path = getenv("HOTSCOPE_HEAP_RAW_REPORT");
  if (!recorder.sampling() || raw_path == nullptr || !names_number("HOTSCOPE_HEAP_PID", getpid()) ||
      !names_number("HOTSCOPE_HEAP_LAUNCHER", getppid())) {
    return nullptr;
  }
  return raw_path;
}

// The sampled mode's report of the program `hotscope run` started, while the launcher waits for
// it: the raw profile goes to the file the launcher named, and the launcher symbolizes it after
// the program ended (docs/heap.md, "The report at exit"). False when the report is this process's
// to write: the full mode (its collector symbolized ahead), a process the program started, a
// launcher that ended (killed: the kernel then ends the program with SIGTERM, whose report this
// process writes), or the file could not be written.
bool hand_to_launcher(const Recorder& recorder, const Recorder::Taken& taken) {
  const char* raw_path = launcher_report_path(recorder);
  if (raw_path == nullptr) {
    return false;
  }
  RawReport report;
  report.json_path = report_path(recorder.options(), ".json");
  report.pprof_path = report_path(recorder.options(), ".pb.gz");
  const std::string executable = executable_path();
  report.program = program_name(executable);
  report.command = command_line();
  report.pid = getpid();
  report.memory_map = objects::loaded_objects_map(executable); // resolved by the launcher
  report.debug_cache = recorder.options().debug_cache;
  report.summary = recorder.options().summary;
  report.sampling = true;
  report.sample_bytes = recorder.options().sample_bytes;
  report.sampled_allocations = taken.sampled_allocations;
  report.pprof_period = recorder.pprof_period();
  report.raw = taken.raw;
  if (!write_raw_report(raw_path, report).empty()) {
    return false;
  }
  if (!names_number("HOTSCOPE_HEAP_LAUNCHER", getppid())) { // it ended meanwhile
    unlink(raw_path);
    return false;
  }
  return true;
}

// Starts `work` on a thread of its own, all signals blocked (the program's handlers run on its
// own threads): the thread returned is joined when destroyed. Runs it on this thread, and
// returns no thread, when none can be started.
template <class Work> std::jthread start_thread(Work&& work) {
  try {
    const threads::SignalsBlocked blocked;
    return std::jthread(std::forward<Work>(work));
  } catch (const std::system_error&) {
    work();
    return {};
  }
}

// The report's threads, which an exit() called by a signal handler waits for
// (report_from_handler).
threads::ReportWriters report_threads;

// The report at exit.
void write_report(Recorder& recorder) {
  report_threads.join();
  const std::optional<Recorder::Taken> taken_now = recorder.take(stop_recording);
  if (!taken_now) {
    print_error("hotscope heap: no heap profile: the profiler's lock stayed held at exit (a "
                "signal handler that called exit() interrupted a thread holding it)");
    return;
  }
  const Recorder::Taken& taken = *taken_now;
  if (taken.lost_events > 0) {
    print_error("hotscope heap: " + std::to_string(taken.lost_events) +
                " allocation events could not be recorded (no memory for a thread's event ring, "
                "or a thread stopped while handing one over): the figures miss them");
  }
  if (hand_to_launcher(recorder, taken)) {
    return;
  }
  Symbolized symbolized;
  // Never freed: the process is ending, and freeing a large profile's hundreds of thousands of
  // blocks took a fifth of the report's time (cc1plus). Held here, where leak checkers see it.
  static HeapProfile* report_at_exit = nullptr;
  report_at_exit = new HeapProfile;
  if (const std::string error = profile_of(taken.raw, true, *report_at_exit, &symbolized);
      !error.empty()) {
    print_error("hotscope heap: no heap profile: " + error);
    return;
  }
  const HeapProfile& profile = *report_at_exit;
  for (const std::string& problem : symbolized.problems) {
    print_error(problem);
  }
  const std::string path = report_path(recorder.options(), ".json");
  const std::string pprof_path = report_path(recorder.options(), ".pb.gz");
  // heap.json is written beside heap.pb.gz's encoding: the program's exit waits for both.
  std::string json_problem;
  std::jthread json = start_thread([&] {
    report_threads.join();
    json_problem =
        problem_writing(path, atomic_file::write_creating_directory(path, [&](std::ostream& out) {
                          exporters::write_dhat_json(profile, out);
                        }));
  });
  std::string pprof;
  std::string problem = pprof_bytes(profile, recorder.pprof_period(), pprof);
  if (json.joinable()) {
    json.join();
  }
  if (!json_problem.empty()) {
    print_error(json_problem);
    return; // the directory is unusable: one line is enough
  }
  problem = problem_writing(
      pprof_path,
      problem.empty() ? atomic_file::write_creating_directory(pprof_path, pprof) : problem);
  if (!problem.empty()) {
    print_error(problem);
  }
  if (recorder.options().summary) {
    print_summary(recorder, profile, taken.sampled_allocations, symbolized, path, pprof_path,
                  problem.empty());
  }
}

// On the thread that report_from_handler starts: the profiler's own.
void* write_report_for_handler(void* recorder) {
  ++in_profiler;
  write_report(*static_cast<Recorder*>(recorder));
  report_threads.finished();
  return nullptr;
}

// exit() called by a signal handler: the code it interrupted on this thread may hold a lock the
// report needs (the allocator's, when it was allocating) and will never let it go. So nothing
// this thread does comes from the real allocator (starting a thread takes its TLS vector from the
// arena), the profiler's threads hand no more blocks back to it (the process is ending), and the
// exit waits for the report only while its threads keep working: a thread waiting for a lock for
// ever spends no CPU time.
void report_from_handler(Recorder& recorder) {
  keeping_own_blocks.store(true, std::memory_order_relaxed);
  sampling_fast.store(false, std::memory_order_relaxed); // every free through the hooks' checks
  pthread_t thread;
  int error = 0;
  {
    const threads::SignalsBlocked blocked;
    starting_report_thread = true;
    error = real.pthread_create(&thread, nullptr, write_report_for_handler, &recorder);
    starting_report_thread = false;
  }
  if (error != 0) {
    print_error("hotscope heap: no heap profile: exit() was called by a signal handler, and no "
                "thread could be started to write it");
    return;
  }
  pthread_detach(thread);
  if (!report_threads.wait_while_working(3'000'000'000)) {
    print_error("hotscope heap: no heap profile: exit() was called by a signal handler that "
                "interrupted code holding a lock the report needs (the allocator's or the "
                "loader's), and the report stopped for 3 s; a handler that only sets a flag, "
                "which the program checks to exit, lets the report be written");
  }
}

} // namespace

void write_report_now() {
  signals::wait_for_signal_report(); // its reporter writes this report, then ends us
  if (phase.load(std::memory_order_acquire) != Recording) {
    return;
  }
  const Inside inside;
  Recorder& recorder = *recorder_pointer;
  if (flavour.report_needs_out && !recorder.options().out_set) {
    return; // a linked program writes its reports only where HOTSCOPE_OUT says
  }
  if (building_profile) {
    print_error("hotscope heap: no heap profile: exit() was called (by a signal handler) while "
                "this thread was building one, whose lock it holds");
    return;
  }
  // This thread waits, marked as building, while threads of its own take the figures and write
  // the files: their allocations come from the allocator's other arenas. A program that freed
  // much before exiting (perl) leaves glibc's main arena with hundreds of thousands of freed
  // small blocks, which the report's first larger requests there would each merge first
  // (malloc_consolidate, 30 ms and more).
  const BuildingProfile building;
  if (in_signal_handler()) {
    report_from_handler(recorder);
    return;
  }
  // The thread that waits for a signal to write the reports (HOTSCOPE_ON_SIGNAL=report) writes
  // this one too: no thread to start.
  const auto write = [](void* chosen) { write_report(*static_cast<Recorder*>(chosen)); };
  if (signals::run_on_reporter(write, &recorder)) {
    return;
  }
  // A sampled program whose reporter was put off (on_signal.cpp) writes the raw profile for
  // `hotscope run` here: a few blocks and a file. The freed blocks of the allocator's main arena
  // that its first larger request merges (malloc_consolidate) are those of a program that ended
  // young or allocated little after its start: few.
  if (signal_reporter_put_off() && launcher_report_path(recorder) != nullptr) {
    write_report(recorder);
    return;
  }
  start_thread([&] { write_report(recorder); });
}

void build_outputs(int formats, Outputs& outputs) {
  Recorder* recorder = recording_state();
  if (recorder == nullptr) {
    outputs.error = "heap profiling is off in this process";
    return;
  }
  HeapProfile profile;
  {
    const BuildingProfile building;
    outputs.error = profile_of(recorder->take()->raw, false, profile);
  }
  if (!outputs.error.empty()) {
    return;
  }
  if ((formats & HOTSCOPE_HEAP_DHAT) != 0) {
    outputs.dhat = exporters::dhat_json(profile);
  }
  if ((formats & HOTSCOPE_HEAP_PPROF) != 0) {
    outputs.error = pprof_bytes(profile, recorder->pprof_period(), outputs.pprof);
  }
}

// The full mode's collector adds new stacks to the profiles' builder as they appear, beside the
// program: the report at exit then finds them symbolized and keyed to their sites (the first look
// into an object's debug information, which may be compressed, is the slowest part).
std::size_t build_ahead(Recorder& recorder) {
  const std::lock_guard lock(symbolizer_mutex);
  static std::size_t added = 0;
  if (phase.load(std::memory_order_acquire) != Recording) {
    return added; // the report was written: other libraries' destructors may be running
  }
  const ReportModule& module = report_module_loaded();
  if (!module.error.empty()) {
    return added; // the report says why
  }
  std::size_t next = module.prepare(debug_cache());
  added = next;
  for (const std::span<const std::uintptr_t> stack : recorder.stacks_since(next)) {
    if (profiles_waiting.load(std::memory_order_relaxed) > 0) {
      break; // the rest is built by the profile, or on the collector's next round
    }
    module.add(stack);
    ++added;
  }
  return added;
}

} // namespace hotscope::heap::interposer

// This library's destructor runs after the program's own destructors and atexit handlers.
__attribute__((destructor)) static void write_report_at_exit() {
  hotscope::heap::interposer::write_report_now();
}
