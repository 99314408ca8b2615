// The hot path: a thread's writer into its own ring. Included by instrument.hpp.
//
// Layering: this header knows the ring record format (record.hpp) and the writer's
// thread-local state, nothing else. It never includes the drainer, the session or an
// exporter.
//
// A zone is, at its begin: a load of the global epoch (0 = no session), a compare of
// the thread's epoch and of its ring's next free byte against a limit, an `xadd` that
// takes 16 bytes of the ring, a clock read and two stores (the time, then the header);
// at its end: a compare of the thread's epoch, a clock read, an `xadd` that takes 8
// bytes, a compare against the zone ends' limit and one store. Five stores in all.
// Everything else (first event on a thread, a ring that looks full, a session without
// a TSC, drops, nested calls) is in the noinline cold slow path
// (runtime/live/thread_registry.cpp).
//
// Re-entrancy without a mark. A signal handler (or an allocator hook called from the
// slow path) may record on a thread that is itself in the middle of recording. The
// ring space of a record is taken with one instruction, a `xadd` on the ring's next
// pointer without the `lock` prefix (nothing but the thread itself writes it; a signal
// arrives between instructions, never inside one): a handler that runs before it takes
// the space after the interrupted record's, a handler that runs after it the space
// after that, and each writes only its own. A record's header is stored last and the
// drainer zeroes what it has read, so the drainer stops at a record whose header is
// still 0 (being written, or interrupted) and takes it on a later pass. Inside the slow
// path a thread is marked (ThreadWriter::in_slow): a call nested there drops its event,
// counted, and never waits.
#pragma once

#include <atomic>       // the epoch, the ring's next pointer, headers published with release
#include <bit>          // std::bit_cast for counter values
#include <cstddef>      // text sizes
#include <cstdint>      // record words
#include <cstring>      // run-time names copied into the ring
#include <string_view>  // run-time names, messages, texts
#include <type_traits>  // counter value dispatch

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_API, RINGTRACE_NOINLINE, TLS model
#include "ringtrace/detail/record.hpp"    // the record format
#include "ringtrace/detail/ticks.hpp"     // read_ticks_fast
#include "ringtrace/site.hpp"             // SiteInfo

namespace ringtrace::detail {

// What the hot path touches of a thread's ring: one cache line, in the ring's
// ThreadBuffer (or its ring file slot). Addresses are byte addresses into the ring's
// memory: a ring of `capacity` bytes (a power of two) followed by a guard, so that a
// record that starts before the ring's end is written whole, past it; the drainer reads
// it there (docs/file-format.md, "Ring records").
struct alignas(64) WriterBlock {
  // Where the next record goes. Advanced by the owning thread with reserve() (and by
  // its slow path with compare-exchange); read by the drainer (acquire: every record
  // below it is reserved, not necessarily written yet).
  std::atomic<std::uintptr_t> next{0};
  // A record other than a zone end may start below this; a zone end below end_limit.
  // 0: every such record goes to the slow path (no ring yet, a session without a TSC,
  // a drop marker to write, recording paused by a hidden zone). Written by the owning
  // thread only.
  std::uintptr_t limit = 0;
  std::uintptr_t end_limit = 0;
  // The ring position (bytes written since the thread bound the ring) of the ring's first
  // byte: a record at address `a` is at position lap_base + (a - ring). Grows by the
  // ring's capacity each time the slow path moves `next` back a lap; read only by a
  // reader recovering a ring file.
  std::atomic<std::uint64_t> lap_base{0};
  // Calls of functions g++ inlined, left out since the thread bound the ring
  // (FunctionOptions::inlined false): counted by the owning thread (a load and a store,
  // no lock prefix), read by the drainer.
  std::atomic<std::uint64_t> inlined{0};
};

struct InlinedCalls;  // detail/functions.hpp

}  // namespace ringtrace::detail

// The session from the environment (RINGTRACE_OUTPUT, `ringtrace record`;
// runtime/launch/) starts in every program that records: each of its objects that
// includes the hot path names it, so that a static link takes its file from the archive.
// The library's own layers (RINGTRACE_BUILDING_LIBRARY) never name it: the live runtime
// does not reach up to the layer above it (tests/layers checks).
extern "C" RINGTRACE_API void ringtrace_environment_session() noexcept;

