// ringtrace merge: several processes' binary trace files into one (a merged file), a
// process section each, placed on one timeline through the clock anchors that every
// session frame carries. The frames are copied as they are (checked, never decoded):
// the reader merges the processes' streams by time. docs/file-format.md, "Merged files".
// Inputs of format 1 merge into a file of format 1, of format 2 into one of format 2
// (the frames' layouts differ); inputs of both are refused.
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "clock_bounds.hpp"
#include "crc32c.hpp"
#include "file_paths.hpp"  // open_input, create_temporary, check_output_path
#include "frame_reader.hpp"
#include "legacy_v1.hpp"
#include "ringtrace/exporters/binary_trace.hpp"
#include "trace_file_format.hpp"

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
  std::int64_t boot_ns = 0;          // CLOCK_REALTIME minus CLOCK_MONOTONIC at its anchor
  std::uint64_t realtime_start = 0;  // its session's start on CLOCK_REALTIME
  detail::FileHeader header;         // its file's
};

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

std::FILE* open_read(const std::string& path) {
  std::FILE* f = ::fdopen(detail::open_input(path), "rb");  // a regular file: never a FIFO that blocks
  if (f == nullptr) fail(path, std::string("cannot open: ") + std::strerror(errno));
  return f;
}

// The session frame that opens a process's frames (format 2 has the boundary gap before
// the names, format 1 after them).
void read_session(std::FILE* f, Source& s) {
  detail::FrameReader frames(f, s.begin, s.end, s.header);
  detail::Frame frame;
  if (!frames.next(frame) || frame.type != tf::frame_session) {
    fail(s.path, "no readable session frame at byte " + std::to_string(s.begin) + ": cannot place this process");
  }
  const std::string& p = frame.payload;
  std::size_t at = 0;
  std::uint32_t pid = 0, skip4 = 0;
  std::uint64_t skip8 = 0, start = 0, realtime = 0, monotonic = 0;
  double tps = 0;
  bool ok = get(p, at, pid) && get(p, at, skip4) && get(p, at, tps) && get(p, at, start) && get(p, at, realtime) &&
            get(p, at, monotonic) && get(p, at, skip8) && get(p, at, skip8);
  if (ok && s.header.major != 1) ok = get(p, at, skip8);
  ok = ok && get_str(p, at, s.meta.name) && get_str(p, at, s.meta.host);
  if (!ok) fail(s.path, "malformed session frame at byte " + std::to_string(s.begin));
  s.meta.pid = pid;
  s.boot_ns = static_cast<std::int64_t>(realtime - monotonic);
  s.realtime_start = realtime + (start - monotonic);
}

// The processes of one input file: itself, or its sections (a merged file).
void find_processes(const std::string& path, std::vector<Source>& out) {
  File file{open_read(path)};
  std::fseek(file.f, 0, SEEK_END);
  const auto size = static_cast<std::uint64_t>(std::ftell(file.f));
  detail::FileHeader header;
  try {
    header = detail::read_file_header(file.f, size);
  } catch (const std::exception& e) {
    fail(path, e.what());
  }
  if (!header.merged) {
    Source s;
    s.header = header;
    s.path = path;
    s.begin = tf::kHeaderBytes;
    s.end = size;
    s.meta.source = path;
    read_session(file.f, s);
    out.push_back(std::move(s));
    return;
  }
  std::uint64_t at = tf::kHeaderBytes;
  detail::Frame frame;
  while (at < size) {
    detail::FrameReader frames(file.f, at, size, header);
    if (!frames.next(frame) || frame.type != tf::frame_process) {
      fail(path, "no readable process frame at byte " + std::to_string(at) + " of a merged file");
    }
    std::size_t pos = 0;
    std::uint64_t bytes = 0, process_flags = 0;
    std::int64_t old_offset = 0;
    Source s;
    s.path = path;
    s.header = header;
    if (!get(frame.payload, pos, bytes) || !get(frame.payload, pos, old_offset) ||
        !get(frame.payload, pos, process_flags) || !get_str(frame.payload, pos, s.meta.source)) {
      fail(path, "malformed process frame at byte " + std::to_string(at));
    }
    s.begin = frames.offset();
    s.end = bytes > size - s.begin ? size : s.begin + bytes;
    read_session(file.f, s);
    at = s.end;
    out.push_back(std::move(s));
  }
}

void write_all(std::FILE* f, const void* data, std::size_t bytes, const std::string& path) {
  if (bytes != 0 && std::fwrite(data, 1, bytes, f) != bytes)
    fail(path, std::string("write failed: ") + std::strerror(errno));
}

