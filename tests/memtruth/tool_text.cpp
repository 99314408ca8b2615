// The ground truth's reader (truth.hpp), its second half: what the `ringtrace` tool prints
// (dump, info, report, report --leaks, the table), parsed from its text alone.
#include "truth.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

extern char** environ;

namespace memtruth {

// --- dump ---

namespace {

struct DumpLine {
  std::uint64_t pid = 0, tid = 0;
  std::string kind, name;
  std::map<std::string, std::string> fields;
  std::set<std::string> flags;
};

bool parse_dump_line(const std::string& line, DumpLine& out) {
  std::istringstream words(line);
  std::string time;
  if (!(words >> time >> out.pid >> out.tid >> out.kind)) return false;
  std::size_t at = line.find('"');
  if (at == std::string::npos) return false;
  std::size_t k = at + 1;
  for (; k < line.size() && line[k] != '"'; ++k) {
    if (line[k] == '\\' && k + 1 < line.size()) {
      ++k;
      if (line[k] == 'x' && k + 2 < line.size()) {
        out.name += static_cast<char>(std::strtoul(line.substr(k + 1, 2).c_str(), nullptr, 16));
        k += 2;
        continue;
      }
    }
    out.name += line[k];
  }
  std::istringstream rest(k + 1 < line.size() ? line.substr(k + 1) : std::string());
  std::string w;
  while (rest >> w) {
    const std::size_t eq = w.find('=');
    if (eq == std::string::npos) {
      out.flags.insert(w);
    } else {
      out.fields[w.substr(0, eq)] = w.substr(eq + 1);
    }
  }
  return true;
}

// `restored`: the allocation record a failed realloc writes (docs/file-format.md): the
// block is live again, its free just before undone.
void add(ZoneBytes& z, bool alloc, std::uint64_t bytes, bool unknown, bool restored = false) {
  if (restored) {
    z.frees -= 1;
    z.free_bytes -= bytes;
  } else if (alloc) {
    z.allocs += 1;
    z.alloc_bytes += bytes;
  } else {
    z.frees += 1;
    z.free_bytes += bytes;
    z.frees_size_unknown += unknown ? 1 : 0;
  }
}

}  // namespace

DumpMemory memory_of_dump(const std::string& dump, const std::vector<std::uint64_t>& tids) {
  DumpMemory m;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<std::string>> open;
  std::istringstream in(dump);
  std::string line;
  while (std::getline(in, line)) {
    DumpLine e;
    if (!parse_dump_line(line, e)) continue;
    ++m.events;
    if (e.kind == "dropped") m.dropped += std::strtoull(e.fields["count"].c_str(), nullptr, 10);
    if (!tids.empty() && std::find(tids.begin(), tids.end(), e.tid) == tids.end()) continue;
    auto& stack = open[{e.pid, e.tid}];
    if (e.kind == "zone_begin") {
      stack.push_back(e.name);
    } else if (e.kind == "zone_end") {
      if (!stack.empty()) stack.pop_back();
    } else if (e.kind == "alloc" || e.kind == "free") {
      const bool alloc = e.kind == "alloc";
      const std::uint64_t bytes = std::strtoull(e.fields["bytes"].c_str(), nullptr, 10);
      const bool unknown = e.flags.count("size_unknown") != 0;
      const bool restored = alloc && e.flags.count("restored") != 0;
      add(m.self[stack.empty() ? std::string() : stack.back()], alloc, bytes, unknown, restored);
      std::set<std::string> seen;
      for (const std::string& z : stack) {
        if (seen.insert(z).second) add(m.within[z], alloc, bytes, unknown, restored);
      }
      add(m.by_thread[e.tid], alloc, bytes, unknown, restored);
      add(m.by_process[e.pid], alloc, bytes, unknown, restored);
      add(m.all, alloc, bytes, unknown, restored);
      if (restored) {
        --m.free_sizes[bytes];
      } else {
        ++(alloc ? m.alloc_sizes : m.free_sizes)[bytes];
      }
    }
  }
  return m;
}

// --- info and report ---

namespace {

bool has(const std::string& s, const char* word) { return s.find(word) != std::string::npos; }

// The memory lines of info ("memory:" and the indented lines after it) or of report
// ("Memory..." lines).
std::vector<std::string> memory_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  bool in_info_block = false;
  while (std::getline(in, line)) {
    if (line.rfind("memory:", 0) == 0 || line.rfind("Memory", 0) == 0) {
      out.push_back(line);
      in_info_block = line.rfind("memory:", 0) == 0;
      continue;
    }
    if (in_info_block && !line.empty() && line[0] == ' ') {
      out.push_back(line);
      continue;
    }
    in_info_block = false;
  }
  return out;
}

}  // namespace

