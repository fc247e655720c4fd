// hotscope: the one header users include.
//
//   HOTSCOPE_FUNCTION();                  time the enclosing function
//   HOTSCOPE_SCOPE("parse");              time the enclosing block under a literal name
//   HOTSCOPE_MESSAGE("cache miss");       literal: zero copy; runtime text: copied, cut at
//                                         HOTSCOPE_INLINE_TEXT_MAX (128) bytes
//   HOTSCOPE_THREAD_NAME("worker-1");     name the calling thread (copied, same limit), and its
//                                         OS name unless the program set one (not main's)
//   HOTSCOPE_COUNTER("queue_depth", n);   sample an integer series (literal name)
//   HOTSCOPE_QUEUE_PUSH("jobs", id);      item `id` (any integer or pointer) enters queue "jobs"
//   HOTSCOPE_QUEUE_POP("jobs", id);       ... and leaves it: the time between is its wait
//   HOTSCOPE_QUEUE_CAPACITY("jobs", n);   the queue's bound, once (optional)
//   hotscope::Queue jobs{name};           a queue named at run time (interned once, here):
//   jobs.push(id); jobs.pop(id);          the same records as the macros; jobs.set_capacity(n)
//
// The calls for the whole process (the heap profile on demand, the live agent) are in
// <hotscope/control.hpp>.
//
// Unless HOTSCOPE_ENABLED is defined to 1 (the hotscope::hotscope CMake target does that when
// the HOTSCOPE_ENABLE option is ON), every macro expands to nothing and no library is needed.
#ifndef HOTSCOPE_HOTSCOPE_HPP
#define HOTSCOPE_HOTSCOPE_HPP

#include <hotscope/enabled.h>
#include <hotscope/record.h>

// Most distinct queue names hotscope::Queue keeps; later new names share one queue.
#define HOTSCOPE_QUEUE_NAMES_MAX 1024

#define HOTSCOPE_CONCAT_INNER(a, b) a##b
#define HOTSCOPE_CONCAT(a, b) HOTSCOPE_CONCAT_INNER(a, b)

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace hotscope {
namespace detail {

// The literal queue macros keep their name by address for ever: a string literal, or a constant
// array by name. Anything else (std::string, a const char* variable) is refused here, in both
// builds, so a program does not compile only when hotscope is compiled out.
template <typename Name> struct is_literal_name : std::false_type {};
template <std::size_t N> struct is_literal_name<const char (&)[N]> : std::true_type {};
template <std::size_t N> struct is_literal_name<const char[N]> : std::true_type {};
template <typename Name> struct LiteralQueueName {
  static_assert(is_literal_name<Name>::value,
                "HOTSCOPE_QUEUE_PUSH/_POP/_CAPACITY take a string literal as the queue's name; for "
                "a name known only at run time, use hotscope::Queue: "
                "`hotscope::Queue jobs{name}; jobs.push(item); jobs.pop(item);`");
};

} // namespace detail
} // namespace hotscope