// A frame of the output's format: its header's checksum computed anew (format 2: CRC32C
// over the header and payload; format 1: its second checksum over the payload).
void write_frame(std::FILE* f, std::uint32_t type, const std::string& payload, std::uint32_t major,
                 const std::string& path) {
  std::uint32_t h[4] = {type, static_cast<std::uint32_t>(payload.size()), 0, 0};
  h[2] = major == 1 ? tf::checksum_v1(payload.data(), payload.size(), true)
                    : detail::crc32c_extend(detail::crc32c(h, sizeof h), payload.data(), payload.size());
  write_all(f, h, sizeof h, path);
  write_all(f, payload.data(), payload.size(), path);
}

// Its size depends on the source's name only: merge rewrites it in place, with the
// section's size, then with the offset the flows gave.
std::string process_payload(std::uint64_t bytes, const ReplayProcess& m, std::uint32_t major) {
  std::string payload;
  tf::put_u64(payload, bytes);
  tf::put_u64(payload, static_cast<std::uint64_t>(m.offset_ns));
  std::uint64_t flags = m.realtime_aligned ? tf::kProcessRealtime : 0;  // u8 flags, 7 bytes 0
  if (major != 1) {
    if (m.clock.measured) flags |= tf::kProcessMeasured;
    if (m.clock.agrees) flags |= tf::kProcessAgrees;
    if (m.clock.contradicted) flags |= tf::kProcessContradicted;
  }
  tf::put_u64(payload, flags);
  tf::put_str(payload, m.source);
  if (major != 1) {  // 2.3: the clock check
    tf::put_u64(payload, static_cast<std::uint64_t>(m.clock.realtime_offset_ns));
    tf::put_u64(payload, static_cast<std::uint64_t>(m.clock.low_ns));
    tf::put_u64(payload, static_cast<std::uint64_t>(m.clock.high_ns));
    tf::put_u64(payload, m.clock.messages);
  }
  return payload;
}

// The flows of a merged file's stream that link two processes: each id's k-th FLOW_IN
// (in the stream's order) paired with its k-th FLOW_OUT as they come, so that memory
// holds the ends still waiting for their partner and the pairs across processes only.
class FlowCollector final : public Exporter {
 public:
  struct End {
    std::uint32_t pid;
    std::uint64_t time_ns;
  };
  struct Pair {
    End out, in;
  };
  void on_events(std::span<const Event> events, const TraceContext& context) override {
    for (const Event& e : events) {
      if (e.kind != EventKind::flow_out && e.kind != EventKind::flow_in) continue;
      const bool out = e.kind == EventKind::flow_out;
      const End end{context.thread(e.thread).pid, e.time_ns};
      const auto it = waiting_.find(e.value.u);
      if (it == waiting_.end() || it->second.outs == out) {
        Waiting& w = waiting_[e.value.u];
        w.outs = out;
        w.ends.push_back(end);
        continue;
      }
      const End other = it->second.ends.front();
      it->second.ends.pop_front();
      if (it->second.ends.empty()) waiting_.erase(it);
      if (other.pid != end.pid) pairs.push_back(out ? Pair{end, other} : Pair{other, end});
    }
  }
  std::vector<Pair> pairs;

 private:
  struct Waiting {
    bool outs = false;  // the ends waiting are sends (else receives)
    std::deque<End> ends;
  };
  std::unordered_map<std::uint64_t, Waiting> waiting_;  // by flow id
};

