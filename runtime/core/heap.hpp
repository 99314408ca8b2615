// The heap's accounting (Config::memory, docs/memory.md): one process's alloc and free
// events, in time order (the merge's output, before the exporters), for the live drainer
// and the binary file's reader alike.
//
// The decoder leaves each memory event's address and size in its owner's text store
// (decoder.hpp, kMemoryPayloadBytes); account() reads them back, keeps the live blocks
// by address, and gives each event its size in value.u: an allocation's own, a free's
// that of the block it frees (or the size its caller gave, a sized delete, for a block
// it does not know; else 0 and EventFlags::size_unknown: never guessed), and flags
// EventFlags::untracked the events of blocks it does not hold (so that an exporter's sum
// of the events' bytes is its live bytes). On the way it
// keeps the totals, the peak of the live bytes and when, and for each live block the
// stack of zones that allocated it (by site, innermost last), so that what is still live
// at the end (the leaks) is grouped by where it was allocated.
//
// Bounded: at most `max_blocks` live blocks are kept (Config::memory_max_blocks); an
// allocation past that is counted (untracked) and its free is one of those whose block
// is not known. Stacks are interned into a tree of at most kMaxStackNodes nodes; deeper
// or newer stacks past that are kept as their longest known prefix (counted).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "ringtrace/event.hpp"
#include "ringtrace/site.hpp"
#include "ringtrace/stats.hpp"  // MemoryStats: what the accounting gives stats()

namespace ringtrace::detail {

// The built-in sites of alloc and free events.
inline constexpr const char* kAllocName = "ringtrace: allocated";
inline constexpr const char* kFreeName = "ringtrace: freed";
// An alloc or free event between the decoder and the accounting: Event::text_size is this,
// and value.u the handle of the address and size in its owner's store (decoder.hpp).
inline constexpr std::uint16_t kMemoryPayloadBytes = 16;

struct HeapTotals {
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::uint64_t allocated_bytes = 0;
  std::uint64_t freed_bytes = 0;  // of the frees whose size is known
  std::uint64_t live_bytes = 0;   // of the blocks allocated in the session and not freed
  std::uint64_t live_blocks = 0;
  std::uint64_t peak_live_bytes = 0;
  std::uint64_t peak_time_ns = 0;  // when the live bytes first reached their peak (0: none)
  // Frees of blocks the accounting does not know: allocated before the session (or in a
  // part of it that was not recorded: a dropped allocation), or past max_blocks. Counted,
  // never an error; their bytes are in freed_bytes when the caller gave their size.
  std::uint64_t frees_unmatched = 0;
  std::uint64_t frees_size_unknown = 0;  // of those, the ones whose size is not known
  std::uint64_t untracked_blocks = 0;    // allocations not kept: max_blocks live blocks already
  // An allocation at an address the accounting holds live: the block's free was lost (a
  // dropped event). Its old block is taken as freed then.
  std::uint64_t lost_frees = 0;
  std::uint64_t stacks_cut = 0;  // zones begun past the stack tree's capacity (kept as their enclosing zone's stack)
};

// The blocks still live, grouped by the stack of zones that allocated them.
struct HeapLeak {
  std::vector<SiteId> stack;  // outermost first; empty: allocated outside any zone
  std::uint64_t blocks = 0;
  std::uint64_t bytes = 0;
};

// In a stream's file (sized: no addresses), the address of an alloc or free record that the
// accounting where it was recorded left out of the live heap: an allocation past the
// live-block limit (Config::memory_max_blocks), a free of no live block (a block from
// before the recording, or one not followed). Every other memory record there has 0.
inline constexpr std::uint64_t kSizedLeftOut = 1;

class HeapTracker {
 public:
  static constexpr std::size_t kDefaultMaxBlocks = std::size_t{1} << 22;
  static constexpr std::uint32_t kMaxStackNodes = 1u << 20;

