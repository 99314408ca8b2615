// Reading a trace file's frames (docs/file-format.md, "Frames"): every length checked
// against the bytes that are really there, every frame's checksum checked before its
// payload is used, and a problem said as one line naming the byte offset. Format 2's
// checksum is a CRC32C over the frame's header (its checksum field 0) and payload; format
// 1's covers the payload only (its two home-made variants, by the header's flags).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace ringtrace::detail {

// What a file's 16-byte header says.
struct FileHeader {
  std::uint32_t major = 0;  // 1 or 2
  std::uint32_t minor = 0;
  bool merged = false;         // process sections
  std::uint32_t features = 0;  // format 2: the header's feature bits
  std::uint32_t v1_flags = 0;  // format 1: which checksum its frames carry
};

// Reads and checks the header of `file` (its size `size`); throws std::runtime_error
// with what is wrong (no path: the caller adds it): empty, too short, not a ringtrace
// file, a major version this reader does not know.
FileHeader read_file_header(std::FILE* file, std::uint64_t size);

struct Frame {
  std::uint32_t type = 0;
  std::uint64_t offset = 0;  // of its header in the file
  std::string payload;
};

class FrameReader {
 public:
  // Frames of `file` in [begin, end).
  FrameReader(std::FILE* file, std::uint64_t begin, std::uint64_t end, const FileHeader& header)
      : file_(file), end_(end), offset_(begin), header_(header) {}

  // The next frame, checked; false at the end of the range (problem() empty) or at one
  // that cannot be read (problem() says why and where).
  bool next(Frame& frame);
  const std::string& problem() const { return problem_; }
  std::uint64_t offset() const { return offset_; }  // of the next frame
  // The payload of the last intact frame of `type` from here on whose payload is `bytes`
  // long, found by walking the frame headers without consuming anything (the stop frame,
  // which comes last but decides what the capture holds); false if there is none.
  bool peek_last(std::uint32_t type, std::uint32_t bytes, std::string& payload);

 private:
  bool checksum_ok(const std::uint32_t header[4], const std::string& payload) const;

  std::FILE* file_;
  std::uint64_t end_;
  std::uint64_t offset_;
  FileHeader header_;
  std::string problem_;
};

}  // namespace ringtrace::detail
