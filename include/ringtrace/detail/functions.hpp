// Automatic function instrumentation's hot path: what the compiler's hooks
// (__cyg_profile_func_enter / _exit, runtime/functions/hooks.cpp, CMake target
// ringtrace::functions) do on every instrumented call. docs/functions.md describes it.
//
// A function's entry is one ring record, kind record_function_entry: its header holds the
// function's raw address (function_header()), then the ticks; its exit is an ordinary zone
// end slot. The drainer names the address once, off the hot path. So an instrumented call
// records what a RINGTRACE_ZONE records, with the same reservation, clock read and stores.
//
// What zones get from their guard object (the token that says whether the begin was
// recorded), a function gets from the thread's shadow stack: one FunctionFrame per
// instrumented function entered in the session and not yet left, holding the stack
// pointer where it called the entry hook (the hook's CFA) and its address. The exit hook
// writes the end only if the innermost frame is its own (same stack pointer, same
// address, recorded); anything else goes to the slow path (runtime/live/
// function_stack.cpp):
//   - frames whose stack pointer is below the current one belong to calls an exception
//     or a longjmp left without their exit hooks: they are closed there, marked (an
//     argument "unwound" = 1 on the zone), so the thread's stack is never left
//     unbalanced; a frame at the same stack pointer is an outer function that this one
//     was inlined into (g++ calls an inlined function's hooks from the outer function's
//     frame), or, if it is the same function, an earlier call of it left the same way;
//   - g++ -O2 leaves a function whose last act is the exit hook (every void function, a
//     coroutine's resume) by `jmp __cyg_profile_func_exit` after popping its frame: the
//     hook's CFA is then the function's own CFA, above the stack pointer its entry saw,
//     and the hook's return address is the function's, the `call_site` argument itself
//     (a hook called by a `call` returns into the function, never to its caller; the two
//     are compared by the key's 9-bit tag, which the hot path has). Such a
//     tail exit closes its function's frame below that CFA as an ordinary return: the
//     innermost frame when its stack pointer is below the CFA and the next frame's (its
//     caller's) is not, at once (not cold: every void function comes here under g++);
//     else the outermost frame of its key below the CFA, with everything else below the
//     CFA closed as unwound;
//   - a frame that was not recorded (its entry dropped, or the thread untraced) is popped
//     without an end; a call deeper than the session's maximum depth is not recorded, nor
//     is anything deeper, until the stack comes back above it;
//   - an exit with no frame of its own (the function was entered before the session, or
//     while recording was paused) writes nothing.
// The frames live in memory the slow path allocates at the thread's first instrumented
// call in a session (Config::functions.max_depth frames); the hot path allocates nothing,
// takes no lock and makes no system call.
#pragma once

#include <atomic>   // the per-function counts of inlined calls
#include <cstddef>  // their table's size; offsetof: the records' layouts
#include <cstdint>  // addresses

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_API, RINGTRACE_ALWAYS_INLINE, TLS model
#include "ringtrace/detail/writer.hpp"    // the ring writer: epoch, reserve, publish, slow paths