std::uint64_t MemorySummary::left_out_allocations() const {
  std::uint64_t n = 0;
  for (const LeftOut& l : left_out) n += l.frees ? 0 : l.count;
  return n;
}

std::uint64_t MemorySummary::left_out_frees() const {
  std::uint64_t n = 0;
  for (const LeftOut& l : left_out) n += l.frees ? l.count : 0;
  return n;
}

MemorySummary memory_summary(const std::string& text) {
  MemorySummary m;
  m.lines = memory_lines(text);
  if (m.lines.empty()) return m;
  std::string all;
  for (const std::string& l : m.lines) all += l + "\n";
  m.present = true;
  std::smatch match;
  if (std::regex_search(all, match, std::regex(R"(([\d,]+) allocations \(([^)]*)\))"))) {
    m.allocations = number(match[1]);
    m.allocated_text = match[2];
  }
  if (std::regex_search(all, match, std::regex(R"(([\d,]+) frees \(([^)]*)\))"))) {
    m.frees = number(match[1]);
    m.freed_text = match[2];
  }
  if (std::regex_search(all, match, std::regex(R"(peak (-?[\d.,]+ \w+))"))) m.peak_text = match[1];
  if (std::regex_search(all, match, std::regex(R"(still live at the end: ([\d,]+) blocks \(([^)]*)\))"))) {
    m.live_blocks = number(match[1]);
    m.live_text = match[2];
  }
  // Every other clause: the text after the first line's totals, split at ',' ';' and
  // line ends, each starting with a count.
  std::string rest;
  for (std::size_t i = 0; i < m.lines.size(); ++i) {
    std::string l = m.lines[i];
    if (i == 0) {
      const std::size_t live = l.find("still live at the end");
      if (live == std::string::npos) continue;
      const std::size_t after = l.find(';', live);
      l = after == std::string::npos ? "" : l.substr(after + 1);
    }
    // A line's label ("Memory, not in the live heap: ", "             not in the live heap: "):
    // the words before ": " when they hold no digit.
    const std::size_t colon = l.find(": ");
    if (colon != std::string::npos && l.find_first_of("0123456789") > colon) l = l.substr(colon + 2);
    rest += l + ";";
  }
  // Clauses end at ", " or ";" outside parentheses (a count's own "12,064" stays whole).
  std::string clause;
  int depth = 0;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    const char c = rest[i];
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    const bool end = c == ';' || (c == ',' && i + 1 < rest.size() && rest[i + 1] == ' ');
    if (depth == 0 && end) {
      std::smatch cm;
      if (std::regex_search(clause, cm, std::regex(R"(^\s*([\d][\d,]*)\s+(.*\S)\s*$)"))) {
        const std::string what = cm[2];
        const std::uint64_t n = number(cm[1]);
        const auto left = [&](std::uint64_t count, bool frees) {
          LeftOut l;
          l.clause = cm[0];
          l.count = count;
          l.frees = frees;
          std::smatch bm;
          if (!frees && std::regex_search(what, bm, std::regex(R"(\(([\d,]+) bytes\))"))) l.bytes = number(bm[1]);
          m.left_out.push_back(l);
        };
        std::smatch am;
        if (has(what, "whose allocation the recording did not see") || has(what, "before the recording")) {
          // recorded frees the heap could not match: not left out; said to be of blocks from
          // before the recording only when no other cause is named
          (has(what, ", or ") ? m.frees_unmatched : m.frees_before_recording) += n;
        } else if (has(what, "past the accounting's limit")) {
          // blocks the heap did not follow: missing from the leaks, their frees of unknown size
          m.untracked_blocks += n;
          left(n, false);
          left(n, true);
        } else if (has(what, "of unknown size")) {
          // a kind of the frees above, not a count of its own
        } else if (has(what, "at an address still live") || has(what, "frees lost")) {
          // allocations whose address's earlier free was not recorded: that many frees lost
          m.lost_frees += n;
          left(n, true);
        } else if (what.rfind("allocation", 0) == 0 &&
                   std::regex_search(what, am, std::regex(R"(\) and ([\d,]+) frees? )"))) {
          // "N allocations (size) and M frees <cause>": both counted
          left(n, false);
          left(number(am[1]), true);
        } else {
          left(n, what.rfind("free", 0) == 0);
        }
      }
      clause.clear();
      continue;
    }
    clause += c;
  }
  return m;
}

