#include "marshal_writer.hpp"

#include <cstring>
#include <limits>
#include <stdexcept>

#include "output.hpp"

namespace ringtrace::detail {
namespace {

constexpr char kTuple = '(';
constexpr char kUnicode = 'u';
constexpr char kInt = 'i';
constexpr char kLong = 'l';
constexpr char kBinaryFloat = 'g';

}  // namespace

void MarshalWriter::put_i32(std::int32_t value) {
  const auto u = static_cast<std::uint32_t>(value);
  const char bytes[4] = {static_cast<char>(u & 0xFF), static_cast<char>((u >> 8) & 0xFF),
                         static_cast<char>((u >> 16) & 0xFF), static_cast<char>((u >> 24) & 0xFF)};
  out_.append(bytes, 4);
}

void MarshalWriter::begin_tuple(std::uint32_t size) {
  if (size > static_cast<std::uint32_t>(std::numeric_limits<std::int32_t>::max())) {
    throw std::length_error("ringtrace: marshal tuple too large");
  }
  out_.push_back(kTuple);
  put_i32(static_cast<std::int32_t>(size));
}

void MarshalWriter::string(std::string_view text) {
  scratch_.clear();
  append_valid_utf8(scratch_, text);
  if (scratch_.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    throw std::length_error("ringtrace: marshal string too long");
  }
  out_.push_back(kUnicode);
  put_i32(static_cast<std::int32_t>(scratch_.size()));
  out_.append(scratch_);
}

// TYPE_LONG: a signed 32-bit digit count (negative for negative numbers), then the
// magnitude in 15-bit digits, least significant first, each as 2 little-endian bytes.
// The most significant digit is never zero (Python rejects unnormalized longs).
void MarshalWriter::long_form(std::uint64_t magnitude, bool negative) {
  std::uint16_t digits[5];  // 64 bits need at most ceil(64 / 15) = 5 digits
  std::int32_t count = 0;
  while (magnitude != 0) {
    digits[count++] = static_cast<std::uint16_t>(magnitude & 0x7FFF);
    magnitude >>= 15;
  }
  out_.push_back(kLong);
  put_i32(negative ? -count : count);
  for (std::int32_t i = 0; i < count; ++i) {
    out_.push_back(static_cast<char>(digits[i] & 0xFF));
    out_.push_back(static_cast<char>(digits[i] >> 8));
  }
}

void MarshalWriter::integer(std::int64_t value) {
  if (value >= std::numeric_limits<std::int32_t>::min() && value <= std::numeric_limits<std::int32_t>::max()) {
    out_.push_back(kInt);
    put_i32(static_cast<std::int32_t>(value));
    return;
  }
  const bool negative = value < 0;
  // Magnitude without overflow for INT64_MIN.
  const std::uint64_t magnitude = negative ? ~static_cast<std::uint64_t>(value) + 1 : static_cast<std::uint64_t>(value);
  long_form(magnitude, negative);
}

void MarshalWriter::integer(std::uint64_t value) {
  if (value <= static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max())) {
    out_.push_back(kInt);
    put_i32(static_cast<std::int32_t>(value));
    return;
  }
  long_form(value, false);
}

void MarshalWriter::float64(double value) {
  static_assert(std::numeric_limits<double>::is_iec559, "marshal floats are IEEE 754 doubles");
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  out_.push_back(kBinaryFloat);
  for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
}

}  // namespace ringtrace::detail
