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
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ringtrace/detail/record.hpp"  // kMaxAllocFrames
#include "ringtrace/event.hpp"
#include "ringtrace/site.hpp"
#include "ringtrace/stats.hpp"  // MemoryStats: what the accounting gives stats()

namespace ringtrace::detail {

// The built-in sites of alloc and free events.
inline constexpr const char* kAllocName = "ringtrace: allocated";
inline constexpr const char* kFreeName = "ringtrace: freed";

// An alloc or free record between the decoder and the heap's accounting: the decoder
// keeps it in its owner's per-pass store (the live drainer's arena, the file reader's
// tables) as the words below, the event's value.u the handle and text_size the bytes;
// the accounting reads it back (read_memory_payload) and gives the event its size.
//   address, size, caller (0: not recorded), flags | frames << 8, then the frames.
struct MemoryPayload {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  std::uint64_t caller = 0;  // an allocation's caller (format 2.4); 0 unknown
  bool sampled_out = false;  // made in a zone sampling left out (kMemorySampledOut)
  bool restore = false;      // a failed realloc's: the thread's last freed block is live again (kMemoryRestore)
  bool sampled = false;      // a sampled allocation: `frame_bytes` its stack above the caller (kMemoryStackSampled)
  // A sampled allocation's stack, the caller's caller first: 8 bytes a frame, in the bytes
  // the payload was read from (any alignment).
  std::string_view frame_bytes;
  std::size_t frames() const { return frame_bytes.size() / 8; }
  std::uint64_t frame(std::size_t i) const {
    std::uint64_t f = 0;
    std::memcpy(&f, frame_bytes.data() + 8 * i, 8);
    return f;
  }
};
inline constexpr std::uint64_t kPayloadSampledOut = 1;
inline constexpr std::uint64_t kPayloadRestore = 2;
inline constexpr std::uint64_t kPayloadSampled = 4;
inline constexpr std::size_t kMemoryPayloadWords = 4;

// The most bytes a payload takes (a stack of kMaxAllocFrames frames).
inline constexpr std::size_t kMaxMemoryPayloadBytes = (kMemoryPayloadWords + kMaxAllocFrames) * 8;

// The size from which no block can be real: x86-64's user address space is 2^47 bytes
// (with 5-level paging the kernel maps above it only where a program asks for an address
// there, which malloc never does), so every block a process allocates is smaller. A
// file's memory record of this size or more is damaged or crafted: the reader refuses it
// (decoder.hpp) rather than add it to totals that would wrap.
inline constexpr std::uint64_t kAddressSpaceBytes = std::uint64_t{1} << 47;

// The payload's words written at `out` (kMaxMemoryPayloadBytes of room); returns their
// bytes (Event::text_size).
// `flags`: kPayloadSampledOut, kPayloadRestore, kPayloadSampled.
inline std::uint16_t write_memory_payload(char* out, std::uint64_t address, std::uint64_t size, std::uint64_t caller,
                                          std::uint64_t flags, const std::uint64_t* frames, std::size_t n) {
  if (n > kMaxAllocFrames) n = kMaxAllocFrames;
  const std::uint64_t words[kMemoryPayloadWords] = {address, size, caller, (flags & 0xFF) | (n << 8)};
  std::memcpy(out, words, sizeof words);
  if (n != 0) std::memcpy(out + sizeof words, frames, n * 8);
  return static_cast<std::uint16_t>(sizeof words + n * 8);
}

// The payload in `bytes` (as appended above); false when they are not one whole.
inline bool read_memory_payload(std::string_view bytes, MemoryPayload& out) {
  if (bytes.size() < kMemoryPayloadWords * 8 || bytes.size() % 8 != 0) return false;
  std::uint64_t words[kMemoryPayloadWords];
  std::memcpy(words, bytes.data(), sizeof words);
  const std::uint64_t n = words[3] >> 8;
  if (n != bytes.size() / 8 - kMemoryPayloadWords) return false;
  out.address = words[0];
  out.size = words[1];
  out.caller = words[2];
  out.sampled_out = (words[3] & kPayloadSampledOut) != 0;
  out.restore = (words[3] & kPayloadRestore) != 0;
  out.sampled = (words[3] & kPayloadSampled) != 0;
  out.frame_bytes = bytes.substr(sizeof words);
  return true;
}

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

// The blocks still live, grouped by the stack of zones that allocated them and their
// allocation site.
struct HeapLeak {
  std::vector<SiteId> stack;  // outermost first; empty: allocated outside any zone
  std::uint64_t caller = 0;   // the allocation site (0: the records had none)
  std::uint64_t blocks = 0;
  std::uint64_t bytes = 0;
};

// One allocation site (a caller address): exact counts.
struct HeapSite {
  std::uint64_t caller = 0;
  std::uint64_t allocations = 0;
  std::uint64_t bytes = 0;
  std::uint64_t live_bytes = 0;
  std::uint64_t live_blocks = 0;
  std::uint64_t peak_bytes = 0;  // live_bytes when the heap peaked (HeapTracker's peak epochs)
  std::uint64_t stamp = 0;       // the peak epoch peak_bytes is as of
};

// One sampled stack: estimates weighed from its samples (memory_stacks.hpp's sampling).
struct HeapStack {
  std::vector<std::uint64_t> frames;  // the caller first, then its callers
  std::uint64_t samples = 0;
  double bytes = 0;
  double calls = 0;
  double live_bytes = 0;
  double peak_bytes = 0;
  std::uint64_t stamp = 0;
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
  // Distinct allocation sites and sampled stacks kept (past them, counted and pooled into
  // one row "(other sites)" / "(other stacks)").
  static constexpr std::size_t kMaxSites = std::size_t{1} << 20;
  static constexpr std::size_t kMaxStacks = std::size_t{1} << 18;

