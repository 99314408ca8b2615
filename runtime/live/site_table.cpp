#include "site_table.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "allocator.hpp"
#include "function_names.hpp"  // symbols: the names of instrumented functions
#include "ringtrace/instrument.hpp"
#include "slow_scope.hpp"
#include "steps.hpp"          // the step zones' site
#include "switch_events.hpp"  // the switch sites' names

namespace ringtrace::detail {

const SiteInfo kDroppedSite{"ringtrace: dropped events", "", "", 0, SiteKind::instant, 0, ""};
const SiteInfo kSwitchOutSite{kSwitchOutName, "", "", 0, SiteKind::instant, 0, ""};
const SiteInfo kSwitchInSite{kSwitchInName, "", "", 0, SiteKind::instant, 0, ""};
const SiteInfo kAllocSite{kAllocName, "", "", 0, SiteKind::instant, 0, ""};
const SiteInfo kFreeSite{kFreeName, "", "", 0, SiteKind::instant, 0, ""};

void SiteTable::prepare() {
  if (!cache_.empty()) return;
  cache_.resize(kCacheSize);
  function_cache_.resize(kCacheSize);
  id_of(&kDroppedSite);
}

SiteId SiteTable::function_miss(std::uint64_t address, FunctionSlot& slot) {
  auto [it, inserted] = function_ids_.try_emplace(address, FunctionId{static_cast<SiteId>(copies_.size()), 0});
  if (inserted) {
    if (module_generation_ == 0) module_generation_ = symbols::module_generation();
    const symbols::LiveFunction function = symbols::LiveFunctions::instance().resolve(address);
    const symbols::Symbol& symbol = *function.symbol;
    it->second.module = function.module;
    Copy& copy = copies_.emplace_back(Copy{symbol.function, symbol.function, symbol.file, "", {}});
    copy.info = SiteInfo{copy.name.c_str(), copy.function.c_str(), copy.file.c_str(),     symbol.line,
                         SiteKind::zone,    SiteOptions::function, copy.category.c_str(), 1};
  }
  slot = FunctionSlot{address, it->second.site};
  return it->second.site;
}

void SiteTable::forget_unloaded_functions() {
  if (function_ids_.empty()) return;
  const std::uint64_t generation = symbols::module_generation();
  if (generation == module_generation_) return;
  module_generation_ = generation;
  symbols::LiveFunctions& live = symbols::LiveFunctions::instance();
  std::erase_if(function_ids_, [&](const auto& entry) { return !live.loaded(entry.second.module); });
  std::fill(function_cache_.begin(), function_cache_.end(), FunctionSlot{});
}

SiteId SiteTable::miss(const SiteInfo* site, Slot& slot) {
  auto [it, inserted] = ids_.try_emplace(site, static_cast<SiteId>(copies_.size()));
  if (inserted) {
    Copy& copy = copies_.emplace_back(Copy{site->name, site->function, site->file, site->category, {}});
    copy.info = SiteInfo{copy.name.c_str(),
                         copy.function.c_str(),
                         copy.file.c_str(),
                         site->line,
                         site->kind,
                         effective_options(*site, per_thread_counters_),
                         copy.category.c_str(),
                         effective_sample_every(*site)};
  }
  slot = Slot{site, it->second};
  return it->second;
}

SiteId SiteTable::step_site() {
  if (step_site_ == 0) {
    step_site_ = static_cast<SiteId>(copies_.size());
    Copy& copy = copies_.emplace_back(Copy{kStepSiteName, "", "", "", {}});
    copy.info = SiteInfo{copy.name.c_str(), copy.function.c_str(), copy.file.c_str(),     0,
                         SiteKind::zone,    SiteOptions::step,     copy.category.c_str(), 1};
  }
  return step_site_;
}

SiteId SiteTable::named(SiteId where, std::string_view name) {
  return runtime_names_.find(
      where, name,
      [&](SiteId at, std::string_view text) {
        // The call site's strings are shared (a deque's elements never move): a name costs
        // its own bytes and the table's entries.
        const SiteInfo& w = copies_[at].info;
        const auto id = static_cast<SiteId>(copies_.size());
        Copy& copy = copies_.emplace_back(Copy{std::string(text), {}, {}, {}, {}});
        copy.info = SiteInfo{copy.name.c_str(), w.function, w.file, w.line, SiteKind::zone, w.options, w.category, 1};
        return std::pair<SiteId, std::string_view>(id, copy.name);
      },
      [&] {
        if (overflow_ == 0xFFFFFFFFu) {
          overflow_ = static_cast<SiteId>(copies_.size());
          Copy& copy = copies_.emplace_back(Copy{kRuntimeNamesOverflow, "", "", "", {}});
          copy.info = SiteInfo{copy.name.c_str(),     copy.function.c_str(),
                               copy.file.c_str(),     0,
                               SiteKind::zone,        0,
                               copy.category.c_str(), 1};
        }
        return overflow_;
      });
}

namespace {

struct InternTable {
  std::mutex mutex;
  // Key: kind byte + name. Values live until the process exits.
  std::unordered_map<std::string, const SiteInfo*> sites;
};

InternTable& intern_table() {
  static InternTable* table = new InternTable();  // outlives every thread and session
  return *table;
}

// Category names by index - 1 (index 0 means "not looked up"); the last index is
// shared by every name past the table's capacity.
struct CategoryTable {
  std::mutex mutex;
  std::vector<std::string> names;
};

CategoryTable& category_table() {
  static CategoryTable* table = new CategoryTable();  // outlives every thread and session
  return *table;
}

constexpr std::uint8_t kSharedCategory = kMaxCategories - 1;

// Under the table's lock.
std::uint8_t find_or_add_category(CategoryTable& table, std::string_view name) {
  for (std::size_t i = 0; i < table.names.size(); ++i) {
    if (table.names[i] == name) return static_cast<std::uint8_t>(i + 1);
  }
  if (table.names.size() + 1 >= kSharedCategory) return kSharedCategory;
  table.names.emplace_back(name);
  return static_cast<std::uint8_t>(table.names.size());
}

}  // namespace

void reset_intern_lock_after_fork() {
  new (&intern_table().mutex) std::mutex();
  new (&category_table().mutex) std::mutex();
}

std::uint8_t category_index(CategorySlot& slot, const char* name) noexcept {
  // Nested in this thread's own slow path or category switch (a signal handler, an
  // allocator hook), which may hold the table's lock: index 0, never switched off, and
  // nothing cached, so the next use looks the name up.
  ThreadWriter& t = t_writer;
  if (t.in_slow != 0) return 0;
  SlowScope scope(t);
  std::uint8_t index = kSharedCategory;
  try {
    CategoryTable& table = category_table();
    std::lock_guard<std::mutex> lock(table.mutex);
    index = find_or_add_category(table, name != nullptr ? name : "");
  } catch (...) {  // no memory for the name: the shared switch
  }
  slot.index.store(index, std::memory_order_relaxed);
  return index;
}

}  // namespace ringtrace::detail

