/* hotscope guest runtime (docs/guest.md, "Guest runtime"): the producer side of guest tracing,
 * for code built with -ffreestanding -nostdlib, in C or C++. No libc, no allocation.
 *
 * A guest defines, before including this header, exactly one transport:
 *   HOTSCOPE_GUEST_VM       a KVM micro-VM: flushes are an `out` to HOTSCOPE_GUEST_PORT_FLUSH
 *   HOTSCOPE_GUEST_PROCESS  a Linux child process: flushes go through a shared memfd channel
 * and exactly one of its translation units also defines HOTSCOPE_GUEST_IMPLEMENTATION, which
 * emits the record buffer, the entry point (_start) and the flush functions.
 *
 * The guest provides two functions the entry point calls:
 *   void hotscope_guest_init(void);                  once, at the host's first entry
 *   uint64_t hotscope_guest_dispatch(uint64_t arg);  each time the host calls the guest
 *
 * The macros have the host's names (include/hotscope/hotscope.hpp), so instrumented code reads
 * the same on both sides; a translation unit includes one header or the other, never both:
 *   HOTSCOPE_FUNCTION();               time the enclosing function
 *   HOTSCOPE_SCOPE("parse");           time the enclosing block under a literal name
 *   HOTSCOPE_MESSAGE("cache miss");    literal: kept by address; runtime text: copied, cut at 128
 *   HOTSCOPE_COUNTER("depth", n);      sample an integer series
 *   HOTSCOPE_QUEUE_PUSH("jobs", id);   item `id` (an integer or a pointer) enters queue "jobs";
 *   HOTSCOPE_QUEUE_POP("jobs", id);    ... and leaves it; HOTSCOPE_QUEUE_CAPACITY("jobs", n)
 *   HOTSCOPE_STACK();                  the return addresses of the calling frames (frame pointers)
 * The guest's own allocator reports its blocks, each with the calling frames' return addresses,
 * for the host's heap profile of the guest (DHAT's accounting):
 *   HOTSCOPE_GUEST_ALLOC(ptr, size);   a block handed out
 *   HOTSCOPE_GUEST_FREE(ptr);          a block given back (a null pointer records nothing)
 *   HOTSCOPE_GUEST_REALLOC(old, new, size);  a block resized (and maybe moved); new 0: it failed
 * Scopes close through __attribute__((cleanup)), which GCC and Clang support in C and C++.
 *
 * Records go into a fixed buffer of HOTSCOPE_GUEST_CAPACITY records. It is handed to the host
 * when it is full and before every exit to the host (a host call, the return to the host), so
 * nothing is left behind. Timestamps are raw `rdtsc` reads; the host converts them. */
#ifndef HOTSCOPE_GUEST_H
#define HOTSCOPE_GUEST_H

#include "hotscope_guest_abi.h"

#if defined(HOTSCOPE_GUEST_VM) == defined(HOTSCOPE_GUEST_PROCESS)
#error "define exactly one of HOTSCOPE_GUEST_VM and HOTSCOPE_GUEST_PROCESS before hotscope_guest.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The buffer. ----------------------------------------------------------------------------- */

struct hotscope_guest_state {
  struct hotscope_record* records;
  uint32_t capacity;
  uint32_t count; /* records written since the last flush */
};
/* The host reads this symbol (by name, from the ELF) to find records left unflushed on return. */
extern struct hotscope_guest_state hotscope_guest_state;

void hotscope_guest_init(void);
uint64_t hotscope_guest_dispatch(uint64_t argument);

/* Hands the buffer to the host and empties it. */
void hotscope_guest_flush(void);
/* A host call: prints `length` bytes on the host's output (flushes first). */
void hotscope_guest_print(const char* text, uint64_t length);
/* A host call: runs the host's function number `function` (the embedder's
 * RunnerOptions::host_functions) with `argument` and returns its result (flushes first). */