#if HOTSCOPE_ENABLED

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace hotscope {
namespace detail {

// The record writers are never instrumented themselves (docs/instrument.md): a compiler's entry
// hook in them would write its record between their read of the ring's head and their write.
#define HOTSCOPE_NOT_INSTRUMENTED __attribute__((no_instrument_function))

// One thread's single-producer ring. The producer (the measured thread) owns `head`,
// `cached_tail` and `reserved_ends`; the collector owns `tail`. Nothing here is ever locked.
struct Ring {
  alignas(64) std::atomic<std::uint64_t> head{0};
  std::uint64_t cached_tail = 0;
  // Slots held back for the END records of open scopes, so a recorded BEGIN always gets its END.
  std::uint64_t reserved_ends = 0;
  // How full the ring may look (from cached_tail) before the producer reads the real tail: the
  // wake mark (a quarter of the ring) until it passes it, then the capacity. 0 before the first
  // record.
  std::uint64_t fast_limit = 0;
  std::atomic<std::uint64_t> dropped{0};
  hotscope_record* slots = nullptr;
  std::uint64_t capacity = 0; // a power of two, or 0 for a ring that drops everything
  // The last task id this thread handed out: each ring numbers from a range of its own.
  std::uint64_t task_ids = 0;
  alignas(64) std::atomic<std::uint64_t> tail{0};
};

// Chosen once, before the first ring is handed out (see src/clock).
extern bool clock_is_tsc;
std::uint64_t fallback_ticks() noexcept;

// __thread rather than thread_local: always statically initialised, so no TLS wrapper call,
// and usable from C++17.
extern __thread Ring* tls_ring __attribute__((tls_model("initial-exec")));
Ring* register_thread() noexcept;
void message_copy(std::string_view text) noexcept;
void set_thread_name(std::string_view name) noexcept;

HOTSCOPE_NOT_INSTRUMENTED inline std::uint64_t now() noexcept {
#if defined(__x86_64__)
  if (__builtin_expect(clock_is_tsc, 1)) {
    return __rdtsc();
  }
#endif
  return fallback_ticks();
}

HOTSCOPE_NOT_INSTRUMENTED inline Ring* current_ring() noexcept {
  Ring* ring = tls_ring;
  if (__builtin_expect(ring == nullptr, 0)) {
    ring = register_thread();
  }
  return ring;
}

// Reads the real tail; when the ring is past its wake mark, wakes the collector (once per
// crossing, a futex wake) so it drains before the ring fills. Out of line: rarely taken.
bool has_room_slow(Ring* ring, std::uint64_t head, std::uint64_t needed) noexcept;

// True when `needed` more records fit beside the slots reserved for pending ENDs.
HOTSCOPE_NOT_INSTRUMENTED inline bool has_room(Ring* ring, std::uint64_t head,
                                               std::uint64_t needed) noexcept {
  if (__builtin_expect(head - ring->cached_tail + ring->reserved_ends + needed <= ring->fast_limit,
                       1)) {
    return true;
  }
  return has_room_slow(ring, head, needed);
}

// Only the owning thread writes `dropped`, so a relaxed load+store is an exact count.
HOTSCOPE_NOT_INSTRUMENTED inline void count_dropped(Ring* ring, std::uint64_t records) noexcept {
  ring->dropped.store(ring->dropped.load(std::memory_order_relaxed) + records,
                      std::memory_order_relaxed);
}

HOTSCOPE_NOT_INSTRUMENTED inline void put(Ring* ring, std::uint64_t head, std::uint64_t ticks,
                                          std::uint64_t ref, std::uint64_t value,
                                          std::uint32_t kind) noexcept {
  hotscope_record& record = ring->slots[head & (ring->capacity - 1)];
  record.ticks = ticks;
  record.ref = ref;
  record.value = value;
  record.kind = kind;
  record.payload_records = 0;
  ring->head.store(head + 1, std::memory_order_release);
}

// Opens a slice on this thread (a scope's BEGIN, a task's RESUME) only if the record that closes
// it fits too, and holds that slot. Returns the ring, or nullptr when the record was dropped.
HOTSCOPE_NOT_INSTRUMENTED inline Ring* open_slice(std::uint64_t ref, std::uint64_t value,
                                                  std::uint32_t kind) noexcept {
  Ring* ring = current_ring();
  const std::uint64_t head = ring->head.load(std::memory_order_relaxed);
  if (__builtin_expect(!has_room(ring, head, 2), 0)) {
    count_dropped(ring, 1);
    return nullptr;
  }
  ++ring->reserved_ends;
  put(ring, head, now(), ref, value, kind);
  return ring;
}

// Closes what open_slice opened, on the same thread, into the slot it held.
HOTSCOPE_NOT_INSTRUMENTED inline void
close_slice(Ring* ring, std::uint64_t ref, std::uint64_t value, std::uint32_t kind) noexcept {
  const std::uint64_t ticks = now();
  --ring->reserved_ends;
  put(ring, ring->head.load(std::memory_order_relaxed), ticks, ref, value, kind);
}

// The calling function's stack pointer, which places a scope among the native frames of a CPU
// sample (docs/cpu.md). One register move; always inlined, so that even unoptimized, it is the
// stack pointer of the function that opens the scope.
[[gnu::always_inline]] HOTSCOPE_NOT_INSTRUMENTED inline std::uint64_t stack_pointer() noexcept {
#if defined(__x86_64__)
  std::uint64_t sp;
  asm("mov %%rsp, %0" : "=r"(sp));
  return sp;
#else
  return reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
#endif
}

// Returns the ring the BEGIN went into, or nullptr when it was dropped. `stack_address`: the
// stack pointer of the function that opens the scope.
HOTSCOPE_NOT_INSTRUMENTED inline Ring* begin_scope(const hotscope_source_location* location,
                                                   std::uint64_t stack_address) noexcept {
  return open_slice(reinterpret_cast<std::uintptr_t>(location), stack_address,
                    HOTSCOPE_RECORD_BEGIN);
}

HOTSCOPE_NOT_INSTRUMENTED inline void end_scope(Ring* ring,
                                                const hotscope_source_location* location) noexcept {
  close_slice(ring, reinterpret_cast<std::uintptr_t>(location), 0, HOTSCOPE_RECORD_END);
}

HOTSCOPE_NOT_INSTRUMENTED inline void write_single_at(std::uint64_t ticks, std::uint64_t ref,
                                                      std::uint64_t value,
                                                      std::uint32_t kind) noexcept {
  Ring* ring = current_ring();
  const std::uint64_t head = ring->head.load(std::memory_order_relaxed);
  if (__builtin_expect(!has_room(ring, head, 1), 0)) {
    count_dropped(ring, 1);
    return;
  }
  put(ring, head, ticks, ref, value, kind);
}

HOTSCOPE_NOT_INSTRUMENTED inline void write_single(std::uint64_t ref, std::uint64_t value,
                                                   std::uint32_t kind) noexcept {
  write_single_at(now(), ref, value, kind);
}

// A STACK record: `count` return addresses (at most HOTSCOPE_STACK_FRAMES_MAX), innermost first,
// 4 to a payload record. Written whole or counted as dropped, beside the slots reserved for ENDs.
// Out of line (src/trace/collector.cpp), as the inline texts' writer it shares.
void write_stack(const std::uint64_t* frames, std::uint32_t count) noexcept;

// One block of `bytes` allocated by the calling thread, attributed by the collector to the
// scopes open on this thread. Called from inside malloc/operator new hooks, so it never
// registers a ring, allocates, locks or reads the clock (its one syscall is has_room_slow's
// futex wake, once per wake-mark crossing, which neither locks nor allocates): a thread without a
// ring (no record yet, or past its exit handler) has no open scope to attribute to, and its
// allocation is not recorded. It respects the slots reserved for pending ENDs like any record,
// and a full ring counts it as dropped. The record carries no timestamp (ticks = 0).
HOTSCOPE_NOT_INSTRUMENTED inline void record_allocation(std::size_t bytes) noexcept {
  Ring* ring = tls_ring;
  if (ring == nullptr) {
    return;
  }
  const std::uint64_t head = ring->head.load(std::memory_order_relaxed);
  if (__builtin_expect(!has_room(ring, head, 1), 0)) {
    count_dropped(ring, 1);
    return;
  }
  put(ring, head, 0, 0, bytes, HOTSCOPE_RECORD_ALLOCATION);
}

class Scope {
public:
  // Always inlined: stack_pointer() is then the enclosing function's.
  [[gnu::always_inline]] HOTSCOPE_NOT_INSTRUMENTED explicit Scope(
      const hotscope_source_location* location) noexcept
      : location_(location), ring_(begin_scope(location, stack_pointer())) {}
  HOTSCOPE_NOT_INSTRUMENTED ~Scope() {
    if (ring_ != nullptr) {
      end_scope(ring_, location_);
    } else {
      count_dropped(tls_ring, 1); // the END of a dropped BEGIN is dropped too
    }
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

private:
  const hotscope_source_location* location_;
  Ring* ring_;
};

// `is_literal` comes from __builtin_constant_p at the call site: string literals are kept by
// address, anything else is copied into the ring.
HOTSCOPE_NOT_INSTRUMENTED inline void message(bool is_literal, const char* text) noexcept {
  if (is_literal && text != nullptr) {
    write_single(reinterpret_cast<std::uintptr_t>(text), 0, HOTSCOPE_RECORD_MESSAGE_STATIC);
  } else {
    message_copy(text != nullptr ? std::string_view(text) : std::string_view("(null)"));
  }
}
HOTSCOPE_NOT_INSTRUMENTED inline void message(bool, std::string_view text) noexcept {
  message_copy(text);
}

HOTSCOPE_NOT_INSTRUMENTED inline void counter(const hotscope_source_location* location,
                                              std::int64_t value) noexcept {
  write_single(reinterpret_cast<std::uintptr_t>(location), static_cast<std::uint64_t>(value),
               HOTSCOPE_RECORD_COUNTER);
}

// A queue item's id: any integer, or a pointer's address.
HOTSCOPE_NOT_INSTRUMENTED inline std::uint64_t queue_item(const volatile void* item) noexcept {
  return reinterpret_cast<std::uintptr_t>(item);
}
template <typename T,
          typename = std::enable_if_t<std::is_integral_v<T> || std::is_enum_v<T>, std::uint64_t>>
HOTSCOPE_NOT_INSTRUMENTED inline std::uint64_t queue_item(T item) noexcept {
  return static_cast<std::uint64_t>(item);
}

// Queue records are single records, like counters: a push or a pop costs what a counter does.
HOTSCOPE_NOT_INSTRUMENTED inline void queue_event(const hotscope_source_location* queue,
                                                  std::uint64_t value,
                                                  std::uint32_t kind) noexcept {
  write_single(reinterpret_cast<std::uintptr_t>(queue), value, kind);
}

// The name when `Name` is a literal's (`is_literal_name`), else nullptr: LiteralQueueName has
// already said why it does not compile, and no second error follows.
template <typename Name>
HOTSCOPE_NOT_INSTRUMENTED constexpr const char* literal_name(const Name& name) noexcept {
  if constexpr (is_literal_name<const Name&>::value) {
    return name;
  } else {
    return nullptr;
  }
}

// The location naming the queue `name` (cut at HOTSCOPE_INLINE_TEXT_MAX bytes): the same one for
// the same name, never freed. Locks and copies, once per call: src/trace/run_time_names.cpp.
const hotscope_source_location* queue_location(std::string_view name) noexcept;

// Tasks (hotscope/task.hpp, hotscope/asio_handler_tracking.hpp). A task's records name it by
// its location and carry its id; its running slices open and close like scopes.
HOTSCOPE_NOT_INSTRUMENTED inline std::uint64_t new_task_id() noexcept {
  return ++current_ring()->task_ids;
}
HOTSCOPE_NOT_INSTRUMENTED inline void task_event(const hotscope_source_location* task,
                                                 std::uint64_t id, std::uint32_t kind,
                                                 std::uint64_t ticks) noexcept {
  write_single_at(ticks, reinterpret_cast<std::uintptr_t>(task), id, kind);
}
HOTSCOPE_NOT_INSTRUMENTED inline Ring* task_resume(const hotscope_source_location* task,
                                                   std::uint64_t id) noexcept {
  return open_slice(reinterpret_cast<std::uintptr_t>(task), id, HOTSCOPE_RECORD_TASK_RESUME);
}
// `kind`: HOTSCOPE_RECORD_TASK_SUSPEND or _COMPLETE. `ring` is task_resume's, on this thread.
HOTSCOPE_NOT_INSTRUMENTED inline void task_close(Ring* ring, const hotscope_source_location* task,
                                                 std::uint64_t id, std::uint32_t kind) noexcept {
  if (ring == nullptr) {
    count_dropped(tls_ring, 1); // the close of a dropped resume is dropped too
    return;
  }
  close_slice(ring, reinterpret_cast<std::uintptr_t>(task), id, kind);
}

} // namespace detail

// A queue named at run time (docs/formats-output.md, queues). The constructor interns the name
// once; push, pop and set_capacity then write the records HOTSCOPE_QUEUE_PUSH, _POP and _CAPACITY
// write, at the same cost: no lock, allocation or copy. Queues of the same name are one queue,
// whichever way they are named. Keep the object rather than constructing one per operation.
class Queue {
public:
  HOTSCOPE_NOT_INSTRUMENTED explicit Queue(std::string_view name) noexcept
      : location_(detail::queue_location(name)) {}

  template <typename Item> HOTSCOPE_NOT_INSTRUMENTED void push(Item item) const noexcept {
    detail::queue_event(location_, detail::queue_item(item), HOTSCOPE_RECORD_QUEUE_PUSH);
  }
  template <typename Item> HOTSCOPE_NOT_INSTRUMENTED void pop(Item item) const noexcept {
    detail::queue_event(location_, detail::queue_item(item), HOTSCOPE_RECORD_QUEUE_POP);
  }
  HOTSCOPE_NOT_INSTRUMENTED void set_capacity(std::uint64_t capacity) const noexcept {
    detail::queue_event(location_, capacity, HOTSCOPE_RECORD_QUEUE_CAPACITY);
  }

private:
  const hotscope_source_location* location_;
};

} // namespace hotscope

#define HOTSCOPE_LOCATION_VAR(id) HOTSCOPE_CONCAT(hotscope_location_, id)
#define HOTSCOPE_SCOPE_VAR(id) HOTSCOPE_CONCAT(hotscope_scope_, id)

#define HOTSCOPE_SCOPE_WITH_ID(id, name_text, flags)                                               \
  static constexpr hotscope_source_location HOTSCOPE_LOCATION_VAR(id){name_text, __FILE__,         \
                                                                      __LINE__, flags};            \
  const ::hotscope::detail::Scope HOTSCOPE_SCOPE_VAR(id)(&HOTSCOPE_LOCATION_VAR(id))

#define HOTSCOPE_FUNCTION()                                                                        \
  HOTSCOPE_SCOPE_WITH_ID(__COUNTER__, __PRETTY_FUNCTION__, HOTSCOPE_LOCATION_FUNCTION_SIGNATURE)
// `"" name ""` accepts only string literals: names are never copied.
#define HOTSCOPE_SCOPE(name) HOTSCOPE_SCOPE_WITH_ID(__COUNTER__, "" name "", 0u)
#define HOTSCOPE_MESSAGE(text) ::hotscope::detail::message(__builtin_constant_p(text), text)
#define HOTSCOPE_THREAD_NAME(name) ::hotscope::detail::set_thread_name(name)
#define HOTSCOPE_COUNTER_WITH_ID(id, name, value)                                                  \
  do {                                                                                             \
    static constexpr hotscope_source_location HOTSCOPE_LOCATION_VAR(id){"" name "", __FILE__,      \
                                                                        __LINE__, 0u};             \
    ::hotscope::detail::counter(&HOTSCOPE_LOCATION_VAR(id), static_cast<std::int64_t>(value));     \
  } while (0)
#define HOTSCOPE_COUNTER(name, value) HOTSCOPE_COUNTER_WITH_ID(__COUNTER__, name, value)
// The queue is named by a literal, like a scope; every place that names it feeds one queue.
// `static constexpr` also refuses a constant array that does not live for ever.
#define HOTSCOPE_QUEUE_WITH_ID(id, kind, name, value)                                              \
  do {                                                                                             \
    static_cast<void>(sizeof(::hotscope::detail::LiteralQueueName<decltype(name)>));               \
    static constexpr hotscope_source_location HOTSCOPE_LOCATION_VAR(id){                           \
        ::hotscope::detail::literal_name(name), __FILE__, __LINE__, 0u};                           \
    ::hotscope::detail::queue_event(&HOTSCOPE_LOCATION_VAR(id), value, kind);                      \
  } while (0)
#define HOTSCOPE_QUEUE_PUSH(name, item)                                                            \
  HOTSCOPE_QUEUE_WITH_ID(__COUNTER__, HOTSCOPE_RECORD_QUEUE_PUSH, name,                            \
                         ::hotscope::detail::queue_item(item))
#define HOTSCOPE_QUEUE_POP(name, item)                                                             \
  HOTSCOPE_QUEUE_WITH_ID(__COUNTER__, HOTSCOPE_RECORD_QUEUE_POP, name,                             \
                         ::hotscope::detail::queue_item(item))
#define HOTSCOPE_QUEUE_CAPACITY(name, capacity)                                                    \
  HOTSCOPE_QUEUE_WITH_ID(__COUNTER__, HOTSCOPE_RECORD_QUEUE_CAPACITY, name,                        \
                         static_cast<std::uint64_t>(capacity))

#else // !HOTSCOPE_ENABLED: nothing is evaluated; sizeof keeps arguments "used" for -Wunused.

namespace hotscope {
// Compiled out: nothing is kept and nothing is recorded. Always inlined, so even an unoptimised
// build holds no hotscope symbol.
class Queue {
public:
  [[gnu::always_inline]] constexpr explicit Queue(std::string_view) noexcept {}
  template <typename Item> [[gnu::always_inline]] void push(const Item&) const noexcept {}
  template <typename Item> [[gnu::always_inline]] void pop(const Item&) const noexcept {}
  [[gnu::always_inline]] void set_capacity(std::uint64_t) const noexcept {}
};
} // namespace hotscope

#define HOTSCOPE_FUNCTION() static_cast<void>(0)
#define HOTSCOPE_SCOPE(name) static_cast<void>(sizeof(name))
#define HOTSCOPE_MESSAGE(text) static_cast<void>(sizeof(text))
#define HOTSCOPE_THREAD_NAME(name) static_cast<void>(sizeof(name))
#define HOTSCOPE_COUNTER(name, value) static_cast<void>(sizeof(name) + sizeof(value))
#define HOTSCOPE_QUEUE_UNUSED(name, value)                                                         \
  static_cast<void>(sizeof(::hotscope::detail::LiteralQueueName<decltype(name)>) + sizeof(value))
#define HOTSCOPE_QUEUE_PUSH(name, item) HOTSCOPE_QUEUE_UNUSED(name, item)
#define HOTSCOPE_QUEUE_POP(name, item) HOTSCOPE_QUEUE_UNUSED(name, item)
#define HOTSCOPE_QUEUE_CAPACITY(name, capacity) HOTSCOPE_QUEUE_UNUSED(name, capacity)

#endif // HOTSCOPE_ENABLED

#endif // HOTSCOPE_HOTSCOPE_HPP
