// Functions as compilers really emit them (compiled.cpp, built at -O2 by g++ and by clang,
// each into its own test binary): exits that g++ reaches by a tail call to the exit hook
// (`jmp __cyg_profile_func_exit`, every void function), sibling calls, recursion, hot/cold
// split functions (g++'s `.cold` parts), functions inlined into others, noreturn calls
// that throw, longjmp or abort, exceptions caught at several depths, a C++20 generator,
// signal handlers on alternate stacks. Each function counts its own calls, so the tests
// compare what was recorded with what ran. Nothing here includes ringtrace.
#pragma once

#include <csignal>
#include <cstdint>

namespace compiled {

// The functions compiled.cpp counts.
enum class Function : int {
  tick,             // void: g++ leaves it by `jmp __cyg_profile_func_exit`
  tick_twice,       // void: two calls of tick(), then the same tail exit
  plus,             // int
  add_one,          // `return plus(v, 1)`: a sibling call in the source
  countdown,        // void recursion: every level left by a tail exit, the inner calls under one key
  sum_down,         // int recursion, no tail position
  steps,            // void: inlined_step() n times, inlined into it
  inlined_step,     // always_inline: g++ calls its hooks from steps()' frame; clang does not instrument it
  quiet_step,       // always_inline into quiet() (not instrumented): with g++ its exit is quiet()'s tail call
  checked,          // int, hot/cold split: its rare path is in g++'s `checked(int) [clone .cold]`
  checked_void,     // void, hot/cold split, left by a tail exit from either part
  rare,             // called on the cold paths
  fail,             // [[noreturn]]: throws
  descend,          // void recursion down to fail(); one level may catch, one may rethrow
  after_catch,      // called by the level that caught, when asked to
  jump_out,         // [[noreturn]]: longjmp back to land()
  leap,             // void recursion down to jump_out()
  land,             // void: setjmp, leap() down, lands back here
  hop,              // void: jump_out() from one level down, back to hop_home()
  roomy,            // void with a large frame, called after hop() was left (below its stale frames)
  hop_home,         // void: setjmp, hop(), then roomy() and tick()
  rebound,          // void recursion; level 2 calls it on through code of the program's that longjmps back
  give_up,          // [[noreturn]]: std::abort(); the SIGABRT handler jumps back to abort_landing()
  on_abort,         // the SIGABRT handler (instrumented), left by siglongjmp
  abort_landing,    // void: sigsetjmp, leap()s down to give_up()
  on_signal,        // a signal handler (instrumented) that calls tick() twice
  raiser,           // void: raises the signal n times
  numbers,          // a C++20 generator's ramp: numbers(n) yields 0 .. n-1
  numbers_resume,   // its resume function (g++: `[clone .actor]`, clang: `.resume`)
  numbers_destroy,  // its destroy function (g++: `[clone .destroy]`, clang: `.destroy`)
  function_count
};

// The function's name as ringtrace records it (qualified, demangled; two functions may have
// one name), its own count of calls since reset(), whether its hooks are those of a
// function inlined into another.
inline constexpr int kFunctions = static_cast<int>(Function::function_count);
const char* name(Function f);
std::uint64_t calls(Function f);
bool inlined(Function f);
void reset();

// Which compiler built compiled.cpp.
bool built_by_gcc();
// g++ calls the exit hooks of the frames an exception unwinds; clang does not.
bool exit_hooks_on_unwind();
// g++ instruments functions inlined into others; clang (after inlining) does not.
bool hooks_in_inlined_functions();
// Calls of numbers' resume function the compiler adds to the `resumes` the program makes
// (g++'s ramp runs the actor to the initial suspend point, and destroy() calls it too).
std::uint64_t extra_resume_calls();

void tick_n(int n);  // tick() n times from an uninstrumented loop
void tick_twice_n(int n);
int add_one_n(int n);
void countdown_from(int depth);
int sum_down_from(int depth);
void steps_of(int n);
void quiet_n(int n);      // quiet() n times: not instrumented, quiet_step() inlined into it
int checked_each(int n);  // checked(i) for i < n: every 8th takes the cold path
void checked_void_each(int n);

// descend(1, bottom, catch_level, rethrow_level, then): levels 1 .. bottom, fail() at the
// bottom; the level `catch_level` catches (0: none, the exception leaves every level to
// this function's caller, which returns false); if `rethrow_level` (above catch_level) is
// set, that level catches first and rethrows. `then`: the catching level (or this function)
// calls after_catch() (else it returns right away, and its exit meets the frames left).
bool descend_from(int bottom, int catch_level, int rethrow_level, bool then);

void land_from(int depth);  // land(): leap() down `depth` levels, jump_out() longjmps back
// hop_home(): hop() longjmps back to it, then it calls roomy() and tick(). roomy's frame is
// deeper than the frames hop() left, which are still beneath it on the shadow stack.
void hop_from();
// rebound(1, depth): level 2 goes on through rebound_catch() (the program's code: setjmp,
// then rebound(3, depth)); the deepest level longjmps back there, and level 2 returns by a
// tail exit (g++) with levels 3 .. depth left above it, levels 4 .. depth under its key.
void rebound_from(int depth);
// abort_landing(depth): leap() `depth` levels down, give_up() calls std::abort(), the
// SIGABRT handler on_abort() siglongjmps back (installed and removed here).
void abort_from(int depth);

// A generator resumed until it is done: returns the number of resume() calls, the sum of
// the values in `sum`.
std::uint64_t generate(int n, long& sum);

// Installs on_signal() for `signo` (SA_ONSTACK when `alternate`: the caller set up the
// alternate stack), raiser() raises it `times`, then the old action is back.
void raise_handled(int signo, int times, bool alternate);

}  // namespace compiled
