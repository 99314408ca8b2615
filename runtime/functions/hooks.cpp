// The compiler's function hooks for code built with -finstrument-functions (g++ and clang;
// with clang, -finstrument-functions-after-inlining too): CMake target
// ringtrace::functions, pkg-config ringtrace-functions. Each instrumented call records its
// function's raw address and nothing else on the hot path (include/ringtrace/detail/
// functions.hpp); the drainer names it. docs/functions.md.
//
// This file is never compiled with -finstrument-functions (ringtrace's own code never is),
// and the hooks say so themselves too: a hook that instrumented itself would recurse.
#include "ringtrace/detail/functions.hpp"

#define RINGTRACE_HOOK extern "C" __attribute__((visibility("default"), no_instrument_function))

// The stack pointer where the instrumented function called the hook (the hook's CFA): the
// same at the function's entry and at its exit, and below it in every call it makes. When
// the function jumps to the exit hook instead (g++ -O2: `jmp __cyg_profile_func_exit`
// after its epilogue), it is the function's own CFA, and the hook's return address (just
// below the CFA) is the function's: the call site the compiler passes. Such an exit leaves
// the hot path (its stack pointer is not the frame's), and function_exit_slow reads the
// return address there (runtime/live/function_stack.cpp).
#define RINGTRACE_CALLER_SP() reinterpret_cast<std::uintptr_t>(__builtin_dwarf_cfa())

RINGTRACE_HOOK void __cyg_profile_func_enter(void* function, void* call_site) {
  ringtrace::detail::function_entry(reinterpret_cast<std::uintptr_t>(function),
                                    reinterpret_cast<std::uintptr_t>(call_site), RINGTRACE_CALLER_SP());
}

RINGTRACE_HOOK void __cyg_profile_func_exit(void* function, void* call_site) {
  ringtrace::detail::function_exit(reinterpret_cast<std::uintptr_t>(function),
                                   reinterpret_cast<std::uintptr_t>(call_site), RINGTRACE_CALLER_SP());
}
