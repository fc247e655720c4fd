#include "crash/report.hpp"

#include "clock/clock.hpp"
#include "crash/memory.hpp"
#include "crash/output.hpp"
#include "trace/record_kinds.hpp"
#include "trace/trace.hpp"

#include <hotscope/hotscope.hpp>

#include <fcntl.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hotscope::crash {
namespace {

using detail::Ring;

constexpr std::size_t kFramesMax = 64;
constexpr std::size_t kScopesMax = 128;
// A thread's last records shown: those in the last this many slots of its ring.
constexpr std::uint64_t kLastRecordSlots = 128;
// How long the report tries the collector's locks (the rest of the 2 s is for writing).
constexpr std::uint64_t kLockPatienceNs = 300'000'000;
// Records of a payload at most (a guest heap record's: an old block and 32 frames).
constexpr std::uint32_t kPayloadMax = 9;

std::uint64_t origin_ticks = 0;
std::uint64_t origin_ns = 0;

struct Files {
  Output text;
  Output json;
  std::uint64_t now_ticks;
  double ns_per_tick;
  std::uint64_t deadline_ns;
  bool cut = false; // the deadline passed: the rest is left out

  std::uint64_t ago_ns(std::uint64_t ticks) const {
    return ticks >= now_ticks
               ? 0
               : static_cast<std::uint64_t>(static_cast<double>(now_ticks - ticks) * ns_per_tick);
  }
  bool out_of_time() {
    cut = cut || monotonic_ns() > deadline_ns;
    return cut;
  }
};

std::int64_t own_tid() {
  return static_cast<std::int64_t>(syscall(SYS_gettid));
}

const char* signal_name(int signal) {
  switch (signal) {
  case SIGSEGV:
    return "SIGSEGV";
  case SIGBUS:
    return "SIGBUS";
  case SIGILL:
    return "SIGILL";
  case SIGFPE:
    return "SIGFPE";
  case SIGABRT:
    return "SIGABRT";
  default:
    return "";
  }
}

// si_code's name, "" for one not listed.
const char* code_name(int signal, int code) {
  struct Name {
    int signal; // 0: any
    int code;
    const char* name;
  };
  static constexpr Name kNames[] = {
      {0, SI_USER, "SI_USER"},
      {0, SI_TKILL, "SI_TKILL"},
      {0, SI_QUEUE, "SI_QUEUE"},
      {SIGSEGV, SEGV_MAPERR, "SEGV_MAPERR"},
      {SIGSEGV, SEGV_ACCERR, "SEGV_ACCERR"},
      {SIGBUS, BUS_ADRALN, "BUS_ADRALN"},
      {SIGBUS, BUS_ADRERR, "BUS_ADRERR"},
      {SIGBUS, BUS_OBJERR, "BUS_OBJERR"},
      {SIGILL, ILL_ILLOPC, "ILL_ILLOPC"},
      {SIGILL, ILL_ILLOPN, "ILL_ILLOPN"},
      {SIGILL, ILL_PRVOPC, "ILL_PRVOPC"},
      {SIGFPE, FPE_INTDIV, "FPE_INTDIV"},
      {SIGFPE, FPE_FLTDIV, "FPE_FLTDIV"},
      {SIGFPE, FPE_FLTINV, "FPE_FLTINV"},
  };
  for (const Name& name : kNames) {
    if ((name.signal == 0 || name.signal == signal) && name.code == code) {
      return name.name;
    }
  }
  return "";
}

// The name of a thread of this process from /proc, into `out` ("" when gone).
const char* read_thread_name(std::int64_t tid, char (&out)[64]) {
  Output path;
  path.text("/proc/self/task/").number(static_cast<std::uint64_t>(tid)).text("/comm");
  char file[64] = {};
  std::memcpy(file, path.data(), path.size() < sizeof file - 1 ? path.size() : sizeof file - 1);
  out[0] = '\0';
  const int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    const ssize_t got = read(fd, out, sizeof out - 1);
    out[got > 0 ? got : 0] = '\0';
    close(fd);
    if (char* newline = std::strchr(out, '\n')) {
      *newline = '\0';
    }
  }
  return out;
}

