// What report and info say about a recording's allocations (Config::memory,
// `ringtrace record --memory`): the summary lines, the blocks still live at the end, and
// where the memory went (report --memory: allocation sites and sampled stacks). Bytes as
// the key-averages table writes them (PyTorch's _format_memory: 1024-based KB, MB, GB).
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <string>

#include "commands.hpp"
#include "report_text.hpp"  // exporters/common: format_memory, the table's unit rule
#include "ringtrace/stats.hpp"

namespace ringtrace::tool {

namespace {

std::string memory(std::uint64_t bytes) { return detail::report::format_memory(static_cast<std::int64_t>(bytes)); }
std::string estimate(double bytes) { return "~" + memory(static_cast<std::uint64_t>(bytes < 0 ? 0 : bytes + 0.5)); }
std::string count(std::uint64_t n, const char* one, const char* many) {
  return thousands(n) + " " + (n == 1 ? one : many);
}

void add_note(std::string& notes, const std::string& note) {
  if (!note.empty()) notes += (notes.empty() ? "" : "; ") + note;
}

// What the recording counted and did not follow, by cause ("" when nothing).
std::string left_out_line(const MemoryStats& m) {
  std::string notes;
  const auto cause = [&](const MemoryStats::LeftOut& l, const char* where) {
    if (l.events() == 0) return;
    std::string what;
    if (l.allocations != 0) what = count(l.allocations, "allocation", "allocations") + " (" + memory(l.bytes) + ")";
    if (l.frees != 0) what += (what.empty() ? "" : " and ") + count(l.frees, "free", "frees");
    add_note(notes, what + " " + where);
  };
  cause(m.nested, "in signal handlers that interrupted ringtrace's own slow path");
  cause(m.after_exit, "after their threads' last pthread key destructors");
  cause(m.dropped, "dropped with their rings full (--policy drop)");
  return notes.empty() ? std::string() : "Memory, not recorded (counted): " + notes + "\n";
}

// What the live heap leaves out of what was recorded ("" when nothing).
std::string not_in_heap_line(const MemoryStats& m) {
  std::string notes;
  if (m.frees_unmatched != 0) {
    const bool unrecorded = m.nested.allocations + m.after_exit.allocations + m.dropped.allocations != 0;
    std::string note = count(m.frees_unmatched, "free", "frees") + " of blocks whose allocation the recording did " +
                       "not see (allocated before it" + (unrecorded ? ", or among those not recorded above" : "") +
                       (m.untracked_blocks != 0 ? ", or past the accounting's limit" : "") + ")";
    if (m.frees_size_unknown != 0) note += ", " + thousands(m.frees_size_unknown) + " of them of unknown size";
    add_note(notes, note);
  }
  if (m.untracked_blocks != 0) {
    add_note(notes, count(m.untracked_blocks, "block", "blocks") +
                        " past the accounting's limit (Config::memory_max_blocks), its free then of unknown size");
  }
  if (m.lost_frees != 0) {
    add_note(notes, count(m.lost_frees, "allocation", "allocations") +
                        " at an address still live (the block's free was not recorded: taken as freed then)");
  }
  return notes.empty() ? std::string() : "Memory, not in the live heap: " + notes + "\n";
}

}  // namespace

std::string memory_summary(const MemoryStats& m, std::uint64_t start_ns, std::size_t processes) {
  if (!m.known) return {};
  std::string out = "Memory: " + count(m.allocations, "allocation", "allocations") + " (" + memory(m.allocated_bytes) +
                    "), " + count(m.frees, "free", "frees") + " (" + memory(m.freed_bytes) + ")";
  if (m.peak_live_bytes != 0) {
    out += ", peak " + memory(m.peak_live_bytes) + (processes > 1 ? " live in the processes together" : " live") +
           " at " + duration(m.peak_time_ns >= start_ns ? m.peak_time_ns - start_ns : 0) + " after the start";
  }
  if (m.blocks_known) {
    out += "; still live at the end: " + count(m.live_blocks, "block", "blocks") + " (" + memory(m.live_bytes) + ")\n";
  } else {
    out += "; live at the end by the events' sizes: " + memory(m.live_bytes) +
           " (which blocks: unknown, this file carries sizes and no addresses)\n";
  }
  return out + left_out_line(m) + not_in_heap_line(m);
}

std::string leaks_table(const MemoryStats& m, std::size_t rows) {
  if (!m.known) return "No allocations in this recording (record with ringtrace record --memory)\n";
  if (!m.blocks_known) {
    return "Leaks: unknown: this file (a window's, a snapshot's or a conversion's) carries the allocations' sizes "
           "and no addresses; the recording's own file has them\n";
  }
  std::uint64_t blocks = 0, bytes = 0;
  bool processes = false, sites = false;
  for (const MemoryStats::Leak& l : m.leaks) {
    blocks += l.blocks;
    bytes += l.bytes;
    processes = processes || l.pid != 0;
    sites = sites || l.site != 0;
  }
  std::string out = "Leaks: " + count(blocks, "block", "blocks") + " (" + memory(bytes) +
                    ") still live at the end, by the zones " + (sites ? "and the function " : "") +
                    "that allocated them, largest first";
  if (const std::uint64_t unseen = m.nested.frees + m.after_exit.frees + m.dropped.frees; unseen != 0) {
    out += "; " + count(unseen, "free was", "frees were") + " not recorded (above): as many of them may not be leaks";
  }
  out += "\n";
  if (m.leaks.empty()) return out;
  const std::size_t shown = rows == 0 || rows > m.leaks.size() ? m.leaks.size() : rows;
  using C = Columns::Column;
  std::vector<C> columns = {{Columns::Align::right}, {Columns::Align::right}};
  std::vector<std::string> header = {"bytes", "blocks"};
  if (processes) {
    columns.push_back({Columns::Align::right});
    header.emplace_back("process");
  }
  columns.push_back({});
  header.emplace_back("zones (outermost first)");
  if (sites) {
    columns.push_back({});
    header.emplace_back("allocated by");
  }
  Columns table(columns);
  table.add(header);
  for (std::size_t i = 0; i < shown; ++i) {
    const MemoryStats::Leak& l = m.leaks[i];
    std::vector<std::string> row = {thousands(l.bytes), thousands(l.blocks)};  // exact
    if (processes) row.push_back(std::to_string(l.pid));
    row.push_back(l.stack);
    if (sites) row.push_back(l.site == 0 ? "(unknown)" : l.function);
    table.add(std::move(row));
  }
  out += table.text("");
  if (shown < m.leaks.size()) {
    out += "Groups shown: " + std::to_string(shown) + " of " + std::to_string(m.leaks.size()) + "\n";
  }
  return out;
}

namespace {

// One function's allocation sites added up.
struct FunctionMemory {
  std::string function;
  std::string location;  // its site of most bytes
  std::uint64_t location_bytes = 0;
  std::uint64_t sites = 0, allocations = 0, bytes = 0, peak = 0, leaked = 0;
};

std::vector<FunctionMemory> by_function(const MemoryStats& m) {
  std::map<std::string, FunctionMemory> functions;
  for (const MemoryStats::Site& s : m.sites) {
    char hex[24];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(s.address));
    const std::string name = s.function.empty() ? std::string(hex) : s.function;
    FunctionMemory& f = functions[name];
    f.function = name;
    f.sites += 1;
    f.allocations += s.allocations;
    f.bytes += s.bytes;
    f.peak += s.peak_bytes;
    f.leaked += s.leaked_bytes;
    if (s.bytes >= f.location_bytes) {
      f.location_bytes = s.bytes;
      f.location = s.location;
    }
  }
  std::vector<FunctionMemory> out;
  for (auto& [name, f] : functions) out.push_back(std::move(f));
  return out;
}

std::string function_table(std::vector<FunctionMemory> fs, const char* title,
                           const std::function<std::uint64_t(const FunctionMemory&)>& key, std::size_t rows) {
  std::stable_sort(fs.begin(), fs.end(), [&](const FunctionMemory& a, const FunctionMemory& b) {
    return key(a) != key(b) ? key(a) > key(b) : a.function < b.function;
  });
  while (!fs.empty() && key(fs.back()) == 0) fs.pop_back();
  if (rows != 0 && fs.size() > rows) fs.resize(rows);
  std::string out = std::string(title) + "\n";
  if (fs.empty()) return out + "  (none)\n";
  const Columns::Column right{Columns::Align::right};
  Columns table({right, right, right, right, {Columns::Align::left, 80}, {}});
  table.add({"bytes", "calls", "peak bytes", "leaked bytes", "function", "at"});
  for (const FunctionMemory& f : fs) {
    table.add({thousands(f.bytes), thousands(f.allocations), thousands(f.peak), thousands(f.leaked), f.function,
               f.location + (f.sites > 1 ? " (+" + std::to_string(f.sites - 1) + " more sites)" : "")});
  }
  return out + table.text("  ");
}

std::string stacks_table(std::vector<MemoryStats::Stack> stacks, const char* title,
                         const std::function<double(const MemoryStats::Stack&)>& key, std::size_t rows) {
  std::stable_sort(stacks.begin(), stacks.end(),
                   [&](const MemoryStats::Stack& a, const MemoryStats::Stack& b) { return key(a) > key(b); });
  while (!stacks.empty() && key(stacks.back()) <= 0) stacks.pop_back();
  if (rows != 0 && stacks.size() > rows) stacks.resize(rows);
  std::string out = std::string(title) + "\n";
  if (stacks.empty()) return out + "  (none)\n";
  for (const MemoryStats::Stack& s : stacks) {
    out += "  " + estimate(s.bytes) + " in ~" + thousands(static_cast<std::uint64_t>(s.calls + 0.5)) + " calls (" +
           count(s.samples, "sample", "samples") + "), ~" + memory(static_cast<std::uint64_t>(s.peak_bytes + 0.5)) +
           " at the peak, ~" + memory(static_cast<std::uint64_t>(s.leaked_bytes + 0.5)) + " leaked:\n";
    for (std::size_t f = 0; f < s.frames.size(); ++f) {
      const std::string name = f < s.functions.size() && !s.functions[f].empty() ? s.functions[f] : "?";
      out += "      " + name + "\n";
    }
  }
  return out;
}

}  // namespace

