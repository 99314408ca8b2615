// Function addresses back to names, source files and lines, from a recorded module list.
//
// Live:    Symbolizer symbolizer(loaded_modules());
// Offline: Symbolizer symbolizer(modules_read_from_the_trace, {"/where/copies/of/the/binaries/are"});
// then symbolizer.resolve(address) for each recorded address. The files are read with
// elfutils' libdwfl at the recorded load addresses, so this works after the recording
// process exited, and on another machine given the same files (matched by build id).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "modules.hpp"

namespace ringtrace::symbols {

struct Symbol {
  // Demangled and qualified, "ns::Parser::parse(std::string_view)"; a C function's plain
  // name. Unknown: "<module basename>+0x1a2b" (offset from the module's base) for an
  // address in a module, "0x7f12..." for an address in none.
  std::string function;
  // Source file of the function's definition (DW_AT_decl_file), "" if unknown.
  std::string file;
  // Its line (DW_AT_decl_line), 0 if unknown.
  std::uint32_t line = 0;
  // The recorded path of the module holding the address, "" if none does.
  std::string module;
  // The name came from DWARF or an ELF symbol table.
  bool resolved = false;
};

// Not thread-safe: one thread at a time uses a Symbolizer (libdwfl sessions are not
// thread-safe). Nothing throws for bad, missing or mismatched files: those modules give
// "<module>+0x..." names and say why in problems(). Memory grows with the number of
// distinct addresses resolved (each is kept).
//
// A Symbolizer serves one snapshot of the module list: when modules were loaded or
// unloaded (module_generation() changed), addresses recorded after that need a Symbolizer
// of the new list (a library may reuse an unloaded one's addresses).
class Symbolizer {
 public:
  // `modules`: as recorded (live: loaded_modules(); offline: read back from a trace).
  // `search_paths`: directories to look for a module's file, or its separate debug file,
  // when the recorded path is missing or holds another build; matched by build id, as
  // <dir>/.build-id/xx/yyyy[.debug], <dir>/<basename> or <dir>/<recorded path>.
  // /usr/lib/debug is always searched for debug files. A module's file is opened the
  // first time an address falls in it.
  explicit Symbolizer(std::vector<Module> modules, std::vector<std::string> search_paths = {});
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;
  Symbolizer(Symbolizer&&) noexcept;
  Symbolizer& operator=(Symbolizer&&) noexcept;

  // Each distinct address is symbolized once; the reference stays valid as long as the
  // Symbolizer (other calls do not invalidate it).
  const Symbol& resolve(std::uint64_t address);
  // A return address (an allocation's caller, a stack's frame): the call before it, in the
  // innermost function holding it (inlined or not), with the call's own file and line
  // (function_info.hpp's call_at). Cached apart from resolve()'s.
  const Symbol& resolve_call(std::uint64_t return_address);

  // Why modules could not be read, or were read from elsewhere ("build id mismatch",
  // "not found", "no DWARF", "using <copy>"), one line per module, for a tool to report.
  // Only modules an address has fallen in so far are opened, hence reported.
  std::vector<std::string> problems() const;

  const std::vector<Module>& modules() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringtrace::symbols
