// The ELF objects mapped into this process, as a symbolizer needs them later: which file,
// where it was loaded and which build of it. A recorder stores this list next to the raw
// function addresses it records; a Symbolizer turns the pair back into names, in this
// process or in another one after this one has exited.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringtrace::symbols {

// One mapped ELF object as the process sees it.
struct Module {
  // Absolute path of the file as loaded. The main program's (which the loader reports
  // with an empty name) is /proc/self/exe's target.
  std::string path;
  // Load bias (dl_phdr_info::dlpi_addr): address in the process = address in the file + base.
  // 0 for a non-PIE executable.
  std::uint64_t base = 0;
  // [low, high): the executable PT_LOAD segments in the process (the span from the lowest
  // to the highest when there are several). An address is attributed to the module whose
  // range holds it, so this is what must be recorded for code addresses.
  std::uint64_t low = 0, high = 0;
  // Lowercase hex of the NT_GNU_BUILD_ID note, "" if the object has none. A Symbolizer
  // trusts a file only if its build id is this one.
  std::string build_id;

  friend bool operator==(const Module&, const Module&) = default;
};

// Every object loaded now (dl_iterate_phdr order: the executable first, then the shared
// objects, those opened with dlopen included). The vDSO and objects without a file are
// left out. The build id is read from the loaded image's PT_NOTE segments, so it is the
// one of the bytes actually mapped, whatever has happened to the file since.
// Thread-safe; costs a few microseconds for a few dozen objects (see docs/symbols.md), so a
// drainer can call it once per pass, or better only when module_generation() changed.
std::vector<Module> loaded_modules();

// A counter that changes whenever an object is loaded or unloaded (the loader's
// dlpi_adds + dlpi_subs), so a caller re-reads loaded_modules() only when it changed.
// Thread-safe; much cheaper than loaded_modules() (it stops at the first object).
std::uint64_t module_generation();

// The module of `modules` whose [low, high) holds `address`, or nullptr.
const Module* find_module(const std::vector<Module>& modules, std::uint64_t address);

}  // namespace ringtrace::symbols