// --- leaks ---

std::pair<std::uint64_t, std::uint64_t> Leaks::in_zone(const std::string& zone) const {
  std::pair<std::uint64_t, std::uint64_t> out{0, 0};
  for (const LeakRow& r : rows) {
    if (std::find(r.zones.begin(), r.zones.end(), zone) == r.zones.end()) continue;
    out.first += r.bytes;
    out.second += r.blocks;
  }
  return out;
}

Leaks leaks_of(const std::string& text) {
  Leaks l;
  std::istringstream in(text);
  std::string line;
  bool rows = false;
  std::size_t zones_at = std::string::npos, site_at = std::string::npos, process_at = std::string::npos;
  while (std::getline(in, line)) {
    std::smatch m;
    if (line.rfind("Leaks:", 0) == 0) {
      l.present = true;
      l.unknown = has(line, "unknown");
      // "Leaks: N blocks (size) still live ...": the size is rounded; the exact bytes are
      // the rows' sum (every row is shown unless "Groups shown" says otherwise).
      if (std::regex_search(line, m, std::regex(R"(Leaks: ([\d,]+) blocks?)"))) l.blocks = number(m[1]);
      continue;
    }
    if (l.present && !rows && has(line.c_str(), "bytes") && has(line.c_str(), "blocks")) {
      rows = true;
      zones_at = line.find("zones (outermost first)");
      site_at = line.find("allocated by");
      process_at = line.find("process");
      continue;
    }
    if (!rows) continue;
    if (zones_at == std::string::npos ||
        !std::regex_search(line, m, std::regex(R"(^\s*([\d,]+)\s+([\d,]+)\s\s(.*)$)"))) {
      rows = false;
      continue;
    }
    LeakRow r;
    r.bytes = number(m[1]);
    r.blocks = number(m[2]);
    l.bytes += r.bytes;
    // The columns after the numbers are left-aligned under their headers.
    const auto trimmed = [](std::string s) {
      while (!s.empty() && s.back() == ' ') s.pop_back();
      return s;
    };
    r.rest = trimmed(line.size() > zones_at
                         ? line.substr(zones_at, site_at == std::string::npos ? std::string::npos : site_at - zones_at)
                         : std::string());
    if (site_at != std::string::npos && line.size() > site_at) r.site = trimmed(line.substr(site_at));
    if (process_at != std::string::npos) {  // right-aligned, ending under "process"'s end
      const std::size_t end = process_at + 7;
      const std::size_t begin = line.find_last_of(' ', end - 1);
      if (begin != std::string::npos && begin < end) r.process = line.substr(begin + 1, end - begin - 1);
    }
    for (std::size_t from = 0;;) {
      const std::size_t at = r.rest.find("; ", from);
      r.zones.push_back(r.rest.substr(from, at == std::string::npos ? std::string::npos : at - from));
      if (at == std::string::npos) break;
      from = at + 2;
    }
    l.rows.push_back(r);
  }
  return l;
}

// --- tables ---

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::string trimmed(const std::string& s) {
  const std::size_t a = s.find_first_not_of(' ');
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(' ') - a + 1);
}

}  // namespace

std::optional<std::string> table_cell(const std::string& table, const std::string& row, const std::string& column) {
  const std::vector<std::string> lines = lines_of(table);
  for (std::size_t h = 0; h < lines.size(); ++h) {
    const std::string& header = lines[h];
    const std::size_t at = header.find("  " + column);
    if (header.rfind("Name", 0) != 0 || at == std::string::npos) continue;
    const std::size_t end = at + 2 + column.size();  // right-aligned: the cell ends where its header does
    // The column before ends where this one's header text begins, less its padding.
    std::size_t begin = header.rfind("  ", at) == std::string::npos ? 0 : at;
    while (begin > 0 && header[begin - 1] == ' ') --begin;
    for (std::size_t r = h + 1; r < lines.size(); ++r) {
      const std::string& line = lines[r];
      if (line.rfind(row + " ", 0) != 0 || line.size() < end) continue;
      return trimmed(line.substr(begin, end - begin));
    }
  }
  return std::nullopt;
}

