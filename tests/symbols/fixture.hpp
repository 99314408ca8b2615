// Functions with known names, files and lines, for the symbolizer's tests: each fixture
// source lists its functions with the line of each definition taken from __LINE__ on that
// same line, so the expectations move with the code.
#pragma once

#include <cstddef>
#include <cstring>
#include <vector>

namespace fixture {

struct FixtureFunction {
  const void* address;  // the function's entry, as -finstrument-functions would record it
  const char* name;     // the qualified, simplified name the symbolizer must give
  const char* file;     // basename of the defining source
  int line;             // line of the definition
};

// The entry of a non-virtual member function (lambdas' operator() included): in the
// Itanium C++ ABI a pointer to one is {function address, this adjustment}.
template <typename MemberPointer>
const void* member_address(MemberPointer member) {
  static_assert(sizeof(MemberPointer) == 2 * sizeof(void*));
  const void* address = nullptr;
  std::memcpy(&address, &member, sizeof address);
  return address;
}

template <typename Function>
const void* function_address(Function* function) {
  return reinterpret_cast<const void*>(function);
}

// The main program's functions (fixture_main.cpp), linked into the test and the recorder.
std::vector<FixtureFunction> main_program_functions();

// A return address inside fixture::caller_with_inlined(), in code inlined into it from
// fixture::inlined_helper(): the symbolizer must name the caller (and its line).
const void* address_inside_inlined_code();
extern const FixtureFunction kCallerWithInlined;

}  // namespace fixture

// fixture_lib.cpp, opened with dlopen: its functions, and one with internal linkage
// that is in no dynamic symbol table (named only by .symtab or DWARF).
extern "C" std::size_t fixture_lib_functions(const fixture::FixtureFunction** functions);
extern "C" const fixture::FixtureFunction* fixture_lib_internal_function();