namespace ringtrace::detail {

// Not in a translation unit built with RINGTRACE_DISABLED: no static data there.
#if !defined(RINGTRACE_BUILDING_LIBRARY) && !(defined(RINGTRACE_DISABLED) && RINGTRACE_DISABLED)
[[gnu::used]] inline void (*const kEnvironmentSessionLink)() noexcept = &ringtrace_environment_session;
#endif

// Thread-local writer state. Constant-initialised and trivially destructible, so an
// access is one fs-relative load with no TLS wrapper call or guard.
struct ThreadWriter {
  WriterBlock* block = nullptr;  // the bound ring's; null before the thread's first event
  std::uint32_t epoch = 0;       // session this writer is bound to; 0: none (never equals a zone's epoch)
  // Inside the slow path (binding, waiting, writing a text): a call nested here (a signal
  // handler, an allocator hook) drops its event, counted, and touches nothing else.
  std::uint8_t in_slow = 0;
  // Zones open on this thread that were not recorded: begins dropped (low 32 bits) and
  // zones of disabled categories (high 32 bits). While it is not 0, the innermost open
  // zone is not in the ring, so values, texts and flows (which attach to it) are not
  // recorded either (dropped and counted when the zone was dropped).
  std::uint64_t hidden = 0;
  // While `hidden` is not 0, the zones opened since the outermost hidden one, innermost in
  // bit 0: `open_hidden` 1 for a zone not in the ring, 0 for one recorded; `open_dropped`
  // 1 for a hidden one that was dropped (not a category switched off, nor a call past the
  // functions' depth). So a value or text knows whether its zone, the innermost, was
  // recorded. Kept by the slow paths: every record takes them while `hidden` is not 0 (the
  // ring's limits are 0). Past 64 levels the bits are not known (open_levels > 64).
  std::uint64_t open_hidden = 0;
  std::uint64_t open_dropped = 0;
  std::uint32_t open_levels = 0;
  // Set once a zone past the 64th level ended: the bits shifted out are gone, so until no
  // zone is hidden any more, a value's zone is not known (counted as lost).
  std::uint8_t open_overflowed = 0;
  // The ring's write position and limits when the outermost hidden zone began: restored at
  // its end if nothing was written meanwhile (no slow path visit for a zone switched off).
  std::uintptr_t saved_next = 0, saved_limit = 0, saved_end_limit = 0;
  void* buffer = nullptr;  // runtime's ThreadBuffer
  // The bound ring's count of calls of inlined functions left out, per function
  // (detail/functions.hpp); set with `block`, null when it is.
  InlinedCalls* inlined_calls = nullptr;
};

// Session generation: 0 while no session records, else the active session's number.
RINGTRACE_API inline constinit std::atomic<std::uint32_t> g_epoch{0};

// Default visibility like g_epoch and the slow path: linked into several shared objects,
// every copy of the hot path binds to one writer per thread.
RINGTRACE_API RINGTRACE_TLS_MODEL inline constinit thread_local ThreadWriter t_writer{};

inline constexpr std::uint32_t kNoSession = 0;              // zone: no session was running
inline constexpr std::uint32_t kNotRecorded = 0xFFFFFFFFu;  // zone: not recorded (after stop, untraced)
inline constexpr std::uint32_t kDroppedZone = 0xFFFFFFFEu;  // zone: begin lost to a full ring
inline constexpr std::uint32_t kSkippedZone = 0xFFFFFFFCu;  // zone: its category is disabled
// t_writer.epoch inside a sampled-out zone: every event the thread records until that
// zone ends is left out with it (the slow path returns `inactive`, nothing counted).
inline constexpr std::uint32_t kSampledOut = 0xFFFFFFFBu;
// The largest sampling rate (one in 65,535); larger ones are taken as this.
inline constexpr std::uint32_t kMaxSampleEvery = 65535;
// Config::sample_every of the running session: the rate of sites that ask for it (0).
RINGTRACE_API inline constinit std::atomic<std::uint32_t> g_sample_every{1};
inline constexpr std::uint64_t kHiddenDropped = 1;  // ThreadWriter::hidden units
inline constexpr std::uint64_t kHiddenSkipped = std::uint64_t{1} << 32;

// A zone that is not in the ring begins on the thread (`unit`: kHiddenDropped, its ring was
// full; kHiddenSkipped, its category is off or it is a call past the functions' depth):
// until it ends, every record of the thread takes the slow path, which keeps the nesting
// of what is recorded inside it (ThreadWriter::open_hidden). Undone by hidden_zone_end().
RINGTRACE_ALWAYS_INLINE void hidden_zone_begin(ThreadWriter& t, std::uint64_t unit) noexcept {
  WriterBlock* const b = t.block;
  if (b != nullptr && t.hidden == 0) {
    t.saved_next = b->next.load(std::memory_order_relaxed);
    t.saved_limit = b->limit;
    t.saved_end_limit = b->end_limit;
  }
  t.hidden += unit;
  t.open_hidden = (t.open_hidden << 1) | 1;
  t.open_dropped = (t.open_dropped << 1) | (unit == kHiddenDropped ? 1 : 0);
  t.open_levels += 1;
  if (b != nullptr) {
    b->limit = 0;
    b->end_limit = 0;
  }
}

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
// Nested in the thread's own slow path or category switch (a signal handler), it takes
// no lock and returns 0 (looked up again next time; index 0 is never switched off).
RINGTRACE_API RINGTRACE_NOINLINE RINGTRACE_COLD std::uint8_t category_index(CategorySlot& slot,
                                                                            const char* name) noexcept;

// The slow paths (cold, noinline, runtime/live/thread_registry.cpp). Each records the
// whole event itself when it can (binding the thread to the session `epoch` on its
// first event, refreshing the drainer's read position, waking the drainer, waiting
// under the block policy), or drops and counts it. `epoch` is the session the caller
// loaded; the thread binds to that one only.
RINGTRACE_API RINGTRACE_NOINLINE RINGTRACE_COLD std::uint32_t zone_open_slow(const SiteInfo* site, RecordKind kind,
                                                                             std::uint64_t region_id,
                                                                             std::uint32_t epoch) noexcept;
// A zone end whose fast path found no room: `at` is the space it reserved.
RINGTRACE_API RINGTRACE_NOINLINE RINGTRACE_COLD void zone_end_slow(std::uintptr_t at, std::uint64_t ticks) noexcept;
// The end of a zone that was not recorded in the thread's current session: a dropped
// begin's end is counted as dropped too; a skipped category's is not.
RINGTRACE_API RINGTRACE_NOINLINE RINGTRACE_COLD void zone_close_other(std::uint32_t token) noexcept;
// Any other record (`bytes` long: header, `ticks` if the kind has a time, `payload` if it
// has one) the fast path could not write, or a value attached while a hidden zone is
// innermost (dropped and counted if that zone was dropped, ignored if its category is off).
RINGTRACE_API RINGTRACE_NOINLINE RINGTRACE_COLD void record_slow(const SiteInfo* site, RecordKind kind,
                                                                 std::uint64_t payload, std::uint32_t epoch) noexcept;
// A text on the innermost open zone: copied into the ring (cut at kMaxText bytes, and
// at a quarter of the ring). Out of line: its size is not known at compile time.
RINGTRACE_API void write_text(const SiteInfo* site, const char* text, std::size_t size, std::uint32_t epoch) noexcept;
inline constexpr std::size_t kMaxText = 1024;
// A message (RINGTRACE_MESSAGE): a timed text record of its own (record_message), cut
// as a text is. Out of line, as write_text.
RINGTRACE_API void write_message(const SiteInfo* site, const char* text, std::size_t size,
                                 std::uint32_t epoch) noexcept;
// A zone named at run time (RINGTRACE_ZONE_DYNAMIC) whose fast path found no room: the
// whole record (record_zone_begin_named) written or dropped as zone_open_slow does.
RINGTRACE_API RINGTRACE_NOINLINE RINGTRACE_COLD std::uint32_t zone_open_named_slow(const SiteInfo* site,
                                                                                   const char* name, std::size_t size,
                                                                                   std::uint32_t epoch) noexcept;
// The longest run-time zone name copied into the ring; a longer one is cut and flagged
// (EventFlags::truncated on its begin).
inline constexpr std::size_t kMaxRuntimeName = 256;
// RINGTRACE_ZONE_END with no RINGTRACE_ZONE_BEGIN open on the thread: counted in the
// running session's SessionStats::unbalanced_ends (nothing when none runs).
RINGTRACE_API RINGTRACE_NOINLINE RINGTRACE_COLD void manual_end_unbalanced() noexcept;
// Manual ends with no manual begin open, since the process started (the drainer counts
// those of its session from its start's value).
RINGTRACE_API inline constinit std::atomic<std::uint64_t> g_unbalanced_manual_ends{0};
// Binds the calling thread to the running session `epoch` without recording anything
// (for tests that write records with times of their own). Cold.
RINGTRACE_API bool bind_thread(std::uint32_t epoch) noexcept;
// Before a shared object with call sites is unloaded: waits (bounded) until the running
// session's drainer has decoded every record written so far.
RINGTRACE_API void drain_before_unload() noexcept;

// Takes `bytes` of the ring at block.next and returns where they start: one instruction,
// so that a signal handler on this thread runs wholly before or wholly after it (see
// "Re-entrancy" above). No `lock` prefix: only this thread writes the pointer, and a
// locked instruction would wait for the thread's earlier stores to drain.
RINGTRACE_ALWAYS_INLINE std::uintptr_t reserve(WriterBlock& block, std::uintptr_t bytes) noexcept {
#if RINGTRACE_HAVE_TSC && !RINGTRACE_TSAN && defined(__x86_64__)
  static_assert(sizeof(std::atomic<std::uintptr_t>) == sizeof(std::uintptr_t));
  asm volatile("xaddq %0, %1" : "+r"(bytes), "+m"(*reinterpret_cast<std::uintptr_t*>(&block.next)));
  return bytes;
#else
  return block.next.fetch_add(bytes, std::memory_order_relaxed);
#endif
}

// The header last, with release: a reader that sees it non-zero sees the whole record.
RINGTRACE_ALWAYS_INLINE void publish(std::uintptr_t at, std::uint64_t header) noexcept {
#if RINGTRACE_TSAN
  tsan_ring_published();
#endif
  std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(at)).store(header, std::memory_order_release);
}
RINGTRACE_ALWAYS_INLINE void put(std::uintptr_t at, std::uint64_t word) noexcept {
#if RINGTRACE_TSAN
  __atomic_store_n(reinterpret_cast<std::uint64_t*>(at), word, __ATOMIC_RELAXED);  // see platform.hpp
#else
  *reinterpret_cast<std::uint64_t*>(at) = word;
#endif
}