std::optional<std::string> csv_cell(const std::string& csv, const std::string& row, const std::string& column) {
  const std::vector<std::string> lines = lines_of(csv);
  if (lines.empty()) return std::nullopt;
  const std::vector<std::string> header = csv_fields(lines[0]);
  const auto col = std::find(header.begin(), header.end(), column);
  if (col == header.end()) return std::nullopt;
  const std::size_t k = static_cast<std::size_t>(col - header.begin());
  for (std::size_t r = 1; r < lines.size(); ++r) {
    const std::vector<std::string> fields = csv_fields(lines[r]);
    if (!fields.empty() && fields[0] == row && k < fields.size()) return fields[k];
  }
  return std::nullopt;
}

// --- truth lines ---

std::vector<std::vector<std::pair<std::string, std::string>>> truth_lines(const std::string& out) {
  std::vector<std::vector<std::pair<std::string, std::string>>> all;
  for (const std::string& line : lines_of(out)) {
    if (line.rfind("truth ", 0) != 0) continue;
    std::istringstream words(line.substr(6));
    std::vector<std::pair<std::string, std::string>> pairs;
    std::string w;
    while (words >> w) {
      const std::size_t eq = w.find('=');
      pairs.emplace_back(w.substr(0, eq), eq == std::string::npos ? "" : w.substr(eq + 1));
    }
    all.push_back(pairs);
  }
  return all;
}

std::optional<std::string> truth_value(const std::string& out, const std::string& key, const std::string& with,
                                       const std::string& value) {
  for (const auto& pairs : truth_lines(out)) {
    bool match = with.empty();
    for (const auto& [k, v] : pairs) match = match || (k == with && v == value);
    if (!match) continue;
    for (const auto& [k, v] : pairs) {
      if (k == key) return v;
    }
  }
  return std::nullopt;
}

// --- sizes ---

std::optional<std::pair<double, double>> size_range(const std::string& text) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(R"((-?[\d,]+(?:\.(\d+))?)\s*(B|bytes|kB|KB|KiB|MB|MiB|GB|GiB|K|M|G)\b)")))
    return std::nullopt;
  std::string digits = m[1];
  digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
  const double v = std::stod(digits);
  const std::string unit = m[3];
  const double scale = unit == "B" || unit == "bytes"                 ? 1
                       : unit == "kB"                                 ? 1e3
                       : unit == "KB" || unit == "KiB" || unit == "K" ? 1024.0
                       : unit == "MB" || unit == "MiB" || unit == "M" ? 1024.0 * 1024
                                                                      : 1024.0 * 1024 * 1024;
  const double half = m[2].matched ? 0.5 * std::pow(10.0, -static_cast<double>(m[2].length())) : 0.5;
  return std::make_pair((v - half) * scale, (v + half) * scale);
}

std::string format_1024(std::int64_t bytes) {
  constexpr double kKB = 1024, kMB = kKB * 1024, kGB = kMB * 1024;
  const double v = static_cast<double>(bytes);
  const double a = std::fabs(v);
  char text[64];
  if (a >= kGB) {
    std::snprintf(text, sizeof text, "%.2f GB", v / kGB);
  } else if (a >= kMB) {
    std::snprintf(text, sizeof text, "%.2f MB", v / kMB);
  } else if (a >= kKB) {
    std::snprintf(text, sizeof text, "%.2f KB", v / kKB);
  } else {
    std::snprintf(text, sizeof text, "%lld B", static_cast<long long>(bytes));
  }
  return text;
}

std::vector<std::string> size_units(const std::string& text) {
  std::vector<std::string> out;
  const std::regex size(R"((?:^|[\s(])-?\d[\d,]*(?:\.\d+)?\s?(kB|KB|KiB|MB|MiB|GB|GiB)\b)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), size); it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

}  // namespace memtruth
