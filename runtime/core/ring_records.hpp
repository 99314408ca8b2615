// Reading ring records (include/ringtrace/detail/record.hpp): their sizes and the
// complete prefix of what a thread has reserved. Shared by the drainer, which reads
// live rings, and the binary file's reader, which recovers rings from a ring file.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_TSAN
#include "ringtrace/detail/record.hpp"

namespace ringtrace::detail {

// The first word of the record at `at`, with acquire: if it is not 0, the whole record
// is there (its writer stored the header last, with release).
inline std::uint64_t load_header(const std::uint8_t* at) noexcept {
  const std::uint64_t header =
      std::atomic_ref<const std::uint64_t>(*reinterpret_cast<const std::uint64_t*>(at)).load(std::memory_order_acquire);
#if RINGTRACE_TSAN
  if (header != 0) tsan_ring_seen();  // see ringtrace/detail/platform.hpp
#endif
  return header;
}

inline std::uint64_t word_at(const std::uint8_t* at, std::size_t index) noexcept {
#if RINGTRACE_TSAN
  // A ring's slots, read while their thread writes others: an atomic load to
  // ThreadSanitizer, which cannot pair the writer's release with the reader's acquire
  // when they go through the ring's two mappings (see ringtrace/detail/platform.hpp).
  const std::uint8_t* const word = at + index * 8;
  if ((reinterpret_cast<std::uintptr_t>(word) & 7) == 0) {
    return __atomic_load_n(reinterpret_cast<const std::uint64_t*>(word), __ATOMIC_RELAXED);
  }
#endif
  std::uint64_t w;
  __builtin_memcpy(&w, at + index * 8, 8);
  return w;
}

// Zeroes `bytes` (whole slots) of a ring that the drainer has read, and copies slots out
// of a ring. Under ThreadSanitizer slot by slot as relaxed atomics, for the reason
// word_at gives: a header is stored after the writer's annotation, so only atomic
// accesses to it are free of a report that the two mappings make up.
inline void zero_slots(std::uint8_t* at, std::uint64_t bytes) noexcept {
#if RINGTRACE_TSAN
  for (std::uint64_t i = 0; i < bytes / 8; ++i)
    __atomic_store_n(reinterpret_cast<std::uint64_t*>(at) + i, 0, __ATOMIC_RELAXED);
#else
  __builtin_memset(at, 0, bytes);
#endif
}
inline void copy_slots(std::uint8_t* to, const std::uint8_t* from, std::uint64_t bytes) noexcept {
#if RINGTRACE_TSAN
  for (std::uint64_t i = 0; i < bytes / 8; ++i) {
    const std::uint64_t w = __atomic_load_n(reinterpret_cast<const std::uint64_t*>(from) + i, __ATOMIC_RELAXED);
    __builtin_memcpy(to + i * 8, &w, 8);
  }
#else
  __builtin_memcpy(to, from, bytes);
#endif
}

inline constexpr std::uint64_t text_bytes(std::uint64_t size_word) noexcept { return size_word & ~kTextTruncated; }

// The kind of a header (record_zone_end for an end slot).
inline constexpr RecordKind kind_of(std::uint64_t header) noexcept {
  return (header & kRecordEndBit) != 0 ? record_zone_end
                                       : static_cast<RecordKind>((header & kRecordKindMask) >> kRecordKindShift);
}

// An extended record's subtype and slots (header included), from its header.
inline constexpr std::uint64_t extended_subtype(std::uint64_t header) noexcept {
  return (header >> kExtendedSubtypeShift) & 0xFF;
}
inline constexpr std::uint64_t extended_slots(std::uint64_t header) noexcept { return header >> kExtendedSlotsShift; }

// Whether this version knows the kind's layout: every kind but 13 and 14, which are not
// assigned yet (a reader stops at them).
inline constexpr bool kind_assigned(RecordKind kind) noexcept {
  return kind <= record_extended && kind != record_unassigned_13 && kind != record_unassigned_14;
}

// Whether a record of this kind has a time of its own (values, texts and flows attached
// to a zone take the time of their thread's previous record).
inline constexpr bool kind_has_time(RecordKind kind) noexcept {
  return kind != record_arg_int && kind != record_arg_double && kind != record_arg_text && kind != record_extended;
}

// The frames of an extended_alloc_at record's stack (its header's bits 24-31).
inline constexpr std::uint64_t alloc_frames(std::uint64_t header) noexcept {
  return (header >> kAllocFramesShift) & 0xFF;
}

// Whether the extended record whose header is `header` is an allocation or a free, whole:
// timed, of its subtype's slots (an extended_alloc_at's: 5 and its frames, at most 64).
inline constexpr bool is_memory_record(std::uint64_t header) noexcept {
  const std::uint64_t subtype = extended_subtype(header);
  if ((header & kExtendedTimed) == 0) return false;
  if (subtype == extended_alloc || subtype == extended_free) return extended_slots(header) == sizeof(MemoryRecord) / 8;
  return subtype == extended_alloc_at && alloc_frames(header) <= kMaxAllocFrames &&
         extended_slots(header) == sizeof(AllocRecord) / 8 + alloc_frames(header);
}

// Whether the record whose header is `header` has a time (its second slot): a zone end
// (in its one slot), a kind with a time, an extended record marked timed (a memory record;
// a later version's timed subtype, whose time a reader that skips it still keeps).
inline constexpr bool record_has_time(std::uint64_t header) noexcept {
  if ((header & kRecordEndBit) != 0) return true;
  const RecordKind kind = kind_of(header);
  if (kind == record_extended) return (header & kExtendedTimed) != 0 && extended_slots(header) >= 2;
  return kind != record_zone_end && kind_has_time(kind);
}

// Whether a record of this kind begins a zone, or is a zone's boundary (a begin or an
// end): a boundary's time is a gap after the thread's previous record's at least
// (docs/file-format.md, "Ticks to nanoseconds").
inline constexpr bool kind_begins_zone(RecordKind kind) noexcept {
  return kind == record_zone_begin || kind == record_region_begin || kind == record_function_entry ||
         kind == record_zone_begin_named;
}
inline constexpr bool kind_is_boundary(RecordKind kind) noexcept {
  return kind == record_zone_end || kind_begins_zone(kind);
}

// Whether a text (a size slot, then the bytes in whole slots) follows the fixed slots.
inline constexpr bool kind_has_text(RecordKind kind) noexcept {
  return kind == record_arg_text || kind == record_message || kind == record_zone_begin_named;
}

// Bytes of a record of `kind` before its text, if it has one: the layouts of record.hpp.
// record_extended's header alone (its size is in it); 0 for a kind not assigned.
inline constexpr std::uint64_t fixed_record_bytes(RecordKind kind) noexcept {
  switch (kind) {
    case record_zone_end:
      return sizeof(EndRecord);
    case record_zone_begin:
    case record_instant:
    case record_function_entry:
      return sizeof(TimedRecord);
    case record_timed_int:
    case record_timed_double:
    case record_region_begin:
    case record_dropped:
      return sizeof(TimedValueRecord);
    case record_arg_int:
    case record_arg_double:
      return sizeof(ArgRecord);
    case record_arg_text:
      return sizeof(TextRecord);
    case record_message:
    case record_zone_begin_named:
      return sizeof(TimedTextRecord);
    case record_extended:
      return sizeof(ExtendedRecord);
    default:
      return 0;
  }
}

// Where a text record's size slot is: its last fixed slot.
inline constexpr std::uint64_t text_size_offset(RecordKind kind) noexcept {
  return kind == record_arg_text ? offsetof(TextRecord, size) : offsetof(TimedTextRecord, size);
}
static_assert(text_size_offset(record_arg_text) + 8 == sizeof(TextRecord) &&
              text_size_offset(record_message) + 8 == sizeof(TimedTextRecord));

// The slot at byte `offset` of the record at `at` (offsetof(SomeRecord, field)).
inline std::uint64_t field_at(const std::uint8_t* at, std::size_t offset) noexcept { return word_at(at, offset / 8); }

// Bytes of the record at `at` whose header is `header` (not 0), or 0 if it cannot be read:
// a kind this version does not know (its size is unknown), or a size past `limit` bytes.
inline std::uint64_t ring_record_bytes(std::uint64_t header, const std::uint8_t* at, std::uint64_t limit) noexcept {
  if ((header & kRecordEndBit) != 0) return sizeof(EndRecord);
  const RecordKind kind = kind_of(header);
  if (kind == record_zone_end) return 0;  // kind 0 without the end bit: no record
  std::uint64_t bytes = fixed_record_bytes(kind);
  if (kind_has_text(kind)) {
    const std::uint64_t size_at = text_size_offset(kind);
    if (limit < size_at + 8) return 0;
    const std::uint64_t text = text_bytes(field_at(at, size_at));
    if (text > limit) return 0;
    bytes = text_record_slots(bytes / 8, text) * 8;
  } else if (kind == record_extended) {
    bytes = extended_slots(header) * 8;
  }
  return bytes <= limit && bytes != 0 ? bytes : 0;
}

// The ticks of the record at `at` (header `header`), or `none` if its kind has no time.
inline std::uint64_t record_ticks(std::uint64_t header, const std::uint8_t* at, std::uint64_t none) noexcept {
  if ((header & kRecordEndBit) != 0) return header >> 1;
  return record_has_time(header) ? field_at(at, offsetof(TimedRecord, ticks)) : none;
}

}  // namespace ringtrace::detail