// The thread's ring, if it is bound to session `epoch` and a record other than a zone
// end may start now; else null (the caller takes its slow path).
RINGTRACE_ALWAYS_INLINE WriterBlock* writable(ThreadWriter& t, std::uint32_t epoch) noexcept {
  WriterBlock* const b = t.block;
  if (t.epoch != epoch || b->next.load(std::memory_order_relaxed) >= b->limit) [[unlikely]]
    return nullptr;
  return b;
}

// Zone begin; returns the token to hand to zone_close: the epoch, or kNoSession /
// kNotRecorded / kDroppedZone / kSkippedZone. kNoSession differs from the cold path's
// kNotRecorded so that the compiler does not merge the no-session exit into the cold
// block (a jump out and back).
template <bool Region>
RINGTRACE_ALWAYS_INLINE std::uint32_t zone_open(const SiteInfo* site, std::uint64_t region_id) noexcept {
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (epoch == 0) return kNoSession;
  constexpr RecordKind kind = Region ? record_region_begin : record_zone_begin;
  WriterBlock* const b = writable(t_writer, epoch);
  if (b == nullptr) [[unlikely]]
    return zone_open_slow(site, kind, region_id, epoch);
  const std::uintptr_t at = reserve(*b, Region ? sizeof(TimedValueRecord) : sizeof(TimedRecord));
  put(at + offsetof(TimedRecord, ticks), read_ticks_fast());  // last before the header, close to the zone's body
  if constexpr (Region) put(at + offsetof(TimedValueRecord, value), region_id);
  publish(at, record_header(site, kind));
  return epoch;
}

