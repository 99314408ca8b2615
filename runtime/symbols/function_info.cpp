#include "function_info.hpp"

#include <dwarf.h>
#include <elfutils/libdw.h>

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "demangle.hpp"

namespace ringtrace::symbols {
namespace {

const char* string_attribute(Dwarf_Die* die, unsigned int name) {
  Dwarf_Attribute attribute;
  return dwarf_formstring(dwarf_attr_integrate(die, name, &attribute));
}

// DWARF 5 line tables give absolute file names (directory entry 0 is the compilation
// directory); older ones may give a name relative to DW_AT_comp_dir. Only names that need
// it go through std::filesystem (most are absolute and clean: this runs per function).
std::string absolute_file(const char* file, Dwarf_Die* cu) {
  if (file == nullptr) return {};
  const std::string_view name(file);
  if (name.starts_with('/') && name.find("/.") == std::string_view::npos && name.find("//") == std::string_view::npos) {
    return std::string(name);
  }
  std::filesystem::path path(name);
  if (path.is_relative()) {
    Dwarf_Attribute attribute;
    if (const char* dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attribute))) path = dir / path;
  }
  return path.lexically_normal().string();
}

// What dwarf_decl_file does, but for DWARF 5 too: libdw 0.188 takes file index 0 for "no
// file", which it is up to DWARF 4, while DWARF 5 numbers files from 0 and clang names the
// main source file 0. Relative to the unit holding the attribute (which may not be the
// subprogram's when DW_AT_specification points into another unit).
std::string decl_file(Dwarf_Die* die) {
  Dwarf_Attribute attribute;
  Dwarf_Word index = 0;
  if (dwarf_formudata(dwarf_attr_integrate(die, DW_AT_decl_file, &attribute), &index) != 0) return {};
  Dwarf_Die cu;
  Dwarf_Half version = 0;
  if (dwarf_cu_die(attribute.cu, &cu, &version, nullptr, nullptr, nullptr, nullptr, nullptr) == nullptr) return {};
  if (index == 0 && version < 5) return {};
  Dwarf_Files* files = nullptr;
  std::size_t count = 0;
  if (dwarf_getsrcfiles(&cu, &files, &count) != 0 || index >= count) return {};
  return absolute_file(dwarf_filesrc(files, index, nullptr, nullptr), &cu);
}

}  // namespace

FunctionInfo function_at(FunctionIndex& functions, SymbolIndex& symbols, std::uint64_t address) {
  FunctionInfo info;
  Dwarf_Die subprogram, unit;
  const char* plain_name = nullptr;
  if (functions.find(address, subprogram, unit)) {
    const char* linkage = string_attribute(&subprogram, DW_AT_linkage_name);
    if (linkage == nullptr) linkage = string_attribute(&subprogram, DW_AT_MIPS_linkage_name);
    if (linkage != nullptr) info.name = demangle(linkage);
    plain_name = dwarf_diename(&subprogram);
    int line = 0;
    if (std::string file = decl_file(&subprogram); !file.empty() && dwarf_decl_line(&subprogram, &line) == 0) {
      info.file = std::move(file);
    } else if (Dwarf_Addr entry = 0; dwarf_entrypc(&subprogram, &entry) == 0) {
      // No declaration coordinates: g++ leaves them out of the out-of-line operator() of a
      // lambda whose enclosing function was inlined everywhere. The line table's row for
      // the function's first instruction is the next best thing (its opening line).
      if (Dwarf_Line* row = dwarf_getsrc_die(&unit, entry)) {
        info.file = absolute_file(dwarf_linesrc(row, nullptr, nullptr), &unit);
        if (dwarf_lineno(row, &line) != 0) line = 0;
      }
    }
    if (line > 0) info.line = static_cast<std::uint32_t>(line);
  }
  if (info.name.empty()) {
    if (const char* name = symbols.name_at(address)) info.name = demangle(name);
  }
  if (info.name.empty() && plain_name != nullptr) info.name = plain_name;
  return info;
}

namespace {

// The name of an inlined instance's (or a subprogram's) function: its linkage name
// demangled, through its abstract origin and specification, else its plain name.
std::string scope_name(Dwarf_Die* die) {
  const char* linkage = string_attribute(die, DW_AT_linkage_name);
  if (linkage == nullptr) linkage = string_attribute(die, DW_AT_MIPS_linkage_name);
  if (linkage != nullptr) return demangle(linkage);
  const char* plain = string_attribute(die, DW_AT_name);
  return plain != nullptr ? std::string(plain) : std::string();
}

}  // namespace

FunctionInfo call_at(Dwfl_Module* module, FunctionIndex& functions, SymbolIndex& symbols,
                     std::uint64_t return_address) {
  const std::uint64_t pc = return_address - 1;  // inside the call instruction
  FunctionInfo info;
  Dwarf_Addr bias = 0;
  if (Dwarf_Die* cu = module != nullptr ? dwfl_module_addrdie(module, pc, &bias) : nullptr) {
    Dwarf_Die* scopes = nullptr;
    const int n = dwarf_getscopes(cu, pc - bias, &scopes);
    for (int i = 0; i < n; ++i) {
      const int tag = dwarf_tag(&scopes[i]);
      if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram) continue;
      info.name = scope_name(&scopes[i]);
      break;
    }
    std::free(scopes);
    if (Dwfl_Line* row = dwfl_module_getsrc(module, pc)) {
      int line = 0;
      if (const char* file = dwfl_lineinfo(row, nullptr, &line, nullptr, nullptr, nullptr)) {
        info.file = absolute_file(file, cu);
        if (line > 0) info.line = static_cast<std::uint32_t>(line);
      }
    }
  }
  if (info.name.empty()) {
    FunctionInfo outer = function_at(functions, symbols, pc);
    info.name = std::move(outer.name);
    if (info.file.empty()) {
      info.file = std::move(outer.file);
      info.line = outer.line;
    }
  }
  return info;
}

}  // namespace ringtrace::symbols
