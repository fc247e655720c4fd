/* Defines the probes and tracepoints of lttng_tp.h (exactly one translation unit does). */
#define TRACEPOINT_CREATE_PROBES
#define TRACEPOINT_DEFINE
#include "lttng_tp.h"
