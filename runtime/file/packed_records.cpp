#include "packed_records.hpp"

#include <cstring>

#include "ring_records.hpp"
#include "trace_file_format.hpp"

namespace ringtrace::detail::trace_file {
namespace {

constexpr std::uint64_t kTextLimit = 0xFFFF;  // bytes of a text a reader takes (Event::text_size)
constexpr unsigned kVarintMore = 0x80;        // a varint's byte that more bytes follow

char* put_bytes(char* p, const void* data, std::size_t n) {
  std::memcpy(p, data, n);
  return p + n;
}

// Appends the words of one unpacked record to `out` through `w` (room made by the caller).
struct Words {
  std::uint64_t* w;
  void put(std::uint64_t word) { *w++ = word; }
  // `n` bytes of text in whole words, the last one's tail zero.
  void text(const unsigned char* p, std::uint64_t n) {
    const std::uint64_t words = (n + 7) / 8;
    if (words != 0) w[words - 1] = 0;
    std::memcpy(w, p, n);
    w += words;
  }
};

std::string at_byte(const char* what, std::size_t at) {
  return std::string(what) + " at byte " + std::to_string(at) + " of the chunk's records";
}

// What unpacking shares across the two formats. A record's reader (one per format) reads
// one record at `p` (moving it on) into `out`, with `last` the ticks of the chunk's
// previous timed record (0 at its start), and returns what is wrong with it, or nullptr.
// A chunk unpacks whole or not at all: `ring` gets every record, or stays as it was.
template <class ReadRecord>
bool unpack(std::span<const unsigned char> packed, RingWords& ring, std::string& error, ReadRecord&& read_record) {
  const unsigned char* p = packed.data();
  const unsigned char* const end = p + packed.size();
  const std::size_t was = ring.size();
  // A record packs into two bytes at least and unpacks into three words at most (a text
  // into two words and its bytes, which it packs too): two words per byte is room enough.
  ring.resize(was + 2 * packed.size() + 4);
  Words out{ring.data() + was};
  std::uint64_t last = 0;
  while (p < end) {
    const unsigned char* const record = p;
    if (const char* wrong = read_record(p, end, out, last)) {
      error = at_byte(wrong, static_cast<std::size_t>(record - packed.data()));
      ring.resize(was);
      return false;
    }
  }
  ring.resize(static_cast<std::size_t>(out.w - ring.data()));
  return true;
}

// A timed record's ticks: the chunk's previous timed record's plus the zigzag delta at `p`
// (`last` moves on). False if the delta is cut short. Inlined, as unpack_rest(): the
// reading position and the output stay in registers.
RINGTRACE_ALWAYS_INLINE bool get_ticks(const unsigned char*& p, const unsigned char* end, std::uint64_t& last,
                                       std::uint64_t& ticks) {
  std::uint64_t delta = 0;
  if (!get_varint(p, end, delta)) return false;
  ticks = last + unzigzag(delta);
  last = ticks;
  return true;
}

// The rest of a record of ring kind `kind` (not record_extended) whose header, and time if
// its kind has one (`ticks`), were read: its ring words, with its payload read at `p`.
// `format1_text`: a text's size is followed by its size before truncation (not kept).
RINGTRACE_ALWAYS_INLINE const char* unpack_rest(RecordKind kind, std::uint64_t index, std::uint64_t ticks,
                                                const unsigned char*& p, const unsigned char* end, Words& out,
                                                bool format1_text) {
  if (kind == record_zone_end) {
    out.put(end_slot(ticks));
    return nullptr;
  }
  out.put(unpacked_header(kind, kind == record_dropped ? 0 : index));
  if (kind_has_time(kind)) out.put(ticks);
  std::uint64_t v = 0;
  switch (kind) {
    case record_zone_begin:
    case record_instant:
    case record_function_entry:
      return nullptr;
    case record_timed_double:
    case record_arg_double:
      if (end - p < 8) return "a double cut short";
      std::memcpy(&v, p, 8);
      p += 8;
      out.put(v);
      return nullptr;
    case record_arg_text:
    case record_message:
    case record_zone_begin_named: {
      std::uint64_t original = 0;
      if (!get_varint(p, end, v) || (format1_text && !get_varint(p, end, original))) return "a text's size cut short";
      const std::uint64_t n = text_bytes(v);
      if (n > kTextLimit) return "a text longer than 65535 bytes";
      if (n > static_cast<std::uint64_t>(end - p)) return "a text cut short";
      out.put(v);
      out.text(p, n);
      p += n;
      return nullptr;
    }
    default:  // integer values, region ids, drop counts
      if (!get_varint(p, end, v)) return "a value cut short";
      out.put(unzigzag(v));
      return nullptr;
  }
}

}  // namespace

char* pack_record(const std::uint8_t* record, std::uint64_t index, std::uint64_t& last, char* out) noexcept {
  const std::uint64_t header = word_at(record, 0);
  const RecordKind kind = kind_of(header);
  const auto delta = [&](std::uint64_t ticks) { out = put_time(out, ticks, last); };
  if (kind == record_zone_end) {
    out = put_varint(out, record_zone_end);
    delta(header >> 1);
    return out;
  }
  if (kind == record_extended && is_memory_record(header)) {
    // An allocation or a free: its payload's size, then its time as a delta from the
    // chunk's previous record's, its address and its size, as varints (format 2.3); an
    // allocation with its caller (2.4) adds the caller and its stack's frames, each frame a
    // zigzag delta from the one before it (the caller for the first). Its flags (header bits
    // 17-19) go in the packed index.
    char payload[10 * (4 + kMaxAllocFrames)];  // varints of ten bytes at most
    std::uint64_t at_last = last;
    char* q = put_time(payload, field_at(record, offsetof(MemoryRecord, ticks)), at_last);
    q = put_varint(q, field_at(record, offsetof(MemoryRecord, address)));
    q = put_varint(q, field_at(record, offsetof(MemoryRecord, size)));
    if (extended_subtype(header) == extended_alloc_at) {
      std::uint64_t previous = field_at(record, offsetof(AllocRecord, caller));
      q = put_varint(q, previous);
      for (std::uint64_t f = 0; f < alloc_frames(header); ++f) {
        const std::uint64_t frame = field_at(record, sizeof(AllocRecord) + 8 * f);
        q = put_varint(q, zigzag(static_cast<std::int64_t>(frame - previous)));
        previous = frame;
      }
    }
    last = at_last;
    const std::uint64_t flags = (header >> kPackedMemoryFlagsShift) & kPackedMemoryFlags;
    out = put_varint(out, packed_header(record_extended, extended_subtype(header) | kPackedExtendedTimed | flags));
    out = put_varint(out, static_cast<std::uint64_t>(q - payload));
    return put_bytes(out, payload, static_cast<std::size_t>(q - payload));
  }
  if (kind == record_extended) {  // its subtype, its bytes after the header, those bytes
    const std::uint64_t bytes = extended_slots(header) * 8 - sizeof(ExtendedRecord);
    out = put_varint(
        out, packed_header(record_extended,
                           extended_subtype(header) | ((header & kExtendedTimed) != 0 ? kPackedExtendedTimed : 0)));
    out = put_varint(out, bytes);
    return put_bytes(out, record + sizeof(ExtendedRecord), bytes);
  }
  out = put_varint(out, packed_header(kind, index));
  if (kind_has_time(kind)) delta(field_at(record, offsetof(TimedRecord, ticks)));
  // The slot after the header and the time: a value (an integer's or a double's bits, a
  // region id, a drop count) or a text's size, the text after it.
  const std::size_t slot = kind_has_time(kind) ? offsetof(TimedValueRecord, value) : offsetof(ArgRecord, value);
  static_assert(offsetof(TimedValueRecord, value) == offsetof(TimedTextRecord, size) &&
                offsetof(ArgRecord, value) == offsetof(TextRecord, size));
  switch (kind) {
    case record_zone_begin:
    case record_instant:
    case record_function_entry:
      return out;
    case record_timed_double:
    case record_arg_double: {
      const std::uint64_t bits = field_at(record, slot);
      return put_bytes(out, &bits, 8);
    }
    case record_arg_text:
    case record_message:
    case record_zone_begin_named: {
      const std::uint64_t size = field_at(record, slot);
      out = put_varint(out, size);
      return put_bytes(out, record + slot + 8, text_bytes(size));
    }
    default:  // integer values, region ids, drop counts
      return put_varint(out, zigzag(static_cast<std::int64_t>(field_at(record, slot))));
  }
}

// A packed memory record's payload [p, stop) (pack_record) as its ring words.
const char* unpack_memory(std::uint64_t subtype, std::uint64_t index, const unsigned char* p, const unsigned char* stop,
                          Words& out, std::uint64_t& last) {
  std::uint64_t ticks = 0, address = 0, size = 0;
  if (!get_ticks(p, stop, last, ticks) || !get_varint(p, stop, address) || !get_varint(p, stop, size))
    return "a memory record malformed";
  const std::uint64_t flags = (index & kPackedMemoryFlags) << kPackedMemoryFlagsShift;
  if (subtype != extended_alloc_at) {
    if (p != stop) return "a memory record malformed";
    out.put((subtype == extended_alloc ? kMemoryHeader<extended_alloc> : kMemoryHeader<extended_free>) | flags);
    out.put(ticks);
    out.put(address);
    out.put(size);
    return nullptr;
  }
  std::uint64_t caller = 0;
  if (!get_varint(p, stop, caller)) return "a memory record malformed";
  std::uint64_t frames[kMaxAllocFrames];
  std::uint64_t n = 0, previous = caller;
  while (p != stop) {
    std::uint64_t delta = 0;
    if (n == kMaxAllocFrames || !get_varint(p, stop, delta)) return "a memory record malformed";
    previous += static_cast<std::uint64_t>(unzigzag(delta));
    frames[n++] = previous;
  }
  out.put(alloc_header(n) | flags);
  out.put(ticks);
  out.put(address);
  out.put(size);
  out.put(caller);
  for (std::uint64_t f = 0; f < n; ++f) out.put(frames[f]);
  return nullptr;
}

bool unpack_chunk(std::span<const unsigned char> packed, RingWords& ring, std::string& error) {
  return unpack(
      packed, ring, error,
      [](const unsigned char*& p, const unsigned char* end, Words& out, std::uint64_t& last) -> const char* {
        // The bulk of a trace first: a zone end, or a begin of one of the first seven call
        // sites, whose header is one byte, its time delta one or two.
        if (end - p >= 3 && ((p[1] & kVarintMore) == 0 || (p[2] & kVarintMore) == 0)) [[likely]] {
          const unsigned h0 = p[0];
          if (h0 == record_zone_end ||
              ((h0 & (kVarintMore | kPackedKindMask)) == record_zone_begin && h0 > kPackedKindMask)) {
            std::uint64_t d = p[1];
            const unsigned char* q = p + 2;
            if (d >= kVarintMore) d = (d & (kVarintMore - 1)) | (std::uint64_t{*q++} << 7);
            const std::uint64_t ticks = last + unzigzag(d);
            last = ticks;
            p = q;
            if (h0 == record_zone_end) {
              out.put(end_slot(ticks));
            } else {
              out.put(unpacked_header(record_zone_begin, h0 >> kPackedIndexShift));
              out.put(ticks);
            }
            return nullptr;
          }
        }
        std::uint64_t h = 0;
        if (!get_varint(p, end, h)) return "a header cut short";
        const auto kind = static_cast<RecordKind>(h & kPackedKindMask);
        const std::uint64_t index = h >> kPackedIndexShift;
        if (!kind_assigned(kind)) return "a record kind this reader does not know (a newer format?)";
        const bool has_site = kind != record_zone_end && kind != record_dropped && kind != record_extended;
        if (has_site && (index == 0 || index > kMaxIndex)) return "a call site index out of range";
        if (kind == record_extended) {  // skippable: its length says how far
          std::uint64_t bytes = 0;
          if (!get_varint(p, end, bytes) || bytes > static_cast<std::uint64_t>(end - p))
            return "an extended record cut short";
          const std::uint64_t subtype = index & 0xFF;
          if (subtype >= extended_alloc && subtype <= extended_alloc_at && (index & kPackedExtendedTimed) != 0) {
            // A memory record (pack_record), exactly `bytes`.
            if (const char* wrong = unpack_memory(subtype, index, p, p + bytes, out, last)) return wrong;
            p += bytes;
            return nullptr;
          }
          out.put(extended_header(static_cast<ExtendedKind>(index & 0xFF), (bytes + 7) / 8 + 1) |
                  ((index & kPackedExtendedTimed) != 0 ? kExtendedTimed : 0));
          out.text(p, bytes);
          p += bytes;
          return nullptr;
        }
        std::uint64_t ticks = 0;
        if (kind_has_time(kind) && !get_ticks(p, end, last, ticks)) return "a time cut short";
        return unpack_rest(kind, index, ticks, p, end, out, false);
      });
}

bool unpack_chunk_v1(std::span<const unsigned char> packed, RingWords& ring, std::string& error) {
  // Format 1's kinds (its header's low three bits), bit 3 "no time", the index above.
  enum : std::uint64_t {
    zone_begin = 0,
    zone_end = 1,
    instant = 2,
    value_int = 3,
    value_double = 4,
    region = 5,
    dropped = 6,
    text = 7
  };
  constexpr std::uint64_t kKindMask = 7, kNoTime = 8;
  // Its kinds as ring kinds: a value is timed or an argument by whether it has a time.
  const auto ring_kind = [](std::uint64_t kind, bool timed) {
    switch (kind) {
      case zone_begin:
        return record_zone_begin;
      case zone_end:
        return record_zone_end;
      case instant:
        return record_instant;
      case value_int:
        return timed ? record_timed_int : record_arg_int;
      case value_double:
        return timed ? record_timed_double : record_arg_double;
      case region:
        return record_region_begin;
      case dropped:
        return record_dropped;
      default:
        return record_arg_text;
    }
  };
  return unpack(packed, ring, error,
                [&](const unsigned char*& p, const unsigned char* end, Words& out, std::uint64_t& last) -> const char* {
                  std::uint64_t h = 0;
                  if (!get_varint(p, end, h)) return "a header cut short";
                  const std::uint64_t kind = h & kKindMask, index = h >> kPackedIndexShift;
                  const bool timed = (h & kNoTime) == 0;
                  // Every record but a drop marker has a call site, zone ends too.
                  if (kind != dropped && (index == 0 || index > kMaxIndex)) return "a call site index out of range";
                  // A record marked "no time" has ticks 0 (a text, which has no time of its own, reads
                  // its delta all the same: it moves the chunk's previous ticks).
                  std::uint64_t ticks = 0;
                  if (timed && !get_ticks(p, end, last, ticks)) return "a time cut short";
                  return unpack_rest(ring_kind(kind, timed), index, ticks, p, end, out, true);
                });
}

}  // namespace ringtrace::detail::trace_file
