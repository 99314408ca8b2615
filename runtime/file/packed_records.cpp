#include "packed_records.hpp"

#include <cstring>

#include "ring_records.hpp"
#include "trace_file_format.hpp"

namespace ringtrace::detail::trace_file {
namespace {

constexpr std::uint64_t kTextLimit = 0xFFFF;  // bytes of a text a reader takes (Event::text_size)

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
  if (kind == record_extended) {  // its subtype, its bytes after the header, those bytes
    const std::uint64_t bytes = ((header >> 32) - 1) * 8;
    out = put_varint(out, record_extended | ((header >> 8) & 0xFF) << 4);
    out = put_varint(out, bytes);
    return put_bytes(out, record + 8, bytes);
  }
  out = put_varint(out, kind | (index << 4));
  if (kind_has_time(kind)) delta(word_at(record, 1));
  const std::size_t first = kind_has_time(kind) ? 2 : 1;  // the word after the header (and time)
  switch (kind) {
    case record_zone_begin:
    case record_instant:
    case record_function_entry:
      return out;
    case record_timed_double:
    case record_arg_double: {
      const std::uint64_t bits = word_at(record, first);
      return put_bytes(out, &bits, 8);
    }
    case record_arg_text:
    case record_message:
    case record_zone_begin_named: {
      const std::uint64_t size = word_at(record, first);
      out = put_varint(out, size);
      return put_bytes(out, record + (first + 1) * 8, text_bytes(size));
    }
    default:  // integer values, region ids, drop counts
      return put_varint(out, zigzag(static_cast<std::int64_t>(word_at(record, first))));
  }
}

bool unpack_chunk(std::span<const unsigned char> packed, RingWords& ring, std::string& error) {
  const unsigned char* p = packed.data();
  const unsigned char* const begin = p;
  const unsigned char* const end = p + packed.size();
  const std::size_t was = ring.size();
  // A record packs into two bytes at least and unpacks into three words at most (a text
  // into two words and its bytes, which it packs too): two words per byte is room enough.
  ring.resize(was + 2 * packed.size() + 4);
  Words out{ring.data() + was};
  std::uint64_t last = 0;
  const auto fail = [&](const char* what, const unsigned char* at) {
    error = at_byte(what, static_cast<std::size_t>(at - begin));
    ring.resize(was);
    return false;
  };
  while (p < end) {
    // The bulk of a trace first: a zone end, or a begin of one of the first seven call
    // sites, whose header is one byte, its time delta one or two.
    if (end - p >= 3 && ((p[1] & 0x80) == 0 || (p[2] & 0x80) == 0)) [[likely]] {
      const unsigned h0 = p[0];
      if (h0 == record_zone_end || ((h0 & 0x8F) == record_zone_begin && h0 > 0x0F)) {
        std::uint64_t d = p[1];
        const unsigned char* q = p + 2;
        if (d >= 0x80) d = (d & 0x7F) | (std::uint64_t{*q++} << 7);
        const std::uint64_t ticks = last + unzigzag(d);
        last = ticks;
        p = q;
        if (h0 == record_zone_end) {
          out.put((ticks << 1) | kRecordEndBit);
        } else {
          out.put((std::uint64_t{h0 >> 4} << kIndexShift) | (std::uint64_t{record_zone_begin} << kRecordKindShift));
          out.put(ticks);
        }
        continue;
      }
    }
    const unsigned char* const record = p;
    std::uint64_t h = 0, v = 0;
    if (!get_varint(p, end, h)) return fail("a header cut short", record);
    const auto kind = static_cast<RecordKind>(h & 15);
    const std::uint64_t index = h >> 4;
    if (kind == 13 || kind == 14) return fail("a record kind this reader does not know (a newer format?)", record);
    const bool has_site = kind != record_zone_end && kind != record_dropped && kind != record_extended;
    if (has_site && (index == 0 || index > 0xFFFFFFFFu)) return fail("a call site index out of range", record);
    if (kind == record_extended) {  // skippable: its length says how far
      if (!get_varint(p, end, v) || v > static_cast<std::uint64_t>(end - p)) return fail("an extended record cut short", record);
      out.put((((v + 7) / 8 + 1) << 32) | ((index & 0xFF) << 8) | (std::uint64_t{record_extended} << kRecordKindShift));
      out.text(p, v);
      p += v;
      continue;
    }
    std::uint64_t ticks = 0;
    if (kind_has_time(kind)) {
      if (!get_varint(p, end, v)) return fail("a time cut short", record);
      ticks = last + unzigzag(v);
      last = ticks;
    }
    if (kind == record_zone_end) {
      out.put((ticks << 1) | kRecordEndBit);
      continue;
    }
    out.put(kind == record_dropped ? std::uint64_t{record_dropped} << kRecordKindShift
                                   : (index << kIndexShift) | (std::uint64_t{kind} << kRecordKindShift));
    if (kind_has_time(kind)) out.put(ticks);
    switch (kind) {
      case record_zone_begin:
      case record_instant:
      case record_function_entry:
        break;
      case record_timed_double:
      case record_arg_double:
        if (end - p < 8) return fail("a double cut short", record);
        std::memcpy(&v, p, 8);
        p += 8;
        out.put(v);
        break;
      case record_arg_text:
      case record_message:
      case record_zone_begin_named: {
        if (!get_varint(p, end, v)) return fail("a text's size cut short", record);
        const std::uint64_t n = text_bytes(v);
        if (n > kTextLimit) return fail("a text longer than 65535 bytes", record);
        if (n > static_cast<std::uint64_t>(end - p)) return fail("a text cut short", record);
        out.put(v);
        out.text(p, n);
        p += n;
        break;
      }
      default:  // integer values, region ids, drop counts
        if (!get_varint(p, end, v)) return fail("a value cut short", record);
        out.put(unzigzag(v));
        break;
    }
  }
  ring.resize(static_cast<std::size_t>(out.w - ring.data()));
  return true;
}

bool unpack_chunk_v1(std::span<const unsigned char> packed, RingWords& ring, std::string& error) {
  // Format 1's kinds (its header's low three bits), bit 3 "no time", the index above.
  enum : std::uint64_t { zone_begin = 0, zone_end = 1, instant = 2, value_int = 3, value_double = 4, region = 5,
                         dropped = 6, text = 7 };
  const unsigned char* p = packed.data();
  const unsigned char* const begin = p;
  const unsigned char* const end = p + packed.size();
  const std::size_t was = ring.size();
  ring.resize(was + 2 * packed.size() + 4);
  Words out{ring.data() + was};
  std::uint64_t last = 0;
  const auto fail = [&](const char* what, const unsigned char* at) {
    error = at_byte(what, static_cast<std::size_t>(at - begin));
    ring.resize(was);
    return false;
  };
  while (p < end) {
    const unsigned char* const record = p;
    std::uint64_t h = 0, v = 0;
    if (!get_varint(p, end, h)) return fail("a header cut short", record);
    const std::uint64_t kind = h & 7, index = h >> 4;
    const bool timed = (h & 8) == 0;
    if (kind != dropped && (index == 0 || index > 0xFFFFFFFFu)) return fail("a call site index out of range", record);
    std::uint64_t ticks = 0;
    if (timed) {
      if (!get_varint(p, end, v)) return fail("a time cut short", record);
      ticks = last + unzigzag(v);
      last = ticks;
    }
    const auto header = [&](RecordKind k) { return (index << kIndexShift) | (std::uint64_t{k} << kRecordKindShift); };
    switch (kind) {
      case zone_end:
        out.put((ticks << 1) | kRecordEndBit);
        break;
      case zone_begin:
      case instant:
        out.put(header(kind == zone_begin ? record_zone_begin : record_instant));
        out.put(ticks);
        break;
      case value_double:
        if (end - p < 8) return fail("a double cut short", record);
        out.put(header(timed ? record_timed_double : record_arg_double));
        if (timed) out.put(ticks);
        std::memcpy(&v, p, 8);
        p += 8;
        out.put(v);
        break;
      case text: {
        std::uint64_t original = 0;  // the size before truncation: not kept
        if (!get_varint(p, end, v) || !get_varint(p, end, original)) return fail("a text's size cut short", record);
        const std::uint64_t n = text_bytes(v);
        if (n > kTextLimit) return fail("a text longer than 65535 bytes", record);
        if (n > static_cast<std::uint64_t>(end - p)) return fail("a text cut short", record);
        out.put(header(record_arg_text));
        out.put(v);
        out.text(p, n);
        p += n;
        break;
      }
      default: {  // integer values, region ids, drop counts
        if (!get_varint(p, end, v)) return fail("a value cut short", record);
        const RecordKind k = kind == region ? record_region_begin
                             : kind == dropped ? record_dropped
                             : timed ? record_timed_int
                                     : record_arg_int;
        out.put(k == record_dropped ? std::uint64_t{record_dropped} << kRecordKindShift : header(k));
        if (timed || k == record_region_begin || k == record_dropped) out.put(ticks);
        out.put(unzigzag(v));
        break;
      }
    }
  }
  ring.resize(static_cast<std::size_t>(out.w - ring.data()));
  return true;
}

}  // namespace ringtrace::detail::trace_file
