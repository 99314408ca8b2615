// The hot path: a thread's writer into its own ring. Included by ringtrace.hpp.
//
// Layering: this header knows the ring's record format and the writer's thread-local
// state, nothing else. It never includes the drainer, the session or an exporter.
//
// Each recording call is: one load of the global epoch (0 = no session), one compare
// of the thread's epoch and free space, one clock read, one or two 16-byte stores and
// one release store of the write index, bracketed by two stores of the thread's epoch
// that make the call re-entrant (below). Everything else (first event on a thread, a
// ring that looks full, a new session, drops) is in the noinline cold slow path in
// runtime/thread_registry.cpp.
//
// Re-entrancy. A signal handler (or an allocator hook called from the slow path) may
// record on a thread that is itself in the middle of recording. While a thread is
// inside the recording path its `t_writer.epoch` holds kBusy, which no session ever
// uses: a nested call fails the usual epoch compare, reaches the slow path, sees kBusy
// and drops its event, counted (ThreadBuffer::nested_drops). It never writes into the
// slots the interrupted call is filling and never waits for anything. Compiler signal
// fences keep the ring accesses between the two epoch stores; a handler that runs
// before the first store finds the thread idle, records and returns before the
// interrupted call reads the write position.
#pragma once

#include <atomic>       // the epoch and the published write index
#include <bit>          // std::bit_cast for counter values
#include <cstddef>      // text sizes
#include <cstdint>      // record words
#include <type_traits>  // counter value dispatch

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_API, RINGTRACE_NOINLINE, TLS model
#include "ringtrace/detail/ticks.hpp"     // read_ticks
#include "ringtrace/site.hpp"             // SiteInfo