// Places the merged file's clocks inside the bounds its flows give (clock_bounds.hpp):
// reads the file written so far for its flows, pairs each id's k-th FLOW_IN with its k-th
// FLOW_OUT (in the stream's order), keeps the pairs whose ends are on different clocks,
// and sets each source's offset and clock check. `group[i]` is source i's clock,
// `reference` the timeline's clock.
void measure_clocks(const std::string& merged, std::vector<Source>& sources, const std::vector<std::size_t>& group,
                    std::size_t groups, std::size_t reference, MergeResult& result) {
  FlowCollector collector;
  Exporter* const one[] = {&collector};
  ReplayOptions options;
  options.recover_rings = false;
  const ReplayResult read = replay_file(merged, std::span<Exporter* const>(one), options);
  std::map<std::uint32_t, std::size_t> source_of;  // by ThreadInfo::pid
  for (std::size_t i = 0; i < read.processes.size() && i < sources.size(); ++i) {
    source_of[read.processes[i].stream_pid] = i;
  }
  std::vector<std::int64_t> estimates(groups, 0);
  for (std::size_t i = 0; i < sources.size(); ++i) estimates[group[i]] = sources[i].meta.offset_ns;
  std::vector<detail::ClockMessage> messages;
  for (const FlowCollector::Pair& pair : collector.pairs) {
    const auto out = source_of.find(pair.out.pid), in = source_of.find(pair.in.pid);
    if (out == source_of.end() || in == source_of.end()) continue;
    const std::size_t from = group[out->second], to = group[in->second];
    if (from == to) continue;  // one clock: bounds nothing
    // Each clock's own times: the file's less the offset the anchors gave.
    messages.push_back({from, to, static_cast<std::int64_t>(pair.out.time_ns) - sources[out->second].meta.offset_ns,
                        static_cast<std::int64_t>(pair.in.time_ns) - sources[in->second].meta.offset_ns});
  }
  if (messages.empty()) return;
  const detail::ClockSolution solved = detail::solve_clock_offsets(reference, estimates, messages);
  result.messages = messages.size();
  result.receives_before_sends = solved.receives_before_sends;
  if (solved.contradicted) {
    std::string hosts;
    for (std::size_t i = 0; i < sources.size(); ++i) {
      if (!solved.clocks[group[i]].contradicted) continue;
      if (hosts.find("'" + sources[i].meta.host + "'") == std::string::npos)
        hosts += (hosts.empty() ? "'" : ", '") + sources[i].meta.host + "'";
    }
    result.clock_problem = "the flows between hosts contradict every clock offset (" + std::to_string(messages.size()) +
                           " messages; on the clocks of " + hosts + " some receive comes before its send " +
                           "whatever the offsets): offsets kept from CLOCK_REALTIME, " +
                           std::to_string(solved.receives_before_sends) + " receives before their sends";
  }
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const detail::ClockPlacement& c = solved.clocks[group[i]];
    ReplayProcess& m = sources[i].meta;
    if (group[i] == reference || c.messages == 0) continue;
    m.clock.measured = true;
    m.clock.realtime_offset_ns = m.offset_ns;
    m.clock.low_ns = c.low_ns;
    m.clock.high_ns = c.high_ns;
    m.clock.messages = c.messages;
    m.clock.contradicted = c.contradicted;
    m.clock.agrees = c.agrees();
    m.offset_ns = c.offset_ns;
  }
}

std::string nanoseconds(std::int64_t ns) {
  std::string s = ns > 0 ? "+" : "";
  s.append(std::to_string(ns));
  s.append(" ns");
  return s;
}

}  // namespace

std::string describe_clock(const ReplayProcess& p) {
  if (!p.realtime_aligned) return "same host and boot: exact";
  const ClockCheck& c = p.clock;
  if (!c.measured) {
    return "offset " + nanoseconds(p.offset_ns) +
           " by CLOCK_REALTIME, not measured (no flow to another host): as exact as the hosts' clocks agree";
  }
  const std::string n = std::to_string(c.messages) + " messages";
  if (c.contradicted) {
    return "offset " + nanoseconds(p.offset_ns) + " by CLOCK_REALTIME; the " + n +
           " contradict every offset (a receive before its send whatever the offset)";
  }
  const std::uint64_t u = c.uncertainty_ns(p.offset_ns);
  std::string bounds = "[" + (c.low_ns == INT64_MIN ? std::string("-inf") : std::to_string(c.low_ns)) + ", " +
                       (c.high_ns == INT64_MAX ? std::string("+inf") : std::to_string(c.high_ns)) + "] ns";
  std::string text =
      "offset " + nanoseconds(p.offset_ns) +
      (u == UINT64_MAX ? std::string(" (bounded on one side only)") : " +/- " + std::to_string(u) + " ns") +
      ", within " + bounds + " from " + n;
  if (c.agrees) return text + "; CLOCK_REALTIME agrees (its offset kept)";
  return text + "; CLOCK_REALTIME disagrees: it said " + nanoseconds(c.realtime_offset_ns) + ", off by " +
         nanoseconds(c.realtime_offset_ns - p.offset_ns);
}

