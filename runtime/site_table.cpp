#include "site_table.hpp"

#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "allocator.hpp"
#include "ringtrace/instrument.hpp"

namespace ringtrace::detail {

const SiteInfo kDroppedSite{"ringtrace: dropped events", "", "", 0, SiteKind::instant, 0, ""};

SiteTable::SiteTable() : cache_(kCacheSize) { id_of(&kDroppedSite); }

SiteId SiteTable::miss(const SiteInfo* site, Slot& slot) {
  auto [it, inserted] = ids_.try_emplace(site, static_cast<SiteId>(copies_.size()));
  if (inserted) {
    Copy& copy = copies_.emplace_back(Copy{site->name, site->function, site->file, site->category, {}});
    copy.info = SiteInfo{copy.name.c_str(), copy.function.c_str(), copy.file.c_str(), site->line, site->kind,
                         effective_options(*site, per_thread_counters_), copy.category.c_str(),
                         effective_sample_every(*site)};
  }
  slot = Slot{site, it->second};
  return it->second;
}

SiteId SiteTable::step_zone(std::uint64_t step) {
  auto [it, inserted] = step_ids_.try_emplace(step, static_cast<SiteId>(copies_.size()));
  if (inserted) {
    std::string name = "step #";
    name.append(std::to_string(step));
    Copy& copy = copies_.emplace_back(Copy{std::move(name), "", "", "", {}});
    copy.info = SiteInfo{copy.name.c_str(), copy.function.c_str(), copy.file.c_str(), 0, SiteKind::zone,
                         SiteOptions::step, copy.category.c_str(), 1};
  }
  return it->second;
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
  detail::CategoryTable& table = detail::category_table();
  std::lock_guard<std::mutex> lock(table.mutex);
  const std::uint8_t index = detail::find_or_add_category(table, category);
  detail::g_category_off[index].store(enabled ? 0 : 1, std::memory_order_relaxed);
}

bool category_enabled(std::string_view category) {
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
