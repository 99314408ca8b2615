// The binary trace file's layout, shared by its writer (trace_writer.cpp), its reader
// (trace_reader.cpp and the files beside it) and merge (trace_merge.cpp).
// docs/file-format.md describes the same thing for readers in other languages (and
// tools/python/rtrace.py is one, written from it); keep the three in step.
//
// Format 2 (this version writes it): a 16-byte header (magic, version, features), then
// frames of a 16-byte header (type, payload bytes, CRC32C, flags) and a payload; chunk
// payloads hold ring records (include/ringtrace/detail/record.hpp) packed with varints
// (packed_records.hpp). Format 1 (versions 1 and 2 of the old header's one number: one
// process, or merged) is still read: its own checksum, frame layouts and record packing
// are kept below and in legacy_v1.{hpp,cpp}.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace ringtrace::detail::trace_file {

// "\x89RTRACE\n": a non-ASCII first byte and a line end catch text-mode transfers.
inline constexpr char kMagic[8] = {'\x89', 'R', 'T', 'R', 'A', 'C', 'E', '\n'};
inline constexpr std::size_t kHeaderBytes = 16;             // magic, version, features
inline constexpr std::size_t kFrameHeaderBytes = 16;        // type, payload bytes, CRC32C, flags
inline constexpr std::uint32_t kMaxFrameBytes = 64u << 20;  // a reader refuses longer frames

// The header's u32 at offset 8: format 1 wrote 1 (one process) or 2 (merged); format 2
// and later write major << 16 | minor, so that no reader of format 1 takes them for its own.
inline constexpr std::uint32_t kVersion1 = 1;
inline constexpr std::uint32_t kVersion1Merged = 2;
inline constexpr std::uint32_t kMajor = 2;
// Minor 1: module and function frames (instrumented functions) and switches frames
// (docs/file-format.md, "Switches"). Minor 2: the functions frame (calls left out).
// Minor 3: memory records (extended subtypes 1 and 2), the session frame's flags, the
// process frame's clock check (offsets measured from flows, merged files) and the node
// frame (the process's node id, when its session named one). Minor 4: allocations with
// their caller and sampled stack (extended subtype 3), the memory frame (the heap's
// accounting's settings) and the counts frame (what the session counted and did not
// record, by cause).
inline constexpr std::uint32_t kMinor = 4;
inline constexpr std::uint32_t kVersionWord = kMajor << 16 | kMinor;
// The session frame's u16 flags (minor 3; 0 before).
inline constexpr std::uint16_t kSessionMemory = 1;  // the session recorded allocations (Config::memory)
// A stream's file (windows, snapshots, convert): memory records carry their sizes (a
// free's resolved where it was recorded, 0 unknown) and no addresses (0).
inline constexpr std::uint16_t kSessionMemorySized = 2;
// The header's u32 at offset 12. Format 2: feature bits.
inline constexpr std::uint32_t kFeatureMerged = 1;  // process sections (`ringtrace merge`)
// Format 1: bit 0 set when its frames carry checksum2 (else checksum1).
inline constexpr std::uint32_t kV1FlagChecksum2 = 1;

enum FrameType : std::uint32_t {
  frame_session = 1,    // once, first: process, host, clock, settings
  frame_segment = 2,    // a clock segment (start, then every re-fit)
  frame_site = 3,       // a call site, before the first chunk that refers to it
  frame_thread = 4,     // a thread, before its first chunk; again when its name changes
  frame_chunk = 5,      // records of one thread, as its ring held them, packed
  frame_stop = 6,       // the stop time (ticks): records after it are not part of the capture
  frame_stats = 7,      // the session's counts, at stop
  frame_end = 8,        // the file is complete
  frame_pass = 9,       // end of a drainer pass: records up to these ticks are all in the file above
  frame_process = 10,   // merged files only: a process section's header; its frames follow
  frame_metadata = 11,  // format 2: a fact about the whole trace (key, value)
  // Assigned, written by later minor versions of format 2 (a reader that does not know a
  // frame type skips it, counts it and says so):
  frame_module = 12,     // a loaded module (executable, shared object): index, load address, build id, path
  frame_function = 13,   // an instrumented function: index, address, module, name, file, line
  frame_switches = 14,   // minor 1: a thread's context switches (off-CPU intervals); see below
  frame_functions = 15,  // minor 2: the instrumented calls left out (SessionStats::functions), at stop
  frame_node = 16,       // minor 3: str node id, after the session frame (docs/file-format.md, "Node")
  frame_memory = 17,     // minor 4: the heap's accounting's settings, after the session frame (below)
  frame_counts = 18,     // minor 4: what the session counted and did not record, at stop (below)
};

// frame_memory payload: u64 max_blocks (Config::memory_max_blocks: the reader's heap
// keeps as many live blocks as the recording's did, so both give the same answers), u64
// stack_bytes (Config::memory_stack_bytes: how sampled stacks are weighed; 0 none), str
// stack method.
// frame_counts payload: u32 n, then n times str key, u64 value; u32 m, then m times str
// key, str text. A reader keeps the keys it knows (docs/file-format.md, "Counts") and
// skips the others. n above the payload's bytes / 12, or m above it / 8, is malformed.
inline constexpr std::size_t kCountEntryMinBytes = 4 + 8;
inline constexpr std::size_t kTextEntryMinBytes = 4 + 4;

