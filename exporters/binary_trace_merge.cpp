// ringtrace merge: several processes' binary trace files into one (format version 2), a
// process section each, placed on one timeline through the clock anchors that every
// session frame carries. The frames are copied as they are (checked, never decoded):
// the reader merges the processes' streams by time. docs/file-format.md.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "common/trace_file_format.hpp"
#include "ringtrace/exporters/binary_trace.hpp"

namespace ringtrace {
namespace {

namespace tf = detail::trace_file;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

struct File {
  std::FILE* f = nullptr;
  ~File() { close(); }
  int close() {
    std::FILE* was = f;
    f = nullptr;
    return was != nullptr ? std::fclose(was) : 0;
  }
};

// One process of an input: its frames' byte range and what its session frame says.
struct Source {
  std::string path;
  std::uint64_t begin = 0, end = 0;
  ReplayProcess meta;
  std::int64_t boot_ns = 0;           // CLOCK_REALTIME minus CLOCK_MONOTONIC at its anchor
  std::uint64_t realtime_start = 0;   // its session's start on CLOCK_REALTIME
  std::uint32_t header_flags = 0;     // its file's (which checksum its frames carry)
};

bool read_at(std::FILE* f, std::uint64_t at, void* to, std::size_t bytes) {
  return std::fseek(f, static_cast<long>(at), SEEK_SET) == 0 && std::fread(to, 1, bytes, f) == bytes;
}

// Reads a checked frame at `at` (header and payload); false if cut or damaged.
// `flags` are the file's header flags (which checksum it carries).
bool read_frame(std::FILE* f, std::uint64_t at, std::uint64_t end, std::uint32_t h[4], std::string& payload,
                std::uint32_t flags) {
  if (at + tf::kFrameHeaderBytes > end || !read_at(f, at, h, tf::kFrameHeaderBytes)) return false;
  if (h[1] > tf::kMaxFrameBytes || at + tf::kFrameHeaderBytes + h[1] > end) return false;
  payload.resize(h[1]);
  if (h[1] != 0 && std::fread(payload.data(), 1, h[1], f) != h[1]) return false;
  return tf::checksum(payload.data(), payload.size(), flags) == h[2];
}

template <typename T>
bool get(const std::string& p, std::size_t& at, T& v) {
  if (at + sizeof(T) > p.size()) return false;
  std::memcpy(&v, p.data() + at, sizeof(T));
  at += sizeof(T);
  return true;
}
bool get_str(const std::string& p, std::size_t& at, std::string& s) {
  std::uint32_t n = 0;
  if (!get(p, at, n) || n > p.size() - at) return false;
  s.assign(p, at, n);
  at += n;
  return true;
}

// The session frame that opens a process's frames.
void read_session(std::FILE* f, Source& s) {
  std::uint32_t h[4];
  std::string p;
  if (!read_frame(f, s.begin, s.end, h, p, s.header_flags) || h[0] != tf::frame_session) {
    fail(s.path, "no readable session frame at byte " + std::to_string(s.begin) + ": cannot place this process");
  }
  std::size_t at = 0;
  std::uint32_t pid = 0;
  std::uint64_t skip8 = 0, start = 0, realtime = 0, monotonic = 0;
  std::uint32_t skip4 = 0;
  double tps = 0;
  const bool ok = get(p, at, pid) && get(p, at, skip4) && get(p, at, tps) && get(p, at, start) &&
                  get(p, at, realtime) && get(p, at, monotonic) && get(p, at, skip8) && get(p, at, skip8) &&
                  get_str(p, at, s.meta.name) && get_str(p, at, s.meta.host);
  if (!ok) fail(s.path, "malformed session frame at byte " + std::to_string(s.begin));
  s.meta.pid = pid;
  s.boot_ns = static_cast<std::int64_t>(realtime - monotonic);
  s.realtime_start = realtime + (start - monotonic);
}

// The processes of one input file: itself (version 1) or its sections (version 2).
void find_processes(const std::string& path, std::vector<Source>& out) {
  File file{std::fopen(path.c_str(), "rb")};
  if (file.f == nullptr) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::fseek(file.f, 0, SEEK_END);
  const auto size = static_cast<std::uint64_t>(std::ftell(file.f));
  char header[tf::kHeaderBytes];
  if (size < tf::kHeaderBytes || !read_at(file.f, 0, header, sizeof header)) {
    fail(path, size == 0 ? "empty file, not a ringtrace trace" : "too short for a ringtrace trace");
  }
  if (std::memcmp(header, tf::kMagic, sizeof tf::kMagic) != 0) fail(path, "not a ringtrace trace file (bad magic)");
  std::uint32_t version, flags;
  std::memcpy(&version, header + 8, 4);
  std::memcpy(&flags, header + 12, 4);
  if (version == tf::kVersion) {
    Source s;
    s.header_flags = flags;
    s.path = path;
    s.begin = tf::kHeaderBytes;
    s.end = size;
    s.meta.source = path;
    read_session(file.f, s);
    out.push_back(std::move(s));
    return;
  }
  if (version != tf::kVersionMerged) {
    fail(path, "file format version " + std::to_string(version) + ", this tool knows versions 1 and 2");
  }
  std::uint64_t at = tf::kHeaderBytes;
  std::string p;
  while (at < size) {
    std::uint32_t h[4];
    if (!read_frame(file.f, at, size, h, p, flags) || h[0] != tf::frame_process) {
      fail(path, "no readable process frame at byte " + std::to_string(at) + " of a merged file");
    }
    std::size_t pos = 0;
    std::uint64_t bytes = 0;
    Source s;
    s.path = path;
    std::int64_t old_offset = 0;
    s.header_flags = flags;
    std::uint64_t process_flags = 0;
    if (!get(p, pos, bytes) || !get(p, pos, old_offset) || !get(p, pos, process_flags) ||
        !get_str(p, pos, s.meta.source)) {
      fail(path, "malformed process frame at byte " + std::to_string(at));
    }
    s.begin = at + tf::kFrameHeaderBytes + h[1];
    s.end = bytes > size - s.begin ? size : s.begin + bytes;
    read_session(file.f, s);
    out.push_back(std::move(s));
    at = s.end;
  }
}

void write_all(std::FILE* f, const void* data, std::size_t bytes, const std::string& path) {
  if (bytes != 0 && std::fwrite(data, 1, bytes, f) != bytes) fail(path, std::string("write failed: ") + std::strerror(errno));
}

std::string process_frame(std::uint64_t bytes, const ReplayProcess& m) {
  std::string payload;
  tf::put_u64(payload, bytes);
  tf::put_u64(payload, static_cast<std::uint64_t>(m.offset_ns));
  tf::put_u64(payload, m.realtime_aligned ? 1 : 0);  // u8 flags, 7 bytes 0
  tf::put_str(payload, m.source);
  std::string frame;
  tf::put_u32(frame, tf::frame_process);
  tf::put_u32(frame, static_cast<std::uint32_t>(payload.size()));
  tf::put_u32(frame, tf::checksum(payload.data(), payload.size()));
  tf::put_u32(frame, 0);
  return frame + payload;
}

}  // namespace

MergeResult merge_files(std::span<const std::filesystem::path> inputs, const std::filesystem::path& output,
                        const ProgressFunction& progress) {
  const std::string out_path = output.string();
  const std::string partial = out_path + ".partial";
  for (const auto& in : inputs) {
    std::error_code ec;
    if (std::filesystem::equivalent(in, output, ec)) fail(out_path, "is also an input; merge writes a new file");
  }
  // The output first: a path that cannot be written is reported before any work.
  File out{std::fopen(partial.c_str(), "wb+")};
  if (out.f == nullptr) fail(out_path, std::string("cannot write: ") + std::strerror(errno));
  try {
    std::vector<Source> sources;
    for (const auto& in : inputs) find_processes(in.string(), sources);
    if (sources.empty()) fail(out_path, "nothing to merge");

    // The timeline is the CLOCK_MONOTONIC of the process that started first. Processes
    // of one host and boot share that clock exactly; other hosts (or boots) are placed
    // through their CLOCK_REALTIME anchors, one offset per host and boot.
    std::size_t ref = 0;
    for (std::size_t i = 1; i < sources.size(); ++i) {
      if (sources[i].realtime_start < sources[ref].realtime_start) ref = i;
    }
    const auto same_clock = [](const Source& a, const Source& b) {
      const std::int64_t d = a.boot_ns - b.boot_ns;
      return a.meta.host == b.meta.host && d < 1000000000 && d > -1000000000;
    };
    for (Source& s : sources) {
      if (same_clock(s, sources[ref])) continue;  // offset 0
      const Source* group = &s;  // the first process of s's host and boot sets the offset
      for (const Source& o : sources) {
        if (same_clock(o, s)) {
          group = &o;
          break;
        }
      }
      s.meta.offset_ns = group->boot_ns - sources[ref].boot_ns;
      s.meta.realtime_aligned = true;
    }

    char header[tf::kHeaderBytes] = {};
    std::memcpy(header, tf::kMagic, sizeof tf::kMagic);
    const std::uint32_t version = tf::kVersionMerged, flags = tf::kFlagChecksum2;
    std::memcpy(header + 8, &version, 4);
    std::memcpy(header + 12, &flags, 4);
    write_all(out.f, header, sizeof header, partial);

    MergeResult result;
    std::string payload;
    std::uint64_t total = 0, done = 0, reported = 0;
    for (const Source& s : sources) total += s.end - s.begin;
    for (Source& s : sources) {
      File in{std::fopen(s.path.c_str(), "rb")};
      if (in.f == nullptr) fail(s.path, std::string("cannot open: ") + std::strerror(errno));
      const long frame_at = std::ftell(out.f);
      const std::string placeholder = process_frame(0, s.meta);
      write_all(out.f, placeholder.data(), placeholder.size(), partial);
      // Every whole, checked frame; a cut or damaged one ends what this process gives.
      std::uint64_t at = s.begin, bytes = 0;
      bool complete = false;
      while (at < s.end) {
        std::uint32_t h[4];
        if (!read_frame(in.f, at, s.end, h, payload, s.header_flags)) {
          s.meta.problem = "cut short or damaged at byte " + std::to_string(at) + "; merged up to there";
          break;
        }
        if (h[0] == tf::frame_process) {
          s.meta.problem = "a process frame inside a process at byte " + std::to_string(at) + ": damaged";
          break;
        }
        h[2] = tf::checksum(payload.data(), payload.size());  // the output's checksum (an input's may be the old one)
        write_all(out.f, h, tf::kFrameHeaderBytes, partial);
        write_all(out.f, payload.data(), payload.size(), partial);
        bytes += tf::kFrameHeaderBytes + payload.size();
        at += tf::kFrameHeaderBytes + payload.size();
        done += tf::kFrameHeaderBytes + payload.size();
        if (progress && done - reported >= (std::uint64_t{1} << 20)) {
          reported = done;
          progress(done, total);
        }
        if (h[0] == tf::frame_end) complete = true;
      }
      if (s.meta.problem.empty() && !complete) s.meta.problem = "the recording did not stop (no end frame)";
      s.meta.complete = s.meta.problem.empty();
      const long after = std::ftell(out.f);
      const std::string frame = process_frame(bytes, s.meta);
      if (std::fseek(out.f, frame_at, SEEK_SET) != 0) fail(partial, "seek failed");
      write_all(out.f, frame.data(), frame.size(), partial);
      if (std::fseek(out.f, after, SEEK_SET) != 0) fail(partial, "seek failed");
      if (!s.meta.complete) result.problems.push_back(s.path + ": process " + std::to_string(s.meta.pid) + ": " + s.meta.problem);
      result.processes.push_back(s.meta);
    }
    if (progress) progress(total, total);
    if (std::fflush(out.f) != 0 || out.close() != 0) fail(partial, std::string("write failed: ") + std::strerror(errno));
    std::error_code ec;
    std::filesystem::rename(partial, output, ec);
    if (ec) fail(out_path, "cannot rename " + partial + ": " + ec.message());
    return result;
  } catch (...) {
    out.close();
    std::remove(partial.c_str());
    throw;
  }
}

}  // namespace ringtrace