namespace ringtrace::detail {

// One ring slot. `word` is a SiteInfo address with the RecordKind in its low three
// bits, or, in the slot after a value or region header, the raw 64-bit payload.
// Records attached to the innermost open zone (values, texts, flows) carry ticks 0: they
// read no clock, and the drainer gives them the time of the thread's previous record.
struct Record {
  std::uint64_t ticks;
  std::uint64_t word;
};
static_assert(sizeof(Record) == 16, "a ring slot is 16 bytes");
static_assert(alignof(SiteInfo) >= 8, "site addresses must leave three tag bits");

// Every code is used: new kinds of event are told apart by their site's SiteKind.
enum RecordKind : std::uint64_t {
  record_zone_begin = 0,
  record_zone_end = 1,
  record_instant = 2,
  // + payload slot: int64 value. By the site's kind: a counter sample, a zone value, a
  // flow id, an async span id.
  record_value_int = 3,
  record_value_double = 4,  // + payload slot: double bits (counters, zone values)
  record_region_begin = 5,  // + payload slot: region id
  record_dropped = 6,       // + payload slot: count; word's site part is null
  // + a size slot {bytes | truncated << 63, 0} + ceil(bytes / 16) slots of text
  record_text = 7,
};
inline constexpr std::uint64_t record_kind_mask = 7;

RINGTRACE_ALWAYS_INLINE std::uint64_t record_word(const SiteInfo* site, RecordKind kind) noexcept {
  return reinterpret_cast<std::uintptr_t>(site) | kind;
}

// Thread-local writer state. Constant-initialised and trivially destructible, so an
// access is one fs-relative load with no TLS wrapper call or guard.
struct ThreadWriter {
  Record* slots = nullptr;
  std::uint64_t mask = 0;
  std::uint64_t write_pos = 0;
  // write_pos may grow up to here: the cached limit (read index + capacity, or + the
  // high-water mark) minus one slot reserved for the end of every open zone, so that
  // a recorded zone always has room for its end.
  std::uint64_t avail_end = 0;
  std::atomic<std::uint64_t>* published = nullptr;  // the ring's write index
  std::uint32_t epoch = 0;  // session this writer is bound to; 0: none (never equals a zone's epoch)
  bool use_tsc = false;
  // Zones open on this thread that were not recorded: begins dropped (low 32 bits) and
  // zones of disabled categories (high 32 bits). While it is not 0, the innermost open
  // zone is not in the ring, so values, texts and flows (which attach to it) are not
  // recorded either (dropped and counted when the zone was dropped).
  std::uint64_t hidden = 0;
  // Cold fields, used by the slow path only.
  std::uint64_t limit = 0;
  void* buffer = nullptr;  // runtime's ThreadBuffer
};

// Session generation: 0 while no session records, else the active session's number.
RINGTRACE_API inline constinit std::atomic<std::uint32_t> g_epoch{0};

// Default visibility like g_epoch and the slow path: linked into several shared objects,
// every copy of the hot path binds to one writer per thread.
RINGTRACE_API RINGTRACE_TLS_MODEL inline constinit thread_local ThreadWriter t_writer{};

inline constexpr std::uint32_t kNoSession = 0;               // zone: no session was running
inline constexpr std::uint32_t kNotRecorded = 0xFFFFFFFFu;  // zone: not recorded (after stop, untraced)
inline constexpr std::uint32_t kDroppedZone = 0xFFFFFFFEu;  // zone: begin lost to a full ring
inline constexpr std::uint32_t kBusy = 0xFFFFFFFDu;         // t_writer.epoch inside the recording path
inline constexpr std::uint32_t kSkippedZone = 0xFFFFFFFCu;  // zone: its category is disabled
// t_writer.epoch inside a sampled-out zone: every event the thread records until that
// zone ends is left out with it (the slow path returns `inactive`, nothing counted).
inline constexpr std::uint32_t kSampledOut = 0xFFFFFFFBu;
// The largest sampling rate (one in 65,535); larger ones are taken as this.
inline constexpr std::uint32_t kMaxSampleEvery = 65535;
// Config::sample_every of the running session: the rate of sites that ask for it (0).
RINGTRACE_API inline constinit std::atomic<std::uint32_t> g_sample_every{1};
inline constexpr std::uint64_t kHiddenDropped = 1;                       // ThreadWriter::hidden units
inline constexpr std::uint64_t kHiddenSkipped = std::uint64_t{1} << 32;

// Categories: an index per distinct name (1..kMaxCategories-1; 0: not looked up yet),
// and per index whether it is switched off. Index kMaxCategories-1 is shared by every
// name past the table's capacity.
inline constexpr std::uint32_t kMaxCategories = 256;
RINGTRACE_API inline constinit std::atomic<std::uint8_t> g_category_off[kMaxCategories]{};
// One per RINGTRACE_ZONE_IN call site: its category's index, looked up on first use.
struct CategorySlot {
  std::atomic<std::uint8_t> index{0};
};
// Cold: interns `name` (a lock, maybe an allocation) and stores its index in `slot`.
RINGTRACE_API RINGTRACE_NOINLINE RINGTRACE_COLD std::uint8_t category_index(CategorySlot& slot,
                                                                            const char* name) noexcept;

enum class Reserve : std::uint8_t { ok, dropped, inactive };

// Cold path, entered with t_writer.epoch == kBusy and `bound` its value before: binds
// the thread to the active session, refreshes the cached read index, wakes the drainer
// past the high-water mark, waits (block policy) or counts a drop. On `ok`, `need`
// slots are free at t_writer.write_pos and the epoch stays kBusy (the caller leaves);
// otherwise the slow path has restored the epoch itself. `bound == kBusy` means the
// call interrupted another recording call on this thread: the event is dropped, counted.
// `epoch` is the session the caller loaded and will leave with: the slow path binds to
// that one only, so the thread's epoch always names the session its ring is bound to.
RINGTRACE_API RINGTRACE_NOINLINE RINGTRACE_COLD Reserve reserve_slow(std::uint64_t need, std::uint32_t bound,
                                                                     std::uint32_t epoch) noexcept;
// Cold path: the end of a zone whose begin was dropped is counted as dropped too.
RINGTRACE_API RINGTRACE_NOINLINE RINGTRACE_COLD void count_dropped_end() noexcept;
// Cold path: a value, text or flow inside a zone that was not recorded: counted as
// dropped if that zone was dropped, ignored if its category is off.
RINGTRACE_API RINGTRACE_NOINLINE RINGTRACE_COLD void hidden_attachment() noexcept;
// A text on the innermost open zone: copied into the ring (cut at kMaxText bytes, and
// at a quarter of the ring). Out of line: its size is not known at compile time.
RINGTRACE_API void write_text(const SiteInfo* site, const char* text, std::size_t size, std::uint32_t epoch) noexcept;
inline constexpr std::size_t kMaxText = 1024;
// Before a shared object with call sites is unloaded: waits (bounded) until the running
// session's drainer has decoded every record written so far.
RINGTRACE_API void drain_before_unload() noexcept;

// Marks the thread as inside the recording path (see "Re-entrancy" above); returns the
// epoch it had, for leave().
RINGTRACE_ALWAYS_INLINE std::uint32_t mark_busy(ThreadWriter& t) noexcept {
  const std::uint32_t bound = t.epoch;
  t.epoch = kBusy;
  std::atomic_signal_fence(std::memory_order_seq_cst);  // ring accesses stay after the mark
  return bound;
}

RINGTRACE_ALWAYS_INLINE void leave(ThreadWriter& t, std::uint32_t epoch) noexcept {
  std::atomic_signal_fence(std::memory_order_seq_cst);  // ring accesses stay before it
  t.epoch = epoch;
}

// Marks the thread busy and returns the writer with `need` free slots, or null (no
// session, dropped, nested).
template <std::uint64_t Need>
RINGTRACE_ALWAYS_INLINE ThreadWriter* enter(std::uint32_t epoch, Reserve& why) noexcept {
  ThreadWriter& t = t_writer;
  const std::uint32_t bound = mark_busy(t);
  if (bound != epoch || t.write_pos + Need > t.avail_end) [[unlikely]] {
    why = reserve_slow(Need, bound, epoch);
    if (why != Reserve::ok) return nullptr;
  }
  return &t;
}

RINGTRACE_ALWAYS_INLINE void publish(ThreadWriter& t, std::uint64_t pos) noexcept {
  t.write_pos = pos;
  t.published->store(pos, std::memory_order_release);  // commit: the drainer may read
}

// Zone begin; returns the epoch to hand to zone_close, or kNoSession / kNotRecorded /
// kDroppedZone. kNoSession differs from the cold path's kNotRecorded so that the
// compiler does not merge the no-session exit into the cold block (a jump out and back).
template <bool Region>
RINGTRACE_ALWAYS_INLINE std::uint32_t zone_open(const SiteInfo* site, std::uint64_t region_id) noexcept {
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (epoch == 0) return kNoSession;
  Reserve why = Reserve::ok;
  ThreadWriter* t = enter<Region ? 3 : 2>(epoch, why);  // + one slot for the end
  if (t == nullptr) [[unlikely]] {
    if (why != Reserve::dropped) return kNotRecorded;
    t_writer.hidden += kHiddenDropped;  // undone by the end
    return kDroppedZone;
  }
  const std::uint64_t pos = t->write_pos;
  Record* const slots = t->slots;
  const std::uint64_t mask = t->mask;
  const std::uint64_t ticks = read_ticks(t->use_tsc);  // last, close to the zone's body
  if constexpr (Region) {
    slots[pos & mask] = Record{ticks, record_word(site, record_region_begin)};
    slots[(pos + 1) & mask] = Record{region_id, 0};
    t->avail_end -= 1;
    publish(*t, pos + 2);
  } else {
    slots[pos & mask] = Record{ticks, record_word(site, record_zone_begin)};
    t->avail_end -= 1;
    publish(*t, pos + 1);
  }
  leave(*t, epoch);
  return epoch;
}

RINGTRACE_ALWAYS_INLINE void zone_close(const SiteInfo* site, std::uint32_t epoch) noexcept {
  if (epoch == kNoSession) return;  // no session: one compare of a constant the compiler knows
  ThreadWriter& t = t_writer;
  // Same epoch as the begin: the slot reserved at begin is still ours. After stop()
  // the end goes into the thread's unregistered ring and is never delivered.
  // A handler that interrupts this before the busy mark records whole zones (so the
  // reserved slot is still free) and leaves the epoch as it found it.
  if (epoch == t.epoch) [[likely]] {
    mark_busy(t);
    const std::uint64_t ticks = read_ticks(t.use_tsc);  // first, close to the body's end
    const std::uint64_t pos = t.write_pos;
    t.slots[pos & t.mask] = Record{ticks, record_word(site, record_zone_end)};
    t.avail_end += 1;
    publish(t, pos + 1);
    leave(t, epoch);
  } else if (epoch == kDroppedZone) {
    t.hidden -= kHiddenDropped;
    count_dropped_end();
  } else if (epoch == kSkippedZone) {
    t.hidden -= kHiddenSkipped;
  }
}

// Ends the region zone that `epoch` (zone_open<true>'s result) stands for and begins
// another of the same site with `region_id`, with one clock read: the end, the begin and
// its id in three slots (the end's was reserved; the new begin reserves its own). Both
// carry the same ticks; the drainer places the begin a boundary gap after the end, as
// for any two boundaries read within a nanosecond. Session::step() uses it for step
// zones. Falls back to a close and an open when the zone was not recorded in the
// running session or the ring has no room.
RINGTRACE_ALWAYS_INLINE std::uint32_t zone_switch(const SiteInfo* site, std::uint32_t epoch,
                                                  std::uint64_t region_id) noexcept {
  ThreadWriter& t = t_writer;
  if (epoch == t.epoch && epoch == g_epoch.load(std::memory_order_relaxed)) {
    mark_busy(t);
    const std::uint64_t pos = t.write_pos;
    // The end's slot is reserved (counted out of avail_end); the begin and its id need
    // two more and the new zone's end a reserved one: the end frees its reservation.
    if (pos + 3 <= t.avail_end) [[likely]] {
      Record* const slots = t.slots;
      const std::uint64_t mask = t.mask;
      const std::uint64_t ticks = read_ticks(t.use_tsc);
      slots[pos & mask] = Record{ticks, record_word(site, record_zone_end)};
      slots[(pos + 1) & mask] = Record{ticks, record_word(site, record_region_begin)};
      slots[(pos + 2) & mask] = Record{region_id, 0};
      publish(t, pos + 3);  // avail_end unchanged: one reservation given back, one taken
      leave(t, epoch);
      return epoch;
    }
    leave(t, epoch);
  }
  zone_close(site, epoch);
  return zone_open<true>(site, region_id);
}

// The rate in effect at a site in the running session: 1 unless it is sampled.
inline std::uint32_t effective_sample_every(const SiteInfo& site) noexcept {
  if ((site.options & SiteOptions::sampled) == 0) return 1;
  const std::uint32_t rate = site.sample_every != 0 ? site.sample_every : g_sample_every.load(std::memory_order_relaxed);
  return rate < 1 ? 1 : (rate > kMaxSampleEvery ? kMaxSampleEvery : rate);
}

// The options in effect at a site in the running session: a counter gets its own track
// per thread under Config::per_thread_counters.
inline std::uint8_t effective_options(const SiteInfo& site, bool per_thread_counters) noexcept {
  if (per_thread_counters && site.kind == SiteKind::counter) {
    return static_cast<std::uint8_t>(site.options | SiteOptions::per_thread_track);
  }
  return site.options;
}

// A zone in a category (RINGTRACE_ZONE_IN): with no session, the same single compare as
// any zone; in a session, two loads more decide whether the category is on.
RINGTRACE_ALWAYS_INLINE std::uint32_t zone_open_in(const SiteInfo* site, CategorySlot& slot) noexcept {
  if (g_epoch.load(std::memory_order_relaxed) == 0) return kNoSession;
  std::uint8_t index = slot.index.load(std::memory_order_relaxed);
  if (index == 0) [[unlikely]] index = category_index(slot, site->category);
  if (g_category_off[index].load(std::memory_order_relaxed) != 0) [[unlikely]] {
    t_writer.hidden += kHiddenSkipped;  // undone by the end
    return kSkippedZone;
  }
  return zone_open<false>(site, 0);
}

// A 64-bit payload on the innermost open zone (a value, a flow id): no clock read.
template <RecordKind Kind>
RINGTRACE_ALWAYS_INLINE void attach(const SiteInfo* site, std::uint64_t payload) noexcept {
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (epoch == 0) return;
  if (t_writer.hidden != 0) [[unlikely]] {
    hidden_attachment();
    return;
  }
  Reserve why = Reserve::ok;
  ThreadWriter* t = enter<2>(epoch, why);
  if (t == nullptr) [[unlikely]] return;
  const std::uint64_t pos = t->write_pos;
  t->slots[pos & t->mask] = Record{0, record_word(site, Kind)};
  t->slots[(pos + 1) & t->mask] = Record{payload, 0};
  publish(*t, pos + 2);
  leave(*t, epoch);
}

template <typename T>
RINGTRACE_ALWAYS_INLINE void zone_value(const SiteInfo* site, T value) noexcept {
  static_assert(std::is_arithmetic_v<T>, "RINGTRACE_ZONE_VALUE takes an integer or floating-point value");
  if constexpr (std::is_floating_point_v<T>) {
    attach<record_value_double>(site, std::bit_cast<std::uint64_t>(static_cast<double>(value)));
  } else {
    attach<record_value_int>(site, static_cast<std::uint64_t>(static_cast<std::int64_t>(value)));
  }
}

RINGTRACE_ALWAYS_INLINE void zone_text(const SiteInfo* site, const char* text, std::size_t size) noexcept {
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (epoch == 0) return;
  write_text(site, text, size, epoch);
}

// A timed event with a 64-bit payload (async span begin or end).
RINGTRACE_ALWAYS_INLINE void timed_value(const SiteInfo* site, std::uint64_t payload) noexcept {
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (epoch == 0) return;
  Reserve why = Reserve::ok;
  ThreadWriter* t = enter<2>(epoch, why);
  if (t == nullptr) [[unlikely]] return;
  const std::uint64_t pos = t->write_pos;
  t->slots[pos & t->mask] = Record{read_ticks(t->use_tsc), record_word(site, record_value_int)};
  t->slots[(pos + 1) & t->mask] = Record{payload, 0};
  publish(*t, pos + 2);
  leave(*t, epoch);
}

RINGTRACE_ALWAYS_INLINE void instant(const SiteInfo* site) noexcept {
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (epoch == 0) return;
  Reserve why = Reserve::ok;
  ThreadWriter* t = enter<1>(epoch, why);
  if (t == nullptr) [[unlikely]] return;
  const std::uint64_t pos = t->write_pos;
  t->slots[pos & t->mask] = Record{read_ticks(t->use_tsc), record_word(site, record_instant)};
  publish(*t, pos + 1);
  leave(*t, epoch);
}

template <typename T>
RINGTRACE_ALWAYS_INLINE void counter(const SiteInfo* site, T value) noexcept {
  static_assert(std::is_arithmetic_v<T>, "RINGTRACE_COUNTER takes an integer or floating-point value");
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (epoch == 0) return;
  Reserve why = Reserve::ok;
  ThreadWriter* t = enter<2>(epoch, why);
  if (t == nullptr) [[unlikely]] return;
  const std::uint64_t pos = t->write_pos;
  const std::uint64_t ticks = read_ticks(t->use_tsc);
  if constexpr (std::is_floating_point_v<T>) {
    t->slots[pos & t->mask] = Record{ticks, record_word(site, record_value_double)};
    t->slots[(pos + 1) & t->mask] = Record{std::bit_cast<std::uint64_t>(static_cast<double>(value)), 0};
  } else {
    t->slots[pos & t->mask] = Record{ticks, record_word(site, record_value_int)};
    t->slots[(pos + 1) & t->mask] = Record{static_cast<std::uint64_t>(static_cast<std::int64_t>(value)), 0};
  }
  publish(*t, pos + 2);
  leave(*t, epoch);
}

// RAII zone: the begin in the constructor, the end in the destructor.
class ScopedZone {
 public:
  RINGTRACE_ALWAYS_INLINE explicit ScopedZone(const SiteInfo* site) noexcept
      : site_(site), epoch_(zone_open<false>(site, 0)) {}
  RINGTRACE_ALWAYS_INLINE ScopedZone(const SiteInfo* site, std::int64_t region_id) noexcept
      : site_(site), epoch_(zone_open<true>(site, static_cast<std::uint64_t>(region_id))) {}
  RINGTRACE_ALWAYS_INLINE ScopedZone(const SiteInfo* site, CategorySlot& category) noexcept
      : site_(site), epoch_(zone_open_in(site, category)) {}