RINGTRACE_ALWAYS_INLINE void zone_close(std::uint32_t token) noexcept {
  if (token == kNoSession) return;  // no session: one compare of a constant the compiler knows
  ThreadWriter& t = t_writer;
  // Same epoch as the begin: recorded in the session the thread is bound to. After
  // stop() the end goes into the thread's unregistered ring and is never delivered.
  if (token != t.epoch) [[unlikely]] {
    zone_close_other(token);
    return;
  }
  const std::uint64_t ticks = read_ticks_fast();  // first, close to the body's end
  WriterBlock& b = *t.block;
  const std::uintptr_t at = reserve(b, sizeof(EndRecord));
  if (at >= b.end_limit) [[unlikely]] {
    zone_end_slow(at, ticks);
    return;
  }
  publish(at, end_slot(ticks));
}

// Ends the region zone that `token` (zone_open<true>'s result) stands for and begins
// another of the same site with `region_id`, with one clock read: the end, the begin and
// its id in one reservation. Both carry the same ticks; the drainer places the begin a
// boundary gap after the end, as for any two boundaries read within a nanosecond.
// Session::step() uses it for step zones. Falls back to a close and an open when the
// zone was not recorded in the running session or the ring has no room.
RINGTRACE_ALWAYS_INLINE std::uint32_t zone_switch(const SiteInfo* site, std::uint32_t token,
                                                  std::uint64_t region_id) noexcept {
  ThreadWriter& t = t_writer;
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (token == epoch && epoch != 0) {
    if (WriterBlock* const b = writable(t, epoch)) [[likely]] {
      const std::uintptr_t at = reserve(*b, sizeof(SwitchRecords));
      const std::uint64_t ticks = read_ticks_fast();
      publish(at + offsetof(SwitchRecords, end), end_slot(ticks));
      put(at + offsetof(SwitchRecords, begin.ticks), ticks);
      put(at + offsetof(SwitchRecords, begin.value), region_id);
      publish(at + offsetof(SwitchRecords, begin), record_header(site, record_region_begin));
      return epoch;
    }
  }
  zone_close(token);
  return zone_open<true>(site, region_id);
}