uint64_t hotscope_guest_host_call(uint64_t function, uint64_t argument);
/* The raw exit behind hotscope_guest_flush(), for tests that send hostile batches. */
void hotscope_guest_transport_flush(uint64_t address, uint64_t count);
/* Records the calling frames' return addresses (HOTSCOPE_RECORD_STACK). */
void hotscope_guest_stack(void);
/* Records a heap event (HOTSCOPE_RECORD_HEAP_*) with the calling frames' return addresses. */
void hotscope_guest_heap(uint32_t kind, uint64_t address, uint64_t old_address, uint64_t size);

static inline uint64_t hotscope_guest_ticks(void) {
  uint32_t low, high;
  __asm__ volatile("rdtsc" : "=a"(low), "=d"(high));
  return ((uint64_t)high << 32) | low;
}

/* Room for `records` more (flushing first when the buffer cannot take them). */
static inline struct hotscope_record* hotscope_guest_reserve(uint32_t records) {
  struct hotscope_guest_state* state = &hotscope_guest_state;
  if (__builtin_expect(state->count + records > state->capacity, 0)) {
    hotscope_guest_flush();
  }
  struct hotscope_record* record = state->records + state->count;
  state->count += records;
  return record;
}

static inline void hotscope_guest_fill(struct hotscope_record* record, uint64_t ticks,
                                       const void* ref, uint64_t value, uint32_t kind) {
  record->ticks = ticks;
  record->ref = (uint64_t)(uintptr_t)ref;
  record->value = value;
  record->kind = kind;
  record->payload_records = 0;
}

/* Ticks are read before the reservation: a flush it triggers counts as time already spent. */
static inline void hotscope_guest_put(uint64_t ticks, const void* ref, uint64_t value,
                                      uint32_t kind) {
  hotscope_guest_fill(hotscope_guest_reserve(1), ticks, ref, value, kind);
}

/* A header record followed by `payload` payload records, which the caller fills. */
static inline void* hotscope_guest_put_with_payload(uint64_t value, uint32_t kind,
                                                    uint32_t payload) {
  const uint64_t ticks = hotscope_guest_ticks();
  struct hotscope_record* record = hotscope_guest_reserve(1u + payload);
  hotscope_guest_fill(record, ticks, 0, value, kind);
  record->payload_records = payload;
  return record + 1;
}

struct hotscope_guest_scope {
  const struct hotscope_source_location* location;
};

static inline struct hotscope_guest_scope
hotscope_guest_begin(const struct hotscope_source_location* location) {
  struct hotscope_guest_scope scope = {location};
  /* Reserved first: a flush, if any, happens before the scope starts. */
  struct hotscope_record* record = hotscope_guest_reserve(1);
  hotscope_guest_fill(record, hotscope_guest_ticks(), location, 0, HOTSCOPE_RECORD_BEGIN);
  return scope;
}

static inline void hotscope_guest_end(const struct hotscope_guest_scope* scope) {
  hotscope_guest_put(hotscope_guest_ticks(), scope->location, 0, HOTSCOPE_RECORD_END);
}

/* Runtime text: a header record and the bytes in payload records, cut at 128 bytes. */
static inline void hotscope_guest_message_copy(const char* text) {
  uint64_t length = 0;
  while (text[length] != '\0' && length < HOTSCOPE_INLINE_TEXT_MAX) {
    ++length;
  }
  const uint32_t payload = (uint32_t)((length + HOTSCOPE_RECORD_SIZE - 1u) / HOTSCOPE_RECORD_SIZE);
  unsigned char* bytes = (unsigned char*)hotscope_guest_put_with_payload(
      length, HOTSCOPE_RECORD_MESSAGE_INLINE, payload);
  for (uint64_t i = 0; i < (uint64_t)payload * HOTSCOPE_RECORD_SIZE; ++i) {
    bytes[i] = i < length ? (unsigned char)text[i] : 0u;
  }
}

static inline void hotscope_guest_message(int is_literal, const char* text) {
  if (is_literal) {
    hotscope_guest_put(hotscope_guest_ticks(), text, 0, HOTSCOPE_RECORD_MESSAGE_STATIC);
  } else {
    hotscope_guest_message_copy(text);
  }
}

