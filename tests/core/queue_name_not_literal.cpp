// Compiled by literal_queue_name.cmake with CASE set: 0 must compile, every other case must fail
// with the static_assert that points at hotscope::Queue.
#include <hotscope/hotscope.hpp>

#include <string>

void record(int item) {
  [[maybe_unused]] const std::string text = "jobs";
  [[maybe_unused]] const char* pointer = "jobs";
#if CASE == 0
  static constexpr char kName[] = "jobs";
  HOTSCOPE_QUEUE_PUSH("jobs", item);
  HOTSCOPE_QUEUE_POP(kName, item);
  HOTSCOPE_QUEUE_CAPACITY("jo"
                          "bs",
                          8);
  hotscope::Queue(text).push(item);
#elif CASE == 1
  HOTSCOPE_QUEUE_PUSH(text, item);
#elif CASE == 2
  HOTSCOPE_QUEUE_POP(pointer, item);
#elif CASE == 3
  HOTSCOPE_QUEUE_CAPACITY(text.c_str(), 8);
#endif
}
