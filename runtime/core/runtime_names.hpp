// Zones named at run time (RINGTRACE_ZONE_DYNAMIC, ring record kind 12): each distinct
// (call site, name) becomes a site of its own, for the live drainer and the file's
// reader alike, up to a bound; past it every new name goes to one overflow site and is
// counted, so that a program that names zones from unbounded data (ids, paths) keeps
// the tables' memory bounded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "ringtrace/event.hpp"

namespace ringtrace::detail {

inline constexpr std::size_t kDefaultMaxRuntimeNames = 65536;
// The overflow site's name.
inline constexpr const char* kRuntimeNamesOverflow = "ringtrace: run-time names past the limit";

class RuntimeNames {
 public:
  explicit RuntimeNames(std::size_t limit = kDefaultMaxRuntimeNames) : limit_(limit) {}

  // The site of `name` at the call site `where`. A new one is made by `make(where,
  // name)`, which returns its id and a view of the name it keeps (the key refers to it);
  // past the bound, `overflow()` gives the one overflow site.
  template <class Make, class Overflow>
  SiteId find(SiteId where, std::string_view name, Make&& make, Overflow&& overflow) {
    const auto it = ids_.find(Key{where, name});
    if (it != ids_.end()) return it->second;
    if (ids_.size() >= limit_) {
      ++overflowed_;
      return overflow();
    }
    const std::pair<SiteId, std::string_view> made = make(where, name);
    ids_.emplace(Key{where, made.second}, made.first);
    return made.first;
  }
  std::uint64_t distinct() const { return ids_.size(); }
  std::uint64_t overflowed() const { return overflowed_; }

 private:
  struct Key {
    SiteId where;
    std::string_view name;
    bool operator==(const Key&) const = default;
  };
  struct Hash {
    std::size_t operator()(const Key& k) const noexcept {
      return std::hash<std::string_view>{}(k.name) ^ (static_cast<std::size_t>(k.where) * 0x9E3779B97F4A7C15ull);
    }
  };
  std::size_t limit_;
  std::uint64_t overflowed_ = 0;
  std::unordered_map<Key, SiteId, Hash> ids_;
};

}  // namespace ringtrace::detail
