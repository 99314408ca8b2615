// The tracepoint provider of tail_lttng.cpp: a zone is two events, its entry (with the
// zone's static site, an address, as ringtrace's begin record holds one) and its exit.
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER ringtrace_peer

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "tail_lttng_tp.h"

#if !defined(RINGTRACE_TAIL_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define RINGTRACE_TAIL_LTTNG_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

LTTNG_UST_TRACEPOINT_EVENT(ringtrace_peer, zone_entry, LTTNG_UST_TP_ARGS(const void*, site),
                           LTTNG_UST_TP_FIELDS(lttng_ust_field_integer_hex(uintptr_t, site, (uintptr_t)site)))

LTTNG_UST_TRACEPOINT_EVENT(ringtrace_peer, zone_exit, LTTNG_UST_TP_ARGS(), LTTNG_UST_TP_FIELDS())

#endif

#include <lttng/tracepoint-event.h>
