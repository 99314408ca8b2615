// Functions whose stack pointer moves between their hooks (stack_moves.cpp, built at -O2
// with -fno-exceptions by g++ and by clang, linked into the compiled-shapes tests): a
// variable-length array allocated after the entry hook (either compiler), and, under g++
// without exceptions, stack arguments of a call (past the sixth) that are popped only
// after the hooks that follow the call: the function's own exit hook, and the hooks of the
// functions inlined after the call. Each function counts its own calls. Nothing here
// includes ringtrace.
#pragma once

#include <cstdint>

namespace stack_moves {

enum class Function : int {
  make,       // returns a Holder (memory), 7 arguments: two of them pushed
  assign,     // Holder's move assignment, inlined into store(): under g++, hooks run with make's arguments pushed
  release,    // Holder's destructor, inlined into store(): its entry with the arguments pushed, its exit after
  store,      // holder = make(...): the two inlined functions above
  sum8,       // 8 arguments: two pushed
  sum8_plus,  // return sum8(...) + 1: under g++ its exit hook runs before the pop
  scratch,    // a variable-length array allocated after its entry hook, calls sum8_plus
  function_count
};
inline constexpr int kFunctions = static_cast<int>(Function::function_count);

const char* name(Function f);
std::uint64_t calls(Function f);
// Whether f's hooks are those of a function inlined into another (under g++; clang's flags
// leave them out).
bool inlined(Function f);
bool hooks_in_inlined_functions();
void reset();

void store_n(int n);      // store() n times
long sum8_plus_n(int n);  // sum8_plus(i) for i < n
long scratch_n(int n);    // scratch(i) for i < n

}  // namespace stack_moves