// The rate in effect at a site in the running session: 1 unless it is sampled.
RINGTRACE_NO_INSTRUMENT inline std::uint32_t effective_sample_every(const SiteInfo& site) noexcept {
  if ((site.options & SiteOptions::sampled) == 0) return 1;
  const std::uint32_t rate =
      site.sample_every != 0 ? site.sample_every : g_sample_every.load(std::memory_order_relaxed);
  return rate < 1 ? 1 : (rate > kMaxSampleEvery ? kMaxSampleEvery : rate);
}

// The options in effect at a site in the running session: a counter gets its own track
// per thread under Config::per_thread_counters.
RINGTRACE_NO_INSTRUMENT inline std::uint8_t effective_options(const SiteInfo& site, bool per_thread_counters) noexcept {
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
  if (index == 0) [[unlikely]]
    index = category_index(slot, site->category);
  if (g_category_off[index].load(std::memory_order_relaxed) != 0) [[unlikely]] {
    hidden_zone_begin(t_writer, kHiddenSkipped);  // undone by the end
    return kSkippedZone;
  }
  return zone_open<false>(site, 0);
}

// A 64-bit payload on the innermost open zone (a value, a flow id): no clock read.
template <RecordKind Kind>
RINGTRACE_ALWAYS_INLINE void attach(const SiteInfo* site, std::uint64_t payload) noexcept {
  static_assert(Kind == record_arg_int || Kind == record_arg_double);
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (epoch == 0) return;
  ThreadWriter& t = t_writer;
  WriterBlock* const b = t.hidden == 0 ? writable(t, epoch) : nullptr;
  if (b == nullptr) [[unlikely]] {
    record_slow(site, Kind, payload, epoch);
    return;
  }
  const std::uintptr_t at = reserve(*b, sizeof(ArgRecord));
  put(at + offsetof(ArgRecord, value), payload);
  publish(at, record_header(site, Kind));
}

template <typename T>
RINGTRACE_ALWAYS_INLINE void zone_value(const SiteInfo* site, T value) noexcept {
  static_assert(std::is_arithmetic_v<T>, "RINGTRACE_ZONE_VALUE takes an integer or floating-point value");
  if constexpr (std::is_floating_point_v<T>) {
    attach<record_arg_double>(site, std::bit_cast<std::uint64_t>(static_cast<double>(value)));
  } else {
    attach<record_arg_int>(site, static_cast<std::uint64_t>(static_cast<std::int64_t>(value)));
  }
}

