#include "memory_checker.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "truth.hpp"

namespace matrix {

namespace {

namespace fs = std::filesystem;
using memtruth::Counts;

// --- The workload's manifests (memory.<pid>.txt) ---

struct OwnWindow {
  bool known = false;
  Counts counts;
};

struct ProcessManifest {
  std::string role;
  std::uint64_t pid = 0;
  std::map<std::string, OwnWindow> windows;
  std::vector<std::int64_t> children;
  std::uint64_t exit_threads = 0, signal_runs = 0;
  std::map<std::string, std::uint64_t> stats;
  bool done = false;
};

ProcessManifest read_process_manifest(const fs::path& file) {
  ProcessManifest m;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string what;
    words >> what;
    if (what == "role") {
      words >> m.role;
    } else if (what == "pid") {
      words >> m.pid;
    } else if (what == "window") {
      std::string name, key;
      OwnWindow w;
      int known = 0;
      Counts& c = w.counts;
      words >> name >> key >> known >> key >> c.allocs >> key >> c.alloc_bytes >> key >> c.frees >> key >>
          c.free_bytes >> key >> c.live_blocks >> key >> c.live_bytes;
      w.known = known != 0;
      m.windows[name] = w;
    } else if (what == "child") {
      std::int64_t pid = 0;
      words >> pid;
      m.children.push_back(pid);
    } else if (what == "exit_threads") {
      words >> m.exit_threads;
    } else if (what == "signal_runs") {
      words >> m.signal_runs;
    } else if (what == "stats") {
      std::string key;
      std::uint64_t v = 0;
      while (words >> key >> v) m.stats[key] = v;
    } else if (what == "done") {
      m.done = true;
    }
  }
  return m;
}

// --- What ringtrace's files say of one process ---

struct Recorded {
  fs::path file;
  memtruth::DumpMemory dump;
  memtruth::MemorySummary info;
  memtruth::Leaks leaks;
  std::string leaks_text;
};

std::string run_tool(const MemoryTools& tools, const std::vector<std::string>& args, std::string* err = nullptr) {
  std::vector<std::string> argv = {tools.ringtrace};
  argv.insert(argv.end(), args.begin(), args.end());
  const memtruth::Run r = memtruth::run(argv);
  if (err) *err = r.status == 0 ? "" : "exit " + std::to_string(r.status) + ": " + r.err;
  return r.out;
}

Recorded read_recorded(const MemoryTools& tools, const fs::path& file) {
  Recorded r;
  r.file = file;
  r.dump = memtruth::memory_of_dump(run_tool(tools, {"dump", file.string()}));
  r.info = memtruth::memory_summary(run_tool(tools, {"info", file.string()}));
  r.leaks_text = run_tool(tools, {"report", file.string(), "--leaks", "--rows", "0"});
  r.leaks = memtruth::leaks_of(r.leaks_text);
  return r;
}

std::string text_of(const fs::path& file) {
  std::ifstream in(file);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// --- Comparisons ---

struct Checker {
  std::vector<std::string> lines;
  void fail(const std::string& where, const std::string& text) { lines.push_back(where + ": " + text); }
  void note(const std::string& text) { lines.push_back("note: " + text); }

  // `recorded` against `truth`: equal when nothing was said left out, else within it.
  void count(const std::string& where, const char* what, std::uint64_t recorded, std::uint64_t truth,
             std::uint64_t left_out, std::uint64_t dropped) {
    if (left_out == 0 && recorded == truth) return;
    if (left_out != 0 && recorded <= truth && truth - recorded <= left_out) return;
    std::string why = std::to_string(recorded) + " recorded, the truth " + std::to_string(truth);
    if (left_out != 0) {
      why += ", more apart than the " + std::to_string(left_out) + " the file says it left out";
    } else if (dropped != 0) {
      why += " (" + std::to_string(dropped) + " events dropped; the file does not say how many of them were " +
             "allocations or frees)";
    } else {
      why += " (the file says nothing was left out)";
    }
    fail(where, std::string(what) + ": " + why);
  }
  // Bytes: equal when nothing was said left out, else never more than the truth (the file
  // says how many it left out, not always how many bytes).
  void bytes(const std::string& where, const char* what, std::uint64_t recorded, std::uint64_t truth,
             std::uint64_t left_out, std::uint64_t dropped = 0) {
    if (left_out == 0 ? recorded == truth : recorded <= truth) return;
    const std::string why = left_out != 0  ? " (more than the truth)"
                            : dropped != 0 ? " (" + std::to_string(dropped) + " events dropped, none said of memory)"
                                           : " (the file says nothing was left out)";
    fail(where,
         std::string(what) + ": " + std::to_string(recorded) + " recorded, the truth " + std::to_string(truth) + why);
  }
  // Blocks still live at the end: an allocation left out can only take a block away, a
  // free left out can only leave one more (up to as many as were said left out).
  void live(const std::string& where, std::uint64_t blocks, std::uint64_t bytes, std::uint64_t truth_blocks,
            std::uint64_t truth_bytes, std::uint64_t left_allocs, std::uint64_t left_frees, std::uint64_t dropped) {
    const bool blocks_ok = blocks <= truth_blocks + left_frees && blocks + left_allocs >= truth_blocks;
    const bool bytes_ok = (left_allocs != 0 || bytes >= truth_bytes) && (left_frees != 0 || bytes <= truth_bytes);
    if (blocks_ok && bytes_ok) return;
    std::string why = std::to_string(blocks) + " blocks (" + std::to_string(bytes) + " B) recorded, the truth " +
                      std::to_string(truth_blocks) + " (" + std::to_string(truth_bytes) +
                      " B); the file says it left out " + std::to_string(left_allocs) + " allocations and " +
                      std::to_string(left_frees) + " frees";
    if (left_allocs + left_frees == 0 && dropped != 0) why += " (" + std::to_string(dropped) + " events dropped)";
    fail(where, "blocks still live at the end (report --leaks): " + why);
  }
};

// Which truth a window has: the counter's (checked against the workload's own count where
// that one is known), else the workload's own, else none.
std::optional<Counts> truth_of(const std::string& window, const OwnWindow& own, const memtruth::Snapshot* counted,
                               const std::string& where, Checker& c) {
  if (counted == nullptr) return own.known ? std::optional<Counts>(own.counts) : std::nullopt;
  const Counts k = counted->window(window);
  if (own.known) {
    const Counts& o = own.counts;
    // The thread-exit window stays open through the exit: the counter sees the C
    // library's frees there too; only what the workload made itself is compared.
    const bool exit_window = window == "mw_exit_keys";
    if (k.allocs != o.allocs || k.alloc_bytes != o.alloc_bytes || k.live_blocks != o.live_blocks ||
        k.live_bytes != o.live_bytes || (!exit_window && (k.frees != o.frees || k.free_bytes != o.free_bytes))) {
      c.fail(where,
             "the counting preload and the workload's own count disagree (a fault of the test, not of "
             "ringtrace): counter " +
                 std::to_string(k.allocs) + " allocs " + std::to_string(k.alloc_bytes) + " B, " +
                 std::to_string(k.frees) + " frees " + std::to_string(k.free_bytes) + " B, live " +
                 std::to_string(k.live_blocks) + "/" + std::to_string(k.live_bytes) + " B; own " +
                 std::to_string(o.allocs) + " allocs " + std::to_string(o.alloc_bytes) + " B, " +
                 std::to_string(o.frees) + " frees " + std::to_string(o.free_bytes) + " B, live " +
                 std::to_string(o.live_blocks) + "/" + std::to_string(o.live_bytes) + " B");
    }
  }
  return k;
}

// Blocks still live at the end that `window` allocated: its rows (innermost zone) of
// report --leaks, or, for the sampled zones' parent, every row under it.
std::pair<std::uint64_t, std::uint64_t> leaked_in(const memtruth::Leaks& leaks, const std::string& window) {
  if (window == "mw_sampled_outer") return leaks.in_zone(window);
  std::pair<std::uint64_t, std::uint64_t> out{0, 0};
  for (const memtruth::LeakRow& r : leaks.rows) {
    if (r.zones.empty() || r.zones.back() != window) continue;
    out.first += r.bytes;
    out.second += r.blocks;
  }
  return out;
}

struct LiveOutputs {
  std::string table;  // the text table, or the CSV one (csv true)
  bool csv = false;
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> chrome;  // zone -> allocs, bytes
  bool chrome_read = false;
};

// One window of one process: the file's events, its leaks, the live table and Chrome trace.
void check_window(const std::string& process, const std::string& window, const Counts& truth, const Recorded& rec,
                  const LiveOutputs& live, Checker& c) {
  const std::string where = process + ", zone " + window;
  std::uint64_t memory_left = 0;  // of the dropped events, those the file says were allocations or frees
  for (const memtruth::LeftOut& l : rec.info.left_out) {
    memory_left += l.clause.find("dropped") != std::string::npos ? l.count : 0;
  }
  if (rec.dump.dropped > memory_left) {
    // --policy drop took zone events too: a zone whose begin was dropped gave what it
    // allocated to the zone around it, and the file says how many events it dropped, not
    // which. The process's totals are still checked (check_process).
    c.note(where + ": not compared by zone (" + std::to_string(rec.dump.dropped) + " events dropped, " +
           std::to_string(memory_left) + " of them said of memory)");
    return;
  }
  const memtruth::ZoneBytes got = rec.dump.within.count(window) ? rec.dump.within.at(window) : memtruth::ZoneBytes{};
  const std::uint64_t left_allocs = rec.info.left_out_allocations(), left_frees = rec.info.left_out_frees();
  const bool exit_window = window == "mw_exit_keys";
  c.count(where, "allocations (dump)", got.allocs, truth.allocs, left_allocs, rec.dump.dropped);
  c.bytes(where, "bytes allocated (dump)", got.alloc_bytes, truth.alloc_bytes, left_allocs, rec.dump.dropped);
  if (!exit_window) {
    c.count(where, "frees (dump)", got.frees, truth.frees, left_frees, rec.dump.dropped);
    // A block whose allocation was left out has a free of unknown size (0 bytes here).
    c.bytes(where, "bytes freed (dump)", got.free_bytes, truth.free_bytes, left_frees + left_allocs, rec.dump.dropped);
  }
  if (rec.leaks.present && !rec.leaks.unknown) {
    const auto [bytes, blocks] = leaked_in(rec.leaks, window);
    const memtruth::MemorySummary said = memtruth::memory_summary(rec.leaks_text);
    c.live(where, blocks, bytes, truth.live_blocks, truth.live_bytes, said.left_out_allocations(),
           said.left_out_frees(), rec.dump.dropped);
  } else if (!rec.leaks.present) {
    c.fail(where, "report --leaks printed no 'Leaks:' line");
  }
  const std::int64_t net =
      static_cast<std::int64_t>(truth.alloc_bytes) - static_cast<std::int64_t>(exit_window ? 0 : truth.free_bytes);
  if (left_allocs == 0 && left_frees == 0 && !live.table.empty()) {
    if (live.csv) {
      const auto cell = memtruth::csv_cell(live.table, window, "cpu_memory_bytes");
      if (cell.value_or("") != std::to_string(net))
        c.fail(where,
               "live table (CSV) cpu_memory_bytes " + cell.value_or("(no row)") + ", the truth " + std::to_string(net));
    } else {
      const auto cell = memtruth::table_cell(live.table, window, "CPU Mem");
      if (cell.value_or("") != memtruth::format_1024(net))
        c.fail(where, "live table's CPU Mem '" + cell.value_or("(no row)") + "', the truth " +
                          memtruth::format_1024(net) + " (" + std::to_string(net) + " B)");
    }
  }
  if (live.chrome_read && left_allocs == 0) {
    const auto it = live.chrome.find(window);
    const std::pair<std::uint64_t, std::uint64_t> z =
        it == live.chrome.end() ? std::pair<std::uint64_t, std::uint64_t>{0, 0} : it->second;
    if (z.first != truth.allocs || z.second != truth.alloc_bytes)
      c.fail(where, "Chrome trace: allocs " + std::to_string(z.first) + ", alloc_bytes " + std::to_string(z.second) +
                        "; the truth " + std::to_string(truth.allocs) + ", " + std::to_string(truth.alloc_bytes));
  }
}

LiveOutputs read_live(const MemoryConfig& config, const fs::path& dir, std::uint64_t pid, bool main,
                      const MemoryTools& tools) {
  LiveOutputs live;
  const bool own_outputs = config.how == MemHow::config && main;
  const fs::path table = own_outputs ? dir / "table.csv" : dir / ("table." + std::to_string(pid) + ".txt");
  live.table = text_of(table);
  live.csv = own_outputs;
  const fs::path chrome = own_outputs ? dir / "chrome.json" : dir / ("chrome." + std::to_string(pid) + ".json");
  if (!tools.python.empty() && fs::exists(chrome)) {
    const memtruth::Run r = memtruth::run({tools.python, tools.chrome_script, chrome.string()});
    live.chrome_read = r.status == 0;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      std::istringstream words(line);
      std::string p, name;
      std::uint64_t allocs = 0, bytes = 0;
      if (!(words >> p >> allocs >> bytes)) continue;
      std::getline(words >> std::ws, name);
      live.chrome[name].first += allocs;
      live.chrome[name].second += bytes;
    }
  }
  return live;
}

// A window's or a snapshot's file: the phase's zone in it, and leaks unknown or true.
// `process_dropped`: the events the process's own recording says its rings dropped (a
// snapshot keeps the drop markers of its span only: a zone whose begin a ring dropped
// before it is in no snapshot, and the snapshot need not say so).
void check_window_file(const MemoryTools& tools, const fs::path& dir, const std::string& prefix,
                       const std::string& window, const std::optional<Counts>& truth, std::uint64_t process_dropped,
                       Checker& c) {
  bool found = false;
  std::uint64_t dropped = 0;  // in the files of this prefix
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || entry.path().extension() != ".rtrace") continue;
    const Recorded rec = read_recorded(tools, entry.path());
    dropped += rec.dump.dropped;
    if (!rec.dump.within.count(window)) continue;
    found = true;
    if (!truth) continue;
    const std::string where = name + ", zone " + window;
    const memtruth::ZoneBytes got = rec.dump.within.at(window);
    // A window's file knows how many events its span dropped, not their kinds (the
    // runtime counts dropped allocations and frees for the session, not per window): each
    // dropped event is at most one allocation or free.
    const std::uint64_t left_allocs = std::max(rec.info.left_out_allocations(), rec.dump.dropped);
    const std::uint64_t left_frees = std::max(rec.info.left_out_frees(), rec.dump.dropped);
    c.count(where, "allocations", got.allocs, truth->allocs, left_allocs, rec.dump.dropped);
    c.bytes(where, "bytes allocated", got.alloc_bytes, truth->alloc_bytes, left_allocs);
    c.count(where, "frees", got.frees, truth->frees, left_frees, rec.dump.dropped);
    if (!rec.leaks.unknown) {
      const auto [bytes, blocks] = leaked_in(rec.leaks, window);
      if (blocks != truth->live_blocks || bytes != truth->live_bytes) {
        c.fail(where, "report --leaks says " + std::to_string(blocks) + " blocks (" + std::to_string(bytes) +
                          " B) of this zone live at the end, the truth " + std::to_string(truth->live_blocks) + " (" +
                          std::to_string(truth->live_bytes) +
                          " B); a file without addresses should say its leaks are unknown");
      }
    }
  }
  if (!found && std::max(dropped, process_dropped) != 0) {
    // --policy drop may take the zone's begin itself
    c.note(prefix + "*.rtrace: no file holds the zone " + window + " (" +
           std::to_string(std::max(dropped, process_dropped)) + " events dropped by the process's rings)");
  } else if (!found) {
    c.fail(prefix + "*.rtrace", "no file holds the zone " + window);
  }
}

