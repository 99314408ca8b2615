#include "heap.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace ringtrace::detail {

std::vector<std::uint32_t>& HeapTracker::stack_of(ThreadId thread, std::uint32_t depth) {
  if (thread >= stacks_.size()) stacks_.resize(static_cast<std::size_t>(thread) + 1);
  std::vector<std::uint32_t>& s = stacks_[thread];
  // The event's depth says how many zones are open outside it: a stack that disagrees
  // (zones of the thread the accounting did not see) is cut or filled with the root.
  if (s.size() != depth) s.resize(depth, s.empty() ? 0 : s.back());
  return s;
}

std::uint32_t HeapTracker::child(std::uint32_t parent, SiteId site) {
  const std::uint64_t key = std::uint64_t{parent} << 32 | site;
  const auto it = children_.find(key);
  if (it != children_.end()) return it->second;
  if (nodes_.size() >= kMaxStackNodes) {  // the stack as far as the tree holds it
    ++totals_.stacks_cut;
    return parent;
  }
  const auto node = static_cast<std::uint32_t>(nodes_.size());
  nodes_.push_back(Node{parent, site});
  children_.emplace(key, node);
  return node;
}

void HeapTracker::zone_begin(const Event& e) {
  std::vector<std::uint32_t>& s = stack_of(e.thread, e.depth);
  s.push_back(child(s.empty() ? 0 : s.back(), e.site));
}

void HeapTracker::zone_end(const Event& e) {
  // An end's depth is its begin's: the zones outside it.
  stack_of(e.thread, e.depth + 1).pop_back();
}

// Peaks: each new peak of the live bytes starts a peak epoch. A site or a stack brings its
// peak_bytes up to date before its live bytes change (and when read): if its last change
// came before the latest peak, its live bytes then were its part of that peak. So each
// one's part of the last (highest) peak is known at the end in constant time per event,
// as heaptrack's second pass over its file finds it.
void HeapTracker::bring_up(HeapSite& s) const {
  if (s.stamp != peak_epoch_) {
    s.peak_bytes = s.live_bytes;
    s.stamp = peak_epoch_;
  }
}

void HeapTracker::bring_up(HeapStack& s) const {
  if (s.stamp != peak_epoch_) {
    s.peak_bytes = s.live_bytes;
    s.stamp = peak_epoch_;
  }
}

std::uint32_t HeapTracker::site_of(std::uint64_t caller) {
  if (caller == 0) return 0;
  const auto it = site_index_.find(caller);
  if (it != site_index_.end()) return it->second;
  if (sites_.size() >= kMaxSites) return 0;  // counted with the blocks of no known site
  sites_.push_back(HeapSite{caller});
  sites_.back().stamp = peak_epoch_;
  const auto index = static_cast<std::uint32_t>(sites_.size());
  site_index_.emplace(caller, index);
  return index;
}

std::uint32_t HeapTracker::stack_of_sample(const MemoryPayload& p) {
  std::uint64_t hash = p.caller * 0x9E3779B97F4A7C15ull;
  for (std::size_t f = 0; f < p.frames(); ++f) hash = (hash ^ p.frame(f)) * 0x100000001B3ull;
  const auto [from, to] = sample_index_.equal_range(hash);
  for (auto it = from; it != to; ++it) {
    const std::vector<std::uint64_t>& frames = samples_[it->second - 1].frames;
    bool same = frames.size() == p.frames() + 1 && frames[0] == p.caller;
    for (std::size_t f = 0; same && f < p.frames(); ++f) same = frames[f + 1] == p.frame(f);
    if (same) return it->second;
  }
  if (samples_.size() >= kMaxStacks) return 0;
  HeapStack s;
  s.frames.reserve(p.frames() + 1);
  s.frames.push_back(p.caller);
  for (std::size_t f = 0; f < p.frames(); ++f) s.frames.push_back(p.frame(f));
  s.stamp = peak_epoch_;
  samples_.push_back(std::move(s));
  const auto index = static_cast<std::uint32_t>(samples_.size());
  sample_index_.emplace(hash, index);
  return index;
}