std::string memory_report(const MemoryStats& m, std::uint64_t start_ns, std::size_t processes, std::size_t rows) {
  if (!m.known) return "No allocations in this recording (record with ringtrace record --memory)\n";
  std::string out = memory_summary(m, start_ns, processes) + "\n";
  if (m.sites.empty()) {
    return out + "No allocation sites: " +
           (m.blocks_known ? "this recording's allocations carry no callers (format 2.3 or older)"
                           : "this file carries the allocations' sizes only") +
           "\n";
  }
  const std::vector<FunctionMemory> fs = by_function(m);
  out += "Allocation sites: " + count(m.sites.size(), "site", "sites") + " in " +
         count(fs.size(), "function", "functions") +
         " (each allocation's caller, past operator new: exact bytes; \"peak\" is a function's part of the heap's "
         "peak)\n\n";
  out += function_table(
             fs, "Memory by allocating function, by bytes allocated:", [](const FunctionMemory& f) { return f.bytes; },
             rows) +
         "\n";
  out +=
      function_table(
          fs, "Memory by allocating function, by calls:", [](const FunctionMemory& f) { return f.allocations; }, rows) +
      "\n";
  out += function_table(
             fs, "Memory by allocating function, by peak contribution:", [](const FunctionMemory& f) { return f.peak; },
             rows) +
         "\n";
  out += function_table(
             fs, "Memory by allocating function, by leaked bytes (still live at the end):",
             [](const FunctionMemory& f) { return f.leaked; }, rows) +
         "\n";
  if (m.blocks_known) {
    out += "Leaked: " + thousands(m.live_bytes) + " bytes in " + count(m.live_blocks, "block", "blocks") + "\n";
  }
  if (m.stack_bytes == 0) {
    return out +
           "\nNo sampled stacks (record with --memory-stacks for the call stacks of a sample of the "
           "allocations)\n";
  }
  out += "\nSampled stacks: " + count(m.stacks.size(), "stack", "stacks") + ", one allocation in every " +
         memory(m.stack_bytes) + " allocated on average, by the " + m.stack_method +
         "; bytes and calls are estimates weighed from the samples (~)\n\n";
  out += stacks_table(
             m.stacks, "Stacks of most bytes allocated:", [](const auto& s) { return s.bytes; },
             rows == 0 ? 0 : std::min<std::size_t>(rows, 10)) +
         "\n";
  out += stacks_table(
      m.stacks, "Stacks of most bytes leaked:", [](const auto& s) { return s.leaked_bytes; },
      rows == 0 ? 0 : std::min<std::size_t>(rows, 10));
  return out;
}

}  // namespace ringtrace::tool
