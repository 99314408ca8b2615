// What report and info say about a recording's allocations (Config::memory,
// `ringtrace record --memory`): the summary line and the blocks still live at the end.
#include <algorithm>
#include <string>

#include "commands.hpp"
#include "ringtrace/stats.hpp"

namespace ringtrace::tool {

std::string memory_summary(const MemoryStats& m, std::uint64_t start_ns) {
  if (!m.known) return {};
  std::string out = "Memory: " + thousands(m.allocations) + " allocations (" + byte_size(m.allocated_bytes) + "), " +
                    thousands(m.frees) + " frees (" + byte_size(m.freed_bytes) + ")";
  if (m.peak_live_bytes != 0) {
    out += ", peak " + byte_size(m.peak_live_bytes) + " live at " +
           duration(m.peak_time_ns >= start_ns ? m.peak_time_ns - start_ns : 0) + " after the start";
  }
  out += "; still live at the end: " + thousands(m.live_blocks) + " blocks (" + byte_size(m.live_bytes) + ")\n";
  std::string notes;
  const auto note = [&](std::uint64_t n, const char* what) {
    if (n != 0) notes += (notes.empty() ? "" : ", ") + thousands(n) + " " + what;
  };
  note(m.frees_unmatched, "frees of blocks allocated before the recording");
  note(m.frees_size_unknown, "of them of unknown size");
  note(m.untracked_blocks, "blocks past the accounting's limit (Config::memory_max_blocks)");
  note(m.lost_frees, "frees lost (dropped events)");
  note(m.unrecorded_nested, "allocations inside ringtrace's own slow path (not recorded)");
  if (!notes.empty()) out += "Memory, not in the live heap: " + notes + "\n";
  return out;
}

std::string leaks_table(const MemoryStats& m, std::size_t rows) {
  if (!m.known) return "No allocations in this recording (record with ringtrace record --memory)\n";
  std::uint64_t blocks = 0, bytes = 0;
  for (const MemoryStats::Leak& l : m.leaks) {
    blocks += l.blocks;
    bytes += l.bytes;
  }
  std::string out = "Leaks: " + thousands(blocks) + " blocks (" + thousands(bytes) +
                    " bytes) still live at the end, by the zones that allocated them, largest first\n";
  if (m.leaks.empty()) return out;
  const std::size_t shown = rows == 0 || rows > m.leaks.size() ? m.leaks.size() : rows;
  std::string text;
  const auto cell = [](const std::string& s, std::size_t width) {
    return std::string(s.size() < width ? width - s.size() : 0, ' ') + s;
  };
  std::size_t bytes_width = 5, blocks_width = 6;  // "bytes", "blocks"
  for (std::size_t i = 0; i < shown; ++i) {
    bytes_width = std::max(bytes_width, thousands(m.leaks[i].bytes).size());
    blocks_width = std::max(blocks_width, thousands(m.leaks[i].blocks).size());
  }
  out += cell("bytes", bytes_width) + "  " + cell("blocks", blocks_width) + "  zones (outermost first)\n";
  for (std::size_t i = 0; i < shown; ++i) {
    const MemoryStats::Leak& l = m.leaks[i];
    out +=
        cell(thousands(l.bytes), bytes_width) + "  " + cell(thousands(l.blocks), blocks_width) + "  " + l.stack + "\n";
  }
  if (shown < m.leaks.size()) {
    out += "Stacks shown: " + std::to_string(shown) + " of " + std::to_string(m.leaks.size()) + "\n";
  }
  return out;
}

}  // namespace ringtrace::tool
