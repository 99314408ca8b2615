// The instrumented code of the function tests (workload.cpp, built with
// -finstrument-functions by g++ and by clang): call trees whose every count, name, file,
// line and nesting the tests know. Nothing here includes ringtrace: it is a program's
// own code.
#pragma once

#include <cstdint>
#include <string_view>

namespace workload {

// A function as the tests expect to see it named.
struct Expected {
  const char* name;  // qualified, demangled, simplified
  int line;          // of its definition
};
// Their names and lines, and the file they are in.
Expected leaf_function();
Expected parse_function();
Expected fib_function();
Expected outer_function();
Expected middle_function();
Expected inner_function();
Expected thrower_function();
Expected catcher_function();
Expected jumper_function();
Expected landing_function();
Expected recurse_function();
Expected spin_function();
Expected call_back_function();
Expected inlined_step_function();
Expected inliner_function();
const char* source_file();
// Which compiler built it: g++ calls the exit hooks of frames an exception unwinds, clang
// does not (then the runtime closes them, marked "unwound").
bool exit_hooks_on_unwind();
// g++ instruments functions inlined into others; clang (-finstrument-functions-after-
// inlining) does not.
bool hooks_in_inlined_functions();

class Parser {
 public:
  int parse(std::string_view text);  // leaf() per byte
};
int leaf(int value);
int fib(int n);  // fib(n) makes fib_calls(n) calls
std::uint64_t fib_calls(int n);
int outer(int n);                    // outer -> middle x n -> inner x 2 each
int catcher(int depth);              // thrower nested `depth` deep throws; catcher catches, then leaf()
int landing(int depth);              // jumper nested `depth` deep longjmps back here, then leaf()
int recurse(int depth);              // recurse() nested `depth` deep
void spin(std::uint64_t ns);         // busy for about `ns`
void call_back(void (*callback)());  // calls `callback` (uninstrumented code of the test's)
int inliner(int n);                  // inlined_step() x n, inlined into it; then leaf()

}  // namespace workload
