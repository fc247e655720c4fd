/* hotscope record format: the fixed-size binary records a producer writes and a
 * collector reads. Plain freestanding C (only <stdint.h>), shared by the host
 * library and by guests; nothing in a record is trusted by the reader. */
#ifndef HOTSCOPE_RECORD_H
#define HOTSCOPE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#define HOTSCOPE_RECORD_VERSION 1u

/* Record kinds. Values are part of the format: never renumber. */
enum hotscope_record_kind {
  HOTSCOPE_RECORD_BEGIN = 1,           /* ref: source location; a scope opens; value: the stack
                                          pointer where it opened (0: unknown) */
  HOTSCOPE_RECORD_END = 2,             /* ref: source location; the innermost scope closes */
  HOTSCOPE_RECORD_MESSAGE_STATIC = 3,  /* ref: address of a static NUL-terminated text */
  HOTSCOPE_RECORD_MESSAGE_INLINE = 4,  /* value: text length; payload records follow */
  HOTSCOPE_RECORD_COUNTER = 5,         /* ref: source location naming the counter; value: int64 */
  HOTSCOPE_RECORD_THREAD_NAME = 6,     /* value: text length; payload records follow */
  HOTSCOPE_RECORD_ALLOCATION = 7,      /* value: bytes of one block allocated by this thread */
  HOTSCOPE_RECORD_STACK = 8,           /* value: frame count; payload records hold the return
                                          addresses (uint64, innermost first, 4 per record); on a
                                          native thread, the stack of the lock record before it */
  HOTSCOPE_RECORD_QUEUE_PUSH = 9,      /* ref: source location naming the queue; value: item id */
  HOTSCOPE_RECORD_QUEUE_POP = 10,      /* ref: source location naming the queue; value: item id */
  HOTSCOPE_RECORD_QUEUE_CAPACITY = 11, /* ref: source location naming the queue; value: capacity */
  /* Tasks (coroutines, Asio operations): ref: source location naming the task; value: task id,
   * unique in the process. A task's records may come from several threads. */
  HOTSCOPE_RECORD_TASK_CREATE = 12,   /* ticks: when the task was created (may precede the
                                         records before it on this thread) */
  HOTSCOPE_RECORD_TASK_RESUME = 13,   /* a running slice of the task opens on this thread */
  HOTSCOPE_RECORD_TASK_SUSPEND = 14,  /* the slice closes; the task waits to be resumed */
  HOTSCOPE_RECORD_TASK_COMPLETE = 15, /* the slice closes and the task is finished */
  HOTSCOPE_RECORD_TASK_DESTROY = 16,  /* the task was destroyed unfinished, while suspended */
  /* A guest's heap (HOTSCOPE_GUEST_ALLOC, _FREE, _REALLOC). Payload: uint64 slots, 4 per record;
   * a realloc's first slot is the old block's address; then the return addresses of the calling
   * frames, innermost first, up to HOTSCOPE_STACK_FRAMES_MAX; unused slots are 0. */
  HOTSCOPE_RECORD_HEAP_ALLOC = 17,   /* ref: the block's address; value: its size in bytes */
  HOTSCOPE_RECORD_HEAP_FREE = 18,    /* ref: the block's address */
  HOTSCOPE_RECORD_HEAP_REALLOC = 19, /* ref: the new block's address (0: the call failed); value:
                                        its size in bytes */
  /* Locks (hotscope::Lockable, the pthread interposer; docs/locks.md). ref: the source location
   * naming the lock, or for a lock named by its address (an interposed pthread lock)
   * HOTSCOPE_LOCK_REF_PTHREAD_MUTEX or _RWLOCK; value: the lock's address, which tells one lock
   * from another. Every LOCK_ACQUIRE(_SHARED) recorded gets its LOCK_RELEASE. */
  HOTSCOPE_RECORD_LOCK_WAIT = 20,           /* the thread begins to wait for the lock */
  HOTSCOPE_RECORD_LOCK_ACQUIRE = 21,        /* the thread holds it, alone; its wait (if any) ends */
  HOTSCOPE_RECORD_LOCK_ACQUIRE_SHARED = 22, /* the thread holds it, shared; its wait ends */
  HOTSCOPE_RECORD_LOCK_RELEASE = 23,        /* the thread gives back one hold of it */
  HOTSCOPE_RECORD_LOCK_TRY_FAIL = 24, /* a try-lock failed, or a timed wait gave up (ends it) */
  HOTSCOPE_RECORD_LOCK_HOLDER = 25,   /* ref: the OS thread id the lock names as its holder when
                                         the wait before it began (0: unknown); value: the lock */
  HOTSCOPE_RECORD_LOCK_ORDER = 26, /* ref: the address of a lock the thread holds; value: the lock
                                      it acquires while holding it */
  /* Whole-program instrumentation (docs/instrument.md): a compiler-inserted hook's scope, named by
   * the function's code address, not by a location. */
  HOTSCOPE_RECORD_FUNCTION_BEGIN = 27, /* ref: the function's entry address; value: as BEGIN's */
  HOTSCOPE_RECORD_FUNCTION_END = 28    /* ref: the function's entry address; closes as END does */
};
/* The highest kind: a new kind takes the next value and raises this. */
#define HOTSCOPE_RECORD_KIND_LAST 28u