// Frees that the C and C++ libraries make as a thread exits (pthread key, thread_local).
void check_exit_frees(const std::string& process, const ProcessManifest& m, const Recorded& rec, Checker& c) {
  if (m.exit_threads == 0) return;
  std::uint64_t said = 0;
  for (const memtruth::LeftOut& l : rec.info.left_out)
    // freed at thread exit after the last key destructor, or dropped (--policy drop: a
    // thread's last frees may find its ring full as any other)
    said += l.frees && (l.clause.find("exit") != std::string::npos || l.clause.find("dropped") != std::string::npos)
                ? l.count
                : 0;
  for (const std::uint64_t size : {kExitKeyBlock, kExitLocalBlock}) {
    const std::uint64_t freed = rec.dump.free_sizes.count(size) ? rec.dump.free_sizes.at(size) : 0;
    if (freed + said < m.exit_threads || freed > m.exit_threads) {
      c.fail(process, "frees of the " + std::to_string(size) + "-byte block(s) a thread's exit freed (" +
                          (size == kExitKeyBlock ? "pthread key destructor" : "thread_local destructor") +
                          "): " + std::to_string(freed) + " recorded, " + std::to_string(said) +
                          " said freed at thread exit, the truth " + std::to_string(m.exit_threads));
    }
  }
}