  RINGTRACE_ALWAYS_INLINE ~ScopedZone() { zone_close(site_, epoch_); }
  ScopedZone(const ScopedZone&) = delete;
  ScopedZone& operator=(const ScopedZone&) = delete;

 private:
  const SiteInfo* site_;
  std::uint32_t epoch_;
};

// A sampled zone (RINGTRACE_ZONE_SAMPLED): one in the site's sample_every (0: the
// session's Config::sample_every) of this site's zones on this thread is recorded,
// counted by `left` (the site's own per-thread countdown), the first one recorded. A
// zone left out hides everything its thread records until it ends: nested zones,
// instants, counters, values (so a recorded zone always has its whole subtree, and a
// nested site is recorded exactly when its sampled ancestors are, one in its own rate
// of those). Left out, it costs two thread-local loads and a store more than a zone
// with no session; the epoch it hid is kept in the guard, not in the thread's state.
class SampledZone {
 public:
  RINGTRACE_ALWAYS_INLINE SampledZone(const SiteInfo* site, std::uint32_t& left) noexcept : site_(site) {
    if (g_epoch.load(std::memory_order_relaxed) == 0) return;
    ThreadWriter& t = t_writer;
    const std::uint32_t bound = t.epoch;
    if (bound == kSampledOut) {  // inside a zone left out: so is this one, uncounted
      epoch_ = kNotRecorded;
      return;
    }
    if (left != 0) [[likely]] {
      left -= 1;
      hidden_ = bound;
      t.epoch = kSampledOut;  // one store: a signal handler sees one epoch or the other
      epoch_ = kLeftOut;
      return;
    }
    std::uint32_t rate = site->sample_every != 0 ? site->sample_every : g_sample_every.load(std::memory_order_relaxed);
    rate = rate < kMaxSampleEvery ? rate : kMaxSampleEvery;
    left = rate > 1 ? rate - 1 : 0;
    epoch_ = zone_open<false>(site, 0);
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // hidden_ is set whenever epoch_ is kLeftOut
#endif
  RINGTRACE_ALWAYS_INLINE ~SampledZone() {
    if (epoch_ == kLeftOut) [[likely]] {
      // No fence: the body recorded nothing (every access to the epoch stays in order,
      // being one variable), so there is no ring write for a signal handler to see.
      t_writer.epoch = hidden_;
      return;
    }
    zone_close(site_, epoch_);
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  SampledZone(const SampledZone&) = delete;
  SampledZone& operator=(const SampledZone&) = delete;

 private:
  static constexpr std::uint32_t kLeftOut = 0xFFFFFFFAu;
  const SiteInfo* site_;
  std::uint32_t epoch_ = kNoSession;
  std::uint32_t hidden_;  // the thread's epoch before this zone was left out (set with kLeftOut)
};

}  // namespace ringtrace::detail
