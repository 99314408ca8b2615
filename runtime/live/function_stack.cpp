// The slow paths of automatic function instrumentation: a thread's shadow stack set up
// at its first instrumented call of a session, frames that an exception or a longjmp left
// without their exits closed (marked "unwound"), exits reached by a tail call that the hot
// path could not match, calls past the maximum depth, entries the ring had no room for.
// The hot path and the frames' layout: include/ringtrace/detail/functions.hpp;
// docs/functions.md.
#include "function_stack.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "ringtrace/detail/functions.hpp"
#include "thread_registry.hpp"  // thread_untraced

namespace ringtrace::detail {

namespace {

constexpr std::uintptr_t kStateMask = kFrameStateMask;
constexpr std::uint32_t kMaxDepthLimit = std::uint32_t{1} << 20;

std::atomic<std::uint32_t> g_max_depth{1024};
std::atomic<std::uint64_t> g_unwound{0};
std::atomic<std::uint64_t> g_too_deep{0};

// The thread's frames and what the hot path does not need of them.
struct StackMemory {
  FunctionFrame* frames = nullptr;  // frames[0] is the sentinel, then `capacity` frames
  std::uint32_t capacity = 0;
  std::uint32_t epoch = 0;         // the session whose frames these are (0: none)
  std::uint32_t failed_epoch = 0;  // no memory for a stack in this session: record nothing
  // Past the maximum depth: the stack pointer of the shallowest call not kept (0: none).
  // Nothing deeper is recorded until that call returns or is left by an exception.
  std::uintptr_t overflow_sp = 0;
  // The thread's own stack. A stack pointer outside it is on another stack (a signal
  // handler's alternate stack, a fiber's): frames there are not compared with this one's.
  std::uintptr_t stack_low = 0, stack_high = ~std::uintptr_t{0};
  bool bounds_known = false;