RINGTRACE_ALWAYS_INLINE void zone_text(const SiteInfo* site, const char* text, std::size_t size) noexcept {
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (epoch == 0) return;
  write_text(site, text, size, epoch);
}
// RINGTRACE_ZONE_TEXT(key, text): the size implied (a literal, a std::string, a
// std::string_view, a NUL-terminated char*).
RINGTRACE_ALWAYS_INLINE void zone_text(const SiteInfo* site, std::string_view text) noexcept {
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (epoch == 0) return;
  write_text(site, text.data(), text.size(), epoch);
}

// A timed event: an instant (no payload), a counter sample or an async span's begin or
// end (with a 64-bit payload).
template <RecordKind Kind>
RINGTRACE_ALWAYS_INLINE void timed(const SiteInfo* site, std::uint64_t payload) noexcept {
  static_assert(Kind == record_instant || Kind == record_timed_int || Kind == record_timed_double ||
                Kind == record_region_begin);  // the last: a step marker (Session::step())
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (epoch == 0) return;
  WriterBlock* const b = writable(t_writer, epoch);
  if (b == nullptr) [[unlikely]] {
    record_slow(site, Kind, payload, epoch);
    return;
  }
  const std::uintptr_t at = reserve(*b, Kind == record_instant ? sizeof(TimedRecord) : sizeof(TimedValueRecord));
  put(at + offsetof(TimedRecord, ticks), read_ticks_fast());
  if constexpr (Kind != record_instant) put(at + offsetof(TimedValueRecord, value), payload);
  publish(at, record_header(site, Kind));
}

RINGTRACE_ALWAYS_INLINE void instant(const SiteInfo* site) noexcept { timed<record_instant>(site, 0); }

// An async span's begin or end (RINGTRACE_ASYNC_BEGIN / _END): a timed value.
RINGTRACE_ALWAYS_INLINE void timed_value(const SiteInfo* site, std::uint64_t payload) noexcept {
  timed<record_timed_int>(site, payload);
}

template <typename T>
RINGTRACE_ALWAYS_INLINE void counter(const SiteInfo* site, T value) noexcept {
  static_assert(std::is_arithmetic_v<T>, "RINGTRACE_COUNTER takes an integer or floating-point value");
  if constexpr (std::is_floating_point_v<T>) {
    timed<record_timed_double>(site, std::bit_cast<std::uint64_t>(static_cast<double>(value)));
  } else {
    timed<record_timed_int>(site, static_cast<std::uint64_t>(static_cast<std::int64_t>(value)));
  }
}

// RAII zone: the begin in the constructor, the end in the destructor.
// A zone's token (zone_open's result), to construct a ScopedZone from a begin made
// elsewhere (a zone with arguments, a zone named at run time).
struct ZoneToken {
  std::uint32_t value;
};

class ScopedZone {
 public:
  RINGTRACE_ALWAYS_INLINE explicit ScopedZone(ZoneToken token) noexcept : token_(token.value) {}
  RINGTRACE_ALWAYS_INLINE explicit ScopedZone(const SiteInfo* site) noexcept : token_(zone_open<false>(site, 0)) {}
  RINGTRACE_ALWAYS_INLINE ScopedZone(const SiteInfo* site, std::int64_t region_id) noexcept
      : token_(zone_open<true>(site, static_cast<std::uint64_t>(region_id))) {}
  RINGTRACE_ALWAYS_INLINE ScopedZone(const SiteInfo* site, CategorySlot& category) noexcept
      : token_(zone_open_in(site, category)) {}

  RINGTRACE_ALWAYS_INLINE ~ScopedZone() { zone_close(token_); }
  ScopedZone(const ScopedZone&) = delete;
  ScopedZone& operator=(const ScopedZone&) = delete;

 private:
  std::uint32_t token_;
};

// A sampled site's per-thread countdown (RINGTRACE_ZONE_SAMPLED): zones to leave out
// before the next recorded one, in the session `epoch`. A new session starts it afresh,
// so that each session records its first zone of the site on each thread.
struct SampleCount {
  std::uint32_t left = 0;
  std::uint32_t epoch = 0;
};

