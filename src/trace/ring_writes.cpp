// The records a measured thread writes with a payload (a stack, a copied message, a thread's
// name): the slow paths of include/hotscope/hotscope.hpp's writers, on the thread itself.
#include <hotscope/hotscope.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace {

// A header record, then `bytes` of `data` in payload records (the last one padded with zeros):
// runtime text, a stack's return addresses. Whole or counted as dropped.
void write_with_payload(std::uint32_t kind, std::uint64_t value, const void* data,
                        std::size_t bytes) noexcept {
  using namespace hotscope::detail;
  Ring* ring = current_ring();
  const std::uint64_t payload =
      (bytes + HOTSCOPE_PAYLOAD_BYTES_PER_RECORD - 1) / HOTSCOPE_PAYLOAD_BYTES_PER_RECORD;
  const std::uint64_t head = ring->head.load(std::memory_order_relaxed);
  if (!has_room(ring, head, 1 + payload)) {
    count_dropped(ring, 1 + payload);
    return;
  }
  const std::uint64_t mask = ring->capacity - 1;
  hotscope_record& header = ring->slots[head & mask];
  header.ticks = now();
  header.ref = 0;
  header.value = value;
  header.kind = kind;
  header.payload_records = static_cast<std::uint32_t>(payload);
  for (std::uint64_t p = 0; p < payload; ++p) {
    char* slot = reinterpret_cast<char*>(&ring->slots[(head + 1 + p) & mask]);
    const std::size_t offset = p * HOTSCOPE_PAYLOAD_BYTES_PER_RECORD;
    const std::size_t chunk =
        std::min<std::size_t>(HOTSCOPE_PAYLOAD_BYTES_PER_RECORD, bytes - offset);
    std::memcpy(slot, static_cast<const char*>(data) + offset, chunk);
    std::memset(slot + chunk, 0, HOTSCOPE_PAYLOAD_BYTES_PER_RECORD - chunk);
  }
  ring->head.store(head + 1 + payload, std::memory_order_release);
}

// Runtime text goes into the ring itself, cut at HOTSCOPE_INLINE_TEXT_MAX bytes.
void write_inline(std::uint32_t kind, std::string_view text) noexcept {
  const std::size_t length = std::min<std::size_t>(text.size(), HOTSCOPE_INLINE_TEXT_MAX);
  write_with_payload(kind, length, text.data(), length);
}

} // namespace

void hotscope::detail::write_stack(const std::uint64_t* frames, std::uint32_t count) noexcept {
  count = std::min<std::uint32_t>(count, HOTSCOPE_STACK_FRAMES_MAX);
  write_with_payload(HOTSCOPE_RECORD_STACK, count, frames, count * sizeof(std::uint64_t));
}

void hotscope::detail::message_copy(std::string_view text) noexcept {
  write_inline(HOTSCOPE_RECORD_MESSAGE_INLINE, text);
}

void hotscope::detail::set_thread_name(std::string_view name) noexcept {
  write_inline(HOTSCOPE_RECORD_THREAD_NAME, name);
  // The OS name too (top, perf, gdb and /proc then agree), cut to its 15 bytes, unless the program
  // named the thread itself: a thread it has not named still has its creator's name, which is
  // the program's. Never the main thread's: that is the process's name (ps, pidof, hotscope -n).
  // Two prctl calls, once per named thread.
  if (syscall(SYS_gettid) == getpid()) {
    return;
  }
  char current[16] = {};
  prctl(PR_GET_NAME, current);
  char program[16] = {};
  std::strncpy(program, program_invocation_short_name, sizeof program - 1);
  if (std::strcmp(current, program) != 0) {
    return;
  }
  char os_name[16] = {};
  std::memcpy(os_name, name.data(), std::min(name.size(), sizeof os_name - 1));
  prctl(PR_SET_NAME, os_name);
}
