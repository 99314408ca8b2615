// Call-site addresses to dense SiteIds, per session (drainer only), and the process-
// wide table of interned runtime names.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "ringtrace/event.hpp"
#include "ringtrace/site.hpp"

namespace ringtrace::detail {

// The site of `dropped` events.
extern const SiteInfo kDroppedSite;

// In a fork child: the intern table's lock may have been held by a thread that is gone.
void reset_intern_lock_after_fork();

class SiteTable {
 public:
  SiteTable();
  // Config::per_thread_counters: every counter site's copy gets SiteOptions::per_thread_track.
  void set_per_thread_counters(bool on) { per_thread_counters_ = on; }
  SiteId id_of(const SiteInfo* site) {
    Slot& slot = cache_[(reinterpret_cast<std::uintptr_t>(site) >> 3) & (kCacheSize - 1)];
    if (slot.site == site) [[likely]] return slot.id;
    return miss(site, slot);
  }
  // The drainer's own copy: a call site's object may live in a plugin that is unloaded
  // (dlclose) before the exporters are done with it.
  const SiteInfo& site(SiteId id) const { return copies_[id].info; }
  std::uint32_t size() const { return static_cast<std::uint32_t>(copies_.size()); }
  // The site of step N's zone, "step #N" with SiteOptions::step, made on first use (the
  // producer records every step with one marker site; see step_marker_site()).
  SiteId step_zone(std::uint64_t step);

 private:
  struct Slot {
    const SiteInfo* site = nullptr;
    SiteId id = 0;
  };
  static constexpr std::size_t kCacheSize = 4096;
  SiteId miss(const SiteInfo* site, Slot& slot);

  struct Copy {
    std::string name, function, file, category;
    SiteInfo info;
  };

  std::vector<Slot> cache_;
  bool per_thread_counters_ = false;
  std::unordered_map<const SiteInfo*, SiteId> ids_;
  std::unordered_map<std::uint64_t, SiteId> step_ids_;
  std::deque<Copy> copies_;  // by SiteId; a deque, so that `info`'s pointers stay valid
};

}  // namespace ringtrace::detail