// The name of the location a record's ref points at (read safely: its library may be gone).
const char* location_name(std::uint64_t ref, char* out, std::size_t size) {
  hotscope_source_location location{};
  if (!read_memory(ref, &location, sizeof location)) {
    return "?";
  }
  return read_text(reinterpret_cast<std::uint64_t>(location.name), out, size);
}

// The valid record headers of `ring` in [from, to): a slot whose kind is unknown, or whose
// payload does not fit, is skipped alone (released pages read as zeros; an old window may start
// inside a payload). `visit(record, row, position)`; false when the deadline cut the walk.
template <class Visit>
bool each_record(Files& files, const Ring& ring, std::uint64_t from, std::uint64_t to,
                 Visit&& visit) {
  const std::uint64_t mask = ring.capacity - 1;
  for (std::uint64_t at = from; at < to;) {
    if ((at & 4095) == 0 && files.out_of_time()) {
      return false;
    }
    const hotscope_record& record = ring.slots[at & mask];
    const trace::RecordKind* row = trace::record_kind(record.kind);
    if (row == nullptr || record.payload_records > kPayloadMax ||
        at + 1 + record.payload_records > to) {
      ++at;
      continue;
    }
    visit(record, *row, at);
    at += 1 + record.payload_records;
  }
  return true;
}

// An inline text's bytes (a message, a thread name), from the payload after `position`.
void inline_text(const Ring& ring, const hotscope_record& record, std::uint64_t position,
                 Output& line) {
  const std::uint64_t mask = ring.capacity - 1;
  std::uint64_t left =
      record.value < HOTSCOPE_INLINE_TEXT_MAX ? record.value : HOTSCOPE_INLINE_TEXT_MAX;
  for (std::uint64_t p = 0; p < record.payload_records && left != 0; ++p) {
    const char* bytes = reinterpret_cast<const char*>(&ring.slots[(position + 1 + p) & mask]);
    const std::uint64_t chunk = left < HOTSCOPE_RECORD_SIZE ? left : HOTSCOPE_RECORD_SIZE;
    line.text(bytes, chunk);
    left -= chunk;
  }
}

// One record as trace.txt shows it: its mark and text ("> name", "# counter = 3").
void describe(const Ring& ring, const hotscope_record& record, const trace::RecordKind& row,
              std::uint64_t position, Output& line) {
  char name[128];
  const bool located = row.ref == trace::RecordRef::Location;
  const char* named = located ? location_name(record.ref, name, sizeof name) : "";
  switch (record.kind) {
  case HOTSCOPE_RECORD_BEGIN:
  case HOTSCOPE_RECORD_TASK_RESUME:
    line.text("> ").text(named);
    break;
  case HOTSCOPE_RECORD_END:
  case HOTSCOPE_RECORD_TASK_SUSPEND:
  case HOTSCOPE_RECORD_TASK_COMPLETE:
    line.text("< ").text(named);
    break;
  case HOTSCOPE_RECORD_MESSAGE_STATIC:
    line.text("- ").text(read_text(record.ref, name, sizeof name));
    break;
  case HOTSCOPE_RECORD_MESSAGE_INLINE:
    line.text("- ");
    inline_text(ring, record, position, line);
    break;
  case HOTSCOPE_RECORD_THREAD_NAME:
    line.text("- thread name: ");
    inline_text(ring, record, position, line);
    break;
  case HOTSCOPE_RECORD_COUNTER:
    line.text("# ").text(named).text(" = ").signed_number(static_cast<std::int64_t>(record.value));
    break;
  case HOTSCOPE_RECORD_QUEUE_PUSH:
  case HOTSCOPE_RECORD_QUEUE_POP:
    line.text(record.kind == HOTSCOPE_RECORD_QUEUE_PUSH ? "\u2192 " : "\u2190 ")
        .text(named)
        .text(" #")
        .number(record.value);
    break;
  default: // the kind's name and its figures
    line.text("- ").text(row.name).text(" ");
    if (located) {
      line.text(named).text(" ");
    }
    line.number(record.value);
    break;
  }
}

