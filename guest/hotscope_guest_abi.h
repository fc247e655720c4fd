/* hotscope guest ABI (docs/guest.md): what a guest and its host agree on, the constants and the
 * process channel's layout. Freestanding C, included by the guest runtime (hotscope_guest.h)
 * and by the host's runners (src/guest/runner). */
#ifndef HOTSCOPE_GUEST_ABI_H
#define HOTSCOPE_GUEST_ABI_H

#include <hotscope/record.h>

/* Part of the format: never renumber. */

/* Records per batch. The host rejects a batch that claims more. */
#define HOTSCOPE_GUEST_CAPACITY 1024u
/* Longest text a print host call may pass; the host rejects longer ones. */
#define HOTSCOPE_GUEST_PRINT_MAX 4096u

/* The entry point (ELF e_entry) is entered with rdi = operation, rsi = argument. */
#define HOTSCOPE_GUEST_OP_INIT 0u /* calls hotscope_guest_init() */
#define HOTSCOPE_GUEST_OP_CALL 1u /* calls hotscope_guest_dispatch(argument) */

/* VM transport: the guest runs in ring 3 with IOPL 3 and exits with `outb` to these ports. */
#define HOTSCOPE_GUEST_PORT_FLUSH 0xE0  /* rdi = buffer's guest address, rsi = record count */
#define HOTSCOPE_GUEST_PORT_PRINT 0xE1  /* rdi = text's guest address, rsi = length in bytes */
#define HOTSCOPE_GUEST_PORT_RETURN 0xE2 /* the entry is done; rax = its result */
/* rdi = function number, rsi = argument; the host resumes the guest with rax = the result */
#define HOTSCOPE_GUEST_PORT_HOST_CALL 0xE3

/* Process transport: the host starts the guest with a memfd on HOTSCOPE_GUEST_CHANNEL_FD (page 0:
 * struct hotscope_guest_channel; from HOTSCOPE_GUEST_RECORDS_OFFSET: the record buffer) and a
 * SOCK_SEQPACKET socket on HOTSCOPE_GUEST_WAKE_FD. Each side writes its fields, then one byte on
 * the socket; the guest waits for the host's byte after a FLUSH, PRINT or HOST_CALL request. */
#define HOTSCOPE_GUEST_CHANNEL_FD 3
#define HOTSCOPE_GUEST_WAKE_FD 4
#define HOTSCOPE_GUEST_RECORDS_OFFSET 4096u
#define HOTSCOPE_GUEST_CHANNEL_BYTES                                                               \
  (HOTSCOPE_GUEST_RECORDS_OFFSET + HOTSCOPE_GUEST_CAPACITY * HOTSCOPE_RECORD_SIZE)
#define HOTSCOPE_GUEST_REQUEST_FLUSH 1u  /* arg0 = buffer address, arg1 = record count */
#define HOTSCOPE_GUEST_REQUEST_PRINT 2u  /* arg0 = text address, arg1 = length */
#define HOTSCOPE_GUEST_REQUEST_RETURN 3u /* arg0 = the entry's result; no reply */
/* arg0 = function number, arg1 = argument; the host writes `reply`, then its byte */
#define HOTSCOPE_GUEST_REQUEST_HOST_CALL 4u

struct hotscope_guest_channel {
  uint64_t request; /* guest → host: HOTSCOPE_GUEST_REQUEST_* */
  uint64_t arg0;
  uint64_t arg1;
  uint64_t op;       /* host → guest: HOTSCOPE_GUEST_OP_* */
  uint64_t argument; /* host → guest */
  uint64_t reply;    /* host → guest: a host call's result */
};

HOTSCOPE_STATIC_ASSERT(sizeof(struct hotscope_guest_channel) == 48, "channel layout");

#endif /* HOTSCOPE_GUEST_ABI_H */