/* Longest inline text (runtime messages, thread names); longer text is cut. */
#define HOTSCOPE_INLINE_TEXT_MAX 128u

/* One record: 32 bytes, naturally aligned, little-endian on every target we support. */
struct hotscope_record {
  uint64_t ticks; /* raw timestamp of the producer's clock (0 in an ALLOCATION record, which is
                     attributed to the scopes open, not to a time) */
  uint64_t ref;   /* per kind, as listed above: a source location's or static text's address, a
                     guest heap block's address; 0 if unused */
  uint64_t value; /* per kind: a scope's stack pointer, a counter's value, an inline text's
                     length, bytes allocated, a frame count, a queue item's id or capacity, a
                     task's id, a block's size */
  uint32_t kind;  /* enum hotscope_record_kind */
  uint32_t payload_records; /* records of payload that follow this one: inline text bytes, return
                               addresses or guest heap slots (4 uint64 per record) */
};

#define HOTSCOPE_RECORD_SIZE 32u

/* Most return addresses one STACK record carries. */
#define HOTSCOPE_STACK_FRAMES_MAX 32u
#define HOTSCOPE_PAYLOAD_BYTES_PER_RECORD HOTSCOPE_RECORD_SIZE
#define HOTSCOPE_INLINE_PAYLOAD_RECORDS_MAX                                                        \
  ((HOTSCOPE_INLINE_TEXT_MAX + HOTSCOPE_RECORD_SIZE - 1u) / HOTSCOPE_RECORD_SIZE)

/* Flags of a source location. */
#define HOTSCOPE_LOCATION_FUNCTION_SIGNATURE 1u /* name is a compiler signature to shorten */
#define HOTSCOPE_LOCATION_ASIO_OPERATION 2u     /* a task that is an Asio operation */
/* The ref of a lock record for a lock with no location: never a location's address. */
#define HOTSCOPE_LOCK_REF_PTHREAD_MUTEX 1u
#define HOTSCOPE_LOCK_REF_PTHREAD_RWLOCK 2u
/* A lock's kind, in bits 8 to 11 of its location's flags (0: a plain mutex). */
#define HOTSCOPE_LOCATION_LOCK_KIND_SHIFT 8u
#define HOTSCOPE_LOCATION_LOCK_KIND_MASK (0xfu << HOTSCOPE_LOCATION_LOCK_KIND_SHIFT)
enum hotscope_lock_kind {
  HOTSCOPE_LOCK_MUTEX = 0,
  HOTSCOPE_LOCK_RECURSIVE = 1,
  HOTSCOPE_LOCK_SHARED = 2,
  HOTSCOPE_LOCK_TIMED = 3,
  HOTSCOPE_LOCK_RECURSIVE_TIMED = 4,
  HOTSCOPE_LOCK_SHARED_TIMED = 5
};

/* Static description of one instrumented place, referenced by address from records.
 * In a guest the pointers are guest addresses; the host reads them bounds-checked. */
struct hotscope_source_location {
  const char* name;
  const char* file;
  uint32_t line;
  uint32_t flags;
};

#ifdef __cplusplus
#define HOTSCOPE_STATIC_ASSERT static_assert
#define HOTSCOPE_ALIGNOF alignof
#else
#define HOTSCOPE_STATIC_ASSERT _Static_assert
#define HOTSCOPE_ALIGNOF _Alignof
#endif

HOTSCOPE_STATIC_ASSERT(sizeof(void*) == 8, "hotscope records assume a 64-bit (LP64) target");
HOTSCOPE_STATIC_ASSERT(sizeof(struct hotscope_record) == HOTSCOPE_RECORD_SIZE,
                       "hotscope_record must be 32 bytes");
HOTSCOPE_STATIC_ASSERT(HOTSCOPE_ALIGNOF(struct hotscope_record) == 8, "hotscope_record alignment");
HOTSCOPE_STATIC_ASSERT(offsetof(struct hotscope_record, ticks) == 0, "record layout");
HOTSCOPE_STATIC_ASSERT(offsetof(struct hotscope_record, ref) == 8, "record layout");
HOTSCOPE_STATIC_ASSERT(offsetof(struct hotscope_record, value) == 16, "record layout");
HOTSCOPE_STATIC_ASSERT(offsetof(struct hotscope_record, kind) == 24, "record layout");
HOTSCOPE_STATIC_ASSERT(offsetof(struct hotscope_record, payload_records) == 28, "record layout");
HOTSCOPE_STATIC_ASSERT(sizeof(struct hotscope_source_location) == 24,
                       "hotscope_source_location must be 24 bytes");
HOTSCOPE_STATIC_ASSERT(offsetof(struct hotscope_source_location, line) == 16, "location layout");

#endif /* HOTSCOPE_RECORD_H */