// The scopes open on one thread: the collector's, then those the undrained records open or close.
class OpenScopes {
public:
  void clear() { count_ = hidden_ = 0; }
  void push(const char* name, std::uint64_t ticks) {
    if (count_ == kScopesMax) {
      ++hidden_;
      return;
    }
    Scope& scope = scopes_[count_++];
    scope.ticks = ticks;
    std::strncpy(scope.name, name, sizeof scope.name - 1);
    scope.name[sizeof scope.name - 1] = '\0';
  }
  void pop() {
    if (hidden_ != 0) {
      --hidden_;
    } else if (count_ != 0) {
      --count_;
    }
  }
  std::size_t size() const { return count_ + hidden_; }
  void write(Files& files) const;

private:
  struct Scope {
    char name[128];
    std::uint64_t ticks;
  };
  Scope scopes_[kScopesMax];
  std::size_t count_ = 0;
  std::size_t hidden_ = 0; // opened past kScopesMax
};

void OpenScopes::write(Files& files) const {
  files.text.text("  open scopes (innermost last):");
  files.text.text(count_ == 0 ? " none\n" : "\n");
  files.json.text(",\"open_scopes\":[");
  bool first = true;
  for (std::size_t i = 0; i < count_; ++i) {
    const std::uint64_t open_ns = files.ago_ns(scopes_[i].ticks);
    files.text.text("    ").text(scopes_[i].name).text(" (open ").milliseconds(open_ns);
    files.text.text(" ms)\n");
    files.json.separator(first).text("{\"name\":").json(scopes_[i].name);
    files.json.text(",\"open_ns\":").number(open_ns).text("}");
  }
  files.json.text("]");
  if (hidden_ != 0) {
    files.text.text("    (").number(hidden_).text(" more, innermost, not shown)\n");
  }
}

// Every thread's part of the report, as read_for_crash hands the threads over.
class Threads final : public trace::CrashVisitor {
public:
  explicit Threads(Files& files) : files_(files), crashed_tid_(own_tid()) {}

  void thread(std::int64_t os_tid, const char* name, const Ring& ring) override {
    finish_thread();
    // The crashing thread by its ring: in a forked child the ring is still under its parent's tid.
    crashed_ = &ring == detail::tls_ring || os_tid == crashed_tid_;
    tid_ = crashed_ ? crashed_tid_ : os_tid;
    name_ = name;
    ring_ = &ring;
    from_collector_ = true;
    scopes_.clear();
  }
  void open_scope(const char* name, std::uint64_t opened_ticks) override {
    scopes_.push(name, opened_ticks);
  }
  void counter(const char* name, std::int64_t last) override {
    section(Section::Counters);
    files_.text.text("  ").text(name).text(" = ").signed_number(last).text("\n");
    files_.json.separator(first_).text("{\"name\":").json(name).text(",\"last\":");
    files_.json.signed_number(last).text("}");
  }
  void queue(const char* name, std::uint64_t depth) override {
    section(Section::Queues);
    files_.text.text("  ").text(name).text(": depth ").number(depth).text("\n");
    files_.json.separator(first_).text("{\"name\":").json(name).text(",\"depth\":");
    files_.json.number(depth).text("}");
  }

  // The crashing thread alone, from its own ring: the collector's view could not be had.
  void crashed_thread_only() {
    thread(crashed_tid_, "", detail::tls_ring != nullptr ? *detail::tls_ring : empty_ring_);
    from_collector_ = false;
  }
  void finish() {
    finish_thread();
    if (!crashed_written_) { // it has no ring: it never recorded
      thread(crashed_tid_, "", empty_ring_);
      finish_thread();
    }
    section(Section::End);
  }

private:
  enum class Section { Threads, Counters, Queues, End };

  void section(Section next) {
    finish_thread();
    if (next == section_) {
      return;
    }
    files_.json.text("]");
    if (next == Section::Counters) {
      files_.text.text("\ncounters (last values):\n");
      files_.json.text(",\"counters\":[");
    } else if (next == Section::Queues) {
      files_.text.text("\nqueues (depths):\n");
      files_.json.text(",\"queues\":[");
    }
    first_ = true;
    section_ = next;
  }

  void finish_thread();
  void write_last_records(const Ring& ring, std::uint64_t head);

  Files& files_;
  const std::int64_t crashed_tid_;
  Ring empty_ring_;
  bool crashed_ = false;
  bool crashed_written_ = false;
  Section section_ = Section::Threads;
  bool first_ = true;
  // The thread being read.
  std::int64_t tid_ = 0;
  const char* name_ = "";
  const Ring* ring_ = nullptr;
  bool from_collector_ = true;
  OpenScopes scopes_;
};

