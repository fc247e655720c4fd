#include "heap_link/heap_link.hpp"

#include "atomic_file/atomic_file.hpp"
#include "export/formats.hpp"

#include <hotscope/control.hpp>

#include <filesystem>
#include <utility>

// Weak: a program without a heap library links and finds them null.
extern "C" {
__attribute__((weak)) int hotscope_heap_mode(void);
__attribute__((weak)) void hotscope_heap_enter(void);
__attribute__((weak)) void hotscope_heap_leave(void);
__attribute__((weak)) int hotscope_heap_profile(int formats, hotscope_heap_sink sink,
                                                void* context);
__attribute__((weak)) void hotscope_heap_reset(void);
__attribute__((weak)) int hotscope_heap_read_totals(hotscope::HeapTotals* out);
__attribute__((weak)) int hotscope_heap_read_live(hotscope_heap_live* out);
__attribute__((weak)) void hotscope_heap_own_object(const void* address);
__attribute__((weak)) int hotscope_heap_own_thread(int64_t tid);
__attribute__((weak)) void
hotscope_heap_observe_allocations(hotscope_heap_allocation_observer observer);
__attribute__((weak)) void hotscope_heap_report_on_signal(void (*write)(void));
}

namespace hotscope::heap_link {
namespace {

// Both heap outputs of one copy of the figures, or the reason there are none.
struct HeapOutputs {
  std::string dhat;
  std::string pprof;
  std::string error;
};

HeapOutputs take_profile(int formats) {
  HeapOutputs outputs;
  if (outputs.error = unavailable_reason(); !outputs.error.empty()) {
    return outputs;
  }
  hotscope_heap_profile(
      formats,
      [](void* context, int format, const char* data, std::size_t size) {
        auto& into = *static_cast<HeapOutputs*>(context);
        (format == HOTSCOPE_HEAP_DHAT    ? into.dhat
         : format == HOTSCOPE_HEAP_PPROF ? into.pprof
                                         : into.error)
            .assign(data, size);
      },
      &outputs);
  return outputs;
}

} // namespace

ProfilerSection::ProfilerSection() {
  if (hotscope_heap_enter != nullptr) {
    hotscope_heap_enter();
  }
}

ProfilerSection::~ProfilerSection() {
  if (hotscope_heap_leave != nullptr) {
    hotscope_heap_leave();
  }
}

void own_object(const void* address) {
  if (hotscope_heap_own_object != nullptr) {
    hotscope_heap_own_object(address);
  }
}

bool own_thread(std::int64_t tid) {
  return hotscope_heap_own_thread != nullptr && hotscope_heap_own_thread(tid) != 0;
}

bool observe_allocations(hotscope_heap_allocation_observer observer) {
  if (hotscope_heap_observe_allocations == nullptr) {
    return false;
  }
  hotscope_heap_observe_allocations(observer);
  return true;
}

bool handles_signals() {
  return hotscope_heap_report_on_signal != nullptr;
}

bool report_on_signal(void (*write)()) {
  if (!handles_signals()) {
    return false;
  }
  hotscope_heap_report_on_signal(write);
  return true;
}

void reset() {
  if (hotscope_heap_reset != nullptr) {
    hotscope_heap_reset();
  }
}

const char* mode_name() {
  switch (hotscope::heap_mode()) {
  case HeapMode::Full:
    return "full";
  case HeapMode::Sampled:
    return "sampled";
  case HeapMode::Off:
    return "off";
  case HeapMode::NotLinked:
    break;
  }
  return "not linked";
}

std::optional<HeapFigures> figures() {
  HeapFigures figures;
  if (!unavailable_reason().empty() || hotscope_heap_read_totals == nullptr ||
      hotscope_heap_read_totals(&figures) != 0) {
    return std::nullopt;
  }
  figures.mode = mode_name();
  return figures;
}

int read_live(hotscope_heap_live& out) noexcept {
  return hotscope_heap_read_live != nullptr ? hotscope_heap_read_live(&out) : -1;
}

std::string unavailable_reason() {
  switch (hotscope::heap_mode()) {
  case HeapMode::Full:
  case HeapMode::Sampled:
    return "";
  case HeapMode::Off:
    return "heap profiling is off in this process: start it with HOTSCOPE_HEAP_MODE=full (every "
           "allocation) or HOTSCOPE_HEAP_MODE=sampled";
  case HeapMode::NotLinked:
    break;
  }
  return "this program has no heap profiler: link it with the CMake target hotscope::heap (built "
         "when HOTSCOPE_HEAP=ON and HOTSCOPE_SANITIZE is empty) and start it with "
         "HOTSCOPE_HEAP_MODE=full or sampled; or run it with `hotscope run --heap -- PROGRAM`, "
         "which writes heap.json when it exits";
}

} // namespace hotscope::heap_link

// ---- The public heap calls of control.hpp ----

hotscope::HeapMode hotscope::heap_mode() noexcept {
  if (hotscope_heap_mode == nullptr) {
    return HeapMode::NotLinked;
  }
  switch (hotscope_heap_mode()) {
  case HOTSCOPE_HEAP_FULL:
    return HeapMode::Full;
  case HOTSCOPE_HEAP_SAMPLED:
    return HeapMode::Sampled;
  default:
    return HeapMode::Off;
  }
}

hotscope::Result hotscope::heap_profile(HeapFormat format, std::string& out) {
  const bool pprof = format == HeapFormat::Pprof;
  heap_link::HeapOutputs outputs =
      heap_link::take_profile(pprof ? HOTSCOPE_HEAP_PPROF : HOTSCOPE_HEAP_DHAT);
  if (!outputs.error.empty()) {
    return Result::failure(std::move(outputs.error));
  }
  out = std::move(pprof ? outputs.pprof : outputs.dhat);
  return {};
}

hotscope::Result hotscope::write_heap_profile(const std::string& dir) {
  const heap_link::ProfilerSection section; // the copies here are the profiler's own
  heap_link::HeapOutputs outputs =
      heap_link::take_profile(HOTSCOPE_HEAP_DHAT | HOTSCOPE_HEAP_PPROF);
  if (!outputs.error.empty()) {
    return Result::failure(std::move(outputs.error));
  }
  using exporters::Format;
  for (const auto& [format, bytes] :
       {std::pair{Format::Dhat, &outputs.dhat}, std::pair{Format::PprofHeap, &outputs.pprof}}) {
    const char* name = exporters::format_info(format).file;
    const std::string path = (std::filesystem::path(dir) / name).string();
    if (const std::string reason = atomic_file::write_creating_directory(path, *bytes);
        !reason.empty()) {
      return Result::failure("cannot write " + path + ": " + reason);
    }
  }
  return {};
}
