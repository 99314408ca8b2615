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
  for (std::uint64_t i = 0; i < bytes / 8; ++i) __atomic_store_n(reinterpret_cast<std::uint64_t*>(at) + i, 0, __ATOMIC_RELAXED);
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

// Bytes of the record at `at` whose header is `header` (not 0), or 0 if it cannot be read:
// a kind this version does not know (its size is unknown), or a size past `limit` bytes.
inline std::uint64_t ring_record_bytes(std::uint64_t header, const std::uint8_t* at, std::uint64_t limit) noexcept {
  std::uint64_t bytes = 0;
  if ((header & kRecordEndBit) != 0) return 8;
  switch (kind_of(header)) {
    case record_zone_begin:
    case record_instant:
    case record_arg_int:
    case record_arg_double:
    case record_function_entry:
      bytes = 16;
      break;
    case record_timed_int:
    case record_timed_double:
    case record_region_begin:
    case record_dropped:
      bytes = 24;
      break;
    case record_arg_text:
    case record_message:
    case record_zone_begin_named: {
      const std::uint64_t fixed = kind_of(header) == record_arg_text ? 2 : 3;  // header, [time], size
      if (limit < fixed * 8) return 0;
      const std::uint64_t text = text_bytes(word_at(at, fixed - 1));
      if (text > limit) return 0;
      bytes = text_record_slots(fixed, text) * 8;
      break;
    }
    case record_extended:
      bytes = (header >> 32) * 8;
      break;
    default:
      return 0;
  }
  return bytes <= limit && bytes != 0 ? bytes : 0;
}

// Whether a record of this kind has a time of its own (values, texts and flows attached
// to a zone take the time of their thread's previous record).
inline constexpr bool kind_has_time(RecordKind kind) noexcept {
  return kind != record_arg_int && kind != record_arg_double && kind != record_arg_text && kind != record_extended;
}

// The ticks of the record at `at` (header `header`), or `none` if its kind has no time.
inline std::uint64_t record_ticks(std::uint64_t header, const std::uint8_t* at, std::uint64_t none) noexcept {
  if ((header & kRecordEndBit) != 0) return header >> 1;
  return kind_has_time(kind_of(header)) ? word_at(at, 1) : none;
}

}  // namespace ringtrace::detail