void HeapTracker::add_live(Block& b, std::uint64_t time_ns) {
  if (b.site != 0) {
    HeapSite& s = sites_[b.site - 1];
    bring_up(s);
    s.live_bytes += b.size;
    s.live_blocks += 1;
  }
  if (b.stack != 0) {
    HeapStack& s = samples_[b.stack - 1];
    bring_up(s);
    s.live_bytes += static_cast<double>(b.weight) * static_cast<double>(b.size);
  }
  totals_.live_bytes += b.size;
  if (totals_.live_bytes > totals_.peak_live_bytes) {
    totals_.peak_live_bytes = totals_.live_bytes;
    totals_.peak_time_ns = time_ns;
    ++peak_epoch_;
  }
}

void HeapTracker::remove_live(const Block& b) {
  if (b.site != 0) {
    HeapSite& s = sites_[b.site - 1];
    bring_up(s);
    s.live_bytes -= b.size;
    s.live_blocks -= 1;
  }
  if (b.stack != 0) {
    HeapStack& s = samples_[b.stack - 1];
    bring_up(s);
    s.live_bytes -= static_cast<double>(b.weight) * static_cast<double>(b.size);
  }
  totals_.live_bytes -= b.size;
}

void HeapTracker::allocated(Event& e, const MemoryPayload& p) {
  seen_ = true;
  if (p.restore) return restored(e, p);
  const std::uint64_t size = p.size;
  e.value.u = size;
  ++totals_.allocations;
  totals_.allocated_bytes += size;
  if (sized_) {
    if (p.address == kSizedLeftOut) {  // past the live-block limit where it was recorded
      ++totals_.untracked_blocks;
      e.flags |= EventFlags::untracked;
      return;
    }
    totals_.live_blocks += 1;
    totals_.live_bytes += size;
    if (totals_.live_bytes > totals_.peak_live_bytes) {
      totals_.peak_live_bytes = totals_.live_bytes;
      totals_.peak_time_ns = e.time_ns;
    }
    return;
  }
  const std::vector<std::uint32_t>& zones = stack_of(e.thread, e.depth);
  Block b{size, zones.empty() ? 0 : zones.back(), site_of(p.caller), 0, 0};
  if (b.site != 0) {
    HeapSite& s = sites_[b.site - 1];
    s.allocations += 1;
    s.bytes += size;
  }
  // A sampled allocation: weighed back by its chance of being sampled.
  if (stack_bytes_ != 0 && p.sampled && (b.stack = stack_of_sample(p)) != 0) {
    const double chance = -std::expm1(-static_cast<double>(size) / static_cast<double>(stack_bytes_));
    const double weight = chance > 0 ? 1 / chance : 1;
    HeapStack& s = samples_[b.stack - 1];
    s.samples += 1;
    s.calls += weight;
    s.bytes += weight * static_cast<double>(size);
    b.weight = static_cast<float>(weight);
  }
  auto it = live_.find(p.address);
  if (it != live_.end()) {  // its free was lost: the old block is gone
    ++totals_.lost_frees;
    remove_live(it->second);
    it->second = b;
  } else if (live_.size() >= max_blocks_) {
    ++totals_.untracked_blocks;
    e.flags |= EventFlags::untracked;
    return;
  } else {
    it = live_.emplace(p.address, b).first;
    ++totals_.live_blocks;
  }
  add_live(it->second, e.time_ns);
}

// A realloc that failed: the block its thread freed just before is live again, as it was
// (its size, zones, site): the free is taken back, in the totals and, through the
// event's flag `restored`, by the exporters.
void HeapTracker::restored(Event& e, const MemoryPayload& p) {
  if (sized_) {  // a stream's file: the size it was restored with where it was recorded
    e.value.u = p.size;
    if (p.size == 0 || totals_.frees == 0) return;
    e.flags |= EventFlags::restored;
    --totals_.frees;
    totals_.freed_bytes -= std::min(totals_.freed_bytes, p.size);
    totals_.live_blocks += 1;
    totals_.live_bytes += p.size;
    return;
  }
  Freed* f = e.thread < last_freed_.size() ? &last_freed_[e.thread] : nullptr;
  if (f == nullptr || !f->valid || f->address != p.address || live_.size() >= max_blocks_ ||
      live_.count(p.address) != 0) {
    e.value.u = 0;  // its free was of no block the accounting held: nothing to restore
    e.flags |= EventFlags::untracked;
    return;
  }
  f->valid = false;
  e.value.u = f->block.size;
  e.flags |= EventFlags::restored;  // the free is undone (exporters take it back)
  --totals_.frees;
  totals_.freed_bytes -= f->block.size;
  ++totals_.live_blocks;
  add_live(live_.emplace(p.address, f->block).first->second, e.time_ns);
}