  explicit HeapTracker(std::size_t max_blocks = kDefaultMaxBlocks) : max_blocks_(max_blocks) {}
  // A stream's file (a window, a flight recorder's snapshot, `convert`): its memory events
  // carry their sizes, resolved where they were recorded, and no addresses. Sizes are
  // taken as they are and live bytes follow them, but for the records marked
  // kSizedLeftOut (and, in files from before the mark, frees of size 0: only a free of no
  // live block has no size), which stay out of the live heap as they did where they were
  // recorded (a window's free of a block from before the window still counts, down to 0);
  // no blocks, no leaks.
  static HeapTracker sized() {
    HeapTracker h(0);
    h.sized_ = true;
    return h;
  }
  bool has_blocks() const { return !sized_; }

  // Accounts the events [first, last), in time order. `payload(e, address, size)` gives
  // a memory event's address and size as the decoder stored them (false when they are
  // not there: the event then counts as a free of a block not known).
  template <class Payload>
  void account(Event* first, Event* last, Payload&& payload) {
    for (Event* e = first; e != last; ++e) {
      switch (e->kind) {
        case EventKind::zone_begin:
          if (!sized_) zone_begin(*e);
          break;
        case EventKind::zone_end:
          if (!sized_) zone_end(*e);
          break;
        case EventKind::alloc:
        case EventKind::free: {
          std::uint64_t address = 0, size = 0;
          const bool known = e->text_size == kMemoryPayloadBytes && payload(*e, address, size);
          e->text_size = 0;
          if (e->kind == EventKind::alloc) {
            allocated(*e, address, size);
          } else {
            freed(*e, address, size, known);
          }
          break;
        }
        default:
          break;
      }
    }
  }

  const HeapTotals& totals() const { return totals_; }
  bool seen() const { return seen_; }  // any memory event accounted
  // The live blocks grouped by their allocation's stack, most bytes first.
  std::vector<HeapLeak> leaks() const;
  // The totals into `m` (known, blocks_known and the counts; not unrecorded_nested, which
  // the recording side counts, nor the leaks).
  void fill_totals(MemoryStats& m) const;
  // The leaks with their stacks named by `site(id)` (a SiteInfo), "; "-joined as folded
  // stacks' frames, "(no zone)" outside every zone.
  template <class Site>
  std::vector<MemoryStats::Leak> named_leaks(Site&& site) const {
    std::vector<MemoryStats::Leak> named;
    for (const HeapLeak& l : leaks()) {
      MemoryStats::Leak& out = named.emplace_back();
      for (const SiteId id : l.stack) {
        if (!out.stack.empty()) out.stack += "; ";
        out.stack += site(id).name;
      }
      if (out.stack.empty()) out.stack = "(no zone)";
      out.blocks = l.blocks;
      out.bytes = l.bytes;
    }
    return named;
  }

 private:
  struct Block {
    std::uint64_t size;
    std::uint32_t node;  // the stack tree's node of the zone that allocated it (0: none)
  };
  struct Node {
    std::uint32_t parent;
    SiteId site;
  };
  void zone_begin(const Event& e);
  void zone_end(const Event& e);
  void allocated(Event& e, std::uint64_t address, std::uint64_t size);
  void freed(Event& e, std::uint64_t address, std::uint64_t size, bool known);
  std::vector<std::uint32_t>& stack_of(ThreadId thread, std::uint32_t depth);
  std::uint32_t child(std::uint32_t parent, SiteId site);

  std::size_t max_blocks_;
  bool sized_ = false;
  bool seen_ = false;
  HeapTotals totals_;
  std::unordered_map<std::uint64_t, Block> live_;
  std::vector<std::vector<std::uint32_t>> stacks_;             // per thread: the open zones' nodes, innermost last
  std::vector<Node> nodes_{Node{0, 0}};                        // node 0: the root (no zone)
  std::unordered_map<std::uint64_t, std::uint32_t> children_;  // parent << 32 | site -> node
};

}  // namespace ringtrace::detail