void Threads::finish_thread() {
  if (ring_ == nullptr) {
    return;
  }
  const Ring& ring = *ring_;
  ring_ = nullptr;
  const bool crashed = crashed_;
  crashed_written_ = crashed_written_ || crashed;
  if (files_.out_of_time()) {
    return;
  }
  char own_name[64];
  const bool running = crashed || *read_thread_name(tid_, own_name) != '\0';
  if (*name_ == '\0') {
    name_ = crashed ? (prctl(PR_GET_NAME, own_name), own_name) : own_name;
  }
  const std::uint64_t head = ring.head.load(std::memory_order_acquire);
  const std::uint64_t tail = ring.tail.load(std::memory_order_acquire);
  const std::uint64_t dropped = ring.dropped.load(std::memory_order_relaxed);
  const bool readable = ring.capacity != 0 && ring.slots != nullptr;
  // Without the collector's view, every scope whose BEGIN is still in the ring.
  const std::uint64_t replay_from =
      from_collector_ ? tail : (head > ring.capacity ? head - ring.capacity : 0);
  if (readable) {
    each_record(files_, ring, replay_from, head,
                [this](const hotscope_record& record, const trace::RecordKind& row, std::uint64_t) {
                  char name[128];
                  if (row.slice == trace::SliceEffect::Opens) {
                    scopes_.push(location_name(record.ref, name, sizeof name), record.ticks);
                  } else if (row.slice == trace::SliceEffect::Closes) {
                    scopes_.pop();
                  }
                });
  }
  files_.text.text("\nthread ").text(name_).text(" (tid ").number(static_cast<std::uint64_t>(tid_));
  files_.text.text(crashed   ? "), crashed\n"
                   : running ? ")\n"
                             : "), not running (ended, or a parent's thread before fork)\n");
  files_.text.text("  records: written ").number(head + dropped).text(", kept ").number(tail);
  files_.text.text(", dropped ").number(dropped).text("\n");
  files_.json.separator(first_).text("{\"tid\":").number(static_cast<std::uint64_t>(tid_));
  files_.json.text(",\"name\":").json(name_).text(",\"crashed\":").text(crashed ? "true" : "false");
  files_.json.text(",\"running\":").text(running ? "true" : "false");
  files_.json.text(",\"records\":{\"written\":").number(head + dropped).text(",\"kept\":");
  files_.json.number(tail).text(",\"dropped\":").number(dropped).text("}");
  files_.json.text(",\"scopes_complete\":").text(from_collector_ ? "true" : "false");
  scopes_.write(files_);
  if (!from_collector_) {
    files_.text.text("    (scopes opened before the ring's oldest record are not known)\n");
  }
  files_.json.text(",\"last_records\":[");
  if (readable) {
    write_last_records(ring, head);
  }
  files_.json.text("]}");
}

// The records in the ring's last kLastRecordSlots slots, drained or not, indented by the scopes
// open around them: the depth is counted back from those open at the end.
void Threads::write_last_records(const Ring& ring, std::uint64_t head) {
  const std::uint64_t slots = ring.capacity < kLastRecordSlots ? ring.capacity : kLastRecordSlots;
  const std::uint64_t from = head > slots ? head - slots : 0;
  std::int64_t depth = static_cast<std::int64_t>(scopes_.size());
  each_record(files_, ring, from, head,
              [&depth](const hotscope_record&, const trace::RecordKind& row, std::uint64_t) {
                depth -= row.slice == trace::SliceEffect::Opens    ? 1
                         : row.slice == trace::SliceEffect::Closes ? -1
                                                                   : 0;
              });
  files_.text.text("  last records:\n");
  bool first = true;
  each_record(
      files_, ring, from, head,
      [&](const hotscope_record& record, const trace::RecordKind& row, std::uint64_t position) {
        if (row.slice == trace::SliceEffect::Closes) {
          --depth; // an exit lines up with its enter
        }
        Output line;
        describe(ring, record, row, position, line);
        // An ALLOCATION record has no time of its own (ticks 0).
        const std::uint64_t ago = files_.ago_ns(record.ticks);
        const std::size_t indent = depth > 0 ? static_cast<std::size_t>(depth) : 0;
        if (record.ticks != 0) {
          files_.text.text("    [-").milliseconds(ago).text("ms] ");
        } else {
          files_.text.text("    [          ] ");
        }
        for (std::size_t i = 0; i < indent; ++i) {
          files_.text.text("  ");
        }
        files_.text.text(line.data(), line.size()).text("\n");
        files_.json.separator(first).text("{\"ago_ns\":");
        if (record.ticks != 0) {
          files_.json.number(ago);
        } else {
          files_.json.text("null");
        }
        files_.json.text(",\"depth\":").number(indent).text(",\"kind\":").json(row.name);
        files_.json.text(",\"text\":").json(line.data(), line.size()).text("}");
        if (row.slice == trace::SliceEffect::Opens) {
          ++depth;
        }
      });
}

