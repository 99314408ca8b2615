#include "site_table.hpp"

#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>

#include "allocator.hpp"
#include "ringtrace/instrument.hpp"

namespace ringtrace::detail {

const SiteInfo kDroppedSite{"ringtrace: dropped events", "", "", 0, SiteKind::instant};

SiteTable::SiteTable() : cache_(kCacheSize) { id_of(&kDroppedSite); }

SiteId SiteTable::miss(const SiteInfo* site, Slot& slot) {
  auto [it, inserted] = ids_.try_emplace(site, static_cast<SiteId>(copies_.size()));
  if (inserted) {
    Copy& copy = copies_.emplace_back(Copy{site->name, site->function, site->file, {}});
    copy.info = SiteInfo{copy.name.c_str(), copy.function.c_str(), copy.file.c_str(), site->line, site->kind};
  }
  slot = Slot{site, it->second};
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

}  // namespace

void reset_intern_lock_after_fork() { new (&intern_table().mutex) std::mutex(); }

}  // namespace ringtrace::detail

namespace ringtrace {

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
  const SiteInfo* site = new (memory) SiteInfo{text, "", "", 0, kind};
  table.sites.emplace(std::move(key), site);
  return site;
}

}  // namespace ringtrace
