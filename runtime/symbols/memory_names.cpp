#include "memory_names.hpp"

#include <string>

namespace ringtrace::symbols {

namespace {

std::string location_of(const Symbol& s) {
  if (s.file.empty()) return {};
  return s.line != 0 ? s.file + ":" + std::to_string(s.line) : s.file;
}

}  // namespace

void name_memory(MemoryStats& memory, Symbolizer& symbolizer) {
  for (MemoryStats::Site& site : memory.sites) {
    const Symbol& s = symbolizer.resolve_call(site.address);
    site.function = s.function;
    site.location = location_of(s);
    site.module = s.module;
  }
  for (MemoryStats::Stack& stack : memory.stacks) {
    stack.functions.clear();
    for (const std::uint64_t frame : stack.frames) stack.functions.push_back(symbolizer.resolve_call(frame).function);
  }
  for (MemoryStats::Leak& leak : memory.leaks) {
    if (leak.site != 0) leak.function = symbolizer.resolve_call(leak.site).function;
  }
}

}  // namespace ringtrace::symbols