// The crashing thread's native stack, innermost first: the faulting instruction, then return
// addresses.
std::size_t unwind(const Crash& crash, std::uint64_t (&pcs)[kFramesMax]) {
  unw_cursor_t cursor;
  auto* context = static_cast<unw_context_t*>(crash.context);
  if (context == nullptr ||
      (crash.signal_frame ? unw_init_local2(&cursor, context, UNW_INIT_SIGNAL_FRAME)
                          : unw_init_local(&cursor, context)) != 0) {
    return 0;
  }
  std::size_t count = 0;
  do {
    unw_word_t ip = 0;
    unw_get_reg(&cursor, UNW_REG_IP, &ip);
    if (ip == 0) {
      break;
    }
    pcs[count++] = ip;
  } while (count < kFramesMax && unw_step(&cursor) > 0);
  return count;
}

void write_backtrace(Files& files, const Crash& crash) {
  static std::uint64_t pcs[kFramesMax];
  const std::size_t count = unwind(crash, pcs);
  const bool mapped = read_code_mappings();
  files.text.text("\nbacktrace (hotscope crash FILE.json names the frames):\n");
  files.json.text(",\"backtrace\":[");
  bool first = true;
  for (std::size_t i = 0; i < count; ++i) {
    const CodePlace place = mapped ? code_place(pcs[i]) : CodePlace{};
    files.text.text("  #").number(i).text(" ").hex(pcs[i]);
    files.json.separator(first).text("{\"address\":").number(pcs[i]);
    if (place.path != nullptr) {
      files.text.text(" ").text(place.path).text("+").hex(place.file_address);
      files.json.text(",\"module\":").json(place.path).text(",\"offset\":");
      files.json.number(place.file_address).text(",\"build_id\":").json(place.build_id);
      if (*place.build_id != '\0') {
        files.text.text(" (build id ").text(place.build_id).text(")");
      }
    }
    files.text.text("\n");
    files.json.text("}");
  }
  files.json.text("]");
}

// The heap profiler's live figures, as of its last drain or sample.
void write_heap(Files& files, const Crash& crash) {
  const HeapLive heap = crash.heap != nullptr ? crash.heap() : HeapLive{};
  using Mode = HeapLive::Mode;
  const char* mode = heap.mode == Mode::Full      ? "full"
                     : heap.mode == Mode::Sampled ? "sampled"
                     : heap.mode == Mode::Off     ? "off"
                                                  : "not linked";
  files.text.text("\nheap: ");
  files.json.text(",\"heap\":{\"mode\":").json(mode);
  if (heap.mode == Mode::NotLinked) {
    files.text.text("no heap profiler in this process\n");
  } else if (heap.mode == Mode::Off) {
    files.text.text("heap profiling off\n");
  } else {
    files.text.text(mode).text(" profiling, as of its last ");
    files.text.text(heap.mode == Mode::Full ? "drain" : "sample")
        .text(heap.mode == Mode::Sampled ? " (estimates)" : "");
    files.text.text("\n  live: ").number(heap.live_bytes).text(" bytes in ");
    files.text.number(heap.live_blocks).text(" blocks\n  peak: ").number(heap.peak_bytes);
    files.text.text(" bytes in ").number(heap.peak_blocks).text(" blocks\n");
    files.json.text(",\"live_bytes\":").number(heap.live_bytes).text(",\"live_blocks\":");
    files.json.number(heap.live_blocks).text(",\"peak_bytes\":").number(heap.peak_bytes);
    files.json.text(",\"peak_blocks\":").number(heap.peak_blocks);
    if (heap.mode == Mode::Full) {
      files.text.text("  events not counted yet: ").number(heap.events_waiting).text("\n");
      files.json.text(",\"events_waiting\":").number(heap.events_waiting);
    }
  }
  files.json.text("}");
}