namespace ringtrace::detail {

// One instrumented function entered and not yet left.
struct FunctionFrame {
  std::uintptr_t sp;  // the stack pointer where the function called the entry hook
  std::uintptr_t
      fn;  // function_key(): its address and call site tag, with a kFrame* state in the top byte (0: recorded)
};
inline constexpr unsigned kFrameStateShift = 56;  // user-space addresses stay below 2^56
inline constexpr std::uintptr_t kFrameDropped = std::uintptr_t{1} << kFrameStateShift;     // the ring was full
inline constexpr std::uintptr_t kFrameUnrecorded = std::uintptr_t{2} << kFrameStateShift;  // untraced, sampled out
inline constexpr std::uintptr_t kFrameStateMask = ~std::uintptr_t{0} << kFrameStateShift;
// A frame's key: the function's address (below 2^47 in user space) and, above it, the low
// 9 bits of the call site the compiler passes to both hooks (the return address of the
// function's physical frame). Functions g++ inlined into another share its frame's stack
// pointer and its call site; two calls made one after the other from one frame share the
// stack pointer but not the call site (unless made by the same call instruction).
inline constexpr unsigned kFrameTagShift = 47;
inline constexpr std::uintptr_t kFrameAddressMask = (std::uintptr_t{1} << kFrameTagShift) - 1;
inline constexpr std::uintptr_t kFrameTagMask = ~kFrameAddressMask & ~kFrameStateMask;
RINGTRACE_ALWAYS_INLINE constexpr std::uintptr_t function_key(std::uintptr_t fn, std::uintptr_t call_site) noexcept {
  return (fn & kFrameAddressMask) | ((call_site << kFrameTagShift) & kFrameTagMask);
}
// Whether `key`, entered at the stack pointer of frame `f`, is a function inlined into
// f's (same call site, another function) rather than a call at f's depth after f's call
// was left by an exception or a longjmp.
RINGTRACE_ALWAYS_INLINE constexpr bool inlined_into(const FunctionFrame& f, std::uintptr_t key) noexcept {
  return ((f.fn ^ key) & kFrameTagMask) == 0 && ((f.fn ^ key) & kFrameAddressMask) != 0;
}

// The thread's shadow stack. Below its first frame is a sentinel: a stack pointer above
// every real one (an entry never takes it for a frame left by an exception) and address 0
// (an exit that meets it has nothing to do). Before the thread's first instrumented call
// of a session, top and last both point at kNoFunctionFrame, which sends an entry to the
// slow path.
struct FunctionStack {
  FunctionFrame* top;   // the innermost frame (the sentinel below the first)
  FunctionFrame* last;  // the last frame there is room for: an entry here takes the slow path
};

// The sentinel of a thread that has no stack in the running session. An inline variable
// (one for the process, as t_writer): a definition in the library would be one per
// shared object that links the static library (plugins), which ASan reports as an ODR
// violation.
RINGTRACE_API inline constexpr FunctionFrame kNoFunctionFrame{~std::uintptr_t{0}, 0};

// Default visibility like t_writer: every copy of the hooks binds to one stack per thread.
RINGTRACE_API RINGTRACE_TLS_MODEL inline constinit thread_local FunctionStack t_functions{
    const_cast<FunctionFrame*>(&kNoFunctionFrame), const_cast<FunctionFrame*>(&kNoFunctionFrame)};

// FunctionOptions::inlined of the running session: false (the default) leaves out the
// calls of functions g++ inlined into the function whose frame they run in (their hooks
// run at that function's stack pointer, with its call site: inlined_into()), as clang's
// -finstrument-functions-after-inlining never instruments them; each is counted on its
// thread (WriterBlock::inlined). true: they are recorded as calls nested in that function.
RINGTRACE_API inline constinit std::atomic<bool> g_keep_inlined{false};

// Calls of inlined functions left out (g_keep_inlined false), per function: a table of
// the thread's ring (ThreadBuffer), counted by the owning thread with relaxed loads and
// stores (no lock prefix, as WriterBlock::inlined), read by the drainer for
// SessionStats::functions.inlined_by_function. Open addressing by the function's address,
// a few probes: a function that finds no slot there is counted in `others` (listed as
// such, never given to another function). A signal handler's left-out call that
// interrupts a count of the same slot may be lost, as with WriterBlock::inlined.
struct InlinedCalls {
  static constexpr std::size_t kSlots = 512;  // a power of two
  static constexpr std::size_t kProbes = 8;
  struct Slot {
    std::atomic<std::uintptr_t> fn{0};  // the function's address; 0: free
    std::atomic<std::uint64_t> calls{0};
  };
  Slot slots[kSlots];
  std::atomic<std::uint64_t> others{0};

