// The ring record format: what the hot path writes into a thread's ring, and what the
// drainer and the binary file's ring recovery read back (runtime/core/ring_records.hpp).
// docs/file-format.md ("Ring records") describes the same for readers in other languages.
//
// A ring is a power-of-two number of bytes read as 8-byte little-endian words ("slots").
// Every record starts with one slot that is never 0:
//
//   bit 0 set      a zone end: the whole record is that slot, `ticks << 1 | 1`.
//   bit 0 clear    a header: bits 1-4 the RecordKind, bits 5-63 what the kind puts there
//                  (a call site's address, which SiteInfo's alignment leaves with five
//                  zero bits; a function's address shifted left by five; or, for
//                  record_extended, a subtype and the record's size).
//
// The slots that follow a header (its time, payload, text) are written first and the
// header last, so a reader that sees a header non-zero sees the whole record; the
// drainer zeroes what it has read before the thread may write there again. A reader
// that meets a kind it does not know stops there and says so: the sizes of kinds 1-14
// are fixed by this version, and record_extended carries its own size, so a later
// version can add subtypes that an older reader skips (and counts).
#pragma once

#include <cstddef>  // offsetof
#include <cstdint>  // slots

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_NO_INSTRUMENT
#include "ringtrace/site.hpp"             // SiteInfo's alignment