#ifdef __cplusplus
}
#define HOTSCOPE_GUEST_FUNCTION_NAME __PRETTY_FUNCTION__
#define HOTSCOPE_GUEST_FUNCTION_FLAGS HOTSCOPE_LOCATION_FUNCTION_SIGNATURE
#else
#define HOTSCOPE_GUEST_FUNCTION_NAME __func__
#define HOTSCOPE_GUEST_FUNCTION_FLAGS 0u
#endif

#define HOTSCOPE_CONCAT_INNER(a, b) a##b
#define HOTSCOPE_CONCAT(a, b) HOTSCOPE_CONCAT_INNER(a, b)
#define HOTSCOPE_LOCATION_VAR(id) HOTSCOPE_CONCAT(hotscope_location_, id)
#define HOTSCOPE_SCOPE_VAR(id) HOTSCOPE_CONCAT(hotscope_scope_, id)

#define HOTSCOPE_SCOPE_WITH_ID(id, name_text, flags)                                               \
  static const struct hotscope_source_location HOTSCOPE_LOCATION_VAR(id) = {name_text, __FILE__,   \
                                                                            __LINE__, flags};      \
  __attribute__((cleanup(hotscope_guest_end))) const struct hotscope_guest_scope                   \
  HOTSCOPE_SCOPE_VAR(id) = hotscope_guest_begin(&HOTSCOPE_LOCATION_VAR(id))

#define HOTSCOPE_FUNCTION()                                                                        \
  HOTSCOPE_SCOPE_WITH_ID(__COUNTER__, HOTSCOPE_GUEST_FUNCTION_NAME, HOTSCOPE_GUEST_FUNCTION_FLAGS)
#define HOTSCOPE_SCOPE(name) HOTSCOPE_SCOPE_WITH_ID(__COUNTER__, "" name "", 0u)
#define HOTSCOPE_MESSAGE(text) hotscope_guest_message(__builtin_constant_p(text), (text))
#define HOTSCOPE_LOCATED_WITH_ID(id, kind, name, value)                                            \
  do {                                                                                             \
    static const struct hotscope_source_location HOTSCOPE_LOCATION_VAR(id) = {                     \
        "" name "", __FILE__, __LINE__, 0u};                                                       \
    hotscope_guest_put(hotscope_guest_ticks(), &HOTSCOPE_LOCATION_VAR(id), (uint64_t)(value),      \
                       kind);                                                                      \
  } while (0)
#define HOTSCOPE_COUNTER(name, value)                                                              \
  HOTSCOPE_LOCATED_WITH_ID(__COUNTER__, HOTSCOPE_RECORD_COUNTER, name, value)
#define HOTSCOPE_QUEUE_PUSH(name, item)                                                            \
  HOTSCOPE_LOCATED_WITH_ID(__COUNTER__, HOTSCOPE_RECORD_QUEUE_PUSH, name, (uintptr_t)(item))
#define HOTSCOPE_QUEUE_POP(name, item)                                                             \
  HOTSCOPE_LOCATED_WITH_ID(__COUNTER__, HOTSCOPE_RECORD_QUEUE_POP, name, (uintptr_t)(item))
#define HOTSCOPE_QUEUE_CAPACITY(name, capacity)                                                    \
  HOTSCOPE_LOCATED_WITH_ID(__COUNTER__, HOTSCOPE_RECORD_QUEUE_CAPACITY, name, capacity)
#define HOTSCOPE_STACK() hotscope_guest_stack()
#define HOTSCOPE_GUEST_ALLOC(ptr, size)                                                            \
  hotscope_guest_heap(HOTSCOPE_RECORD_HEAP_ALLOC, (uint64_t)(uintptr_t)(ptr), 0, (uint64_t)(size))
#define HOTSCOPE_GUEST_FREE(ptr)                                                                   \
  hotscope_guest_heap(HOTSCOPE_RECORD_HEAP_FREE, (uint64_t)(uintptr_t)(ptr), 0, 0)
#define HOTSCOPE_GUEST_REALLOC(old_ptr, new_ptr, size)                                             \
  hotscope_guest_heap(HOTSCOPE_RECORD_HEAP_REALLOC, (uint64_t)(uintptr_t)(new_ptr),                \
                      (uint64_t)(uintptr_t)(old_ptr), (uint64_t)(size))

