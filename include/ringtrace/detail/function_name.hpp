// RINGTRACE_FUNCTION()'s name: the qualified name of the enclosing function
// ("ns::Class::method"), cut out of __PRETTY_FUNCTION__ at compile time, so that two
// classes' methods of the same name are two sites with two names (rows of the table,
// frames of the folded stacks and of pstats), at no cost at run time.
//
// From GCC's and Clang's spellings:
//   "void ns::A::update(int) const"                 -> "ns::A::update"
//   "int ns::B<T>::get() [with T = int]"  (GCC)      -> "ns::B::get"  (template arguments dropped:
//   "int ns::B<int>::get() [T = int]"     (Clang)       one name whatever the compiler and instantiation)
//   "bool ns::A::operator<(const A&) const"         -> "ns::A::operator<"
//   "ns::A::A()"                                    -> "ns::A::A"
//   "ns::run()::<lambda(int)>"            (GCC)      -> "ns::run::<lambda>"  (a lambda: its enclosing
//   "auto ns::run()::(lambda at f.cpp:3:5)::operator()(int) const" (Clang) function's name, marked)
//   "void f()::Local::g()"                          -> "f::Local::g"
//   "void ns::{anonymous}::f()"                     -> "ns::f"  (anonymous namespaces left out,
//   "void ns::(anonymous namespace)::f()"  (Clang)      as both compilers spell them)
// Anything it cannot take apart is kept whole.
#pragma once

#include <cstddef>

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_NO_INSTRUMENT

namespace ringtrace::detail {

namespace function_name {

RINGTRACE_NO_INSTRUMENT constexpr bool is_word(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

RINGTRACE_NO_INSTRUMENT constexpr std::size_t length(const char* s) {
  std::size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

// The first `word` in s[from, to), or `to`.
RINGTRACE_NO_INSTRUMENT constexpr std::size_t find(const char* s, std::size_t from, std::size_t to, const char* word) {
  const std::size_t w = length(word);
  for (std::size_t i = from; i + w <= to; ++i) {
    std::size_t k = 0;
    while (k < w && s[i + k] == word[k]) ++k;
    if (k == w) return i;
  }
  return to;
}

// Where the qualified name is in s[0, n): [begin, end), the operator's spelling (if the
// function is an operator) starting at `op` (== end if none), and whether it is a lambda.
struct Parts {
  std::size_t begin = 0, end = 0, op = 0;
  bool lambda = false;
};

RINGTRACE_NO_INSTRUMENT constexpr Parts parse(const char* s) {
  std::size_t n = length(s);
  Parts whole{0, n, n, false};
  // " [with T = int]" (GCC), " [T = int]" (Clang) at the end.
  if (n > 0 && s[n - 1] == ']') {
    int depth = 0;
    for (std::size_t i = n; i > 1; --i) {
      const char c = s[i - 1];
      if (c == ']') ++depth;
      if (c == '[' && --depth == 0) {
        if (s[i - 2] == ' ') n = i - 2;
        break;
      }
    }
  }
  // A lambda: what precedes it is its enclosing function.
  bool lambda = false;
  std::size_t cut = find(s, 0, n, "::<lambda");
  const std::size_t clang_lambda = find(s, 0, n, "::(lambda at ");
  const std::size_t clang_anonymous = find(s, 0, n, "::(anonymous class)");
  if (clang_lambda < cut) cut = clang_lambda;
  if (clang_anonymous < cut) cut = clang_anonymous;
  if (cut < n) {
    n = cut;
    lambda = true;
  }
  // The parameter list: the last ')' (qualifiers such as " const" or " &&" follow it),
  // back to its '('.
  std::size_t close = n;
  while (close > 0 && s[close - 1] != ')') --close;
  if (close == 0) return whole;
  int depth = 0;
  std::size_t open = close;
  while (open > 0) {
    const char c = s[--open];
    if (c == ')') ++depth;
    if (c == '(' && --depth == 0) break;
  }
  if (depth != 0) return whole;
  const std::size_t end = open;
  // An operator: its spelling ("operator<", "operator()", "operator int") is the name's
  // last part, kept as it is.
  std::size_t op = end;
  for (std::size_t i = find(s, 0, end, "operator"); i < end; i = find(s, i + 1, end, "operator")) {
    const bool starts = i == 0 || s[i - 1] == ':' || s[i - 1] == ' ';
    const bool ends = i + 8 >= end || !is_word(s[i + 8]);
    if (starts && ends) op = i;
  }
  // The name's start: the space before it outside <> and () (the return type's end).
  std::size_t begin = 0;
  depth = 0;
  for (std::size_t j = op; j > 0; --j) {
    const char c = s[j - 1];
    if (c == '>' || c == ')') ++depth;
    if (c == '<' || c == '(') --depth;
    if (c == ' ' && depth == 0) {
      begin = j;
      break;
    }
  }
  while (begin < op && (s[begin] == '*' || s[begin] == '&')) ++begin;  // Clang: "const char *ns::f()"
  return Parts{begin, end, op, lambda};
}

// Copies the name, without template arguments and parameter lists before its last part
// ("B<int>::get" -> "B::get", "f()::Local::g" -> "f::Local::g"), and with "::<lambda>"
// for a lambda, into out (if not null); returns its length.
RINGTRACE_NO_INSTRUMENT constexpr std::size_t build(const char* s, char* out) {
  const Parts p = parse(s);
  std::size_t n = 0;
  const auto put = [&](char c) RINGTRACE_NO_INSTRUMENT {
    if (out != nullptr) out[n] = c;
    ++n;
  };
  std::size_t i = p.begin;
  while (i < p.op) {
    const char c = s[i];
    // A group right after a word (template arguments, a function's parameters) is left out.
    if ((c == '<' || c == '(') && i > p.begin && is_word(s[i - 1])) {
      int depth = 0;
      while (i < p.op) {
        const char d = s[i++];
        if (d == '<' || d == '(') ++depth;
        if ((d == '>' || d == ')') && --depth == 0) break;
      }
      continue;
    }
    // Anonymous namespaces are left out (GCC: "{anonymous}::", Clang: "(anonymous namespace)::").
    if (c == '{' && find(s, i, p.op, "{anonymous}::") == i) {
      i += 13;
      continue;
    }
    if (c == '(' && find(s, i, p.op, "(anonymous namespace)::") == i) {
      i += 23;
      continue;
    }
    put(c);
    ++i;
  }
  for (; i < p.end; ++i) put(s[i]);
  if (p.lambda) {
    for (const char* l = "::<lambda>"; *l != '\0'; ++l) put(*l);
  }
  return n;
}

}  // namespace function_name

RINGTRACE_NO_INSTRUMENT constexpr std::size_t qualified_function_name_size(const char* pretty) {
  return function_name::build(pretty, nullptr) + 1;
}

// The name as a NUL-terminated array of static storage (a `static constexpr` object).
template <std::size_t N>
struct QualifiedFunctionName {
  char text[N] = {};
  RINGTRACE_NO_INSTRUMENT constexpr explicit QualifiedFunctionName(const char* pretty) {
    function_name::build(pretty, text);
  }
};

}  // namespace ringtrace::detail
