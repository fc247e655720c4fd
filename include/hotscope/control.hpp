// hotscope's calls for the whole process, beside the macros of hotscope.hpp: the heap profile on
// demand (docs/heap.md) and the live agent (docs/agent.md).
//
//   if (hotscope::Result result = hotscope::start_agent(); !result) {
//     std::fprintf(stderr, "%s\n", result.problem().c_str());
//   }
//
// Compiled out (HOTSCOPE_ENABLED 0), every call says so and does nothing.
#ifndef HOTSCOPE_CONTROL_HPP
#define HOTSCOPE_CONTROL_HPP

#include <hotscope/enabled.h>

#include <string>
#include <utility>

namespace hotscope {

// What a call for the whole process came to: done, or what failed and how to fix it (one line
// per problem). Not to be ignored: a failure is the only place its reason is told.
class [[nodiscard]] Result {
public:
  Result() = default; // done
  static Result failure(std::string problem) {
    Result result;
    result.problem_ = problem.empty() ? "failed" : std::move(problem);
    return result;
  }
  bool ok() const noexcept { return problem_.empty(); }
  explicit operator bool() const noexcept { return ok(); }
  const std::string& problem() const noexcept { return problem_; } // "" when done

private:
  std::string problem_;
};

// Heap profiling runs in a program linked with the CMake target hotscope::heap and started with
// HOTSCOPE_HEAP_MODE=full (every allocation) or sampled, or in any program under `hotscope run
// --heap`.
enum class HeapMode { NotLinked, Off, Full, Sampled };
enum class HeapFormat { Dhat, Pprof }; // DHAT JSON (heap.json) or gzipped pprof (heap.pb.gz)

#if HOTSCOPE_ENABLED

HeapMode heap_mode() noexcept;
// The heap profile as it is now, into `out`; a failure says why there is none (and what enables
// it). Other threads wait only while the figures are copied.
Result heap_profile(HeapFormat format, std::string& out);
// Writes DIR/heap.json and DIR/heap.pb.gz now, from one copy of the figures (DIR is created if
// missing); a failure names what could not be written.
Result write_heap_profile(const std::string& dir);
// Starts the live agent if it does not run in this process yet: for programs started with
// HOTSCOPE_AGENT=0, or again after the program closed the agent's descriptors.
Result start_agent();

#else

inline HeapMode heap_mode() noexcept {
  return HeapMode::NotLinked;
}
inline Result compiled_out() {
  return Result::failure("hotscope is compiled out (HOTSCOPE_ENABLE=OFF)");
}
inline Result heap_profile(HeapFormat, std::string&) {
  return compiled_out();
}
inline Result write_heap_profile(const std::string&) {
  return compiled_out();
}
inline Result start_agent() {
  return compiled_out();
}

#endif // HOTSCOPE_ENABLED

} // namespace hotscope

#endif // HOTSCOPE_CONTROL_HPP