// A sampled zone (RINGTRACE_ZONE_SAMPLED): one in the site's sample_every (0: the
// session's Config::sample_every) of this site's zones on this thread is recorded,
// counted by `count` (the site's own per-thread countdown), the first one recorded. A
// zone left out hides everything its thread records until it ends: nested zones,
// instants, counters, values (so a recorded zone always has its whole subtree, and a
// nested site is recorded exactly when its sampled ancestors are, one in its own rate
// of those). Left out, it costs two thread-local loads and a store more than a zone
// with no session; the epoch it hid is kept in the guard, not in the thread's state.
class SampledZone {
 public:
  RINGTRACE_ALWAYS_INLINE SampledZone(const SiteInfo* site, SampleCount& count) noexcept {
    const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
    if (epoch == 0) return;
    if (count.epoch != epoch) [[unlikely]]
      count = SampleCount{0, epoch};  // a new session: the first is recorded
    std::uint32_t& left = count.left;
    ThreadWriter& t = t_writer;
    const std::uint32_t bound = t.epoch;
    if (bound == kSampledOut) {  // inside a zone left out: so is this one, uncounted
      token_ = kNotRecorded;
      return;
    }
    if (left != 0) [[likely]] {
      left -= 1;
      hidden_ = bound;
      t.epoch = kSampledOut;  // one store: a signal handler sees one epoch or the other
      token_ = kLeftOut;
      return;
    }
    std::uint32_t rate = site->sample_every != 0 ? site->sample_every : g_sample_every.load(std::memory_order_relaxed);
    rate = rate < kMaxSampleEvery ? rate : kMaxSampleEvery;
    left = rate > 1 ? rate - 1 : 0;
    token_ = zone_open<false>(site, 0);
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // hidden_ is set whenever token_ is kLeftOut
#endif
  RINGTRACE_ALWAYS_INLINE ~SampledZone() {
    if (token_ == kLeftOut) [[likely]] {
      t_writer.epoch = hidden_;
      return;
    }
    zone_close(token_);
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  SampledZone(const SampledZone&) = delete;
  SampledZone& operator=(const SampledZone&) = delete;

 private:
  static constexpr std::uint32_t kLeftOut = 0xFFFFFFFAu;
  std::uint32_t token_ = kNoSession;
  std::uint32_t hidden_;  // the thread's epoch before this zone was left out (set with kLeftOut)
};

// --- Zones with arguments at their own macro: RINGTRACE_ZONE(name, key, value, ...) ---

// One argument of a zone: its key's site (kind value), the record kind (integer or
// double argument) and the value's 64 bits. Built where the zone is: the compiler folds
// the header into a constant.
struct ZoneArg {
  const SiteInfo* key;
  RecordKind kind;
  std::uint64_t payload;
};

template <typename T>
RINGTRACE_ALWAYS_INLINE ZoneArg zone_arg(const SiteInfo* key, T value) noexcept {
  static_assert(std::is_arithmetic_v<T>, "RINGTRACE_ZONE's argument values are integers or floating-point numbers");
  if constexpr (std::is_floating_point_v<T>) {
    return {key, record_arg_double, std::bit_cast<std::uint64_t>(static_cast<double>(value))};
  } else {
    return {key, record_arg_int, static_cast<std::uint64_t>(static_cast<std::int64_t>(value))};
  }
}

// The begin and its arguments when the fast path cannot take them: the begin through
// zone_open_slow, then each argument as RINGTRACE_ZONE_VALUE would attach it (lost and
// counted with the begin if the begin was dropped).
template <typename... Args>
RINGTRACE_NOINLINE RINGTRACE_COLD RINGTRACE_NO_INSTRUMENT std::uint32_t zone_open_args_slow(const SiteInfo* site,
                                                                                            std::uint32_t epoch,
                                                                                            Args... args) noexcept {
  const std::uint32_t token = zone_open_slow(site, record_zone_begin, 0, epoch);
  if (token == epoch || token == kDroppedZone) {
    (((args.kind == record_arg_double) ? attach<record_arg_double>(args.key, args.payload)
                                       : attach<record_arg_int>(args.key, args.payload)),
     ...);
  }
  return token;
}

// A zone begin and its arguments in one reservation: the arguments' records (header and
// value, 16 bytes each) after the begin's, the begin's header stored last, so the
// drainer reads the begin and its arguments together or not at all. The caller loaded
// `epoch` (not 0) and evaluated the values only then (the macro), so that with no
// session the arguments cost nothing. Returns the token for zone_close.
template <typename... Args>
RINGTRACE_ALWAYS_INLINE std::uint32_t zone_open_args(std::uint32_t epoch, const SiteInfo* site, Args... args) noexcept {
  static_assert(sizeof...(Args) >= 1 && sizeof...(Args) <= 4, "RINGTRACE_ZONE takes up to four key/value pairs");
  WriterBlock* const b = writable(t_writer, epoch);
  if (b == nullptr) [[unlikely]]
    return zone_open_args_slow(site, epoch, args...);
  const std::uintptr_t at = reserve(*b, sizeof(TimedRecord) + sizeof(ArgRecord) * sizeof...(Args));
  std::uintptr_t arg_at = at + sizeof(TimedRecord);
  ((put(arg_at + offsetof(ArgRecord, value), args.payload), put(arg_at, record_header(args.key, args.kind)),
    arg_at += sizeof(ArgRecord)),
   ...);
  put(at + offsetof(TimedRecord, ticks), read_ticks_fast());  // last before the header, as a zone's
  publish(at, record_header(site, record_zone_begin));
  return epoch;
}

// --- Zones named at run time: RINGTRACE_ZONE_DYNAMIC(name) ---

// One record: header (the macro's site: where), ticks, the name's size (| truncated <<
// 63), the name's bytes (at most kMaxRuntimeName). The drainer interns the name into a
// site of its own (bounded: Config::max_runtime_names). No lock, no allocation.
RINGTRACE_ALWAYS_INLINE std::uint32_t zone_open_named(const SiteInfo* site, std::string_view name) noexcept {
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (epoch == 0) return kNoSession;
  ThreadWriter& t = t_writer;
  const std::size_t bytes = name.size() < kMaxRuntimeName ? name.size() : kMaxRuntimeName;
  const std::uintptr_t need = sizeof(TimedTextRecord) + ((bytes + 7) & ~std::uintptr_t{7});
  WriterBlock* const b = t.block;
  // The whole record below the limit (it can be longer than the slack past it).
  if (t.epoch != epoch || b->next.load(std::memory_order_relaxed) + need > b->limit) [[unlikely]] {
    return zone_open_named_slow(site, name.data(), name.size(), epoch);
  }
  const std::uintptr_t at = reserve(*b, need);
  if (bytes != 0) std::memcpy(reinterpret_cast<void*>(at + sizeof(TimedTextRecord)), name.data(), bytes);
  put(at + offsetof(TimedTextRecord, size), bytes | (bytes < name.size() ? kTextTruncated : 0));
  put(at + offsetof(TimedTextRecord, ticks), read_ticks_fast());
  publish(at, record_header(site, record_zone_begin_named));
  return epoch;
}

// --- Messages: RINGTRACE_MESSAGE(text) ---

RINGTRACE_ALWAYS_INLINE void message(const SiteInfo* site, std::string_view text) noexcept {
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (epoch == 0) return;
  write_message(site, text.data(), text.size(), epoch);
}

// --- Zones begun and ended apart: RINGTRACE_ZONE_BEGIN / RINGTRACE_ZONE_END ---

// The thread's open manual zones' tokens, innermost last. A begin deeper than
// kCapacity is not recorded (its end only pops it). Constant-initialised and trivially
// destructible, as t_writer.
struct ManualZones {
  static constexpr std::uint32_t kCapacity = 64;
  std::uint32_t depth = 0;
  std::uint32_t token[kCapacity] = {};
};
RINGTRACE_API RINGTRACE_TLS_MODEL inline constinit thread_local ManualZones t_manual{};

RINGTRACE_ALWAYS_INLINE void manual_zone_begin(const SiteInfo* site) noexcept {
  ManualZones& m = t_manual;
  const std::uint32_t depth = m.depth;
  m.depth = depth + 1;
  if (depth < ManualZones::kCapacity) [[likely]]
    m.token[depth] = zone_open<false>(site, 0);
}

// Ends the thread's innermost manual zone: an end record, which closes the innermost
// zone open on the thread (scoped zones nest with manual ones, as any zones do).
RINGTRACE_ALWAYS_INLINE void manual_zone_end() noexcept {
  ManualZones& m = t_manual;
  const std::uint32_t depth = m.depth;
  if (depth == 0) [[unlikely]] {
    manual_end_unbalanced();
    return;
  }
  m.depth = depth - 1;
  if (depth <= ManualZones::kCapacity) [[likely]]
    zone_close(m.token[depth - 1]);
}

}  // namespace ringtrace::detail