// Config mode: every program thread's life in the session is a window (life_main,
// life_worker, and the zones' windows inside), so the file's totals are the counter's,
// window by window added up.
void check_totals(const std::string& process, const memtruth::Snapshot& counted, const Recorded& rec, Checker& c) {
  Counts sum;
  for (const auto& [name, counts] : counted.windows) {
    if (name != "-") sum += counts;
  }
  c.count(process, "allocations in the whole session (info)", rec.info.allocations, sum.allocs,
          rec.info.left_out_allocations(), rec.dump.dropped);
  c.count(process, "allocation events in the file (dump)", rec.dump.all.allocs, sum.allocs,
          rec.info.left_out_allocations(), rec.dump.dropped);
  c.bytes(process, "bytes allocated in the whole session (dump)", rec.dump.all.alloc_bytes, sum.alloc_bytes,
          rec.info.left_out_allocations(), rec.dump.dropped);
  if (rec.dump.dropped == 0 && rec.info.lost_frees != 0) {
    c.fail(process, std::to_string(rec.info.lost_frees) + " frees said lost with no event dropped");
  }
  if (rec.info.frees_before_recording > sum.foreign_frees + sum.unknown_frees) {
    c.fail(process, std::to_string(rec.info.frees_before_recording) +
                        " frees said of blocks allocated before the recording; the counter saw " +
                        std::to_string(sum.foreign_frees + sum.unknown_frees) +
                        " frees of blocks from outside every window in the session's windows");
  }
}

}  // namespace