namespace ringtrace {

void set_category_enabled(std::string_view category, bool enabled) {
  // Marked as in the slow path while the lock is held: a signal handler whose first zone
  // of a category comes meanwhile does not wait for the lock (category_index).
  detail::SlowScope scope(detail::t_writer);
  detail::CategoryTable& table = detail::category_table();
  std::lock_guard<std::mutex> lock(table.mutex);
  const std::uint8_t index = detail::find_or_add_category(table, category);
  detail::g_category_off[index].store(enabled ? 0 : 1, std::memory_order_relaxed);
}

bool category_enabled(std::string_view category) {
  detail::SlowScope scope(detail::t_writer);
  detail::CategoryTable& table = detail::category_table();
  std::lock_guard<std::mutex> lock(table.mutex);
  return detail::g_category_off[detail::find_or_add_category(table, category)].load(std::memory_order_relaxed) == 0;
}

const SiteInfo* intern(std::string_view name, SiteKind kind) {
  detail::InternTable& table = detail::intern_table();
  std::string key;
  key.reserve(name.size() + 1);
  key.push_back(static_cast<char>(kind));
  key.append(name);
  std::lock_guard<std::mutex> lock(table.mutex);
  auto it = table.sites.find(key);
  if (it != table.sites.end()) return it->second;
  auto* text = static_cast<char*>(detail::runtime_alloc(name.size() + 1, 1));
  std::memcpy(text, name.data(), name.size());
  text[name.size()] = '\0';
  void* memory = detail::runtime_alloc(sizeof(SiteInfo), alignof(SiteInfo));
  const SiteInfo* site = new (memory) SiteInfo{text, "", "", 0, kind, 0, ""};
  table.sites.emplace(std::move(key), site);
  return site;
}

}  // namespace ringtrace
