#include "demangle.hpp"

#include <cxxabi.h>

#include <array>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace ringtrace::symbols {
namespace {

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  std::size_t pos = 0;
  while ((pos = text.find(from, pos)) != std::string::npos) {
    text.replace(pos, from.size(), to);
    pos += to.size();
  }
}

struct Spelling {
  std::string long_form, short_form;
};

// Built once: for each character type, the basic_string and basic_string_view
// instantiations the aliases stand for. Both closings of a template argument list are
// listed: libstdc++'s demangler writes "> >", LLVM's ">>". Never destroyed: a drainer
// may demangle names after static destructors ran (a session stopped by an exit hook).
const std::vector<Spelling>& spellings() {
  static const std::vector<Spelling>* const table = new std::vector<Spelling>([] {
    struct CharType {
      const char *type, *prefix;
    };
    static constexpr std::array<CharType, 5> kTypes{
        {{"char", ""}, {"wchar_t", "w"}, {"char8_t", "u8"}, {"char16_t", "u16"}, {"char32_t", "u32"}}};
    std::vector<Spelling> out;
    for (const CharType& c : kTypes) {
      const std::string traits = std::string("std::char_traits<") + c.type + ">";
      const std::string alloc = std::string("std::allocator<") + c.type + ">";
      for (const char* close : {" >", ">"}) {
        out.push_back({"std::basic_string<" + std::string(c.type) + ", " + traits + ", " + alloc + close,
                       std::string("std::") + c.prefix + "string"});
        out.push_back({"std::basic_string_view<" + std::string(c.type) + ", " + traits + close,
                       std::string("std::") + c.prefix + "string_view"});
      }
    }
    return out;
  }());
  return *table;
}

}  // namespace

std::string simplify_std_names(std::string_view demangled) {
  std::string text(demangled);
  if (text.find("std::") == std::string::npos) return text;
  replace_all(text, "std::__cxx11::", "std::");
  for (const Spelling& spelling : spellings()) replace_all(text, spelling.long_form, spelling.short_form);
  return text;
}

std::string demangle(const char* mangled) {
  if (mangled == nullptr) return {};
  // Only Itanium names (_Z...) go to the demangler: it would also "demangle" a plain C
  // name that happens to read as a type encoding ("f" -> "float").
  if (mangled[0] != '_' || mangled[1] != 'Z') return mangled;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), &std::free);
  if (status != 0 || !out) return mangled;
  return simplify_std_names(out.get());
}

}  // namespace ringtrace::symbols
