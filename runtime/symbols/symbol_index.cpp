#include "symbol_index.hpp"

#include <gelf.h>

#include <algorithm>

namespace ringtrace::symbols {
namespace {

int binding_rank(unsigned char info) {
  switch (GELF_ST_BIND(info)) {
    case STB_GLOBAL:
      return 0;
    case STB_WEAK:
      return 1;
    default:
      return 2;
  }
}

}  // namespace

void SymbolIndex::build() {
  built_ = true;
  // .symtab when the module (or its debug file) has one, else .dynsym; plus the
  // MiniDebugInfo table (.gnu_debugdata) when there is one.
  const int count = dwfl_module_getsymtab(module_);
  for (int i = 1; i < count; ++i) {
    GElf_Sym symbol;
    GElf_Addr address = 0;
    GElf_Word section = 0;
    const char* name = dwfl_module_getsym_info(module_, i, &symbol, &address, &section, nullptr, nullptr);
    if (name == nullptr || name[0] == '\0') continue;
    const int type = GELF_ST_TYPE(symbol.st_info);
    if (type != STT_FUNC && type != STT_GNU_IFUNC) continue;
    if (section == SHN_UNDEF || address == 0) continue;  // imports
    entries_.push_back(Entry{address, address + symbol.st_size, name, binding_rank(symbol.st_info)});
  }
  std::sort(entries_.begin(), entries_.end(),
            [](const Entry& a, const Entry& b) { return a.low != b.low ? a.low < b.low : a.rank < b.rank; });
}

const char* SymbolIndex::name_at(std::uint64_t address) {
  if (!built_) build();
  auto it = std::upper_bound(entries_.begin(), entries_.end(), address,
                             [](std::uint64_t value, const Entry& entry) { return value < entry.low; });
  // Back over the symbols starting at or below the address. The closest group (one start
  // address) that holds it wins; within a group, sorted by rank, walking back meets the
  // best ranked last. Earlier groups matter only for overlapping symbols: a few steps.
  const Entry* best = nullptr;
  for (int steps = 0; it != entries_.begin() && steps < 16; ++steps) {
    --it;
    if (best != nullptr && it->low != best->low) break;
    if (address < it->high || (it->high == it->low && address == it->low)) best = &*it;
  }
  return best != nullptr ? best->name : nullptr;
}

}  // namespace ringtrace::symbols