namespace ringtrace::detail {

enum RecordKind : std::uint64_t {
  record_zone_end = 0,        // 1 slot: ticks << 1 | 1 (bit 0 tells it from a header)
  record_zone_begin = 1,      // header (site), ticks
  record_instant = 2,         // header (site), ticks
  record_timed_int = 3,       // header (site), ticks, i64: counter, async begin/end (by the site's kind)
  record_timed_double = 4,    // header (site), ticks, f64: counter
  record_arg_int = 5,         // header (site), i64: zone value, flow id (by the site's kind); no time
  record_arg_double = 6,      // header (site), f64: zone value; no time
  record_region_begin = 7,    // header (site), ticks, u64 region id (the step marker: the step number)
  record_arg_text = 8,        // header (site), u64 bytes | truncated << 63, the bytes in ceil(bytes / 8) slots; no time
  record_function_entry = 9,  // header (function address << 5), ticks: a zone named after the function
  record_dropped = 10,        // header (nothing else), ticks of the first drop, u64 count
  record_message = 11,        // header (site), ticks, u64 bytes | truncated << 63, the bytes
  record_zone_begin_named = 12,  // header (site), ticks, u64 bytes | truncated << 63, the name's bytes
  // Not assigned yet: a reader stops at them (it cannot know their size).
  record_unassigned_13 = 13,
  record_unassigned_14 = 14,
  record_extended = 15,  // header: subtype in bits 8-15, the record's slots (header included) in bits 32-63
};

inline constexpr std::uint64_t kRecordEndBit = 1;
inline constexpr unsigned kRecordKindShift = 1;
inline constexpr std::uint64_t kRecordKindMask = std::uint64_t{15} << kRecordKindShift;
inline constexpr unsigned kRecordAddressShift = 5;  // function entries: address << 5
inline constexpr std::uint64_t kRecordSiteMask = ~std::uint64_t{31};
inline constexpr std::uint64_t kTextTruncated = std::uint64_t{1} << 63;  // in a text's size slot

// record_extended subtypes.
enum ExtendedKind : std::uint64_t {
  extended_padding = 0,  // nothing: slots a writer reserved and could not use (never in a file)
  // Config::memory (ringtrace::memory, docs/memory.md), timed:
  extended_alloc = 1,  // MemoryRecord: a block of `size` bytes at `address` was allocated (format 2.3)
  extended_free = 2,   // MemoryRecord: the block at `address` was freed; `size` the caller's (sized delete), 0 unknown
  // (2.4) AllocRecord: an allocation and its caller, the return address into the code that
  // called the allocation function; with the allocation's sampled call stack after it
  // (Config::memory_stack_bytes), return addresses, the caller's caller first.
  extended_alloc_at = 3,
};
// record_extended: bit 16 of the header set, the record's second slot is its ticks (a
// reader that does not know the subtype still knows its time: it skips it in order).
inline constexpr std::uint64_t kExtendedTimed = std::uint64_t{1} << 16;
// A memory record's header, bit 17 (2.4): the allocation or free was made inside a zone
// that sampling left out (RINGTRACE_ZONE_SAMPLED): it is the program's and the heap's like
// any other, in the bytes of the zones open around it, not in the self bytes of the
// innermost recorded one.
inline constexpr std::uint64_t kMemorySampledOut = std::uint64_t{1} << 17;
// An extended_alloc_at header, bit 18 (2.4): not an allocation, but a realloc that failed:
// the block its thread freed last, at `address`, is live again (its size and caller 0).
inline constexpr std::uint64_t kMemoryRestore = std::uint64_t{1} << 18;
// An extended_alloc_at header, bit 19 (2.4): a sampled allocation (Config::memory_stack_bytes),
// its stack's frames after it (none when its stack could not be unwound).
inline constexpr std::uint64_t kMemoryStackSampled = std::uint64_t{1} << 19;
// Bits 24-31 of an extended_alloc_at header: the frames of its stack that follow (0: none).
inline constexpr unsigned kAllocFramesShift = 24;
inline constexpr std::uint64_t kMaxAllocFrames = 64;

static_assert(alignof(SiteInfo) >= 32, "a header keeps the record kind in a site address's five low bits");

// The records' layouts, slot by slot (docs/file-format.md, "Ring records"): a writer
// reserves sizeof(Record) bytes (a text's bytes in whole slots more) and stores each field
// at offsetof(Record, field), the header last; a reader reads them there. A chunk of the
// trace file unpacks into the same records (with a site's index where its address was).
// Layouts only: no code makes or copies one, so an instrumented program pays for nothing.
struct EndRecord {     // record_zone_end
  std::uint64_t slot;  // end_slot(ticks): ticks << 1 | 1
};
struct TimedRecord {  // record_zone_begin, record_instant, record_function_entry
  std::uint64_t header;
  std::uint64_t ticks;
};
struct TimedValueRecord {  // record_timed_int, record_timed_double, record_region_begin, record_dropped
  std::uint64_t header;
  std::uint64_t ticks;
  std::uint64_t value;  // the integer's or double's bits, the region id (a step marker's value), the drop count
};
struct ArgRecord {  // record_arg_int, record_arg_double: no time (the zone's)
  std::uint64_t header;
  std::uint64_t value;
};
struct TextRecord {  // record_arg_text: no time; the text's bytes follow
  std::uint64_t header;
  std::uint64_t size;  // bytes | kTextTruncated
};
struct TimedTextRecord {  // record_message, record_zone_begin_named: the text's (the name's) bytes follow
  std::uint64_t header;
  std::uint64_t ticks;
  std::uint64_t size;  // bytes | kTextTruncated
};
// record_extended: its header, then (header >> 32) - 1 slots that only its subtype's reader knows.
struct ExtendedRecord {
  std::uint64_t header;
};
// Session::step()'s end of a region zone and begin of the next in one reservation
// (zone_switch()).
struct SwitchRecords {
  EndRecord end;
  TimedValueRecord begin;
};
// record_extended extended_alloc / extended_free (timed): one allocation or free.
struct MemoryRecord {
  std::uint64_t header;  // extended_header(subtype, 4) | kExtendedTimed
  std::uint64_t ticks;
  std::uint64_t address;
  std::uint64_t size;  // bytes; a free's 0: not known to its caller
};
// record_extended extended_alloc_at (timed): an allocation with its caller; a sampled one
// is followed by its stack's frames (header bits 24-31 say how many; the slots count them).
struct AllocRecord {
  std::uint64_t header;  // extended_header(extended_alloc_at, 5 + frames) | kExtendedTimed | frames << 24
  std::uint64_t ticks;
  std::uint64_t address;
  std::uint64_t size;
  std::uint64_t caller;  // the return address into the allocation function's caller
};

static_assert(sizeof(EndRecord) == 8 && sizeof(ExtendedRecord) == 8);
static_assert(sizeof(TimedRecord) == 16 && offsetof(TimedRecord, ticks) == 8);
static_assert(sizeof(TimedValueRecord) == 24 && offsetof(TimedValueRecord, ticks) == 8 &&
              offsetof(TimedValueRecord, value) == 16);
static_assert(sizeof(ArgRecord) == 16 && offsetof(ArgRecord, value) == 8);
static_assert(sizeof(TextRecord) == 16 && offsetof(TextRecord, size) == 8);
static_assert(sizeof(TimedTextRecord) == 24 && offsetof(TimedTextRecord, ticks) == 8 &&
              offsetof(TimedTextRecord, size) == 16);
static_assert(sizeof(SwitchRecords) == 32 && offsetof(SwitchRecords, begin) == 8);
static_assert(sizeof(MemoryRecord) == 32 && offsetof(MemoryRecord, ticks) == 8 &&
              offsetof(MemoryRecord, address) == 16 && offsetof(MemoryRecord, size) == 24);
static_assert(sizeof(AllocRecord) == 40 && offsetof(AllocRecord, ticks) == 8 && offsetof(AllocRecord, address) == 16 &&
              offsetof(AllocRecord, size) == 24 && offsetof(AllocRecord, caller) == 32);

RINGTRACE_NO_INSTRUMENT inline std::uint64_t record_header(const SiteInfo* site, RecordKind kind) noexcept {
  // `+`, not `|`: the same (the address's low bits are 0), and a compiler folds a constant
  // site's address and the kind into one `lea`.
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(site)) + (std::uint64_t{kind} << kRecordKindShift);
}
RINGTRACE_NO_INSTRUMENT constexpr std::uint64_t function_header(std::uint64_t address) noexcept {
  return (address << kRecordAddressShift) | (std::uint64_t{record_function_entry} << kRecordKindShift);
}
inline constexpr unsigned kExtendedSubtypeShift = 8;  // record_extended: the subtype's byte
inline constexpr unsigned kExtendedSlotsShift = 32;   // and its slots, the header included

