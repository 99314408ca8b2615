// The binary trace file's layout, shared by its writer (binary_trace.cpp) and its reader
// (binary_trace_reader.cpp). docs/file-format.md describes the same thing for readers
// in other languages; keep the two in step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace ringtrace::detail::trace_file {

// "\x89RTRACE\n": a non-ASCII first byte and a line end catch text-mode transfers.
inline constexpr char kMagic[8] = {'\x89', 'R', 'T', 'R', 'A', 'C', 'E', '\n'};
inline constexpr std::uint32_t kVersion = 1;        // a file of one process (binary_trace_exporter)
inline constexpr std::uint32_t kVersionMerged = 2;  // `ringtrace merge`: process sections
inline constexpr std::size_t kHeaderBytes = 16;       // magic, version, flags (0)
inline constexpr std::size_t kFrameHeaderBytes = 16;  // type, payload bytes, checksum, 0
inline constexpr std::uint32_t kMaxFrameBytes = 64u << 20;  // a reader refuses longer frames
inline constexpr std::uint32_t kPackedRecords = 1;          // a chunk's encoding (the only one)

enum FrameType : std::uint32_t {
  frame_session = 1,   // once, first: process, host, clock, settings
  frame_segment = 2,   // a clock segment (start, then every re-fit)
  frame_site = 3,      // a call site, before the first chunk that refers to its address
  frame_thread = 4,    // a thread, before its first chunk; again when its name changes
  frame_chunk = 5,     // records of one thread, as its ring held them
  frame_stop = 6,      // the stop time (ticks): records after it are not part of the capture
  frame_stats = 7,     // the session's counts, at stop
  frame_end = 8,       // the file is complete
  frame_pass = 9,      // end of a drainer pass: records up to these ticks are all in the file above
  frame_process = 10,  // version 2 only: a process section's header; its frames follow
};

// Packed records (docs/file-format.md, "Chunks: packed records"): unsigned LEB128
// varints (at most ten bytes) and zigzag for signed values. The writer, the encoder of a
// stream and the reader's recovery from a ring file pack with these.
inline char* put_varint(char* p, std::uint64_t v) noexcept {
  for (; v >= 0x80; v >>= 7) *p++ = static_cast<char>(v | 0x80);
  *p++ = static_cast<char>(v);
  return p;
}
inline std::uint64_t zigzag(std::int64_t v) noexcept {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}

// A process section's header payload (version 2): u64 section bytes (the frames that
// follow), i64 offset_ns, u8 flags (bit 0: aligned through CLOCK_REALTIME), 7 bytes 0,
// str source.
inline constexpr std::size_t kProcessFrameFixedBytes = 24;

// Header flags (the u32 after the version).
inline constexpr std::uint32_t kFlagChecksum2 = 1;  // frames carry checksum2 (else checksum1)

// Checksums of a frame's payload: four 64-bit lanes over the payload's 8-byte
// little-endian words (the last one zero-padded), lane i taking words i, i+4, ...:
//   lane = (lane ^ word) * K, then lane ^= lane >> 29
// with lanes seeded 1, 2, 3, 4, and the result the low 32 bits of
//   ((lane0 * 31 + lane1) * 31 + lane2) * 31 + lane3 ^ bytes.
// Independent lanes keep it about as fast as copying the payload. checksum1, in files
// whose header flags lack kFlagChecksum2, misses a flip of the top three bits of a lane's
// last word (they never reach a lane's low 32 bits); checksum2 first mixes each lane
// with fmix64 (h ^= h >> 33; h *= 0xFF51AFD7ED558CCD; h ^= h >> 33;
// h *= 0xC4CEB9FE1A85EC53; h ^= h >> 33), so every bit of every lane reaches the result.
inline std::uint32_t checksum_lanes(const void* data, std::size_t bytes, bool mix) noexcept {
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
inline std::uint32_t checksum1(const void* data, std::size_t bytes) noexcept { return checksum_lanes(data, bytes, false); }
inline std::uint32_t checksum2(const void* data, std::size_t bytes) noexcept { return checksum_lanes(data, bytes, true); }
// What this version writes.
inline std::uint32_t checksum(const void* data, std::size_t bytes) noexcept { return checksum2(data, bytes); }
// The checksum of a file with these header flags.
inline std::uint32_t checksum(const void* data, std::size_t bytes, std::uint32_t header_flags) noexcept {
  return (header_flags & kFlagChecksum2) != 0 ? checksum2(data, bytes) : checksum1(data, bytes);
}

// Little-endian field writers (x86-64 and every target ringtrace runs on is little-endian).
inline void put_u8(std::string& out, std::uint8_t v) { out.push_back(static_cast<char>(v)); }
inline void put_u32(std::string& out, std::uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
inline void put_u64(std::string& out, std::uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }
inline void put_f64(std::string& out, double v) { out.append(reinterpret_cast<const char*>(&v), 8); }
inline void put_str(std::string& out, std::string_view s) {
  put_u32(out, static_cast<std::uint32_t>(s.size()));
  out.append(s);
}

}  // namespace ringtrace::detail::trace_file