  RINGTRACE_ALWAYS_INLINE static void bump(std::atomic<std::uint64_t>& n) noexcept {
    n.store(n.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  RINGTRACE_ALWAYS_INLINE void count(std::uintptr_t fn) noexcept {
    std::size_t i = static_cast<std::size_t>((fn * 0x9E3779B97F4A7C15ull) >> 55);  // 9 bits: kSlots
    for (std::size_t probe = 0; probe < kProbes; ++probe, i = (i + 1) & (kSlots - 1)) {
      Slot& s = slots[i];
      const std::uintptr_t there = s.fn.load(std::memory_order_relaxed);
      if (there == fn) return bump(s.calls);
      if (there == 0) {
        s.calls.store(1, std::memory_order_relaxed);
        s.fn.store(fn, std::memory_order_release);  // the reader sees its first call with it
        return;
      }
    }
    bump(others);
  }
};
static_assert(InlinedCalls::kSlots == std::size_t{1} << (64 - 55));

// An inlined function's entry left out (g_keep_inlined false): counted in the thread's
// ring block and per function, if the thread records in session `epoch` (its frames say
// it is bound).
RINGTRACE_ALWAYS_INLINE void function_inlined_left_out(std::uint32_t epoch, std::uintptr_t fn) noexcept {
  ThreadWriter& t = t_writer;
  if (t.epoch != epoch) return;
  InlinedCalls::bump(t.block->inlined);
  if (t.inlined_calls != nullptr) t.inlined_calls->count(fn);
}

// Slow paths (noinline, runtime/live/function_stack.cpp).
// `key` is function_key(): the function's address is its low bits. An exit the hot path
// did not match is not cold (g++'s tail exits are as common as void functions): it tells
// a tail exit, closes it when it can at once, and leaves the rest to a cold repair.
RINGTRACE_API RINGTRACE_NOINLINE RINGTRACE_COLD void function_entry_slow(std::uintptr_t key, std::uintptr_t sp,
                                                                         std::uint32_t epoch) noexcept;
RINGTRACE_API RINGTRACE_NOINLINE void function_exit_slow(std::uintptr_t key, std::uintptr_t sp) noexcept;

// An instrumented function `fn` entered from `call_site` with the hook's CFA `sp`. With no
// session, one load and a compare.
RINGTRACE_ALWAYS_INLINE void function_entry(std::uintptr_t fn, std::uintptr_t call_site, std::uintptr_t sp) noexcept {
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (epoch == 0) return;
  const std::uintptr_t key = function_key(fn, call_site);
  FunctionStack& s = t_functions;
  FunctionFrame* const top = s.top;
  // A frame below this stack pointer was left without its exit (repaired in the slow
  // path); no room for another frame; no stack yet in this session. A frame at the same
  // stack pointer is the function this one was inlined into (g++ instruments inlined
  // functions: their hooks run in the outer function's frame, with its call site), or
  // else a call at this depth that an exception or a longjmp left (the slow path). An
  // inlined function is left out, counted, unless the session keeps them.
  if (top->sp <= sp || top == s.last) [[unlikely]] {
    if (top->sp != sp || top == s.last || !inlined_into(*top, key)) return function_entry_slow(key, sp, epoch);
    if (!g_keep_inlined.load(std::memory_order_relaxed)) return function_inlined_left_out(epoch, fn);
  }
  WriterBlock* const b = writable(t_writer, epoch);
  if (b == nullptr) [[unlikely]]
    return function_entry_slow(key, sp, epoch);
  const std::uintptr_t at = reserve(*b, sizeof(TimedRecord));
  put(at + offsetof(TimedRecord, ticks), read_ticks_fast());
  publish(at, function_header(fn));
  // The frame before the top moves: a signal handler that records in between pushes and
  // pops above the old top (docs/functions.md, "Signal handlers").
  top[1] = FunctionFrame{sp, key};
  s.top = top + 1;
}

// Pops the innermost frame, `top`, recorded, and writes its end. A recorded frame belongs to
// the session the thread is bound to (binding a thread to another session empties its
// stack): its ring is the one to write to.
RINGTRACE_ALWAYS_INLINE void function_close_top(FunctionStack& s, FunctionFrame* top) noexcept {
  s.top = top - 1;
  const std::uint64_t ticks = read_ticks_fast();
  WriterBlock& b = *t_writer.block;
  const std::uintptr_t at = reserve(b, sizeof(EndRecord));
  if (at >= b.end_limit) [[unlikely]]
    return zone_end_slow(at, ticks);
  publish(at, end_slot(ticks));
}

// Its exit: the end if the innermost frame is its own and was recorded. A tail exit (the
// stack pointer above the frame's) is told apart off this path, in function_exit_slow:
// the ordinary exit's instructions are what they were before tail exits were known.
RINGTRACE_ALWAYS_INLINE void function_exit(std::uintptr_t fn, std::uintptr_t call_site, std::uintptr_t sp) noexcept {
  const std::uintptr_t key = function_key(fn, call_site);
  FunctionStack& s = t_functions;
  FunctionFrame* const top = s.top;
  if (top->sp != sp || top->fn != key) [[unlikely]] {
    if (top->fn != 0) function_exit_slow(key, sp);  // 0: no frame at all (the sentinel)
    return;
  }
  function_close_top(s, top);
}

}  // namespace ringtrace::detail
