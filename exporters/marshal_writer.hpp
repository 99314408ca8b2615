// Python's marshal format, the subset that every Python 3 reads back with
// marshal.load(): dicts, tuples, str, int (32-bit, and the 15-bit-digit long form above
// that range) and binary floats. Used by the pstats exporter; no Python at run time.
//
// No object references (FLAG_REF) and no small-tuple or short-string codes (marshal
// version 4, Python 3.4+) are written, so the output is valid marshal version 2+ data.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ringtrace::detail {

class MarshalWriter {
 public:
  // Appends to `out`, which the caller owns and keeps alive.
  explicit MarshalWriter(std::string& out) : out_(out) {}

  // A dict: begin_dict(), then key, value, key, value..., then end_dict().
  void begin_dict() { out_.push_back('{'); }
  void end_dict() { out_.push_back('0'); }  // TYPE_NULL ends a dict
  // A tuple of `size` objects: the next `size` objects written are its items.
  void begin_tuple(std::uint32_t size);
  // A str. Invalid UTF-8 is replaced by U+FFFD (marshal rejects invalid UTF-8).
  // Throws std::length_error above 2^31 - 1 bytes.
  void string(std::string_view text);
  // An int: TYPE_INT when it fits in 32 bits, else TYPE_LONG.
  void integer(std::int64_t value);
  void integer(std::uint64_t value);
  // A float: TYPE_BINARY_FLOAT, the 8 little-endian bytes of the IEEE double.
  void float64(double value);

 private:
  void put_i32(std::int32_t value);
  void long_form(std::uint64_t magnitude, bool negative);

  std::string& out_;
  std::string scratch_;
};

}  // namespace ringtrace::detail
