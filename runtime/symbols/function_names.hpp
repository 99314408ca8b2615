// The names of the instrumented functions of the running process, and the modules they
// are in, for the live drainer (its site table names each function's zone) and the binary
// file's writer (its module and function frames). Each distinct address is symbolized once
// for the whole process, each module's file opened once; the list of loaded modules is
// read again only when the loader's generation changed (dlopen, dlclose) or an address
// falls in no module known.
//
// An address is attributed to the module that holds it in the list current when it is
// resolved: a library unloaded before that is missing (a plugin that links ringtrace waits
// for the drainer before it is unloaded; docs/functions.md).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "modules.hpp"
#include "symbolizer.hpp"

namespace ringtrace::symbols {

// A function of the running process.
struct LiveFunction {
  const Symbol* symbol = nullptr;  // its name, file and line; valid as long as the process
  std::uint32_t module = 0;        // LiveFunctions::module(id); 0: in no module
};

class LiveFunctions {
 public:
  // The process's one instance (never destroyed: a drainer may name functions while the
  // process exits). Thread-safe: one lock around every call.
  static LiveFunctions& instance();

  LiveFunction resolve(std::uint64_t address);
  // The id of the module holding `address` (0: none), without naming the function.
  std::uint32_t module_of(std::uint64_t address);
  // Module `id` (1 and up, in the order they were first seen) as the loader described it.
  Module module(std::uint32_t id);
  // Whether module `id` is loaded now.
  bool loaded(std::uint32_t id);

 private:
  struct Known {
    Module module;
    std::unique_ptr<Symbolizer> symbolizer;  // this module alone; opened at its first address
  };
  LiveFunctions() = default;
  void refresh();  // the loader's list, when it changed
  std::uint32_t id_of(const Module& module);

  std::mutex mutex_;
  std::uint64_t generation_ = ~std::uint64_t{0};
  std::vector<Module> loaded_;                                 // the loader's list at generation_
  std::vector<std::uint32_t> ids_;                             // loaded_[i]'s id
  std::deque<Known> known_;                                    // by id - 1; every module ever seen
  std::unordered_map<std::uint64_t, LiveFunction> functions_;  // by address, for the modules loaded
  std::deque<Symbol> unknown_;                                 // names of addresses in no module
};

}  // namespace ringtrace::symbols
