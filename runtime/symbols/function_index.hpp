// Which DWARF subprogram holds an address: per compilation unit, the address ranges of its
// concrete (out-of-line) functions, sorted, built the first time an address falls in the
// unit. Internal to the symbolizer.
//
// Why not dwarf_getscopes: it walks the unit's DIEs for every lookup (slow on big units),
// the first DIE whose ranges claim the address wins, and after an inlined instance it
// continues with the inlined function's abstract scopes, not with the caller. g++ 12 at
// -O3 emits inlined-instance ranges that run past their caller's end into the next
// function (seen: a lambda's entry claimed by std::copy inlined into the function before
// it), so the scopes named the wrong function. The ranges of the subprograms themselves
// come from the function's own labels and are right.
//
// The unit holding an address: dwfl_module_addrdie, which in libdw 0.188 reads only
// .debug_aranges; clang 14 does not emit that section, so without it the units' own
// ranges (DW_AT_ranges / low_pc+high_pc of each unit DIE) are indexed instead.
#pragma once

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace ringtrace::symbols {

class FunctionIndex {
 public:
  explicit FunctionIndex(Dwfl_Module* module) : module_(module) {}
  FunctionIndex(const FunctionIndex&) = delete;
  FunctionIndex& operator=(const FunctionIndex&) = delete;

  // The concrete DW_TAG_subprogram whose code holds `address` (a process address) and its
  // unit. Code inlined into a function belongs to that function. When ranges nest (a
  // nested function) the one starting closest below the address wins.
  bool find(std::uint64_t address, Dwarf_Die& subprogram, Dwarf_Die& unit);

 private:
  struct Range {
    Dwarf_Addr low, high;  // file addresses, [low, high)
    Dwarf_Die die;
  };
  struct Unit {
    Dwarf_Die die;
    std::vector<Range> ranges;  // sorted by low
  };
  struct UnitRange {
    Dwarf_Addr low, high;  // file addresses, [low, high)
    Dwarf_Die* die;        // owned by libdwfl
  };
  Unit& unit_of(Dwarf_Die* cu);
  // Without .debug_aranges: the unit whose own ranges hold `pc`, or nullptr.
  Dwarf_Die* unit_by_ranges(Dwarf_Addr pc);

  Dwfl_Module* module_;
  std::unordered_map<Dwarf_Off, Unit> units_;  // by the unit DIE's offset
  bool unit_ranges_built_ = false;
  std::vector<UnitRange> unit_ranges_;  // sorted by low
};

}  // namespace ringtrace::symbols
