// Compiler and export macros shared by the public headers.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define RINGTRACE_NOINLINE __attribute__((noinline))
#define RINGTRACE_ALWAYS_INLINE inline __attribute__((always_inline))
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
#define RINGTRACE_COLD
#define RINGTRACE_API
#define RINGTRACE_TLS_MODEL
#endif

#define RINGTRACE_CAT_IMPL(a, b) a##b
#define RINGTRACE_CAT(a, b) RINGTRACE_CAT_IMPL(a, b)