std::vector<std::string> check_memory(const MemoryConfig& config, const fs::path& dir, const MemoryTools& tools) {
  Checker c;
  std::vector<ProcessManifest> processes;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("memory.", 0) == 0 && entry.path().extension() == ".txt")
      processes.push_back(read_process_manifest(entry.path()));
  }
  int mains = 0, children = 0;
  std::uint64_t children_started = 0;
  for (const ProcessManifest& m : processes) {
    mains += m.role == "main";
    children += m.role == "child";
    if (m.role == "main") children_started = m.children.size();
    if (!m.done) c.fail("pid " + std::to_string(m.pid), "its manifest is incomplete");
  }
  if (mains != 1) c.fail("workload", std::to_string(mains) + " main manifests");
  if (static_cast<std::uint64_t>(children) != children_started) {
    c.fail("workload", std::to_string(children_started) + " children started, " + std::to_string(children) +
                           " wrote their manifest");
  }
  for (const ProcessManifest& m : processes) {
    const bool main = m.role == "main";
    const std::string process = m.role + " (pid " + std::to_string(m.pid) + ")";
    const fs::path file = main && config.how == MemHow::config ? dir / "trace.rtrace"
                                                               : dir / ("run." + std::to_string(m.pid) + ".rtrace");
    if (!fs::exists(file)) {
      c.fail(process, "no recording: " + file.filename().string() + " was not written");
      continue;
    }
    const Recorded rec = read_recorded(tools, file);
    if (!rec.info.present) c.fail(process, "info prints no memory line for " + file.filename().string());
    memtruth::CounterFile counter;
    const memtruth::Snapshot* counted = nullptr;
    if (tools.counter) {
      counter = memtruth::read_counter_file(dir / ("c." + std::to_string(m.pid)));
      counted = counter.find("end");
      if (counted == nullptr) {
        c.fail(process, "the counting preload wrote no snapshot 'end' (" + counter.problem + ")");
      } else if (const std::string why = memtruth::inexact(*counted); !why.empty()) {
        c.fail(process, "the counting preload could not count exactly: " + why);
        counted = nullptr;
      }
    }
    const LiveOutputs live = read_live(config, dir, m.pid, main, tools);
    for (const auto& [window, own] : m.windows) {
      const auto truth = truth_of(window, own, counted, process + ", zone " + window, c);
      if (!truth) continue;
      if (window == "mw_window_phase" || window == "mw_snapshot_phase") {
        check_window_file(tools, dir, window == "mw_window_phase" ? "window." : "snapshot.", window, truth,
                          rec.dump.dropped, c);
      }
      check_window(process, window, *truth, rec, live, c);
    }
    check_exit_frees(process, m, rec, c);
    if (main && config.how == MemHow::config && counted != nullptr) check_totals(process, *counted, rec, c);
    for (const memtruth::LeftOut& l : rec.info.left_out) c.note(process + ": the file says it left out: " + l.clause);
    if (rec.dump.dropped != 0) c.note(process + ": " + std::to_string(rec.dump.dropped) + " events dropped");
  }
  return c.lines;
}

}  // namespace matrix