RINGTRACE_NO_INSTRUMENT constexpr std::uint64_t extended_header(ExtendedKind subtype, std::uint64_t slots) noexcept {
  return (slots << kExtendedSlotsShift) | (std::uint64_t{subtype} << kExtendedSubtypeShift) |
         (std::uint64_t{record_extended} << kRecordKindShift);
}
// A memory record's header: a constant, folded into the store.
template <ExtendedKind Subtype>
inline constexpr std::uint64_t kMemoryHeader =
    extended_header(Subtype, (Subtype == extended_alloc_at ? sizeof(AllocRecord) : sizeof(MemoryRecord)) / 8) |
    kExtendedTimed;
// An extended_alloc_at record with `frames` frames of its stack after it.
RINGTRACE_NO_INSTRUMENT constexpr std::uint64_t alloc_header(std::uint64_t frames) noexcept {
  return extended_header(extended_alloc_at, sizeof(AllocRecord) / 8 + frames) | kExtendedTimed |
         (frames << kAllocFramesShift);
}

RINGTRACE_NO_INSTRUMENT constexpr std::uint64_t end_slot(std::uint64_t ticks) noexcept {
  return (ticks << 1) | kRecordEndBit;
}

// Slots of a record of a text of `bytes` bytes after `fixed` slots (header, time, size).
RINGTRACE_NO_INSTRUMENT constexpr std::uint64_t text_record_slots(std::uint64_t fixed, std::uint64_t bytes) noexcept {
  return fixed + (bytes + 7) / 8;
}

}  // namespace ringtrace::detail
