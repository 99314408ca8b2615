// Reading the rings a recording kept in a file (BinaryTraceOptions::rings_in_file;
// runtime/live/ring_file.hpp, runtime/core/ring_layout.hpp, docs/file-format.md "The
// ring file") after the trace file ended early: each thread's records from where the
// file's end (its ring position: the ring bytes of the records read for it) to where its
// writer had got. They are ring records with call-site addresses; each address becomes
// its index in the file (a call site first used after the drainer's last pass, whose
// name was in the dead process's memory, a placeholder), and the one decoder takes them
// as it takes a chunk's.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "file_paths.hpp"  // open_input
#include "packed_records.hpp"
#include "ring_layout.hpp"
#include "ring_records.hpp"
#include "section.hpp"

namespace ringtrace::detail {

namespace {
// The largest ring a writer makes: Config::buffer_records is clamped to 2^30 records of
// 16 bytes (ring_bytes_for, in the live runtime).
constexpr std::uint64_t kMaxRingBytes = std::uint64_t{1} << 34;
}  // namespace

void Section::recover() {
  namespace rf = ring_file;
  std::error_code missing;
  if (!std::filesystem::exists(rings_path_, missing)) return;  // no ring file: nothing to add
  std::FILE* file = nullptr;
  try {
    file = ::fdopen(open_input(rings_path_), "rb");  // a regular file: never a FIFO that blocks
  } catch (const std::exception& e) {
    rings_note_ = std::string("ring file not read: ") + e.what();
    return;
  }
  if (file == nullptr) return;
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{file};
  // Another recording's file, or not a ring file: ignored. One whose header claims what
  // the file cannot hold, or what no writer writes: refused, before anything is read or
  // allocated for what it claims (issue 22: a crafted file claiming 2^30 records made
  // `ringtrace info` read a gigabyte and throw std::bad_alloc, naming no file). A slot
  // that lies: skipped, counted, the first one named.
  const auto ignored = [&](const std::string& why) { rings_note_ = "ring file " + rings_path_ + " ignored: " + why; };
  const auto refused = [&](const std::string& why) { rings_note_ = "ring file " + rings_path_ + " refused: " + why; };
  const auto number = [](std::uint64_t n) { return std::to_string(n); };
  std::fseek(file, 0, SEEK_END);
  const long end = std::ftell(file);
  if (end < 0) return ignored("cannot be read");
  const auto size = static_cast<std::uint64_t>(end);
  char header[48] = {};
  std::fseek(file, 0, SEEK_SET);
  if (std::fread(header, 1, sizeof header, file) != sizeof header || std::memcmp(header, rf::kMagic, 8) != 0) {
    return ignored("not a ringtrace ring file");
  }
  const auto field = [](const char* at, auto value) {
    std::memcpy(&value, at, sizeof value);
    return value;
  };
  if (field(header + 8, std::uint32_t{}) != rf::kVersion)
    return ignored("a ring file version this reader does not know");
  if (field(header + rf::kHeaderPidOffset, std::uint32_t{}) != meta_.pid ||
      field(header + rf::kHeaderStartOffset, std::uint64_t{}) != raw_start_ns_) {
    return ignored("it belongs to another recording");
  }
  const auto capacity = field(header + rf::kHeaderRingBytesOffset, std::uint64_t{});
  const auto slot_bytes = field(header + rf::kHeaderSlotBytesOffset, std::uint64_t{});
  const auto slots = field(header + rf::kHeaderSlotsOffset, std::uint64_t{});
  // Every length checked against the file's real size before anything is read for it.
  // The writer makes rings of 4 KB to 16 GB (ring_bytes_for), and allocates a slot on
  // disk before it counts it: the file always holds the slots its header counts.
  if (capacity < rf::kPage || capacity > kMaxRingBytes || (capacity & (capacity - 1)) != 0) {
    return refused("its header claims rings of " + number(capacity) +
                   " bytes (a ring is a power of two from 4096 bytes to 16 GiB)");
  }
  if (slot_bytes != rf::slot_bytes(capacity)) {
    return refused("its header claims slots of " + number(slot_bytes) + " bytes for rings of " + number(capacity) +
                   " bytes (a slot is a 4096-byte header and its ring)");
  }
  const std::uint64_t room = size < rf::kPage ? 0 : (size - rf::kPage) / slot_bytes;
  if (slots > room) {
    return refused("its header claims " + number(slots) + " slot(s) of " + number(slot_bytes) + " bytes; its " +
                   number(size) + " bytes hold " + number(room));
  }
  rings_read_ = true;
  const std::uint64_t mask = capacity - 1;
  // The ring read twice over, as the writer mapped it: a record that runs past the ring's
  // end reads whole. Sized when a slot is read: the file is then at least that long.
  std::vector<std::uint8_t> ring;
  std::uint64_t left_out = 0, overwritten = 0, damaged = 0;
  std::string first_damage;
  // A slot whose header says what the writer never writes: skipped, counted, the first
  // named. (A slot being bound has state 0 until its fields are written.)
  const auto skip = [&](std::uint64_t k, std::uint64_t at, const std::string& why) {
    if (damaged++ == 0) first_damage = "slot " + number(k) + " at byte " + number(at) + ": " + why;
  };
  for (std::uint64_t k = 0; k < slots; ++k) {
    const std::uint64_t at = rf::kPage + k * slot_bytes;
    char slot[rf::kSlotRingAddressOffset + 8];
    std::fseek(file, static_cast<long>(at), SEEK_SET);
    if (std::fread(slot, 1, sizeof slot, file) != sizeof slot) break;
    const auto state = field(slot + rf::kSlotStateOffset, std::uint32_t{});
    if (state == 0) continue;  // never bound, or being bound again
    if (state != rf::kSlotBound) {
      skip(k, at, "state " + number(state));
      continue;
    }
    const auto id = field(slot + rf::kSlotThreadOffset, std::uint32_t{});
    // Where the writer's next record would have gone, as a ring position.
    const auto next = field(slot + rf::kSlotNextOffset, std::uint64_t{});
    const auto lap_base = field(slot + rf::kSlotLapBaseOffset, std::uint64_t{});
    const auto ring_address = field(slot + rf::kSlotRingAddressOffset, std::uint64_t{});
    const auto name_bytes = field(slot + rf::kSlotNameBytesOffset, std::uint32_t{});
    // The writer's next byte is in the ring's two mappings (the hot path runs past the
    // first by less than a ring), its laps are whole rings, its name at most kMaxName.
    if (next < ring_address || next - ring_address >= 2 * capacity) {
      skip(k, at, "its write position is outside its ring");
      continue;
    }
    if (lap_base % capacity != 0 || lap_base > ~std::uint64_t{0} - 2 * capacity) {
      skip(k, at, "its lap (" + number(lap_base) + ") is not a whole number of rings");
      continue;
    }
    if (name_bytes > rf::kMaxName) {
      skip(k, at, "its name claims " + number(name_bytes) + " bytes");
      continue;
    }
    const std::uint64_t write = lap_base + (next - ring_address);
    // A thread the drainer had not seen yet: an id no thread of the file has.
    Thread& t = thread_of(id != rf::kUnknownThread ? id : 0x80000000u + static_cast<std::uint32_t>(k));
    if (!t.named) {
      ThreadInfo& info = tables_.threads[t.state.thread];
      info.os_tid = field(slot + rf::kSlotTidOffset, std::uint64_t{});
      info.name.assign(slot + rf::kSlotNameOffset, name_bytes);
      t.named = true;
    }
    const std::uint64_t from = t.ring_bytes;
    if (write <= from) continue;
    if (write - from > capacity) {
      ++overwritten;
      continue;
    }
    if (ring.empty()) ring.resize(2 * capacity);
    std::fseek(file, static_cast<long>(at + rf::kPage), SEEK_SET);
    if (std::fread(ring.data(), 1, capacity, file) != capacity) break;
    std::memcpy(ring.data() + capacity, ring.data(), capacity);
    // The records with their addresses turned into the file's indices, as a chunk's
    // unpack gives them; a value or text of a call site the file never described is left
    // out (what it is cannot be known).
    ring_.clear();
    std::uint64_t pos = from;
    while (pos < write) {
      const std::uint8_t* const record = ring.data() + (pos & mask);
      const std::uint64_t word = word_at(record, 0);
      if (word == 0) break;  // reserved, never written: nothing after it is whole
      const std::uint64_t n = ring_record_bytes(word, record, write - pos);
      if (n == 0) break;  // a kind this reader does not know, or torn: nothing after it can be read
      const RecordKind kind = kind_of(word);
      pos += n;
      // Extended records as they are (memory records: no address of the file's in them);
      // padding is nothing of the file's.
      if (kind == record_extended && extended_subtype(word) == extended_padding) continue;
      const std::size_t first = ring_.size();
      ring_.resize(first + n / 8);
      std::memcpy(ring_.data() + first, record, n);
      if (kind == record_zone_end || kind == record_dropped || kind == record_extended) continue;
      if (kind == record_function_entry) {
        // A function first called after the drainer's last pass: named from the module
        // whose range holds it (the recording's modules, as far as the file got).
        const std::uint64_t function = word >> kRecordAddressShift;
        auto [it, inserted] = function_index_by_address_.try_emplace(function, function_by_index_.size() + 1);
        if (inserted) {
          std::uint32_t module = 0;
          for (std::size_t i = 0; i < modules_.size(); ++i) {
            if (function >= modules_[i].low && function < modules_[i].high) module = static_cast<std::uint32_t>(i + 1);
          }
          function_by_index_.push_back(function_site(function, module, {}, {}, 0, false, false));
        }
        ring_[first] = trace_file::unpacked_header(kind, it->second);
        continue;
      }
      const std::uint64_t address = word & kRecordSiteMask;
      std::uint64_t index = 0;
      const auto it = index_by_address_.find(address);
      if (it != index_by_address_.end()) {
        index = it->second;
      } else if (kind == record_zone_begin || kind == record_region_begin || kind == record_instant) {
        // A placeholder named after its address (a region's id comes with it).
        char name[64];
        std::snprintf(name, sizeof name, "(call site 0x%llx)", static_cast<unsigned long long>(address));
        ReplaySite s;
        s.name = name;
        site_by_index_.push_back(
            tables_.add_site(std::move(s), 0, kind == record_instant ? SiteKind::instant : SiteKind::zone, 0, 1));
        index = site_by_index_.size();
        index_by_address_.emplace(address, index);
      } else {
        ++left_out;
        ring_.resize(first);
        continue;
      }
      ring_[first] = trace_file::unpacked_header(kind, index);
    }
    const std::uint64_t before = t.state.recorded;
    const std::string problem = meta_.problem;
    const bool decoded = decode_records(t, ring_, at);
    t.ring_bytes = pos;
    recovered_ += t.state.recorded - before;
    if (!decoded) {  // cannot happen (the records were checked above): never blame the trace file
      meta_.problem = problem;
      rings_note_ = std::to_string(recovered_) + " events recovered from " + rings_path_ + " up to slot " + number(k) +
                    " at byte " + number(at) + ", which holds a record this reader cannot read";
      return;
    }
  }
  rings_note_ = std::to_string(recovered_) + " events recovered from " + rings_path_;
  if (left_out > 0) {
    rings_note_ += " (" + std::to_string(left_out) +
                   " values or texts of call sites first used after the last drainer pass left out)";
  }
  if (overwritten > 0) {
    rings_note_ += "; " + std::to_string(overwritten) + " ring(s) no longer held what the file lacks";
  }
  if (damaged > 0) rings_note_ += "; " + number(damaged) + " damaged slot(s) skipped (" + first_damage + ")";
}

}  // namespace ringtrace::detail