// frame_functions payload: u64 unwound, too_deep, short_calls, excluded, inlined; u32 n;
// then n times: u8 list (kListShort, kListInlined), u64 calls, str qualified name.
inline constexpr std::uint8_t kListShort = 0;    // FunctionStats::short_by_function
inline constexpr std::uint8_t kListInlined = 1;  // FunctionStats::inlined_by_function
inline constexpr std::size_t kFunctionsEntryMinBytes = 1 + 8 + 4;

// frame_module payload: u32 index (1, 2, ... in frame order), u32 0, u64 base (load bias:
// process address = file address + base), u64 low, u64 high (the executable segments'
// span), str build id (lowercase hex, "" if none), str path.
// frame_function payload: u32 index (1, 2, ...), u32 module index (0: in no recorded
// module), u64 address, u32 line, u8 flags (kFunction*), u8 0, u16 0, str name, str file.
// Chunks refer to a function as `record_function_entry | index << 4`.
inline constexpr std::uint8_t kFunctionNamed = 1;     // name, file and line are the recording's
inline constexpr std::uint8_t kFunctionResolved = 2;  // ... and the name is no `module+0x...` placeholder

// frame_switches (docs/file-format.md, "Switches"): u32 thread (the file's thread
// index, or kSwitchesSummary), u8 fields (0; a reader skips, and counts, a frame with a
// bit it does not know), then for a thread: varint lost (switch records the kernel
// dropped since the thread's previous switches frame), varint count, and `count`
// records, each one varint: (delta_ns << 4) | (bits << 1) | out, where delta_ns is the
// time from the previous record of the frame (the first: from 0) in CLOCK_MONOTONIC ns
// of the recording session, bits its SwitchBits (event.hpp; 3 bits) and out 1 for a
// switch_out, 0 for a switch_in. For kSwitchesSummary, the session's: varint threads
// without switches, str why switches are missing (SessionStats).
inline constexpr std::uint32_t kSwitchesSummary = 0xFFFFFFFFu;
inline constexpr std::uint64_t kSwitchTimeShift = 4;
inline constexpr std::uint64_t kSwitchBitsMask = 7;

// A process section's header payload (merged files): u64 section bytes (the frames that
// follow), i64 offset_ns, u8 flags (kProcess*), 7 bytes 0, str source; then (2.3) the
// clock check: i64 realtime_offset_ns, i64 low_ns, i64 high_ns (INT64_MIN / INT64_MAX:
// unbounded), u64 messages (ringtrace::ClockCheck). A reader reads the check only when
// the payload holds it (a 2.2 frame ends at source) and ignores bytes after it.
inline constexpr std::size_t kProcessFrameFixedBytes = 24;
inline constexpr std::size_t kProcessClockBytes = 32;
inline constexpr std::uint8_t kProcessRealtime = 1;      // offset_ns came from CLOCK_REALTIME anchors
inline constexpr std::uint8_t kProcessMeasured = 2;      // flows crossed to another clock: bounds measured
inline constexpr std::uint8_t kProcessAgrees = 4;        // CLOCK_REALTIME's offset lies within the bounds
inline constexpr std::uint8_t kProcessContradicted = 8;  // the flows admit no offset

// Packed records (docs/file-format.md, "Chunks"): unsigned LEB128 varints (at most ten
// bytes) and zigzag for signed values. The writer, the encoder of a stream and merge pack
// with these.
inline char* put_varint(char* p, std::uint64_t v) noexcept {
  for (; v >= 0x80; v >>= 7) *p++ = static_cast<char>(v | 0x80);
  *p++ = static_cast<char>(v);
  return p;
}
inline std::uint64_t zigzag(std::int64_t v) noexcept {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
inline std::uint64_t unzigzag(std::uint64_t v) noexcept { return (v >> 1) ^ (~(v & 1) + 1); }
// A packed record's time: the zigzag varint of its ticks less the chunk's previous
// record's (`last`, moved on).
inline char* put_time(char* p, std::uint64_t ticks, std::uint64_t& last) noexcept {
  p = put_varint(p, zigzag(static_cast<std::int64_t>(ticks - last)));
  last = ticks;
  return p;
}

// An unsigned LEB128 varint at p; false at `end` or past ten bytes. Most are one byte
// (headers of the first sites, deltas of nearby ticks): that case first.
inline bool get_varint(const unsigned char*& p, const unsigned char* end, std::uint64_t& v) noexcept {
  if (p != end && *p < 0x80) [[likely]] {
    v = *p++;
    return true;
  }
  v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (p == end) return false;
    const unsigned char b = *p++;
    v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

inline void put_varint(std::string& out, std::uint64_t v) {
  char bytes[10];
  out.append(bytes, static_cast<std::size_t>(put_varint(bytes, v) - bytes));
}

// Little-endian field writers (x86-64 and every target ringtrace runs on is little-endian).
inline void put_u8(std::string& out, std::uint8_t v) { out.push_back(static_cast<char>(v)); }
inline void put_u16(std::string& out, std::uint16_t v) { out.append(reinterpret_cast<const char*>(&v), 2); }
inline void put_u32(std::string& out, std::uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
inline void put_u64(std::string& out, std::uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }
inline void put_f64(std::string& out, double v) { out.append(reinterpret_cast<const char*>(&v), 8); }
inline void put_str(std::string& out, std::string_view s) {
  put_u32(out, static_cast<std::uint32_t>(s.size()));
  out.append(s);
}

}  // namespace ringtrace::detail::trace_file
