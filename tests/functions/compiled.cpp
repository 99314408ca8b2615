// Built at -O2 with -finstrument-functions by g++ (-finstrument-functions-exclude-file-
// list=/usr/include) and by clang (-finstrument-functions-after-inlining), the flags
// docs/functions.md gives: the shapes compilers really emit, each function counting its
// own calls (compiled.hpp says what each is for). The drivers at the end are not
// instrumented: they are the program's own code calling the instrumented functions.
#include "compiled.hpp"

#include <pthread.h>
#include <unistd.h>

#include <coroutine>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>

#define COMPILED_DRIVER __attribute__((no_instrument_function))

namespace compiled {

namespace {
std::uint64_t g_calls[kFunctions] = {};
volatile int g_sink = 0;
std::jmp_buf g_jump;
std::jmp_buf g_rebound;
sigjmp_buf g_abort_jump;

// Not instrumented: counting must not add calls of its own.
COMPILED_DRIVER inline void count(Function f) { ++g_calls[static_cast<int>(f)]; }
}  // namespace

[[gnu::noinline]] void tick() {
  count(Function::tick);
  g_sink = g_sink + 1;
}
[[gnu::noinline]] void tick_twice() {
  count(Function::tick_twice);
  tick();
  tick();
}

[[gnu::noinline]] int plus(int a, int b) {
  count(Function::plus);
  g_sink = a;
  return g_sink + b;
}
[[gnu::noinline]] int add_one(int v) {
  count(Function::add_one);
  return plus(v, 1);
}

// The inner calls share one key (the same function called from the same call site): only
// the stack pointers tell a level's own tail exit from a deeper level's. No recursive call
// here is in a tail position: clang would make a loop of it (no calls left to record).
[[gnu::noinline]] void countdown(int n) {
  count(Function::countdown);
  if (n > 1) countdown(n - 1);
  g_sink = n;
}
[[gnu::noinline]] int sum_down(int n) {
  count(Function::sum_down);
  if (n <= 1) return n;
  const int below = sum_down(n - 1);
  g_sink = below + n;
  return g_sink;
}

[[gnu::always_inline]] inline void inlined_step(int v) {
  count(Function::inlined_step);
  g_sink = v;
}
[[gnu::noinline]] void steps(int n) {
  count(Function::steps);
  for (int i = 0; i < n; ++i) inlined_step(i);
}

// quiet() is not instrumented; g++ still calls quiet_step()'s hooks, inlined into it, and
// its exit hook is quiet()'s last call: a tail call from a frame that has no frame of its
// own on the shadow stack.
[[gnu::always_inline]] inline void quiet_step() {
  count(Function::quiet_step);
  g_sink = 7;
}
[[gnu::noinline]] COMPILED_DRIVER void quiet() {
  g_sink = 6;
  quiet_step();
}

// Hot/cold: g++ -O2 moves the unlikely branch into `checked(int) [clone .cold]` (the tests
// check the symbol is there), a part of the same function with the same frame.
[[gnu::noinline, gnu::cold]] void rare(int v) {
  count(Function::rare);
  g_sink = -v;
}
[[gnu::noinline]] int checked(int v) {
  count(Function::checked);
  if (__builtin_expect(v % 8 == 0, 0)) {
    rare(v);
    std::fprintf(stderr, "%s", v < 0 ? "checked: negative\n" : "");
    return -1;
  }
  g_sink = v;
  return g_sink * 2;
}
[[gnu::noinline]] void checked_void(int v) {
  count(Function::checked_void);
  if (__builtin_expect(v % 8 == 0, 0)) {
    rare(v);
    std::fprintf(stderr, "%s", v < 0 ? "checked_void: negative\n" : "");
    return;
  }
  g_sink = v;
}

[[noreturn, gnu::noinline]] void fail(int level) {
  count(Function::fail);
  g_sink = level;
  throw std::runtime_error("fail");
}
[[gnu::noinline]] void after_catch() {
  count(Function::after_catch);
  g_sink = 0;
}
[[gnu::noinline]] void descend(int level, int bottom, int catch_level, int rethrow_level, bool then) {
  count(Function::descend);
  g_sink = level;
  if (level == bottom) fail(level);
  if (level == catch_level || level == rethrow_level) {
    try {
      descend(level + 1, bottom, catch_level, rethrow_level, then);
    } catch (const std::runtime_error&) {
      if (level == rethrow_level) throw;
      if (then) after_catch();
    }
    return;
  }
  descend(level + 1, bottom, catch_level, rethrow_level, then);
  g_sink = level;
}

[[noreturn, gnu::noinline]] void jump_out(int level) {
  count(Function::jump_out);
  g_sink = level;
  std::longjmp(g_jump, 1);
}
[[gnu::noinline]] void hop() {
  count(Function::hop);
  jump_out(0);
}
[[gnu::noinline]] void roomy() {
  count(Function::roomy);
  volatile char room[512];
  for (std::size_t i = 0; i < sizeof room; ++i) room[i] = static_cast<char>(i);
  g_sink = room[g_sink & 511];
}
[[gnu::noinline]] void hop_home() {
  count(Function::hop_home);
  if (setjmp(g_jump) == 0) hop();
  roomy();
  tick();
}

// Its level 2 and its levels 4 and deeper share one key (called from the same call site).
void rebound_catch(int level, int bottom);
[[gnu::noinline]] void rebound(int level, int bottom) {
  count(Function::rebound);
  if (level == bottom) std::longjmp(g_rebound, 1);
  if (level == 2) {
    rebound_catch(level + 1, bottom);
  } else {
    rebound(level + 1, bottom);
  }
  g_sink = level;
}

[[noreturn, gnu::noinline]] void give_up(int level) {
  count(Function::give_up);
  g_sink = level;
  std::abort();
}
[[gnu::noinline]] void leap(int level, int bottom, bool abort) {
  count(Function::leap);
  g_sink = level;
  if (level < bottom) {
    leap(level + 1, bottom, abort);
    g_sink = level;
  } else if (abort) {
    give_up(level);
  } else {
    jump_out(level);
  }
}
[[gnu::noinline]] void land(int depth) {
  count(Function::land);
  if (setjmp(g_jump) == 0) leap(1, depth, false);
  g_sink = 0;
}

[[gnu::noinline]] void on_abort(int) {
  count(Function::on_abort);
  siglongjmp(g_abort_jump, 1);
}
[[gnu::noinline]] void abort_landing(int depth) {
  count(Function::abort_landing);
  if (sigsetjmp(g_abort_jump, 1) == 0) leap(1, depth, true);
  g_sink = 0;
}

[[gnu::noinline]] void on_signal(int) {
  count(Function::on_signal);
  tick();
  tick();
}
[[gnu::noinline]] void raiser(int signo, int times) {
  count(Function::raiser);
  for (int i = 0; i < times; ++i) raise(signo);
  g_sink = times;
}

// A generator: its frame is on the heap; each resume() calls the resume function, which
// g++ and clang both leave through the exit hook (g++ by a tail call).
struct Generator {
  struct promise_type {
    int value = 0;
    Generator get_return_object() { return Generator{std::coroutine_handle<promise_type>::from_promise(*this)}; }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    std::suspend_always yield_value(int v) noexcept {
      value = v;
      return {};
    }
    void return_void() noexcept {}
    void unhandled_exception() { std::terminate(); }
  };
  std::coroutine_handle<promise_type> handle;
};
[[gnu::noinline]] Generator numbers(int n) {
  for (int i = 0; i < n; ++i) co_yield i;
}

// The program's own code: not instrumented.

COMPILED_DRIVER const char* name(Function f) {
  switch (f) {
    case Function::tick:
      return "compiled::tick()";
    case Function::tick_twice:
      return "compiled::tick_twice()";
    case Function::plus:
      return "compiled::plus(int, int)";
    case Function::add_one:
      return "compiled::add_one(int)";
    case Function::countdown:
      return "compiled::countdown(int)";
    case Function::sum_down:
      return "compiled::sum_down(int)";
    case Function::steps:
      return "compiled::steps(int)";
    case Function::inlined_step:
      return "compiled::inlined_step(int)";
    case Function::quiet_step:
      return "compiled::quiet_step()";
    case Function::checked:
      return "compiled::checked(int)";
    case Function::checked_void:
      return "compiled::checked_void(int)";
    case Function::rare:
      return "compiled::rare(int)";
    case Function::fail:
      return "compiled::fail(int)";
    case Function::descend:
      return "compiled::descend(int, int, int, int, bool)";
    case Function::after_catch:
      return "compiled::after_catch()";
    case Function::jump_out:
      return "compiled::jump_out(int)";
    case Function::leap:
      return "compiled::leap(int, int, bool)";
    case Function::land:
      return "compiled::land(int)";
    case Function::hop:
      return "compiled::hop()";
    case Function::roomy:
      return "compiled::roomy()";
    case Function::hop_home:
      return "compiled::hop_home()";
    case Function::rebound:
      return "compiled::rebound(int, int)";
    case Function::give_up:
      return "compiled::give_up(int)";
    case Function::on_abort:
      return "compiled::on_abort(int)";
    case Function::abort_landing:
      return "compiled::abort_landing(int)";
    case Function::on_signal:
      return "compiled::on_signal(int)";
    case Function::raiser:
      return "compiled::raiser(int, int)";
    case Function::numbers:
      return "compiled::numbers(int)";
#if defined(__clang__)
    // clang's resume and destroy functions (symbols `_ZN8compiled7numbersEi.resume`,
    // `.destroy`) carry the ramp's name in the debug information: ringtrace names all
    // three alike.
    case Function::numbers_resume:
    case Function::numbers_destroy:
      return "compiled::numbers(int)";
#else
    case Function::numbers_resume:
      return "compiled::numbers(compiled::numbers(int)::_ZN8compiled7numbersEi.Frame*) [clone .actor]";
    case Function::numbers_destroy:
      return "compiled::numbers(compiled::numbers(int)::_ZN8compiled7numbersEi.Frame*) [clone .destroy]";
#endif
    case Function::function_count:
      break;
  }
  return "";
}

COMPILED_DRIVER std::uint64_t calls(Function f) { return g_calls[static_cast<int>(f)]; }
COMPILED_DRIVER bool inlined(Function f) { return f == Function::inlined_step || f == Function::quiet_step; }
COMPILED_DRIVER void reset() {
  for (std::uint64_t& n : g_calls) n = 0;
}

COMPILED_DRIVER bool built_by_gcc() {
#if defined(__clang__)
  return false;
#else
  return true;
#endif
}
COMPILED_DRIVER bool exit_hooks_on_unwind() { return built_by_gcc(); }
COMPILED_DRIVER bool hooks_in_inlined_functions() { return built_by_gcc(); }
COMPILED_DRIVER std::uint64_t extra_resume_calls() { return built_by_gcc() ? 2 : 0; }

COMPILED_DRIVER void tick_n(int n) {
  for (int i = 0; i < n; ++i) tick();
}
COMPILED_DRIVER void tick_twice_n(int n) {
  for (int i = 0; i < n; ++i) tick_twice();
}
COMPILED_DRIVER int add_one_n(int n) {
  int t = 0;
  for (int i = 0; i < n; ++i) t += add_one(i);
  return t;
}
COMPILED_DRIVER void countdown_from(int depth) { countdown(depth); }
COMPILED_DRIVER int sum_down_from(int depth) { return sum_down(depth); }
COMPILED_DRIVER void steps_of(int n) { steps(n); }
COMPILED_DRIVER void quiet_n(int n) {
  for (int i = 0; i < n; ++i) quiet();
}
COMPILED_DRIVER int checked_each(int n) {
  int t = 0;
  for (int i = 0; i < n; ++i) t += checked(i);
  return t;
}
COMPILED_DRIVER void checked_void_each(int n) {
  for (int i = 0; i < n; ++i) checked_void(i);
}

COMPILED_DRIVER bool descend_from(int bottom, int catch_level, int rethrow_level, bool then) {
  try {
    descend(1, bottom, catch_level, rethrow_level, then);
  } catch (const std::runtime_error&) {
    if (then) after_catch();
    return false;
  }
  return true;
}

COMPILED_DRIVER void land_from(int depth) { land(depth); }

COMPILED_DRIVER void hop_from() { hop_home(); }

// Not instrumented, like a library that longjmps back to itself out of its callbacks.
[[gnu::noinline]] COMPILED_DRIVER void rebound_catch(int level, int bottom) {
  if (setjmp(g_rebound) == 0) rebound(level, bottom);
  g_sink = -level;
}
COMPILED_DRIVER void rebound_from(int depth) { rebound(1, depth); }

COMPILED_DRIVER void abort_from(int depth) {
  struct sigaction action = {}, old = {};
  action.sa_handler = on_abort;
  sigemptyset(&action.sa_mask);
  sigaction(SIGABRT, &action, &old);
  abort_landing(depth);
  sigaction(SIGABRT, &old, nullptr);
}

// The coroutine's functions are called here: this code counts them.
COMPILED_DRIVER std::uint64_t generate(int n, long& sum) {
  count(Function::numbers);
  Generator g = numbers(n);
  std::uint64_t resumes = 0;
  sum = 0;
  for (;;) {
    count(Function::numbers_resume);
    g.handle.resume();
    ++resumes;
    if (g.handle.done()) break;
    sum += g.handle.promise().value;
  }
  count(Function::numbers_destroy);
  g.handle.destroy();
  return resumes;
}

COMPILED_DRIVER void raise_handled(int signo, int times, bool alternate) {
  struct sigaction action = {}, old = {};
  action.sa_handler = on_signal;
  action.sa_flags = alternate ? SA_ONSTACK : 0;
  sigemptyset(&action.sa_mask);
  sigaction(signo, &action, &old);
  raiser(signo, times);
  sigaction(signo, &old, nullptr);
}

}  // namespace compiled