void write_heading(Files& files, const Crash& crash) {
  char thread_name[64] = {};
  prctl(PR_GET_NAME, thread_name);
  const auto pid = static_cast<std::uint64_t>(getpid());
  const auto tid = static_cast<std::uint64_t>(own_tid());
  files.text.text("hotscope crash report: ").text(program_invocation_short_name).text(" (pid ");
  files.text.number(pid).text(")\n");
  files.json.text("{\"format\":\"hotscope-crash\",\"version\":1,\"hotscope_version\":");
  files.json.json(HOTSCOPE_VERSION).text(",\"pid\":").number(pid).text(",\"process\":");
  files.json.json(program_invocation_short_name);
  if (crash.signal != 0) {
    const char* code = code_name(crash.signal, crash.code);
    files.text.text("signal: ").text(signal_name(crash.signal)).text(" (").number(crash.signal);
    files.text.text("), code ").text(*code != '\0' ? code : "").text(" (");
    files.text.signed_number(crash.code).text(")");
    files.json.text(",\"signal\":{\"number\":").number(crash.signal).text(",\"name\":");
    files.json.json(signal_name(crash.signal)).text(",\"code\":").signed_number(crash.code);
    files.json.text(",\"code_name\":").json(code);
    if (crash.has_address) {
      files.text.text(", address ").hex(crash.address);
      files.json.text(",\"address\":").number(crash.address);
    }
    files.text.text("\n");
    files.json.text("}");
  } else {
    files.text.text("std::terminate");
    files.json.text(",\"terminate\":{\"exception\":");
    if (crash.exception != nullptr) {
      files.text.text(": uncaught exception of type ").text(crash.exception);
      files.json.json(crash.exception);
    } else {
      files.json.text("null");
    }
    files.json.text(",\"what\":");
    if (crash.what != nullptr) {
      files.text.text(": ").text(crash.what);
      files.json.json(crash.what);
    } else {
      files.json.text("null");
    }
    files.text.text("\n");
    files.json.text("}");
  }
  files.text.text("thread: ").text(thread_name).text(" (tid ").number(tid).text(")\n");
  files.json.text(",\"thread\":{\"tid\":").number(tid).text(",\"name\":").json(thread_name);
  files.json.text("}");
}

} // namespace

std::uint64_t monotonic_ns() noexcept {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(now.tv_nsec);
}

void remember_clock_origin() noexcept {
  origin_ticks = clock::now_ticks();
  origin_ns = monotonic_ns();
}

void write_report(const Crash& crash, int text, int json) noexcept {
  // Static storage (the alternate stack is small), constructed here with placement new: a local
  // static object's guard may take a lock.
  alignas(Files) static unsigned char storage[sizeof(Files)];
  const std::uint64_t now_ticks = clock::now_ticks();
  const std::uint64_t now_ns = monotonic_ns();
  const double ns_per_tick =
      now_ticks > origin_ticks
          ? static_cast<double>(now_ns - origin_ns) / static_cast<double>(now_ticks - origin_ticks)
          : 1.0;
  Files* files =
      new (storage) Files{Output(text), Output(json), now_ticks, ns_per_tick, crash.deadline_ns};
  write_heading(*files, crash);
  write_backtrace(*files, crash);
  files->text.text("\nthreads (open scopes and last records; times before the crash):\n");
  files->json.text(",\"threads\":[");
  alignas(Threads) static unsigned char threads_storage[sizeof(Threads)];
  Threads& threads = *new (threads_storage) Threads(*files);
  const std::uint64_t patience = crash.deadline_ns > now_ns ? crash.deadline_ns - now_ns : 0;
  if (!trace::read_for_crash(threads, patience < kLockPatienceNs ? patience : kLockPatienceNs)) {
    files->text.text("(the collector's locks were held: only the crashing thread's own ring)\n");
    threads.crashed_thread_only();
  }
  threads.finish();
  write_heap(*files, crash);
  if (files->cut) {
    files->text.text("\n(cut: the report's time was up)\n");
  }
  files->json.text(",\"complete\":").text(files->cut ? "false" : "true").text("}\n");
  files->text.flush();
  files->json.flush();
}

} // namespace hotscope::crash
