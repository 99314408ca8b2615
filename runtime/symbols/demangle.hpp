// Function names as people write them: demangled, with the standard library's spellings
// of its string types shortened.
#pragma once

#include <string>
#include <string_view>

namespace ringtrace::symbols {

// `mangled` demangled (abi::__cxa_demangle) and simplified; a name that is not a mangled
// C++ name (a C function, "main") comes back as it is.
std::string demangle(const char* mangled);

// The spellings the demangler gives for what a program writes as std::string and
// std::string_view (and the other character types' aliases), with the ABI's inline
// namespace std::__cxx11:: dropped:
//   std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >  ->  std::string
//   std::basic_string_view<char, std::char_traits<char> >                             ->  std::string_view
// Only these exact spellings: anything else (other allocators, other default template
// arguments such as std::vector's) is left as the demangler wrote it.
std::string simplify_std_names(std::string_view demangled);

}  // namespace ringtrace::symbols