  explicit HeapTracker(std::size_t max_blocks = kDefaultMaxBlocks) : max_blocks_(max_blocks) {}
  // A stream's file (a window, a flight recorder's snapshot, `convert`): its memory events
  // carry their sizes, resolved where they were recorded, and no addresses. Sizes are
  // taken as they are and live bytes follow them, but for the records marked
  // kSizedLeftOut (and, in files from before the mark, frees of size 0: only a free of no
  // live block has no size), which stay out of the live heap as they did where they were
  // recorded (a window's free of a block from before the window still counts, down to 0);
  // no blocks, no leaks, no sites.
  static HeapTracker sized() {
    HeapTracker h(0);
    h.sized_ = true;
    return h;
  }
  bool has_blocks() const { return !sized_; }
  // Config::memory_stack_bytes of the recording: how sampled stacks are weighed (0: the
  // recording sampled none).
  void set_stack_bytes(std::uint64_t bytes) { stack_bytes_ = bytes; }

  // Accounts the events [first, last), in time order. `payload(e)` gives a memory event's
  // payload bytes as the decoder stored them (heap.hpp's words; empty when they are not
  // there: the event then counts as a free of a block not known).
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
          MemoryPayload p;
          const bool known = e->text_size != 0 && read_memory_payload(payload(*e), p);
          e->text_size = 0;
          if (p.sampled_out) e->flags |= EventFlags::sampled_out;
          if (e->kind == EventKind::alloc) {
            allocated(*e, p);
          } else {
            freed(*e, p, known);
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
  // The live blocks grouped by their allocation's zones and site, most bytes first.
  std::vector<HeapLeak> leaks() const;
  // The sites, most bytes first; the sampled stacks, most estimated bytes first (each
  // brought up to the heap's last peak).
  std::vector<HeapSite> sites() const;
  std::vector<HeapStack> stacks() const;
  // The totals into `m` (known, blocks_known and the counts; not what the recording side
  // counts it left out, nor the leaks, sites and stacks, which need names).
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
      out.site = l.caller;
      out.blocks = l.blocks;
      out.bytes = l.bytes;
    }
    return named;
  }
  // The rows of `m` that need the accounting's blocks: the leaks named by `site(id)`,
  // then the sites and sampled stacks appended, with their addresses for a symbolizer to
  // name (symbols::name_memory).
  template <class Site>
  void fill_rows(MemoryStats& m, Site&& site) const {
    m.leaks = named_leaks(site);
    for (const HeapSite& h : sites()) {
      m.sites.push_back(
          MemoryStats::Site{h.caller, {}, {}, {}, h.allocations, h.bytes, h.peak_bytes, h.live_blocks, h.live_bytes});
    }
    for (HeapStack& h : stacks()) {
      m.stacks.push_back(
          MemoryStats::Stack{std::move(h.frames), {}, h.samples, h.bytes, h.calls, h.peak_bytes, h.live_bytes});
    }
  }

 private:
  struct Block {
    std::uint64_t size;
    std::uint32_t node;   // the stack tree's node of the zone that allocated it (0: none)
    std::uint32_t site;   // sites_ index + 1 (0: no caller)
    std::uint32_t stack;  // stacks_ index + 1 of its sampled stack (0: not sampled)
    float weight;         // a sampled block's estimated bytes per byte (its stack's share)
  };
  struct Node {
    std::uint32_t parent;
    SiteId site;
  };
  struct Freed {  // a thread's last freed block, for a failed realloc's restore
    std::uint64_t address = 0;
    Block block{};
    bool valid = false;
  };
  void zone_begin(const Event& e);
  void zone_end(const Event& e);
  void allocated(Event& e, const MemoryPayload& p);
  void freed(Event& e, const MemoryPayload& p, bool known);
  void restored(Event& e, const MemoryPayload& p);
  void add_live(Block& b, std::uint64_t time_ns);
  void remove_live(const Block& b);
  std::uint32_t site_of(std::uint64_t caller);
  std::uint32_t stack_of_sample(const MemoryPayload& p);
  void bring_up(HeapSite& s) const;
  void bring_up(HeapStack& s) const;
  std::vector<std::uint32_t>& stack_of(ThreadId thread, std::uint32_t depth);
  std::uint32_t child(std::uint32_t parent, SiteId site);

  std::size_t max_blocks_;
  bool sized_ = false;
  bool seen_ = false;
  std::uint64_t stack_bytes_ = 0;
  HeapTotals totals_;
  std::uint64_t peak_epoch_ = 0;  // grows at each new peak: sites and stacks sync their peak_bytes lazily
  std::unordered_map<std::uint64_t, Block> live_;
  std::vector<std::vector<std::uint32_t>> stacks_;             // per thread: the open zones' nodes, innermost last
  std::vector<Node> nodes_{Node{0, 0}};                        // node 0: the root (no zone)
  std::unordered_map<std::uint64_t, std::uint32_t> children_;  // parent << 32 | site -> node
  mutable std::vector<HeapSite> sites_;
  std::unordered_map<std::uint64_t, std::uint32_t> site_index_;  // caller -> sites_ index + 1
  mutable std::vector<HeapStack> samples_;
  std::unordered_multimap<std::uint64_t, std::uint32_t> sample_index_;  // frames' hash -> samples_ index + 1
  std::vector<Freed> last_freed_;                                       // per thread
};

}  // namespace ringtrace::detail
