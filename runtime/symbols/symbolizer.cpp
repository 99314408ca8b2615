#include "symbolizer.hpp"

#include <algorithm>
#include <filesystem>
#include <unordered_map>

#include "function_info.hpp"
#include "hex.hpp"
#include "module_file.hpp"

namespace ringtrace::symbols {

struct Symbolizer::Impl {
  enum class State { unopened, open, failed };
  struct Slot {
    std::size_t index;  // into modules
    State state = State::unopened;
    std::unique_ptr<ModuleFile> file;
  };

  Impl(std::vector<Module> recorded, std::vector<std::string> search_paths)
      : modules(std::move(recorded)), config(std::move(search_paths)) {
    // Sorted by start address for a binary search; a module without an executable range
    // can hold no code address.
    for (std::size_t i = 0; i < modules.size(); ++i) {
      if (modules[i].high > modules[i].low) slots.push_back(Slot{i, State::unopened, nullptr});
    }
    std::sort(slots.begin(), slots.end(),
              [this](const Slot& a, const Slot& b) { return modules[a.index].low < modules[b.index].low; });
  }

  Slot* slot_of(std::uint64_t address) {
    auto it = std::upper_bound(slots.begin(), slots.end(), address,
                               [this](std::uint64_t a, const Slot& s) { return a < modules[s.index].low; });
    // The last module starting at or below the address (the ranges of one snapshot do
    // not overlap).
    if (it == slots.begin()) return nullptr;
    --it;
    const Module& module = modules[it->index];
    return address < module.high ? &*it : nullptr;
  }

  ModuleFile* file_of(Slot& slot) {
    if (slot.state == State::unopened) {
      std::string problem;
      try {
        slot.file = ModuleFile::open(modules[slot.index], config, problem);
      } catch (const std::exception& error) {  // bad_alloc, filesystem errors on odd paths
        problem = modules[slot.index].path + ": " + error.what();
        slot.file.reset();
      }
      slot.state = slot.file ? State::open : State::failed;
      if (!problem.empty()) problems.push_back(std::move(problem));
    }
    return slot.file.get();
  }

  Symbol symbolize(std::uint64_t address, bool call = false) {
    Symbol symbol;
    Slot* slot = slot_of(call ? address - 1 : address);
    if (slot == nullptr) {
      symbol.function = hex_address(address);
      return symbol;
    }
    const Module& module = modules[slot->index];
    symbol.module = module.path;
    if (ModuleFile* file = file_of(*slot)) {
      FunctionInfo info = call ? call_at(file->dwfl_module(), file->functions(), file->symbols(), address)
                               : function_at(file->functions(), file->symbols(), address);
      if (!info.name.empty()) {
        symbol.function = std::move(info.name);
        symbol.file = std::move(info.file);
        symbol.line = info.line;
        symbol.resolved = true;
        return symbol;
      }
    }
    symbol.function = std::filesystem::path(module.path).filename().string() + "+" + hex_address(address - module.base);
    return symbol;
  }

  std::vector<Module> modules;
  DwflConfig config;
  std::vector<Slot> slots;
  // Node-based: references handed out by resolve() survive rehashing.
  std::unordered_map<std::uint64_t, Symbol> cache;
  std::unordered_map<std::uint64_t, Symbol> calls;  // resolve_call's
  std::vector<std::string> problems;
};

Symbolizer::Symbolizer(std::vector<Module> modules, std::vector<std::string> search_paths)
    : impl_(std::make_unique<Impl>(std::move(modules), std::move(search_paths))) {}

Symbolizer::~Symbolizer() = default;
Symbolizer::Symbolizer(Symbolizer&&) noexcept = default;
Symbolizer& Symbolizer::operator=(Symbolizer&&) noexcept = default;

const Symbol& Symbolizer::resolve(std::uint64_t address) {
  if (auto it = impl_->cache.find(address); it != impl_->cache.end()) return it->second;
  return impl_->cache.emplace(address, impl_->symbolize(address)).first->second;
}

const Symbol& Symbolizer::resolve_call(std::uint64_t return_address) {
  if (auto it = impl_->calls.find(return_address); it != impl_->calls.end()) return it->second;
  return impl_->calls.emplace(return_address, impl_->symbolize(return_address, true)).first->second;
}

std::vector<std::string> Symbolizer::problems() const { return impl_->problems; }

const std::vector<Module>& Symbolizer::modules() const { return impl_->modules; }

}  // namespace ringtrace::symbols
