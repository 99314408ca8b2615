// The packing of ring records in a chunk (docs/file-format.md, "Chunks"): the writer packs
// a thread's ring records, with each call site's address replaced by its index in the
// file; the reader unpacks them back into ring records (include/ringtrace/detail/record.hpp),
// with the index where the address was, and decodes those with the one decoder
// (runtime/core/decoder.hpp). Format 1's packing is unpacked the same way.
//
// Format 2, one record: a varint header `kind | index << 4` (the ring kind; the call
// site's index, a function's index, or an extended record's subtype; 0 for a zone end or
// a drop marker); if the kind has a time, the varint zigzag delta of its ticks from the
// chunk's previous timed record (0 at the chunk's start); then its payload by kind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ringtrace/detail/record.hpp"  // RecordKind, the header's bits

namespace ringtrace::detail::trace_file {

// Where an unpacked record's call site (or function) index is: in a header word's bits
// 5 and up, where a ring record has an address. An index is 1 or more, at most kMaxIndex.
inline constexpr unsigned kIndexShift = 5;
inline constexpr std::uint64_t kMaxIndex = 0xFFFFFFFFu;
// The header word of an unpacked record of `kind` with `index`.
inline constexpr std::uint64_t unpacked_header(RecordKind kind, std::uint64_t index) noexcept {
  return (index << kIndexShift) | (std::uint64_t{kind} << kRecordKindShift);
}

// A packed record's first varint: `kind | index << 4` (for record_extended, its subtype
// where the index is, and kPackedExtendedTimed when its second slot is its ticks).
inline constexpr unsigned kPackedIndexShift = 4;
inline constexpr std::uint64_t kPackedKindMask = 15;
inline constexpr std::uint64_t kPackedExtendedTimed = 0x100;  // in an extended record's index (format 2.3)
// A memory record's flags in its packed index (format 2.4): the header bits 17, 18 and 19
// (kMemorySampledOut, kMemoryRestore, kMemoryStackSampled), as index bits 9, 10 and 11.
inline constexpr unsigned kPackedMemoryFlagsShift = 8;  // header bit 17 -> index bit 9
inline constexpr std::uint64_t kPackedMemoryFlags = 0xE00;
inline constexpr std::uint64_t packed_header(RecordKind kind, std::uint64_t index) noexcept {
  return std::uint64_t{kind} | (index << kPackedIndexShift);
}

// Words that a resize leaves as they were (no zeroing): a chunk is unpacked into room
// sized for its worst case and cut back to what it used.
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using RingWords = std::vector<std::uint64_t, UninitializedAllocator<std::uint64_t>>;

// Packs the ring record at `record` (a whole one) with the call site index `index` into
// `out` (at least kMaxPackedBytes free, or a text's bytes more); `last` is the chunk's
// previous timed record's ticks, updated. Returns the end of what it wrote. A record
// whose kind the format cannot hold (record_extended padding) packs into nothing.
char* pack_record(const std::uint8_t* record, std::uint64_t index, std::uint64_t& last, char* out) noexcept;
inline constexpr std::size_t kMaxPackedBytes = 40;  // four varints of ten bytes, text bytes aside

// Unpacks a chunk's packed records (format 2) into ring records appended to `ring`
// (8-byte words). False, with `error` saying what and at which byte of the chunk, if the
// chunk does not unpack whole (then `ring` is as it was): a chunk is all or nothing.
bool unpack_chunk(std::span<const unsigned char> packed, RingWords& ring, std::string& error);
// The same for format 1's packing: its own kinds, 16-byte slots, a "no time" bit
// (docs/file-format.md, "Format 1"); the rest of a record as format 2's.
bool unpack_chunk_v1(std::span<const unsigned char> packed, RingWords& ring, std::string& error);

}  // namespace ringtrace::detail::trace_file