/* ---- The implementation: in exactly one translation unit. ------------------------------------ */
#ifdef HOTSCOPE_GUEST_IMPLEMENTATION

#ifdef __cplusplus
extern "C" {
#endif

/* The compiler may call these even in freestanding code (struct copies, zeroing). The loops are
 * kept as loops: turned back into a call to memset they would call themselves. */
#define HOTSCOPE_GUEST_NO_BUILTIN                                                                  \
  __attribute__((weak, optimize("no-tree-loop-distribute-patterns")))
HOTSCOPE_GUEST_NO_BUILTIN void* memset(void* destination, int byte, size_t size) {
  unsigned char* out = (unsigned char*)destination;
  for (size_t i = 0; i < size; ++i) {
    out[i] = (unsigned char)byte;
  }
  return destination;
}
HOTSCOPE_GUEST_NO_BUILTIN void* memcpy(void* destination, const void* source, size_t size) {
  unsigned char* out = (unsigned char*)destination;
  const unsigned char* in = (const unsigned char*)source;
  for (size_t i = 0; i < size; ++i) {
    out[i] = in[i];
  }
  return destination;
}
HOTSCOPE_GUEST_NO_BUILTIN void* memmove(void* destination, const void* source, size_t size) {
  unsigned char* out = (unsigned char*)destination;
  const unsigned char* in = (const unsigned char*)source;
  if (out < in) {
    for (size_t i = 0; i < size; ++i) {
      out[i] = in[i];
    }
  } else {
    for (size_t i = size; i > 0; --i) {
      out[i - 1] = in[i - 1];
    }
  }
  return destination;
}
HOTSCOPE_GUEST_NO_BUILTIN int memcmp(const void* left, const void* right, size_t size) {
  const unsigned char* a = (const unsigned char*)left;
  const unsigned char* b = (const unsigned char*)right;
  for (size_t i = 0; i < size; ++i) {
    if (a[i] != b[i]) {
      return a[i] < b[i] ? -1 : 1;
    }
  }
  return 0;
}

/* The entry's work, shared by both transports: run the operation, then flush what is left. */
uint64_t hotscope_guest_entry(uint64_t op, uint64_t argument) {
  uint64_t result = 0;
  if (op == HOTSCOPE_GUEST_OP_INIT) {
    hotscope_guest_init();
  } else {
    result = hotscope_guest_dispatch(argument);
  }
  if (hotscope_guest_state.count != 0) {
    hotscope_guest_flush();
  }
  return result;
}

void hotscope_guest_flush(void) {
  hotscope_guest_transport_flush((uint64_t)(uintptr_t)hotscope_guest_state.records,
                                 hotscope_guest_state.count);
  hotscope_guest_state.count = 0;
}

/* Frame-pointer walk from `frame` (the caller's own frame): [rbp] = caller's rbp, [rbp + 8] =
 * return address. The entry point clears rbp, which ends the chain; a frame that does not move up
 * the stack ends it too. Returns the number of return addresses written to `frames`. */
static inline uint32_t hotscope_guest_walk(const uint64_t* frame, uint64_t* frames) {
  uint32_t count = 0;
  while (frame != 0 && count < HOTSCOPE_STACK_FRAMES_MAX) {
    const uint64_t return_address = frame[1];
    if (return_address == 0) {
      break;
    }
    frames[count++] = return_address;
    const uint64_t* next = (const uint64_t*)(uintptr_t)frame[0];
    if (next <= frame || ((uintptr_t)next & 7u) != 0 || next - frame > (1 << 17)) {
      break;
    }
    frame = next;
  }
  return count;
}

/* A record of `kind` whose payload is `count` uint64 slots, padded with 0 to whole records. */
static inline struct hotscope_record*
hotscope_guest_put_slots(uint32_t kind, uint64_t value, const uint64_t* slots, uint32_t count) {
  const uint32_t payload = (count + 3u) / 4u;
  uint64_t* out = (uint64_t*)hotscope_guest_put_with_payload(value, kind, payload);
  for (uint32_t i = 0; i < payload * 4u; ++i) {
    out[i] = i < count ? slots[i] : 0u;
  }
  return (struct hotscope_record*)out - 1;
}

__attribute__((noinline)) void hotscope_guest_stack(void) {
  uint64_t frames[HOTSCOPE_STACK_FRAMES_MAX];
  const uint32_t count = hotscope_guest_walk((const uint64_t*)__builtin_frame_address(0), frames);
  hotscope_guest_put_slots(HOTSCOPE_RECORD_STACK, count, frames, count);
}

/* Payload: a realloc's old address, then the stack. */
__attribute__((noinline)) void hotscope_guest_heap(uint32_t kind, uint64_t address,
                                                   uint64_t old_address, uint64_t size) {
  if (kind == HOTSCOPE_RECORD_HEAP_FREE && address == 0) {
    return; /* free(NULL) does nothing */
  }
  uint64_t slots[1 + HOTSCOPE_STACK_FRAMES_MAX];
  uint32_t count = 0;
  if (kind == HOTSCOPE_RECORD_HEAP_REALLOC) {
    slots[count++] = old_address;
  }
  count += hotscope_guest_walk((const uint64_t*)__builtin_frame_address(0), slots + count);
  hotscope_guest_put_slots(kind, size, slots, count)->ref = address;
}

#if defined(HOTSCOPE_GUEST_VM)

static struct hotscope_record hotscope_guest_records[HOTSCOPE_GUEST_CAPACITY]
    __attribute__((aligned(64)));
struct hotscope_guest_state hotscope_guest_state = {hotscope_guest_records, HOTSCOPE_GUEST_CAPACITY,
                                                    0};
unsigned char hotscope_guest_stack_area[64 * 1024] __attribute__((aligned(16), used));

void hotscope_guest_transport_flush(uint64_t address, uint64_t count) {
  __asm__ volatile("outb %%al, %[port]"
                   :
                   : [port] "i"(HOTSCOPE_GUEST_PORT_FLUSH), "a"(0), "D"(address), "S"(count)
                   : "memory");
}

void hotscope_guest_print(const char* text, uint64_t length) {
  if (hotscope_guest_state.count != 0) {
    hotscope_guest_flush();
  }
  __asm__ volatile("outb %%al, %[port]"
                   :
                   : [port] "i"(HOTSCOPE_GUEST_PORT_PRINT), "a"(0), "D"(text), "S"(length)
                   : "memory");
}

/* The host puts the result in rax before it resumes the guest. */
uint64_t hotscope_guest_host_call(uint64_t function, uint64_t argument) {
  if (hotscope_guest_state.count != 0) {
    hotscope_guest_flush();
  }
  uint64_t result = 0;
  __asm__ volatile("outb %%al, %[port]"
                   : "+a"(result)
                   : [port] "i"(HOTSCOPE_GUEST_PORT_HOST_CALL), "D"(function), "S"(argument)
                   : "memory");
  return result;
}

/* Every entry starts on a fresh stack with rbp = 0 (the end of the frame chain) and returns to
 * the host when the operation is done; the host sets rip, rdi and rsi before each entry. */
__asm__(".pushsection .text.hotscope_entry, \"ax\"\n"
        ".globl _start\n"
        ".type _start, @function\n"
        "_start:\n"
        "  lea hotscope_guest_stack_area+65536(%rip), %rsp\n"
        "  xor %ebp, %ebp\n"
        "  call hotscope_guest_entry\n"
        "  outb %al, $0xE2\n" /* HOTSCOPE_GUEST_PORT_RETURN, rax = the result */
        "  ud2\n"
        ".size _start, . - _start\n"
        ".popsection\n");

#else /* HOTSCOPE_GUEST_PROCESS */

struct hotscope_guest_state hotscope_guest_state = {0, 0, 0};
static volatile struct hotscope_guest_channel* hotscope_guest_channel_page;

static inline long hotscope_guest_syscall(long number, long a, long b, long c, long d, long e,
                                          long f) {
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  long result;
  __asm__ volatile("syscall"
                   : "=a"(result)
                   : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return result;
}

__attribute__((noreturn)) static void hotscope_guest_exit(int status) {
  for (;;) {
    hotscope_guest_syscall(231 /* exit_group */, status, 0, 0, 0, 0, 0);
  }
}

static void hotscope_guest_wake_host(void) {
  unsigned char byte = 1;
  if (hotscope_guest_syscall(1 /* write */, HOTSCOPE_GUEST_WAKE_FD, (long)&byte, 1, 0, 0, 0) != 1) {
    hotscope_guest_exit(1); /* the host is gone */
  }
}

static void hotscope_guest_wait_host(void) {
  unsigned char byte;
  if (hotscope_guest_syscall(0 /* read */, HOTSCOPE_GUEST_WAKE_FD, (long)&byte, 1, 0, 0, 0) != 1) {
    hotscope_guest_exit(0); /* the host closed the channel: done */
  }
}

static void hotscope_guest_request(uint64_t request, uint64_t arg0, uint64_t arg1) {
  hotscope_guest_channel_page->arg0 = arg0;
  hotscope_guest_channel_page->arg1 = arg1;
  hotscope_guest_channel_page->request = request;
  hotscope_guest_wake_host();
}

void hotscope_guest_transport_flush(uint64_t address, uint64_t count) {
  hotscope_guest_request(HOTSCOPE_GUEST_REQUEST_FLUSH, address, count);
  hotscope_guest_wait_host();
}

void hotscope_guest_print(const char* text, uint64_t length) {
  if (hotscope_guest_state.count != 0) {
    hotscope_guest_flush();
  }
  hotscope_guest_request(HOTSCOPE_GUEST_REQUEST_PRINT, (uint64_t)(uintptr_t)text, length);
  hotscope_guest_wait_host();
}

uint64_t hotscope_guest_host_call(uint64_t function, uint64_t argument) {
  if (hotscope_guest_state.count != 0) {
    hotscope_guest_flush();
  }
  hotscope_guest_request(HOTSCOPE_GUEST_REQUEST_HOST_CALL, function, argument);
  hotscope_guest_wait_host();
  return hotscope_guest_channel_page->reply;
}

/* Maps the channel, then serves the host's entries until it closes the socket. */
__attribute__((noreturn, used)) void hotscope_guest_process_main(void) {
  const long mapping = hotscope_guest_syscall(9 /* mmap */, 0, HOTSCOPE_GUEST_CHANNEL_BYTES,
                                              3 /* PROT_READ | PROT_WRITE */, 1 /* MAP_SHARED */,
                                              HOTSCOPE_GUEST_CHANNEL_FD, 0);
  if (mapping < 0 && mapping > -4096) {
    hotscope_guest_exit(2);
  }
  hotscope_guest_channel_page = (volatile struct hotscope_guest_channel*)mapping;
  hotscope_guest_state.records =
      (struct hotscope_record*)(uintptr_t)(mapping + HOTSCOPE_GUEST_RECORDS_OFFSET);
  hotscope_guest_state.capacity = HOTSCOPE_GUEST_CAPACITY;
  for (;;) {
    hotscope_guest_wait_host();
    const uint64_t result = hotscope_guest_entry(hotscope_guest_channel_page->op,
                                                 hotscope_guest_channel_page->argument);
    hotscope_guest_request(HOTSCOPE_GUEST_REQUEST_RETURN, result, 0);
  }
}

/* rbp = 0 ends the frame chain; the stack is 16-byte aligned at a call. */
__asm__(".pushsection .text.hotscope_entry, \"ax\"\n"
        ".globl _start\n"
        ".type _start, @function\n"
        "_start:\n"
        "  xor %ebp, %ebp\n"
        "  and $-16, %rsp\n"
        "  call hotscope_guest_process_main\n"
        "  hlt\n"
        ".size _start, . - _start\n"
        ".popsection\n");

#endif /* transport */

#ifdef __cplusplus
}
#endif

#endif /* HOTSCOPE_GUEST_IMPLEMENTATION */

#endif /* HOTSCOPE_GUEST_H */