  bool own_stack(std::uintptr_t sp) const { return sp >= stack_low && sp < stack_high; }
  FunctionFrame* base() const { return frames; }
  ~StackMemory();
};

constinit thread_local bool t_stack_gone = false;  // StackMemory's destructor has run
thread_local StackMemory t_stack;

StackMemory::~StackMemory() {
  t_stack_gone = true;
  t_functions =
      FunctionStack{const_cast<FunctionFrame*>(&kNoFunctionFrame), const_cast<FunctionFrame*>(&kNoFunctionFrame)};
  std::free(frames);
}

bool set_up(const FunctionStack& s) { return s.last != &kNoFunctionFrame; }

// Forgets every frame (they belong to a session the thread no longer records in), giving
// back what their entries added to the thread's hidden zones.
void empty_stack(StackMemory& m, ThreadWriter& t) {
  FunctionStack& s = t_functions;
  if (set_up(s)) {
    for (FunctionFrame* f = m.frames + 1; f <= s.top; ++f) {
      if ((f->fn & kStateMask) == kFrameDropped) hidden_zone_end(t, kHiddenDropped);
    }
  }
  if (m.overflow_sp != 0) hidden_zone_end(t, kHiddenSkipped);
  m.overflow_sp = 0;
  m.epoch = 0;
  s = FunctionStack{const_cast<FunctionFrame*>(&kNoFunctionFrame), const_cast<FunctionFrame*>(&kNoFunctionFrame)};
}

bool set_up_stack(StackMemory& m, std::uint32_t epoch) {
  if (m.failed_epoch == epoch) return false;
  const std::uint32_t depth = std::clamp<std::uint32_t>(g_max_depth.load(std::memory_order_relaxed), 1, kMaxDepthLimit);
  if (m.capacity != depth) {
    std::free(m.frames);
    m.frames = static_cast<FunctionFrame*>(std::malloc((std::size_t{depth} + 1) * sizeof(FunctionFrame)));
    m.capacity = m.frames != nullptr ? depth : 0;
    if (m.frames == nullptr) {
      m.failed_epoch = epoch;
      return false;
    }
  }
  if (!m.bounds_known) {
    m.bounds_known = true;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* low = nullptr;
      std::size_t size = 0;
      if (pthread_attr_getstack(&attr, &low, &size) == 0 && size != 0) {
        m.stack_low = reinterpret_cast<std::uintptr_t>(low);
        m.stack_high = m.stack_low + size;
      }
      pthread_attr_destroy(&attr);
    }
  }
  m.frames[0] = kNoFunctionFrame;
  m.epoch = epoch;
  m.overflow_sp = 0;
  t_functions = FunctionStack{m.frames, m.frames + depth};
  return true;
}

// Whether frame `f` belongs to a call that is over, seen from a hook whose stack pointer
// is `sp`: a frame below it (a live caller's is above, or at the same stack pointer when
// the hook's function was inlined into it; at an entry, close_same_function() tells the
// two apart). A frame on another stack than the thread's own while the thread runs on
// its own was left by a longjmp out of that stack; frames of the thread's own stack are
// live while it runs on another (a signal handler on an alternate stack).
bool stale(const StackMemory& m, std::uintptr_t frame_sp, std::uintptr_t sp) {
  const bool frame_own = m.own_stack(frame_sp), own = m.own_stack(sp);
  if (frame_own != own) return !frame_own;
  return frame_sp < sp;
}

// Writes what the frame's exit would have written: the end of a recorded call (with the
// mark when an exception or a longjmp skipped its exit), the count of a dropped one.
void close_frame(ThreadWriter& t, std::uintptr_t fn_state, bool unwound) {
  const std::uintptr_t state = fn_state & kStateMask;
  if (state == 0) {
    if (unwound) {
      attach<record_arg_int>(&kUnwoundSite, 1);
      g_unwound.fetch_add(1, std::memory_order_relaxed);
    }
    zone_close(t.epoch);
  } else if (state == kFrameDropped) {
    zone_close_other(kDroppedZone);
  }
}

void close_stale(StackMemory& m, ThreadWriter& t, std::uintptr_t sp) {
  FunctionStack& s = t_functions;
  while (s.top != m.base() && stale(m, s.top->sp, sp)) {
    const std::uintptr_t fn_state = s.top->fn;
    --s.top;
    close_frame(t, fn_state, true);
  }
}

// At the entry of `key` with stack pointer `sp`, once the frames below it are closed:
// frames at the same stack pointer are an outer function `key` was inlined into (kept),
// or calls at this depth that an exception or a longjmp left (closed).
void close_same_depth(StackMemory& m, ThreadWriter& t, std::uintptr_t key, std::uintptr_t sp) {
  FunctionStack& s = t_functions;
  while (s.top != m.base() && s.top->sp == sp && !inlined_into(*s.top, key)) {
    const std::uintptr_t fn_state = s.top->fn;
    --s.top;
    close_frame(t, fn_state, true);
  }
}

// At the exit of `key` with stack pointer `sp`, once the frames below it are closed: frames
// at the same stack pointer above its own are functions inlined into it whose exits a
// longjmp skipped (closed, marked). Without a frame of its own there, nothing is closed.
void close_inlined_above(StackMemory& m, ThreadWriter& t, std::uintptr_t key, std::uintptr_t sp) {
  FunctionStack& s = t_functions;
  FunctionFrame* f = s.top;
  while (f != m.base() && f->sp == sp && (f->fn & ~kStateMask) != key) --f;
  if (f == m.base() || f == s.top || f->sp != sp) return;
  while (s.top != f) {
    const std::uintptr_t fn_state = s.top->fn;
    --s.top;
    close_frame(t, fn_state, true);
  }
}

// At the exit of `key` reached by a tail call (g++'s `jmp __cyg_profile_func_exit`), `sp`
// its function's own CFA: the function's frame. It is below `sp`, and so is every frame
// pushed after it (calls it made that a longjmp left, functions inlined into it); its
// caller's frame, and those inlined into the caller, are at `sp` or above. So its frame is
// the outermost frame of `key` among the frames below `sp`, on the same stack: a deeper
// call of the same function from the same call site, left by a longjmp, is above it.
// Ambiguous: a frame of the same key (same function, same 9-bit call-site tag) that a
// longjmp or an exception left beneath the function's own, with a stack pointer between
// the function's and its CFA. That needs a call site whose low 9 bits are the same, or the
// same call made twice from a caller whose stack pointer moved (alloca) in between, and
// an exit skipped before; the older frame is taken for the function's own, and the two
// are closed together, the "unwound" mark on the newer one. Null: no frame of its own.
const FunctionFrame* own_frame_below(const StackMemory& m, std::uintptr_t key, std::uintptr_t sp) {
  const FunctionFrame* own = nullptr;
  for (const FunctionFrame* f = t_functions.top; f != m.base() && stale(m, f->sp, sp); --f) {
    if ((f->fn & ~kStateMask) == key && m.own_stack(f->sp) == m.own_stack(sp)) own = f;
  }
  return own;
}

// Closes the tail exit's frame (own_frame_below) as an ordinary return, and every other
// frame below `sp` as a call that is over (marked): the ones above the function's frame
// first, then the ones a longjmp left beneath it (pushed before it, with a stack pointer
// above its own: it was entered deeper than they were), which are below its caller's.
void close_tail_exit(StackMemory& m, ThreadWriter& t, std::uintptr_t key, std::uintptr_t sp) {
  FunctionStack& s = t_functions;
  const FunctionFrame* const own = own_frame_below(m, key, sp);
  while (s.top != m.base() && stale(m, s.top->sp, sp)) {
    const FunctionFrame* const f = s.top;
    --s.top;
    close_frame(t, f->fn, f != own);
  }
}

// Past the maximum depth, at a hook with stack pointer `sp`: true once the call that went
// past it is over (it returned, or an exception or a longjmp left it): the stack is kept
// again from there.
bool overflow_over(StackMemory& m, ThreadWriter& t, std::uintptr_t sp) {
  if (!stale(m, m.overflow_sp, sp)) return false;
  m.overflow_sp = 0;
  hidden_zone_end(t, kHiddenSkipped);
  return true;
}

// Whether the exit hook was reached by a tail call: its return address (just below its
// CFA, `sp`) is then the function's own, the call site the compiler passed, whose low 9
// bits are the key's tag; a hook reached by a `call` returns into the function instead.
// The tag, not the whole call site: the hot path keeps nothing more for this (its
// instructions stay those of an ordinary exit). A normal exit whose return address shares
// those 9 bits with its call site (1 pair of addresses in 512) is taken for a tail exit,
// which changes nothing unless a frame of its own key is below its stack pointer: a
// deeper call of the same function from the same call site, left by a longjmp. That frame
// is then closed as this exit's, unmarked, and the call's own frame stays open until a
// later hook closes it, marked "unwound".
bool tail_exit(std::uintptr_t key, std::uintptr_t sp) {
  const std::uintptr_t return_address = *reinterpret_cast<const std::uintptr_t*>(sp - sizeof(std::uintptr_t));
  return ((function_key(0, return_address) ^ key) & kFrameTagMask) == 0;
}

// Whether an exit at stack pointer `sp` (not a tail exit whose frame is below its CFA) is the innermost
// frame's own though the stack pointer is not the one its entry saw: the function moved
// it in between. Below the frame's: a variable-length array or alloca after the entry
// hook (AddressSanitizer's frames too), or, under g++ without exceptions, the stack
// arguments of a call (past the sixth) still pushed when the exit hook runs (g++ pops
// them after it). Above: a function g++ inlined after such a call, entered with the
// arguments pushed and left after they were popped (its frame is then not at the outer
// function's stack pointer: recorded as a call, not told apart as inlined). So: the
// innermost frame has the exit's key (function and call-site tag), on the exit's stack,
// and is the only frame between the two stack pointers (the one beneath it is not below
// `sp`); a frame beneath it of the same key at `sp` itself is the exit's own, and the
// innermost one a deeper call of the function that a longjmp left (closed, marked, by
// the repair). Ambiguous: a deeper call of the same function from a call site with the
// same 9-bit tag whose frame is missing (it began while the thread recorded nothing) is
// taken for this one.
bool moved_own_exit(const StackMemory& m, std::uintptr_t key, std::uintptr_t sp) {
  const FunctionFrame* const top = t_functions.top;
  if (top == m.base() || (top->fn & ~kStateMask) != key || top->sp == sp) return false;
  if (m.own_stack(top->sp) != m.own_stack(sp)) return false;
  if (top->sp > sp) return true;
  const FunctionFrame& beneath = top[-1];
  if (beneath.sp < sp && m.own_stack(beneath.sp) == m.own_stack(sp)) return false;  // the sentinel's is above all
  return !(beneath.sp == sp && (beneath.fn & ~kStateMask) == key);
}

// Everything function_exit_slow() does not close at once: frames left by exceptions and
// longjmps, frames not recorded, the maximum depth, calls with no frame.
RINGTRACE_NOINLINE RINGTRACE_COLD void exit_repair(std::uintptr_t key, std::uintptr_t sp, bool tail) noexcept {
  ThreadWriter& t = t_writer;
  if (t.in_slow != 0 || t_stack_gone) return;
  FunctionStack& s = t_functions;
  if (!set_up(s)) return;
  StackMemory& m = t_stack;
  if (m.overflow_sp != 0) {
    // The call that went past the maximum depth returns; by a tail exit, from above its
    // stack pointer (a deeper call's tail exit may be at it: its CFA is the caller's).
    const bool own = !tail && sp == m.overflow_sp;
    if (!own && !overflow_over(m, t, sp)) return;  // a deeper call returns
    if (own) {
      m.overflow_sp = 0;
      hidden_zone_end(t, kHiddenSkipped);
      return;
    }
    // By a tail exit, past the call that went too deep: nothing at `sp` is its own frame.
    if (tail) return close_tail_exit(m, t, key, sp);
  }
  // A tail exit with a frame of its own below its CFA. Without one it is taken for an
  // ordinary exit: a tail exit never has a frame at its CFA (that is its caller's), and a
  // normal exit whose return address only looked like a tail exit's has its own there.
  if (tail && own_frame_below(m, key, sp) != nullptr) return close_tail_exit(m, t, key, sp);
  if (moved_own_exit(m, key, sp)) {  // a tail exit's own frame, when below its CFA, was found above
    FunctionFrame* const top = s.top;
    s.top = top - 1;
    return close_frame(t, top->fn, false);
  }
  close_stale(m, t, sp);
  close_inlined_above(m, t, key, sp);
  FunctionFrame* const top = s.top;
  if (top != m.base() && top->sp == sp && (top->fn & ~kStateMask) == key) {
    s.top = top - 1;
    close_frame(t, top->fn, false);
  }
  // Else the call has no frame: it began before the session, or while recording was
  // paused, or in a slow path of the thread's. Nothing to write.
}

}  // namespace

