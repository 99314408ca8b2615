// Format 1 of the trace file (written before format 2; still read, and merged with its
// own kind): its frame checksum. Its frame layouts and record packing are read in
// section.cpp and packed_records.cpp beside format 2's, the differences named there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ringtrace::detail::trace_file {

// Format 1's checksum of a frame's payload: four 64-bit lanes over the payload's 8-byte
// little-endian words (the last one zero-padded), lane i taking words i, i+4, ...:
//   lane = (lane ^ word) * K, then lane ^= lane >> 29
// with lanes seeded 1, 2, 3, 4, and the result the low 32 bits of
//   ((lane0 * 31 + lane1) * 31 + lane2) * 31 + lane3 ^ bytes.
// Its second variant (header flag bit 0, what format 1 wrote last) first mixes each lane
// with fmix64 (h ^= h >> 33; h *= 0xFF51AFD7ED558CCD; h ^= h >> 33;
// h *= 0xC4CEB9FE1A85EC53; h ^= h >> 33); the first misses a flip of the top three bits
// of a lane's last word.
inline std::uint32_t checksum_v1(const void* data, std::size_t bytes, bool mix) noexcept {
  constexpr std::uint64_t K = 0x9E3779B97F4A7C15ull;
  std::uint64_t lane[4] = {1, 2, 3, 4};
  const auto* p = static_cast<const unsigned char*>(data);
  const std::size_t words = bytes / 8;
  std::size_t i = 0;
  for (; i + 4 <= words; i += 4) {
    for (int l = 0; l < 4; ++l) {
      std::uint64_t w;
      std::memcpy(&w, p + (i + static_cast<std::size_t>(l)) * 8, 8);
      lane[l] = (lane[l] ^ w) * K;
      lane[l] ^= lane[l] >> 29;
    }
  }
  for (; i < words; ++i) {
    std::uint64_t w;
    std::memcpy(&w, p + i * 8, 8);
    lane[i % 4] = (lane[i % 4] ^ w) * K;
    lane[i % 4] ^= lane[i % 4] >> 29;
  }
  if (bytes % 8 != 0) {
    std::uint64_t w = 0;
    std::memcpy(&w, p + words * 8, bytes % 8);
    lane[words % 4] = (lane[words % 4] ^ w) * K;
    lane[words % 4] ^= lane[words % 4] >> 29;
  }
  if (mix) {
    for (std::uint64_t& h : lane) {
      h ^= h >> 33;
      h *= 0xFF51AFD7ED558CCDull;
      h ^= h >> 33;
      h *= 0xC4CEB9FE1A85EC53ull;
      h ^= h >> 33;
    }
  }
  const std::uint64_t h = ((lane[0] * 31 + lane[1]) * 31 + lane[2]) * 31 + lane[3];
  return static_cast<std::uint32_t>(h ^ bytes);
}

}  // namespace ringtrace::detail::trace_file
