// libhotscope-symbols.so: the symbolizer (libdw, src/symbols) for libhotscope, which does not
// link libdw: loaded with dlopen only when a CPU profile's folded stacks are written, so libdw
// and its libraries enter a process only then, and never one that does not ask
// (docs/cpu.md, "Symbols").
#include "symbols/symbols.hpp"

#include <cstddef>
#include <cstdint>
#include <mutex>

namespace {

std::mutex symbolizer_mutex;

} // namespace

// Calls `emit` for each source-level frame at each of `addresses` (the instructions' own
// addresses: a return address less 1), outermost first (a function, then what is inlined into
// it); a frame no symbol names has an empty function. One call at a time.
extern "C" __attribute__((visibility("default"))) void
hotscope_symbolize(const std::uint64_t* addresses, std::size_t count,
                   void (*emit)(void* context, std::size_t index, const char* function,
                                const char* file, unsigned line),
                   void* context) {
  const std::lock_guard lock(symbolizer_mutex);
  // Kept for the process's life: repeated profiles resolve each address once.
  static hotscope::symbols::Symbolizer* const symbolizer = new hotscope::symbols::Symbolizer;
  symbolizer->refresh();
  symbolizer->resolve_all({addresses, count});
  for (std::size_t i = 0; i < count; ++i) {
    const auto& frames = symbolizer->resolve(addresses[i]);
    for (auto frame = frames.rbegin(); frame != frames.rend(); ++frame) {
      emit(context, i, frame->function.c_str(), frame->file.c_str(), frame->line);
    }
  }
}
