#include "function_index.hpp"

#include <dwarf.h>

#include <algorithm>
#include <cstddef>

namespace ringtrace::symbols {
namespace {

// Where concrete subprograms can be: at unit level, in namespaces, in classes (some
// producers put member function definitions there), inside functions and their blocks
// (nested functions, members of local classes). Never inside inlined instances, types
// other than classes, or variables, which are skipped whole.
bool may_hold_subprograms(int tag) {
  switch (tag) {
    case DW_TAG_namespace:
    case DW_TAG_module:
    case DW_TAG_class_type:
    case DW_TAG_structure_type:
    case DW_TAG_union_type:
    case DW_TAG_subprogram:
    case DW_TAG_lexical_block:
      return true;
    default:
      return false;
  }
}

// Iterative walk (a deep nesting of namespaces and classes must not overflow the stack).
void collect(Dwarf_Die* parent, std::vector<Dwarf_Die>& pending, std::vector<Dwarf_Die>& subprograms) {
  Dwarf_Die child;
  if (dwarf_child(parent, &child) != 0) return;
  do {
    const int tag = dwarf_tag(&child);
    if (tag == DW_TAG_subprogram) subprograms.push_back(child);
    if (may_hold_subprograms(tag) && dwarf_haschildren(&child) > 0) pending.push_back(child);
  } while (dwarf_siblingof(&child, &child) == 0);
}

}  // namespace

FunctionIndex::Unit& FunctionIndex::unit_of(Dwarf_Die* cu) {
  auto [it, inserted] = units_.try_emplace(dwarf_dieoffset(cu));
  Unit& unit = it->second;
  if (!inserted) return unit;
  unit.die = *cu;
  std::vector<Dwarf_Die> pending{*cu}, subprograms;
  while (!pending.empty()) {
    Dwarf_Die parent = pending.back();
    pending.pop_back();
    collect(&parent, pending, subprograms);
  }
  for (Dwarf_Die& die : subprograms) {
    // Abstract instances and declarations have no ranges: dwarf_ranges gives nothing.
    Dwarf_Addr base = 0, start = 0, end = 0;
    for (ptrdiff_t offset = 0; (offset = dwarf_ranges(&die, offset, &base, &start, &end)) > 0;) {
      if (end > start) unit.ranges.push_back(Range{start, end, die});
    }
  }
  std::sort(unit.ranges.begin(), unit.ranges.end(), [](const Range& a, const Range& b) { return a.low < b.low; });
  return unit;
}

Dwarf_Die* FunctionIndex::unit_by_ranges(Dwarf_Addr pc) {
  if (!unit_ranges_built_) {
    unit_ranges_built_ = true;
    Dwarf_Addr bias = 0;
    for (Dwarf_Die* cu = nullptr; (cu = dwfl_module_nextcu(module_, cu, &bias)) != nullptr;) {
      Dwarf_Addr base = 0, start = 0, end = 0;
      for (ptrdiff_t offset = 0; (offset = dwarf_ranges(cu, offset, &base, &start, &end)) > 0;) {
        if (end > start) unit_ranges_.push_back(UnitRange{start, end, cu});
      }
    }
    std::sort(unit_ranges_.begin(), unit_ranges_.end(),
              [](const UnitRange& a, const UnitRange& b) { return a.low < b.low; });
  }
  auto it = std::upper_bound(unit_ranges_.begin(), unit_ranges_.end(), pc,
                             [](Dwarf_Addr value, const UnitRange& range) { return value < range.low; });
  if (it == unit_ranges_.begin()) return nullptr;
  --it;
  return pc < it->high ? it->die : nullptr;
}

bool FunctionIndex::find(std::uint64_t address, Dwarf_Die& subprogram, Dwarf_Die& unit_die) {
  Dwarf_Addr bias = 0;
  Dwarf_Die* cu = dwfl_module_addrdie(module_, address, &bias);
  if (cu == nullptr) {
    if (dwfl_module_getdwarf(module_, &bias) == nullptr) return false;
    cu = unit_by_ranges(address - bias);
    if (cu == nullptr) return false;
  }
  const Dwarf_Addr pc = address - bias;
  Unit& unit = unit_of(cu);
  auto it = std::upper_bound(unit.ranges.begin(), unit.ranges.end(), pc,
                             [](Dwarf_Addr value, const Range& range) { return value < range.low; });
  // Back over the ranges starting at or below pc, to the closest that holds it. A few
  // steps suffice: only nesting (or a gap between functions) makes the first one miss.
  for (int steps = 0; it != unit.ranges.begin() && steps < 8; ++steps) {
    --it;
    if (pc < it->high) {
      subprogram = it->die;
      unit_die = unit.die;
      return true;
    }
  }
  return false;
}

}  // namespace ringtrace::symbols
