// Call-site addresses to dense SiteIds, per session (drainer only), and the process-
// wide table of interned runtime names.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "heap.hpp"  // kAllocName, kFreeName
#include "ringtrace/event.hpp"
#include "ringtrace/site.hpp"
#include "runtime_names.hpp"

namespace ringtrace::detail {

// The site of `dropped` events.
extern const SiteInfo kDroppedSite;
// The sites of switch_out and switch_in events (Config::context_switches); in a session's
// table from its first switch on.
extern const SiteInfo kSwitchOutSite;
extern const SiteInfo kSwitchInSite;
extern const SiteInfo kAllocSite;  // Config::memory: alloc and free events
extern const SiteInfo kFreeSite;

// In a fork child: the intern table's lock may have been held by a thread that is gone.
void reset_intern_lock_after_fork();

class SiteTable {
 public:
  // Empty: prepare() makes the caches (128 KiB) on the drainer's thread, not in start()
  // on the program's (issue 44).
  SiteTable() = default;
  void prepare();
  // Config::per_thread_counters: every counter site's copy gets SiteOptions::per_thread_track.
  void set_per_thread_counters(bool on) { per_thread_counters_ = on; }
  SiteId id_of(const SiteInfo* site) {
    Slot& slot = cache_[(reinterpret_cast<std::uintptr_t>(site) >> 3) & (kCacheSize - 1)];
    if (slot.site == site) [[likely]]
      return slot.id;
    return miss(site, slot);
  }
  // The drainer's own copy: a call site's object may live in a plugin that is unloaded
  // (dlclose) before the exporters are done with it.
  const SiteInfo& site(SiteId id) const { return copies_[id].info; }
  std::uint32_t size() const { return static_cast<std::uint32_t>(copies_.size()); }
  // The step zones' one site ("step", kind zone, SiteOptions::step; steps.hpp), made on
  // first use.
  SiteId step_site();
  // The site of a zone named `name` at run time at the call site `where` (a site of its
  // own per distinct (where, name), up to max_runtime_names; then the overflow site).
  SiteId named(SiteId where, std::string_view name);
  void set_max_runtime_names(std::size_t limit) { runtime_names_ = RuntimeNames(limit); }
  const RuntimeNames& runtime_names() const { return runtime_names_; }
  // The zone site of the instrumented function at `address` (a function entry record's),
  // named the first time the address is seen (symbols::LiveFunctions), with
  // SiteOptions::function.
  SiteId function_site(std::uint64_t address) {
    FunctionSlot& slot = function_cache_[(address >> 4) & (kCacheSize - 1)];
    if (slot.address == address) [[likely]]
      return slot.id;
    return function_miss(address, slot);
  }
  bool is_function(SiteId id) const { return (copies_[id].info.options & SiteOptions::function) != 0; }
  // Once per drainer pass: after a library was unloaded, its functions' addresses may be
  // another's (a library loaded there since) and are named again when seen.
  void forget_unloaded_functions();

 private:
  struct Slot {
    const SiteInfo* site = nullptr;
    SiteId id = 0;
  };
  static constexpr std::size_t kCacheSize = 4096;
  SiteId miss(const SiteInfo* site, Slot& slot);
  struct FunctionSlot {
    std::uint64_t address = 0;
    SiteId id = 0;
  };
  SiteId function_miss(std::uint64_t address, FunctionSlot& slot);

  struct Copy {
    std::string name, function, file, category;
    SiteInfo info;
  };

  std::vector<Slot> cache_;
  std::vector<FunctionSlot> function_cache_;
  struct FunctionId {
    SiteId site;
    std::uint32_t module;  // symbols::LiveFunctions' id
  };
  std::unordered_map<std::uint64_t, FunctionId> function_ids_;
  std::uint64_t module_generation_ = 0;
  bool per_thread_counters_ = false;
  std::unordered_map<const SiteInfo*, SiteId> ids_;
  SiteId step_site_ = 0;     // 0: not made yet (0 is the dropped events' site)
  std::deque<Copy> copies_;  // by SiteId; a deque, so that `info`'s pointers stay valid
  RuntimeNames runtime_names_;
  SiteId overflow_ = 0xFFFFFFFFu;  // the run-time names' overflow site, made on first use
};

}  // namespace ringtrace::detail