MergeResult merge_files(std::span<const std::filesystem::path> inputs, const std::filesystem::path& output,
                        const ProgressFunction& progress) {
  const std::string out_path = output.string();
  for (const auto& in : inputs) {
    std::error_code ec;
    if (std::filesystem::equivalent(in, output, ec)) fail(out_path, "is also an input; merge writes a new file");
  }
  // The output first: a path that cannot be written is reported before any work. Its
  // temporary is created exclusively under a name nobody can guess (file_paths.hpp).
  detail::check_output_path(out_path);
  const detail::TemporaryFile temporary = detail::create_temporary(out_path, O_RDWR);
  const std::string& partial = temporary.path;
  File out{::fdopen(temporary.fd, "wb+")};
  if (out.f == nullptr) fail(out_path, std::string("cannot write: ") + std::strerror(errno));
  try {
    std::vector<Source> sources;
    for (const auto& in : inputs) find_processes(in.string(), sources);
    if (sources.empty()) fail(out_path, "nothing to merge");
    const std::uint32_t major = sources.front().header.major;
    for (const Source& s : sources) {
      if (s.header.major != major) {
        fail(s.path, "format " + std::to_string(s.header.major) + ", and " + sources.front().path + " format " +
                         std::to_string(major) +
                         ": merge files of one format (convert the older ones with "
                         "`ringtrace convert` and record again, or merge each format apart)");
      }
    }

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
    std::vector<std::size_t> group(sources.size());  // each source's clock: the first source of its host and boot
    std::vector<std::size_t> clocks;                 // the first source of each clock
    for (std::size_t i = 0; i < sources.size(); ++i) {
      group[i] = clocks.size();
      for (std::size_t g = 0; g < clocks.size(); ++g) {
        if (same_clock(sources[clocks[g]], sources[i])) {
          group[i] = g;
          break;
        }
      }
      if (group[i] == clocks.size()) clocks.push_back(i);
    }
    for (Source& s : sources) {
      if (same_clock(s, sources[ref])) continue;  // offset 0
      const Source* first = &s;                   // the first process of s's host and boot sets the offset
      for (const Source& o : sources) {
        if (same_clock(o, s)) {
          first = &o;
          break;
        }
      }
      s.meta.offset_ns = first->boot_ns - sources[ref].boot_ns;
      s.meta.realtime_aligned = true;
      s.meta.clock.realtime_offset_ns = s.meta.offset_ns;
    }

    char header[tf::kHeaderBytes] = {};
    std::memcpy(header, tf::kMagic, sizeof tf::kMagic);
    const std::uint32_t version = major == 1 ? tf::kVersion1Merged : tf::kVersionWord;
    const std::uint32_t flags = major == 1 ? tf::kV1FlagChecksum2 : tf::kFeatureMerged;
    std::memcpy(header + 8, &version, 4);
    std::memcpy(header + 12, &flags, 4);
    write_all(out.f, header, sizeof header, partial);

    MergeResult result;
    std::uint64_t total = 0, done = 0, reported = 0;
    for (const Source& s : sources) total += s.end - s.begin;
    detail::Frame frame;
    std::vector<std::pair<long, std::uint64_t>> frames_at;  // each process frame's place and section bytes
    for (Source& s : sources) {
      File in{open_read(s.path)};
      const long frame_at = std::ftell(out.f);
      write_frame(out.f, tf::frame_process, process_payload(0, s.meta, major), major, partial);  // its size comes last
      // Every whole, checked frame; a cut or damaged one ends what this process gives.
      detail::FrameReader frames(in.f, s.begin, s.end, s.header);
      std::uint64_t bytes = 0;
      bool complete = false;
      while (frames.next(frame)) {
        if (frame.type == tf::frame_process) {
          s.meta.problem = "a process frame inside a process at byte " + std::to_string(frame.offset) + ": damaged";
          break;
        }
        write_frame(out.f, frame.type, frame.payload, major, partial);  // the output's checksum
        bytes += tf::kFrameHeaderBytes + frame.payload.size();
        done += tf::kFrameHeaderBytes + frame.payload.size();
        if (progress && done - reported >= (std::uint64_t{1} << 20)) {
          reported = done;
          progress(done, total);
        }
        if (frame.type == tf::frame_end) complete = true;
      }
      if (s.meta.problem.empty() && !frames.problem().empty())
        s.meta.problem = frames.problem() + "; merged up to there";
      if (s.meta.problem.empty() && !complete) s.meta.problem = "the recording did not stop (no end frame)";
      s.meta.complete = s.meta.problem.empty();
      const long after = std::ftell(out.f);
      if (std::fseek(out.f, frame_at, SEEK_SET) != 0) fail(partial, "seek failed");
      write_frame(out.f, tf::frame_process, process_payload(bytes, s.meta, major), major, partial);
      if (std::fseek(out.f, after, SEEK_SET) != 0) fail(partial, "seek failed");
      frames_at.emplace_back(frame_at, bytes);
      if (!s.meta.complete)
        result.problems.push_back(s.path + ": process " + std::to_string(s.meta.pid) + ": " + s.meta.problem);
    }
    if (std::fflush(out.f) != 0) fail(partial, std::string("write failed: ") + std::strerror(errno));
    // Several clocks: the offsets measured from the flows between them, written over the
    // process frames (of the same size).
    if (major != 1 && clocks.size() > 1) {
      measure_clocks(partial, sources, group, clocks.size(), group[ref], result);
      for (std::size_t i = 0; i < sources.size(); ++i) {
        if (std::fseek(out.f, frames_at[i].first, SEEK_SET) != 0) fail(partial, "seek failed");
        write_frame(out.f, tf::frame_process, process_payload(frames_at[i].second, sources[i].meta, major), major,
                    partial);
      }
    }
    for (const Source& s : sources) result.processes.push_back(s.meta);
    if (progress) progress(total, total);
    if (std::fflush(out.f) != 0 || out.close() != 0)
      fail(partial, std::string("write failed: ") + std::strerror(errno));
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
