// Lowercase hex, as build ids and unresolved addresses are written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ringtrace::symbols {

inline std::string hex_bytes(const unsigned char* bytes, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex(size * 2, '0');
  for (std::size_t i = 0; i < size; ++i) {
    hex[2 * i] = kDigits[bytes[i] >> 4];
    hex[2 * i + 1] = kDigits[bytes[i] & 15];
  }
  return hex;
}

// "0x1a2b": no padding, as addresses and offsets are shown.
inline std::string hex_address(std::uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  char buffer[16];
  std::size_t n = 0;
  do {
    buffer[n++] = kDigits[value & 15];
    value >>= 4;
  } while (value != 0);
  std::string out = "0x";
  while (n > 0) out.push_back(buffer[--n]);
  return out;
}

}  // namespace ringtrace::symbols
