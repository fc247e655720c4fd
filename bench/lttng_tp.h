/* LTTng-UST tracepoint provider of the benchmarks: a begin/end pair carrying a location
 * address, the same information a hotscope scope records. */
#undef TRACEPOINT_PROVIDER
#define TRACEPOINT_PROVIDER hotscope_bench

#undef TRACEPOINT_INCLUDE
#define TRACEPOINT_INCLUDE "./lttng_tp.h"

#if !defined(HOTSCOPE_BENCH_LTTNG_TP_H) || defined(TRACEPOINT_HEADER_MULTI_READ)
#define HOTSCOPE_BENCH_LTTNG_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

TRACEPOINT_EVENT(hotscope_bench, begin, TP_ARGS(const void*, location),
                 TP_FIELDS(ctf_integer_hex(uintptr_t, location, (uintptr_t)location)))

TRACEPOINT_EVENT(hotscope_bench, end, TP_ARGS(const void*, location),
                 TP_FIELDS(ctf_integer_hex(uintptr_t, location, (uintptr_t)location)))

#endif /* HOTSCOPE_BENCH_LTTNG_TP_H */

#include <lttng/tracepoint-event.h>
