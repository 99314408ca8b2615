// A module's ELF function symbols sorted by address, for the names DWARF does not give
// (functions with internal linkage, which g++ describes without DW_AT_linkage_name;
// stripped objects' .dynsym). Internal to the symbolizer.
//
// Why not dwfl_module_addrinfo: in libdw 0.188 it scans the whole symbol table on every
// call (measured: ~0.2 ms per lookup in a 10,000-function library); this is one scan, then
// a binary search.
#pragma once

#include <elfutils/libdwfl.h>

#include <cstdint>
#include <vector>

namespace ringtrace::symbols {

class SymbolIndex {
 public:
  explicit SymbolIndex(Dwfl_Module* module) : module_(module) {}
  SymbolIndex(const SymbolIndex&) = delete;
  SymbolIndex& operator=(const SymbolIndex&) = delete;

  // The (mangled) name of the function symbol whose [value, value + size) holds `address`
  // (a process address), or of a sizeless one at exactly `address`; nullptr if none. The
  // string lives as long as the module. Several symbols at one address (aliases): a
  // global one before a weak one before a local one.
  const char* name_at(std::uint64_t address);

 private:
  struct Entry {
    std::uint64_t low, high;  // [low, high); high == low for a sizeless symbol
    const char* name;
    int rank;  // binding preference, lower first
  };
  void build();

  Dwfl_Module* module_;
  bool built_ = false;
  std::vector<Entry> entries_;  // sorted by low, then rank
};

}  // namespace ringtrace::symbols
