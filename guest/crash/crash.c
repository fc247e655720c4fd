/* A guest that crashes, for the crash reports of `hotscope vm run` (tests/guest/vm_cli_test.cpp,
 * docs/crash.md "Guests"): calls 0 and 1 behave; call 2 opens scopes, flushes, opens one more,
 * leaves a message in its buffer and writes outside its memory. */
#define HOTSCOPE_GUEST_IMPLEMENTATION
#include "hotscope_guest.h"

#include <stdint.h>

void hotscope_guest_init(void) {}

/* Outside the VM's RAM (unmapped: the vCPU shuts down) and outside a process guest's mappings
 * (SIGSEGV). */
__attribute__((noinline)) static void crash_here(void) {
  HOTSCOPE_SCOPE("crash_site");
  HOTSCOPE_MESSAGE("about to crash");
  *(volatile uint64_t*)(uintptr_t)0x40000000u = 1;
}

uint64_t hotscope_guest_dispatch(uint64_t call) {
  HOTSCOPE_FUNCTION();
  if (call < 2) {
    HOTSCOPE_MESSAGE("behaving");
    return call;
  }
  HOTSCOPE_SCOPE("request");
  hotscope_guest_flush(); /* the host has these; what follows only the VM's host can still read */
  crash_here();
  return call;
}
