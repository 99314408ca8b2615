// Demangling and the shortening of the standard library's string spellings.
#include <gtest/gtest.h>

#include "symbols/demangle.hpp"

namespace {

using ringtrace::symbols::demangle;
using ringtrace::symbols::simplify_std_names;

TEST(SymbolNames, StringAndStringViewAreShortened) {
  EXPECT_EQ(
      simplify_std_names("f(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)"),
      "f(std::string const&)");
  EXPECT_EQ(simplify_std_names("ns::Parser::parse(std::basic_string_view<char, std::char_traits<char> >)"),
            "ns::Parser::parse(std::string_view)");
  EXPECT_EQ(simplify_std_names("g(std::basic_string<wchar_t, std::char_traits<wchar_t>, std::allocator<wchar_t> >, "
                               "std::basic_string_view<char32_t, std::char_traits<char32_t> >)"),
            "g(std::wstring, std::u32string_view)");
  // LLVM's demangler closes template argument lists without the space.
  EXPECT_EQ(simplify_std_names("h(std::basic_string_view<char, std::char_traits<char>>)"), "h(std::string_view)");
}

TEST(SymbolNames, InlineNamespaceCxx11IsDropped) {
  EXPECT_EQ(simplify_std_names("std::__cxx11::list<int, std::allocator<int> >::size() const"),
            "std::list<int, std::allocator<int> >::size() const");
  EXPECT_EQ(simplify_std_names(
                "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::size() const"),
            "std::string::size() const");
}

TEST(SymbolNames, OtherSpellingsAreLeftAlone) {
  EXPECT_EQ(simplify_std_names("f(std::basic_string<char, std::char_traits<char>, my::allocator<char> >)"),
            "f(std::basic_string<char, std::char_traits<char>, my::allocator<char> >)");
  EXPECT_EQ(simplify_std_names("std::vector<int, std::allocator<int> >::push_back(int const&)"),
            "std::vector<int, std::allocator<int> >::push_back(int const&)");
  EXPECT_EQ(simplify_std_names("mystd::__cxx11x::g()"), "mystd::__cxx11x::g()");
  EXPECT_EQ(simplify_std_names(""), "");
}

TEST(SymbolNames, DemangleSimplifies) {
  // void ns::f(std::string const&, std::string_view)
  EXPECT_EQ(demangle("_ZN2ns1fERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESt17basic_string_viewIcS3_E"),
            "ns::f(std::string const&, std::string_view)");
  EXPECT_EQ(demangle("_ZZ5outervENKUliE_clEi"), "outer()::{lambda(int)#1}::operator()(int) const");
  EXPECT_EQ(demangle("_ZN2ns1fEv.cold"), "ns::f() [clone .cold]");
}

TEST(SymbolNames, NonMangledNamesStay) {
  EXPECT_EQ(demangle("main"), "main");
  // __cxa_demangle would read a lone "f" as the type float.
  EXPECT_EQ(demangle("f"), "f");
  EXPECT_EQ(demangle("_Znot_valid"), "_Znot_valid");
  EXPECT_EQ(demangle(nullptr), "");
}

}  // namespace
