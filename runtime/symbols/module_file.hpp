// Finding the file of a recorded module (by path, then by build id in the search paths)
// and opening it with libdwfl at the module's recorded load address. Internal to the
// symbolizer: it exposes libdwfl types.
#pragma once

#include <elfutils/libdwfl.h>

#include <memory>
#include <string>
#include <vector>

#include "function_index.hpp"
#include "modules.hpp"
#include "symbol_index.hpp"

namespace ringtrace::symbols {

// What every module's Dwfl session shares: the callbacks and the debuginfo path, which
// libdwfl keeps pointers to, so they live as long as the sessions.
class DwflConfig {
 public:
  explicit DwflConfig(std::vector<std::string> search_paths);
  DwflConfig(const DwflConfig&) = delete;
  DwflConfig& operator=(const DwflConfig&) = delete;

  const Dwfl_Callbacks* callbacks() const { return &callbacks_; }
  const std::vector<std::string>& search_paths() const { return search_paths_; }

 private:
  std::vector<std::string> search_paths_;
  std::string debuginfo_path_;
  char* debuginfo_path_ptr_ = nullptr;  // libdwfl wants a char**
  Dwfl_Callbacks callbacks_{};
};

// One module's file reported to its own Dwfl session (one per module: a module that fails
// to open or overlaps another snapshot's cannot disturb the others, and a session costs
// nothing until a module is first needed).
class ModuleFile {
 public:
  // Looks for the file whose build id is `module.build_id`: the recorded path, then in
  // each search path <dir>/.build-id/xx/yyyy, <dir>/<basename>, <dir>/<recorded path>,
  // and last a separate debug file <dir>/.build-id/xx/yyyy.debug (search paths, then
  // /usr/lib/debug), which carries the same symbols at the same addresses. With no
  // recorded build id only the recorded path is tried (nothing to check a copy against).
  // nullptr if none fits; `problem` then says why. On success `problem` may still hold a
  // note (no DWARF found, ...).
  static std::unique_ptr<ModuleFile> open(const Module& module, const DwflConfig& config, std::string& problem);
  ~ModuleFile();
  ModuleFile(const ModuleFile&) = delete;
  ModuleFile& operator=(const ModuleFile&) = delete;

  Dwfl_Module* dwfl_module() const { return module_; }
  FunctionIndex& functions() { return functions_; }
  SymbolIndex& symbols() { return symbols_; }
  // The file actually read (the recorded path or a copy found by build id).
  const std::string& file() const { return file_; }

 private:
  ModuleFile(Dwfl* dwfl, Dwfl_Module* module, std::string file)
      : dwfl_(dwfl), module_(module), file_(std::move(file)), functions_(module), symbols_(module) {}
  Dwfl* dwfl_;
  Dwfl_Module* module_;
  std::string file_;
  FunctionIndex functions_;
  SymbolIndex symbols_;
};

}  // namespace ringtrace::symbols
