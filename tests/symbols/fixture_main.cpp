// clang-format off
// (Not formatted: the line numbers of this file's functions are test data, __LINE__.)
// Main-program functions of every kind the symbolizer names: a namespace function, class
// methods (out of class, in class, static, const), overloads, a function with internal
// linkage, one in an anonymous namespace, a template instance, a lambda, a C function.
// The line of each definition is taken with __LINE__ on the same line.
#include <string>
#include <string_view>

#include "fixture.hpp"

// Side effects the optimizer cannot drop, so that each function keeps a body of its own
// (identical bodies could be folded into one).
volatile int g_fixture_sink = 0;

namespace fixture::geometry {

class Parser {
 public:
  int parse(std::string_view text) const;
  static int count(const std::string& text);
  int width() const { g_fixture_sink = 11; return width_; } static constexpr int kWidthLine = __LINE__;

 private:
  int width_ = 3;
};

int Parser::parse(std::string_view text) const { g_fixture_sink = 12; return static_cast<int>(text.size()) + width_; } constexpr int kParseLine = __LINE__;

int Parser::count(const std::string& text) { g_fixture_sink = 13; return static_cast<int>(text.size()) * 2; } constexpr int kCountLine = __LINE__;

}  // namespace fixture::geometry

namespace fixture {

int overloaded(int value) { g_fixture_sink = 21; return value + 1; } constexpr int kOverloadedIntLine = __LINE__;
int overloaded(double value) { g_fixture_sink = 22; return static_cast<int>(value) + 2; } constexpr int kOverloadedDoubleLine = __LINE__;

static int internal_linkage(int value) { g_fixture_sink = 23; return value * 7; } constexpr int kInternalLine = __LINE__;

template <typename T>
T twice(T value) { g_fixture_sink = 24; return value + value; } constexpr int kTwiceLine = __LINE__;

// The lambda lives in an inline function: g++ and clang++ then mangle its closure type
// the same way ({lambda(int)#1}); in a non-inline function clang++ names it $_0.
inline const void* lambda_holder(int& line) {
  auto lambda = [](int value) { g_fixture_sink = 25; return value - 1; }; line = __LINE__;
  return member_address(&decltype(lambda)::operator());
}

}  // namespace fixture

namespace {
int in_anonymous_namespace(int value) { g_fixture_sink = 26; return value ^ 5; } constexpr int kAnonymousLine = __LINE__;
}  // namespace

extern "C" int fixture_c_function(int value) { g_fixture_sink = 27; return value | 8; } constexpr int kCFunctionLine = __LINE__;

namespace fixture {

// A call that stays a call (noinline) from code inlined into the caller (always_inline):
// its return address lies in the caller, within the inlined code's range.
[[gnu::noinline]] const void* return_address() {
  g_fixture_sink = 31;
  return __builtin_extract_return_addr(__builtin_return_address(0));
}
[[gnu::always_inline]] inline const void* inlined_helper() { g_fixture_sink = 32; return return_address(); }
[[gnu::noinline]] const void* caller_with_inlined() { const void* where = inlined_helper(); g_fixture_sink = 33; return where; } constexpr int kCallerLine = __LINE__;

const FixtureFunction kCallerWithInlined{nullptr, "fixture::caller_with_inlined()", "fixture_main.cpp", kCallerLine};

const void* address_inside_inlined_code() { return caller_with_inlined(); }

std::vector<FixtureFunction> main_program_functions() {
  using geometry::Parser;
  int lambda_line = 0;
  const void* lambda = lambda_holder(lambda_line);
  return {
      {member_address(&Parser::parse), "fixture::geometry::Parser::parse(std::string_view) const", "fixture_main.cpp",
       geometry::kParseLine},
      {function_address(&Parser::count), "fixture::geometry::Parser::count(std::string const&)", "fixture_main.cpp",
       geometry::kCountLine},
      {member_address(&Parser::width), "fixture::geometry::Parser::width() const", "fixture_main.cpp",
       Parser::kWidthLine},
      {function_address<int(int)>(&overloaded), "fixture::overloaded(int)", "fixture_main.cpp", kOverloadedIntLine},
      {function_address<int(double)>(&overloaded), "fixture::overloaded(double)", "fixture_main.cpp",
       kOverloadedDoubleLine},
      {function_address(&internal_linkage), "fixture::internal_linkage(int)", "fixture_main.cpp", kInternalLine},
      {function_address(&twice<long>), "long fixture::twice<long>(long)", "fixture_main.cpp", kTwiceLine},
      {lambda, "fixture::lambda_holder(int&)::{lambda(int)#1}::operator()(int) const", "fixture_main.cpp",
       lambda_line},
      {function_address(&in_anonymous_namespace), "(anonymous namespace)::in_anonymous_namespace(int)",
       "fixture_main.cpp", kAnonymousLine},
      {function_address(&fixture_c_function), "fixture_c_function", "fixture_main.cpp", kCFunctionLine},
  };
}

}  // namespace fixture
// clang-format on
