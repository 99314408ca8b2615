#include "frame_reader.hpp"

#include <cstring>
#include <stdexcept>

#include "crc32c.hpp"
#include "legacy_v1.hpp"
#include "trace_file_format.hpp"

namespace ringtrace::detail {

namespace tf = trace_file;

FileHeader read_file_header(std::FILE* file, std::uint64_t size) {
  char header[tf::kHeaderBytes];
  if (size < tf::kHeaderBytes || std::fseek(file, 0, SEEK_SET) != 0 ||
      std::fread(header, 1, sizeof header, file) != sizeof header) {
    throw std::runtime_error(size == 0 ? "empty file, not a ringtrace trace" : "too short for a ringtrace trace");
  }
  if (std::memcmp(header, tf::kMagic, sizeof tf::kMagic) != 0) {
    throw std::runtime_error("not a ringtrace trace file (bad magic)");
  }
  std::uint32_t version = 0, word = 0;
  std::memcpy(&version, header + 8, 4);
  std::memcpy(&word, header + 12, 4);
  FileHeader h;
  if (version == tf::kVersion1 || version == tf::kVersion1Merged) {
    h.major = 1;
    h.merged = version == tf::kVersion1Merged;
    h.v1_flags = word;
    return h;
  }
  h.major = version >> 16;
  h.minor = version & 0xFFFF;
  if (h.major != tf::kMajor) {
    throw std::runtime_error("file format " + std::to_string(h.major) + "." + std::to_string(h.minor) +
                             ", this reader knows formats 1 and " + std::to_string(tf::kMajor) +
                             " (a newer ringtrace wrote it)");
  }
  h.features = word;
  h.merged = (word & tf::kFeatureMerged) != 0;
  return h;
}

bool FrameReader::checksum_ok(const std::uint32_t header[4], const std::string& payload) const {
  if (header_.major == 1) {
    return tf::checksum_v1(payload.data(), payload.size(), (header_.v1_flags & tf::kV1FlagChecksum2) != 0) == header[2];
  }
  std::uint32_t zeroed[4] = {header[0], header[1], 0, header[3]};
  const std::uint32_t crc = crc32c_extend(crc32c(zeroed, sizeof zeroed), payload.data(), payload.size());
  return crc == header[2];
}

bool FrameReader::next(Frame& frame) {
  if (offset_ == end_) return false;  // the end of the range
  std::uint32_t h[4];
  if (offset_ + tf::kFrameHeaderBytes > end_ || std::fseek(file_, static_cast<long>(offset_), SEEK_SET) != 0 ||
      std::fread(h, 1, sizeof h, file_) != sizeof h) {
    problem_ = "file cut short at byte " + std::to_string(offset_) + " (inside a frame header)";
    return false;
  }
  if (h[1] > tf::kMaxFrameBytes) {
    // Format 2 checks the header too: a damaged length is a damaged frame, not a claim.
    problem_ = header_.major == 1 ? "frame at byte " + std::to_string(offset_) + " claims " + std::to_string(h[1]) +
                                        " bytes (at most " + std::to_string(tf::kMaxFrameBytes) + "): damaged file"
                                  : "damaged frame at byte " + std::to_string(offset_) + " (its header claims " +
                                        std::to_string(h[1]) + " bytes, more than a frame holds): read up to there";
    return false;
  }
  if (offset_ + tf::kFrameHeaderBytes + h[1] > end_) {
    problem_ = "file cut short at byte " + std::to_string(offset_) + " (a frame of " + std::to_string(h[1]) +
               " bytes, " + std::to_string(end_ - offset_ - tf::kFrameHeaderBytes) + " left)";
    return false;
  }
  frame.payload.resize(h[1]);
  if (h[1] != 0 && std::fread(frame.payload.data(), 1, h[1], file_) != h[1]) {
    problem_ = "read error at byte " + std::to_string(offset_);
    return false;
  }
  if (!checksum_ok(h, frame.payload)) {
    problem_ = "checksum mismatch in the frame at byte " + std::to_string(offset_) +
               (header_.major == 1 ? " (type " + std::to_string(h[0]) + ")" : std::string()) +
               ": damaged file, read up to there";
    return false;
  }
  frame.type = h[0];
  frame.offset = offset_;
  offset_ += tf::kFrameHeaderBytes + h[1];
  return true;
}

bool FrameReader::peek_last(std::uint32_t type, std::uint32_t bytes, std::string& payload) {
  bool found = false;
  std::uint64_t at = offset_;
  while (at + tf::kFrameHeaderBytes <= end_) {
    std::uint32_t h[4];
    if (std::fseek(file_, static_cast<long>(at), SEEK_SET) != 0 || std::fread(h, 1, sizeof h, file_) != sizeof h) break;
    if (h[1] > tf::kMaxFrameBytes || at + tf::kFrameHeaderBytes + h[1] > end_) break;
    if (h[0] == type && h[1] == bytes) {
      std::string p(bytes, '\0');
      if (std::fread(p.data(), 1, bytes, file_) == bytes && checksum_ok(h, p)) {
        payload = std::move(p);
        found = true;
      }
    }
    at += tf::kFrameHeaderBytes + h[1];
  }
  return found;
}

}  // namespace ringtrace::detail
