#include "function_names.hpp"

#include <algorithm>

#include "hex.hpp"

namespace ringtrace::symbols {

LiveFunctions& LiveFunctions::instance() {
  static LiveFunctions* functions = new LiveFunctions();  // outlives every drainer
  return *functions;
}

std::uint32_t LiveFunctions::id_of(const Module& module) {
  for (std::size_t i = 0; i < known_.size(); ++i) {
    if (known_[i].module == module) return static_cast<std::uint32_t>(i + 1);
  }
  known_.push_back(Known{module, nullptr});
  return static_cast<std::uint32_t>(known_.size());
}

void LiveFunctions::refresh() {
  const std::uint64_t generation = module_generation();
  if (generation == generation_) return;
  generation_ = generation;
  loaded_ = loaded_modules();
  ids_.clear();
  for (const Module& m : loaded_) ids_.push_back(id_of(m));
  // Addresses of modules no longer loaded may be another library's from now on.
  std::erase_if(functions_, [&](const auto& entry) {
    const std::uint32_t module = entry.second.module;
    return module == 0 || std::find(ids_.begin(), ids_.end(), module) == ids_.end();
  });
}

LiveFunction LiveFunctions::resolve(std::uint64_t address) {
  std::lock_guard<std::mutex> lock(mutex_);
  refresh();
  if (const auto it = functions_.find(address); it != functions_.end()) return it->second;
  LiveFunction f;
  const Module* module = find_module(loaded_, address);
  if (module != nullptr) {
    f.module = ids_[static_cast<std::size_t>(module - loaded_.data())];
    Known& known = known_[f.module - 1];
    if (!known.symbolizer) known.symbolizer = std::make_unique<Symbolizer>(std::vector<Module>{known.module});
    f.symbol = &known.symbolizer->resolve(address);
  } else {
    Symbol& unknown = unknown_.emplace_back();
    unknown.function = hex_address(address);
    f.symbol = &unknown;
  }
  functions_.emplace(address, f);
  return f;
}

std::uint32_t LiveFunctions::module_of(std::uint64_t address) {
  std::lock_guard<std::mutex> lock(mutex_);
  refresh();
  if (const auto it = functions_.find(address); it != functions_.end()) return it->second.module;
  const Module* module = find_module(loaded_, address);
  return module != nullptr ? ids_[static_cast<std::size_t>(module - loaded_.data())] : 0;
}

Module LiveFunctions::module(std::uint32_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  return id >= 1 && id <= known_.size() ? known_[id - 1].module : Module{};
}

bool LiveFunctions::loaded(std::uint32_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  refresh();
  return std::find(ids_.begin(), ids_.end(), id) != ids_.end();
}

}  // namespace ringtrace::symbols
