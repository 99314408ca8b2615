#include "heap.hpp"

#include <algorithm>
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

void HeapTracker::allocated(Event& e, std::uint64_t address, std::uint64_t size) {
  seen_ = true;
  e.value.u = size;
  ++totals_.allocations;
  totals_.allocated_bytes += size;
  if (sized_) {
    if (address == kSizedLeftOut) {  // past the live-block limit where it was recorded
      ++totals_.untracked_blocks;
      e.flags |= EventFlags::untracked;
      return;
    }
    totals_.live_bytes += size;
    totals_.live_blocks += 1;
    if (totals_.live_bytes > totals_.peak_live_bytes) {
      totals_.peak_live_bytes = totals_.live_bytes;
      totals_.peak_time_ns = e.time_ns;
    }
    return;
  }
  const std::vector<std::uint32_t>& s = stack_of(e.thread, e.depth);
  const std::uint32_t node = s.empty() ? 0 : s.back();
  auto it = live_.find(address);
  if (it != live_.end()) {  // its free was lost: the old block is gone
    ++totals_.lost_frees;
    totals_.live_bytes -= it->second.size;
    it->second = Block{size, node};
  } else if (live_.size() >= max_blocks_) {
    ++totals_.untracked_blocks;
    e.flags |= EventFlags::untracked;
    return;
  } else {
    live_.emplace(address, Block{size, node});
    ++totals_.live_blocks;
  }
  totals_.live_bytes += size;
  if (totals_.live_bytes > totals_.peak_live_bytes) {
    totals_.peak_live_bytes = totals_.live_bytes;
    totals_.peak_time_ns = e.time_ns;
  }
}

void HeapTracker::freed(Event& e, std::uint64_t address, std::uint64_t size, bool known) {
  seen_ = true;
  ++totals_.frees;
  if (sized_ && address != kSizedLeftOut && size != 0) {  // a live block's, where it was recorded
    e.value.u = size;
    totals_.freed_bytes += size;
    totals_.live_bytes -= size < totals_.live_bytes ? size : totals_.live_bytes;
    if (totals_.live_blocks != 0) --totals_.live_blocks;
    return;
  }
  // A sized file's free of no live block where it was recorded goes on below, as one here.
  const auto it = known && !sized_ ? live_.find(address) : live_.end();
  if (it != live_.end()) {
    e.value.u = it->second.size;
    totals_.live_bytes -= it->second.size;
    totals_.freed_bytes += it->second.size;
    --totals_.live_blocks;
    live_.erase(it);
    return;
  }
  ++totals_.frees_unmatched;
  e.flags |= EventFlags::untracked;
  if (size != 0) {  // its caller said (a sized delete)
    e.value.u = size;
    totals_.freed_bytes += size;
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
}

std::vector<HeapLeak> HeapTracker::leaks() const {
  std::map<std::uint32_t, HeapLeak> by_node;
  for (const auto& [address, block] : live_) {
    HeapLeak& l = by_node[block.node];
    l.blocks += 1;
    l.bytes += block.size;
  }
  std::vector<HeapLeak> out;
  out.reserve(by_node.size());
  for (auto& [node, leak] : by_node) {
    for (std::uint32_t n = node; n != 0; n = nodes_[n].parent) leak.stack.push_back(nodes_[n].site);
    std::reverse(leak.stack.begin(), leak.stack.end());
    out.push_back(std::move(leak));
  }
  std::stable_sort(out.begin(), out.end(), [](const HeapLeak& a, const HeapLeak& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.blocks > b.blocks;
  });
  return out;
}

}  // namespace ringtrace::detail