void set_function_max_depth(std::uint32_t max_depth) noexcept {
  g_max_depth.store(std::clamp<std::uint32_t>(max_depth, 1, kMaxDepthLimit), std::memory_order_relaxed);
  g_unwound.store(0, std::memory_order_relaxed);
  g_too_deep.store(0, std::memory_order_relaxed);
}

FunctionCounts function_counts() noexcept {
  return FunctionCounts{g_unwound.load(std::memory_order_relaxed), g_too_deep.load(std::memory_order_relaxed)};
}

void function_stack_bound(std::uint32_t epoch) noexcept {
  if (!set_up(t_functions) || t_stack_gone) return;  // no frames: nothing of another session's
  StackMemory& m = t_stack;
  if (m.epoch != epoch) empty_stack(m, t_writer);
}

void function_stack_forget() noexcept {
  if (set_up(t_functions) && !t_stack_gone) {
    empty_stack(t_stack, t_writer);
  } else {
    t_functions =
        FunctionStack{const_cast<FunctionFrame*>(&kNoFunctionFrame), const_cast<FunctionFrame*>(&kNoFunctionFrame)};
  }
}

void function_entry_slow(std::uintptr_t key, std::uintptr_t sp, std::uint32_t epoch) noexcept {
  const std::uintptr_t fn = key & kFrameAddressMask;
  ThreadWriter& t = t_writer;
  // Nested in this thread's slow path (a signal handler), or a thread that records
  // nothing: no frame (the call's exit then finds none of its own and writes nothing).
  if (t.in_slow != 0 || t_stack_gone || thread_untraced()) return;
  StackMemory& m = t_stack;
  FunctionStack& s = t_functions;
  if (m.epoch != epoch || !set_up(s)) {
    if (m.epoch != 0) empty_stack(m, t);
    if (!set_up_stack(m, epoch)) return;
  }
  if (m.overflow_sp != 0 && !overflow_over(m, t, sp)) {
    g_too_deep.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  close_stale(m, t, sp);
  close_same_depth(m, t, key, sp);
  if (s.top == s.last) {  // the maximum depth: this call and everything it calls are left out
    m.overflow_sp = sp;
    hidden_zone_begin(t, kHiddenSkipped);  // values attached meanwhile are not the outer call's
    g_too_deep.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::uintptr_t state = 0;
  if (WriterBlock* const b = writable(t, epoch)) {
    const std::uintptr_t at = reserve(*b, 16);
    put(at + 8, read_ticks_fast());
    publish(at, function_header(fn));
  } else {
    // Binds the thread at its first event, makes room, or drops (counted) or leaves the
    // entry out: record_header() of this "site" is function_header(fn).
    const std::uint32_t token =
        zone_open_slow(reinterpret_cast<const SiteInfo*>(fn << kRecordAddressShift), record_function_entry, 0, epoch);
    state = token == epoch ? 0 : (token == kDroppedZone ? kFrameDropped : kFrameUnrecorded);
  }
  FunctionFrame* const top = s.top;
  top[1] = FunctionFrame{sp, key | state};
  s.top = top + 1;
}

// An exit the hot path did not match. Under g++ most of them are tail exits whose frame is
// the innermost one, closed here at once as the hot path would: the frame's stack pointer
// below the exit's CFA, the next frame's (its caller's, or the sentinel's) at or above it.
// A deeper call of the same function from the same call site, left by a longjmp, fails the
// second test (the frame beneath it, its caller's, is below this CFA) and goes to the
// repair, as do frames not recorded, frames left by a longjmp beneath this one, and every
// exit that is not a tail exit.
void function_exit_slow(std::uintptr_t key, std::uintptr_t sp) noexcept {
  FunctionStack& s = t_functions;
  FunctionFrame* const top = s.top;
  // An inlined function's exit, its entry left out (FunctionOptions::inlined false): in its
  // outer function's frame. Here, not in the hook: the ordinary exit keeps its instructions.
  if (top->sp == sp && inlined_into(*top, key) && !g_keep_inlined.load(std::memory_order_relaxed)) return;
  const bool tail = tail_exit(key, sp);
  if (tail && top->fn == key && top->sp < sp && top[-1].sp >= sp) return function_close_top(s, top);
  exit_repair(key, sp, tail);
}

}  // namespace ringtrace::detail
