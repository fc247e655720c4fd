/* Hostile guests for the tests (tests/guest): hotscope_guest_dispatch(mode) misbehaves as `mode`
 * says, so one image per transport covers every case. Mode 0 behaves, to show the host carries
 * on after a rejected batch; mode 13 behaves too, but writes more records in one call than the
 * buffer holds. */
#define HOTSCOPE_GUEST_IMPLEMENTATION
#include "hotscope_guest.h"

/* The KVM runner's default guest memory (RunnerOptions::memory_bytes). */
#define GUEST_MEMORY_BYTES (16ull << 20)

enum mode {
  MODE_BEHAVE = 0,
  MODE_COUNT_OVER_CAPACITY = 1,
  MODE_ADDRESS_OUTSIDE = 2,
  MODE_ADDRESS_STRADDLES_END = 3,
  MODE_FLOOD_FLUSHES = 4,
  MODE_RETURN_WITHOUT_FLUSH = 5,
  MODE_LOOP_FOREVER = 6,
  MODE_CRASH = 7,
  MODE_PRINT_TOO_LONG = 8,
  MODE_PRIVILEGED_INSTRUCTION = 9,
  MODE_WRITE_HOST_STRUCTURES = 10,
  MODE_UNKNOWN_PORT = 11,
  MODE_CLOSE_CHANNEL_AND_LOOP = 12, /* process only */
  MODE_FILL_BUFFER = 13,
  MODE_HEAP_UNKNOWN_FREE = 14,
  MODE_HEAP_DOUBLE_FREE = 15,
  MODE_HEAP_ABSURD_SIZE = 16,
  MODE_HEAP_TOO_MANY_LIVE = 17,
  MODE_UNKNOWN_HOST_FUNCTION = 18
};

/* MODE_FILL_BUFFER's items: 3 records each, 3,004 records in all with the two scopes around them
 * (tests/guest/runner_test.cpp counts them). */
#define FILL_ITEMS 1000u
/* More live blocks than the host profiles (GuestHeap::kMaxLiveBlocks, 65,536). */
#define TOO_MANY_LIVE 70000u
/* Made-up block addresses: the host never checks them against guest memory. */
#define FAKE_BLOCK 0x300000u

void hotscope_guest_init(void) {}

static void return_without_flush(void) {
#ifdef HOTSCOPE_GUEST_VM
  __asm__ volatile("outb %%al, %0" : : "i"(HOTSCOPE_GUEST_PORT_RETURN), "a"(5) : "memory");
#else
  __asm__ volatile("syscall" : : "a"(231 /* exit_group */), "D"(0) : "rcx", "r11", "memory");
#endif
}

uint64_t hotscope_guest_dispatch(uint64_t mode) {
  HOTSCOPE_FUNCTION();
  const uint64_t records = (uint64_t)(uintptr_t)hotscope_guest_state.records;
  switch (mode) {
  case MODE_BEHAVE:
    HOTSCOPE_MESSAGE("behaving");
    return 42;
  case MODE_COUNT_OVER_CAPACITY:
    hotscope_guest_transport_flush(records, HOTSCOPE_GUEST_CAPACITY + 1u);
    return 1;
  case MODE_ADDRESS_OUTSIDE:
    hotscope_guest_transport_flush(0x7fff00000000ull, 4);
    return 2;
  case MODE_ADDRESS_STRADDLES_END:
    hotscope_guest_transport_flush(GUEST_MEMORY_BYTES - 2u * HOTSCOPE_RECORD_SIZE, 4);
    return 3;
  case MODE_FLOOD_FLUSHES:
    for (;;) {
      HOTSCOPE_SCOPE("flood");
      hotscope_guest_flush();
    }
  case MODE_RETURN_WITHOUT_FLUSH: {
    HOTSCOPE_SCOPE("never flushed");
    return_without_flush();
    return 5;
  }
  case MODE_LOOP_FOREVER:
    for (;;) {
      __asm__ volatile("pause");
    }
  case MODE_CRASH:
    *(volatile uint64_t*)(uintptr_t)0x40000000u = 1; /* outside the VM's RAM; unmapped */
    return 7;
  case MODE_PRINT_TOO_LONG:
    hotscope_guest_print("x", 1ull << 30);
    return 8;
  case MODE_PRIVILEGED_INSTRUCTION:
    __asm__ volatile("hlt");
    return 9;
  case MODE_WRITE_HOST_STRUCTURES:
    /* The VM's GDT null descriptor: writing 0 changes nothing, so only the page protection can
     * stop it (unmapped in a process). */
    *(volatile uint64_t*)(uintptr_t)0x4000u = 0;
    return 10;
  case MODE_CLOSE_CHANNEL_AND_LOOP:
#ifdef HOTSCOPE_GUEST_PROCESS
    __asm__ volatile("syscall"
                     :
                     : "a"(3 /* close */), "D"(HOTSCOPE_GUEST_WAKE_FD)
                     : "rcx", "r11", "memory");
    for (;;) {
      __asm__ volatile("pause");
    }
#endif
    return 12;
  case MODE_UNKNOWN_PORT:
    __asm__ volatile("outb %%al, $0x80" : : "a"(0));
    return 11;
  case MODE_FILL_BUFFER: {
    /* The buffer fills, and is flushed, in the middle of open scopes. */
    HOTSCOPE_SCOPE("fill");
    for (uint64_t i = 0; i < FILL_ITEMS; ++i) {
      HOTSCOPE_SCOPE("item");
      HOTSCOPE_COUNTER("item_index", i);
    }
    return FILL_ITEMS;
  }
  case MODE_HEAP_UNKNOWN_FREE:
    HOTSCOPE_GUEST_FREE(FAKE_BLOCK);
    return 14;
  case MODE_HEAP_DOUBLE_FREE:
    HOTSCOPE_GUEST_ALLOC(FAKE_BLOCK, 64);
    HOTSCOPE_GUEST_FREE(FAKE_BLOCK);
    HOTSCOPE_GUEST_FREE(FAKE_BLOCK);
    return 15;
  case MODE_HEAP_ABSURD_SIZE:
    HOTSCOPE_GUEST_ALLOC(FAKE_BLOCK, 1ull << 50);
    return 16;
  case MODE_HEAP_TOO_MANY_LIVE:
    for (uint64_t i = 0; i < TOO_MANY_LIVE; ++i) {
      HOTSCOPE_GUEST_ALLOC(FAKE_BLOCK + 16 * i, 16);
    }
    return 17;
  case MODE_UNKNOWN_HOST_FUNCTION:
    return hotscope_guest_host_call(99, 0);
  default:
    return 0;
  }
}
