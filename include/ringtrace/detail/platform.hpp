// Compiler and export macros shared by the public headers.
#pragma once

#include "ringtrace/requires_cxx20.hpp"  // first: one clear error below C++20

#if defined(__GNUC__) || defined(__clang__)
#define RINGTRACE_NOINLINE __attribute__((noinline))
// Never instrumented by -finstrument-functions in the user's code either (g++ instruments
// inlined functions too): the hot path is no function call of the user's.
#define RINGTRACE_ALWAYS_INLINE inline __attribute__((always_inline, no_instrument_function))
// Every other function defined in ringtrace's headers (inline, constexpr, templates,
// members, lambdas): a program built with -finstrument-functions records its own calls,
// never ringtrace's (g++'s exclude-file-list leaves out /usr/include, not an install
// elsewhere; clang has no such list). docs/functions.md.
#define RINGTRACE_NO_INSTRUMENT __attribute__((no_instrument_function))
#define RINGTRACE_COLD __attribute__((cold))
// Symbols the runtime shares with the inline hot path keep default visibility so that
// one copy exists even when the library is linked into a shared object.
#define RINGTRACE_API __attribute__((visibility("default")))
// Initial-exec TLS: one fs-relative access, no __tls_get_addr call, also from a
// shared object loaded at program start.
#define RINGTRACE_TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#define RINGTRACE_NOINLINE
#define RINGTRACE_ALWAYS_INLINE inline
#define RINGTRACE_NO_INSTRUMENT
#define RINGTRACE_COLD
#define RINGTRACE_API
#define RINGTRACE_TLS_MODEL
#endif

// ThreadSanitizer cannot see inside inline assembly: under it the hot path reserves ring
// space with an atomic add instead (detail::reserve).
#if defined(__SANITIZE_THREAD__)
#define RINGTRACE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RINGTRACE_TSAN 1
#endif
#endif
#ifndef RINGTRACE_TSAN
#define RINGTRACE_TSAN 0
#endif

#if RINGTRACE_TSAN
// A ring is mapped twice, back to back, so that a record may run past its end: the
// writer publishes a header through one mapping and the drainer may load it through the
// other. The hardware sees one location; ThreadSanitizer keys the release and the acquire
// by virtual address and sees two, then reports every read of the record as a race.
// Under it, every publish also releases one sync object that every header load that
// sees a record acquires (detail::publish, detail::load_header), and the slots of a
// record are written and read as relaxed atomics (detail::put, detail::word_at): the
// same instructions on x86-64, and nothing else differs from the other builds.
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
namespace ringtrace::detail {
RINGTRACE_API inline char g_tsan_ring_sync = 0;
RINGTRACE_NO_INSTRUMENT inline void tsan_ring_published() noexcept { __tsan_release(&g_tsan_ring_sync); }
RINGTRACE_NO_INSTRUMENT inline void tsan_ring_seen() noexcept { __tsan_acquire(&g_tsan_ring_sync); }
}  // namespace ringtrace::detail
#endif

#define RINGTRACE_CAT_IMPL(a, b) a##b
#define RINGTRACE_CAT(a, b) RINGTRACE_CAT_IMPL(a, b)