void HeapTracker::freed(Event& e, const MemoryPayload& p, bool known) {
  seen_ = true;
  ++totals_.frees;
  if (sized_ && p.address != kSizedLeftOut && p.size != 0) {  // a live block's, where it was recorded
    e.value.u = p.size;
    totals_.freed_bytes += p.size;
    totals_.live_bytes -= p.size < totals_.live_bytes ? p.size : totals_.live_bytes;
    if (totals_.live_blocks != 0) --totals_.live_blocks;
    return;
  }
  // A sized file's free of no live block where it was recorded goes on below, as one here.
  const auto it = known && !sized_ ? live_.find(p.address) : live_.end();
  if (it != live_.end()) {
    const Block b = it->second;
    e.value.u = b.size;
    remove_live(b);
    totals_.freed_bytes += b.size;
    --totals_.live_blocks;
    live_.erase(it);
    if (e.thread >= last_freed_.size()) last_freed_.resize(static_cast<std::size_t>(e.thread) + 1);
    last_freed_[e.thread] = Freed{p.address, b, true};
    return;
  }
  ++totals_.frees_unmatched;
  e.flags |= EventFlags::untracked;
  if (p.size != 0) {  // its caller said (a sized delete)
    e.value.u = p.size;
    totals_.freed_bytes += p.size;
    return;
  }
  ++totals_.frees_size_unknown;
  e.value.u = 0;
  e.flags |= EventFlags::size_unknown;
}

void HeapTracker::fill_totals(MemoryStats& m) const {
  const HeapTotals& h = totals_;
  m.known = true;
  m.blocks_known = !sized_;
  m.allocations = h.allocations;
  m.frees = h.frees;
  m.allocated_bytes = h.allocated_bytes;
  m.freed_bytes = h.freed_bytes;
  m.live_bytes = h.live_bytes;
  m.live_blocks = h.live_blocks;
  m.peak_live_bytes = h.peak_live_bytes;
  m.peak_time_ns = h.peak_time_ns;
  m.frees_unmatched = h.frees_unmatched;
  m.frees_size_unknown = h.frees_size_unknown;
  m.untracked_blocks = h.untracked_blocks;
  m.lost_frees = h.lost_frees;
  m.stack_bytes = stack_bytes_;
}

std::vector<HeapLeak> HeapTracker::leaks() const {
  std::map<std::pair<std::uint32_t, std::uint32_t>, HeapLeak> groups;  // (zones, site)
  for (const auto& [address, block] : live_) {
    HeapLeak& l = groups[{block.node, block.site}];
    l.blocks += 1;
    l.bytes += block.size;
  }
  std::vector<HeapLeak> out;
  out.reserve(groups.size());
  for (auto& [key, leak] : groups) {
    for (std::uint32_t n = key.first; n != 0; n = nodes_[n].parent) leak.stack.push_back(nodes_[n].site);
    std::reverse(leak.stack.begin(), leak.stack.end());
    leak.caller = key.second != 0 ? sites_[key.second - 1].caller : 0;
    out.push_back(std::move(leak));
  }
  std::stable_sort(out.begin(), out.end(), [](const HeapLeak& a, const HeapLeak& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.blocks > b.blocks;
  });
  return out;
}

std::vector<HeapSite> HeapTracker::sites() const {
  for (HeapSite& s : sites_) bring_up(s);
  std::vector<HeapSite> out = sites_;
  std::stable_sort(out.begin(), out.end(), [](const HeapSite& a, const HeapSite& b) { return a.bytes > b.bytes; });
  return out;
}

std::vector<HeapStack> HeapTracker::stacks() const {
  for (HeapStack& s : samples_) bring_up(s);
  std::vector<HeapStack> out = samples_;
  std::stable_sort(out.begin(), out.end(), [](const HeapStack& a, const HeapStack& b) { return a.bytes > b.bytes; });
  return out;
}

}  // namespace ringtrace::detail
