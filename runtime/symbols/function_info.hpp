// The function an address belongs to, read from one module's DWARF and ELF symbol table.
// Internal to the symbolizer.
#pragma once

#include <elfutils/libdwfl.h>

#include <cstdint>
#include <string>

#include "function_index.hpp"
#include "symbol_index.hpp"

namespace ringtrace::symbols {

struct FunctionInfo {
  std::string name;  // demangled and simplified; "" if neither DWARF nor a symbol names it
  std::string file;  // absolute when the DWARF allows it; "" without DWARF
  std::uint32_t line = 0;
};

// `address` is a process address inside the module (as reported at its recorded base)
// whose DWARF and symbol table `functions` and `symbols` index.
//
// The function is the concrete DW_TAG_subprogram whose code holds the address (see
// FunctionIndex), so an address inside code that was inlined into a caller gives the
// caller, the out-of-line function that was actually entered, never the inlined callee.
// Its name: DW_AT_linkage_name (following DW_AT_specification/abstract_origin) demangled;
// else the ELF symbol holding the address (.symtab, or .dynsym in a stripped object)
// demangled; else DW_AT_name (C functions).
// file/line: the subprogram's DW_AT_decl_file/DW_AT_decl_line, i.e. where the function is
// defined (for a method defined in its class, the definition in the class). A subprogram
// without them (g++ drops them for some lambdas) gets the line-table row of its entry.
FunctionInfo function_at(FunctionIndex& functions, SymbolIndex& symbols, std::uint64_t address);

// The code a call returns to: `return_address` is a return address in `module` (an
// allocation's caller), so the call is the instruction before it. `name`: the innermost
// function whose code holds the call, inlined or not (DW_TAG_inlined_subroutine's origin:
// std::__new_allocator<...>::allocate inlined into vector's _M_realloc_insert names the
// allocator, as heaptrack names its allocation sites); without DWARF, function_at's.
// `file`/`line`: the line table's row of the call itself, not the function's definition.
FunctionInfo call_at(Dwfl_Module* module, FunctionIndex& functions, SymbolIndex& symbols, std::uint64_t return_address);

}  // namespace ringtrace::symbols
