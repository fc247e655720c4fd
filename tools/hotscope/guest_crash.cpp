#include "guest_crash.hpp"

#include "atomic_file/atomic_file.hpp"
#include "export/common.hpp"
#include "trace/trace.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstring>
#include <deque>
#include <filesystem>
#include <map>

namespace hotscope::cli {
namespace {

using nlohmann::json;

// A thread's last records shown, as in a process's crash report.
constexpr std::size_t kLastRecords = 128;

struct Line {
  std::uint64_t ns = 0;
  std::size_t depth = 0;
  const char* kind = "";
  std::string text; // the mark and its text, as trace.txt has them
};

// The last records of `threads` (by ThreadInfo::index), without the ends the snapshot adds for
// the scopes still open.
std::map<std::uint32_t, std::deque<Line>>
last_records(const Snapshot& snapshot, const std::vector<const ThreadInfo*>& threads) {
  std::map<std::uint32_t, std::deque<Line>> lines;
  for (const ThreadInfo* thread : threads) {
    lines[thread->index];
  }
  exporters::detail::walk_trace(snapshot, [&](const exporters::detail::TraceStep& step) {
    const auto found = lines.find(step.thread.index);
    if (found == lines.end()) {
      return;
    }
    // "[12.345ms ]   > name\n": the indent after "] " is the depth, two spaces a level.
    const std::string text =
        exporters::detail::trace_event_line(snapshot, step.event, step.open, step.event.ns);
    const std::size_t from = text.find("] ") + 2;
    const std::size_t mark = text.find_first_not_of(' ', from);
    found->second.push_back({step.event.ns, (mark - from) / 2,
                             exporters::detail::event_kind_name(step.event.kind),
                             text.substr(mark, text.size() - mark - 1)});
    if (found->second.size() > kLastRecords + snapshot.trace_open_scopes) {
      found->second.pop_front();
    }
  });
  for (const ThreadInfo* thread : threads) {
    std::deque<Line>& list = lines[thread->index];
    for (std::size_t open = thread->open_scopes.size();
         open != 0 && !list.empty() && list.back().ns == snapshot.duration_ns; --open) {
      list.pop_back();
    }
    while (list.size() > kLastRecords) {
      list.pop_front();
    }
  }
  return lines;
}

// One thread's part, in both files.
void write_thread(const Snapshot& snapshot, const ThreadInfo& thread, bool crashed,
                  const std::deque<Line>& lines, std::string& text, json& threads) {
  text += fmt::format("\nthread {} (tid {}){}\n", exporters::detail::thread_label(thread),
                      thread.os_tid, crashed ? ", crashed" : "");
  text += fmt::format("  records: written {}, kept {}, dropped {}\n", thread.records.written,
                      thread.records.kept, thread.records.dropped);
  text += "  open scopes (innermost last):";
  text += thread.open_scopes.empty() ? " none\n" : "\n";
  json scopes = json::array();
  for (const OpenScope& scope : thread.open_scopes) {
    text += fmt::format("    {} (open {} ms)\n", scope.name,
                        exporters::detail::fixed3(scope.open_ns, 1'000'000));
    scopes.push_back({{"name", scope.name}, {"open_ns", scope.open_ns}});
  }
  text += "  last records:\n";
  json records = json::array();
  for (const Line& line : lines) {
    const std::uint64_t ago = snapshot.duration_ns - std::min(line.ns, snapshot.duration_ns);
    text += fmt::format("    [-{}ms] {}{}\n", exporters::detail::fixed3(ago, 1'000'000),
                        std::string(line.depth * 2, ' '), line.text);
    records.push_back(
        {{"ago_ns", ago}, {"depth", line.depth}, {"kind", line.kind}, {"text", line.text}});
  }
  threads.push_back({{"tid", thread.os_tid},
                     {"name", exporters::detail::thread_label(thread)},
                     {"crashed", crashed},
                     {"running", !crashed},
                     {"records",
                      {{"written", thread.records.written},
                       {"kept", thread.records.kept},
                       {"dropped", thread.records.dropped}}},
                     {"scopes_complete", true},
                     {"open_scopes", scopes},
                     {"last_records", records}});
}

// The heading: the guest, how it ended, where, and its registers.
std::string heading(const guest::GuestCrash& crash, json& report) {
  std::string text =
      fmt::format("hotscope crash report: guest {} (pid {}), run by hotscope vm\n",
                  std::filesystem::path(crash.image.path).filename().string(), crash.pid);
  text += fmt::format("guest: {}, image {} (sha256 {}), track {}\nexit: {}\n", crash.transport,
                      crash.image.path, crash.image.sha256, crash.image.track, crash.exit);
  json guest = {{"transport", crash.transport}, {"exit", crash.exit},
                {"image", crash.image.path},    {"sha256", crash.image.sha256},
                {"track", crash.image.track},   {"unflushed_records", crash.unflushed}};
  if (crash.signal != 0) {
    const char* name = sigabbrev_np(crash.signal);
    text += fmt::format("signal: SIG{} ({})\n", name != nullptr ? name : "?", crash.signal);
    report["signal"] = {{"number", crash.signal},
                        {"name", name != nullptr ? std::string("SIG") + name : ""},
                        {"code_name", ""}};
  }
  json registers = json::object();
  json backtrace = json::array();
  if (!crash.registers.empty()) {
    const std::uint64_t rip = crash.registers.front().second;
    json frame = {{"address", rip}};
    text += fmt::format("at: {:#x}", rip);
    if (crash.function) {
      text += fmt::format(" {}+{:#x}", crash.function->name, crash.function->offset);
      frame["function"] = crash.function->name;
      frame["function_offset"] = crash.function->offset;
    }
    backtrace.push_back(frame);
    text += "\nregisters:";
    for (std::size_t i = 0; i < crash.registers.size(); ++i) {
      const auto& [name, value] = crash.registers[i];
      text += fmt::format("{} {:>6} {:#018x}", i % 4 == 0 ? "\n " : "", name, value);
      registers[name] = value;
    }
    text += "\n";
    guest["registers"] = registers;
  }
  if (crash.unflushed != 0) {
    text += fmt::format("records the guest had not flushed, taken from its buffer: {}\n",
                        crash.unflushed);
  }
  report["guest"] = guest;
  report["backtrace"] = backtrace;
  return text;
}

} // namespace

std::string write_guest_crash(const guest::GuestCrash& crash, const std::string& dir) {
  const Snapshot snapshot = trace::snapshot();
  json report = {{"format", "hotscope-crash"},
                 {"version", 1},
                 {"hotscope_version", snapshot.hotscope_version},
                 {"pid", crash.pid},
                 {"process", std::filesystem::path(crash.image.path).filename().string()}};
  std::string text = heading(crash, report);
  // The guest's track, then the host thread that called it.
  std::vector<const ThreadInfo*> shown;
  for (const ThreadInfo& thread : snapshot.threads) {
    if (thread.index == crash.track) {
      shown.insert(shown.begin(), &thread);
    } else if (thread.os_tid == gettid()) {
      shown.push_back(&thread);
    }
  }
  report["thread"] = {{"tid", shown.empty() ? 0 : shown.front()->os_tid},
                      {"name", crash.image.track}};
  text += "\nthreads (open scopes and last records; times before the crash):\n";
  json threads = json::array();
  const auto lines = last_records(snapshot, shown);
  for (const ThreadInfo* thread : shown) {
    write_thread(snapshot, *thread, thread->index == crash.track, lines.at(thread->index), text,
                 threads);
  }
  report["threads"] = threads;
  report["complete"] = true;
  const std::string base =
      (std::filesystem::path(dir) / fmt::format("crash.{}", crash.pid)).string();
  if (std::string problem = atomic_file::write(base + ".txt", text); !problem.empty()) {
    return "cannot write " + base + ".txt: " + problem;
  }
  if (std::string problem = atomic_file::write(base + ".json", report.dump() + "\n");
      !problem.empty()) {
    return "cannot write " + base + ".json: " + problem;
  }
  return "";
}

} // namespace hotscope::cli
