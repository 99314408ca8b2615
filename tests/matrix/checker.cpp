#include "checker.hpp"

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace matrix {

namespace {

// --- The expected events of a thread ---

struct Expected {
  Kind kind = Kind::other;
  std::string name;
  bool has_value = false;  // compare value (and is_double)
  std::uint64_t value = 0;
  bool is_double = false;
  bool is_text = false;
  std::string text;
  bool truncated = false;
  bool region = false;
};

Expected ev(Kind kind, std::string name) {
  Expected e;
  e.kind = kind;
  e.name = std::move(name);
  return e;
}
Expected ev_int(Kind kind, std::string name, std::int64_t v) {
  Expected e = ev(kind, std::move(name));
  e.has_value = true;
  e.value = static_cast<std::uint64_t>(v);
  return e;
}
Expected ev_u(Kind kind, std::string name, std::uint64_t v) {
  return ev_int(kind, std::move(name), static_cast<std::int64_t>(v));
}
Expected ev_double(Kind kind, std::string name, double v) {
  Expected e = ev(kind, std::move(name));
  e.has_value = true;
  e.value = std::bit_cast<std::uint64_t>(v);
  e.is_double = true;
  return e;
}
Expected ev_text(Kind kind, std::string name, const std::string& text) {
  Expected e = ev(kind, std::move(name));
  e.is_text = true;
  e.truncated = text.size() > kTextLimit;
  e.text = e.truncated ? text.substr(0, kTextLimit) : text;
  return e;
}
Expected ev_region(Kind kind, std::string name, std::int64_t id) {
  Expected e = ev_int(kind, std::move(name), id);
  e.region = true;
  return e;
}

// The main flow of slot `slot` after `n` iterations: workload.cpp's iteration() in order.
std::vector<Expected> expected_main_flow(int slot, std::uint64_t n) {
  std::vector<Expected> out;
  out.push_back(ev_int(Kind::counter, kHello, slot));
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::int64_t v = key(slot, i);
    out.push_back(ev(Kind::zone_begin, "m.outer"));
    out.push_back(ev_int(Kind::arg, "m.seq", v));
    out.push_back(ev(Kind::zone_begin, "m.args"));
    out.push_back(ev_int(Kind::arg, "m.a", v));
    out.push_back(ev_double(Kind::arg, "m.b", dkey(slot, i)));
    out.push_back(ev(Kind::instant, "m.instant"));
    out.push_back(ev_int(Kind::counter, "m.cint", v));
    out.push_back(ev_double(Kind::counter, "m.cdbl", dcounter(slot, i)));
    out.push_back(ev_int(Kind::counter, "m.cthread", v));
    out.push_back(ev(Kind::zone_end, "m.args"));
    out.push_back(ev(Kind::zone_begin, "m.manual"));
    out.push_back(ev_text(Kind::arg, "m.text", text_of(slot, i)));
    const std::string dynamic = dynamic_name_of(slot, i);
    out.push_back(ev(Kind::zone_begin, dynamic));
    out.push_back(ev_double(Kind::arg, "m.dval", dkey(slot, i)));
    out.push_back(ev_u(Kind::flow_out, "flow", flow_id(slot, i)));
    out.push_back(ev(Kind::zone_end, dynamic));
    out.push_back(ev(Kind::zone_begin, kInternedZone));
    out.push_back(ev_u(Kind::flow_in, "flow", flow_id(slot, i)));
    out.push_back(ev(Kind::zone_end, kInternedZone));
    out.push_back(ev(Kind::zone_end, "m.manual"));
    out.push_back(ev_text(Kind::message, "message", message_of(slot, i)));
    out.push_back(ev_region(Kind::zone_begin, "m.region", v));
    const int levels = recursion_of(i) + 1;
    for (int r = 0; r < levels; ++r) out.push_back(ev(Kind::zone_begin, kFunctionZone));
    for (int r = 0; r < levels; ++r) out.push_back(ev(Kind::zone_end, kFunctionZone));
    out.push_back(ev(Kind::zone_begin, "m.incat"));
    out.push_back(ev(Kind::zone_end, "m.incat"));
    // m.hidden (category off) and its value: nothing.
    out.push_back(ev_region(Kind::zone_end, "m.region", v));
    if (sampled_in(i)) {
      out.push_back(ev(Kind::zone_begin, "m.sampled"));
      out.push_back(ev(Kind::instant, "m.insampled"));
      out.push_back(ev(Kind::zone_end, "m.sampled"));
    }
    if (async_begins(i)) out.push_back(ev_int(Kind::async_begin, "m.async", v));
    if (async_ends(i)) out.push_back(ev_int(Kind::async_end, "m.async", key(slot, i - 3)));
    out.push_back(ev(Kind::zone_end, "m.outer"));
    out.push_back(ev(Kind::instant, kInternedInstant));
  }
  if (n % 4 != 0) out.push_back(ev_int(Kind::async_end, "m.async", key(slot, n - n % 4)));
  return out;
}

// The framer's own events (its marks' step events are on the steps track): its hello, its messages.
std::vector<Expected> expected_framer_flow(std::uint64_t marks) {
  std::vector<Expected> out;
  out.push_back(ev_int(Kind::counter, kHello, kFramerSlot));
  for (std::uint64_t n = 0; n + 1 < marks; ++n) {
    for (std::uint64_t k = 0; k < kFrameFill; ++k)
      out.push_back(ev_text(Kind::message, "message", fill_text_of(n * kFrameFill + k)));
  }
  return out;
}

std::vector<Expected> expected_of(const SlotManifest& slot) {
  if (slot.role == Role::other) return {};
  if (slot.role == Role::framer) return expected_framer_flow(slot.iterations);
  return expected_main_flow(slot.slot, slot.iterations);
}

std::vector<Expected> expected_handler_flow(int slot, std::uint64_t runs) {
  std::vector<Expected> out;
  for (std::uint64_t k = 0; k < runs; ++k) {
    const std::int64_t v = handler_value(slot, k);
    out.push_back(ev(Kind::zone_begin, "sig.zone"));
    out.push_back(ev_int(Kind::arg, "sig.seq", v));
    out.push_back(ev(Kind::instant, "sig.instant"));
    out.push_back(ev_int(Kind::counter, "sig.counter", v));
    out.push_back(ev(Kind::zone_end, "sig.zone"));
  }
  return out;
}

bool matches(const StreamEvent& e, const Expected& x) {
  if (e.kind != x.kind || e.name != x.name) return false;
  if (x.has_value && (e.value != x.value || e.is_double != x.is_double)) return false;
  if (x.is_text != e.is_text) return false;
  if (x.is_text && (e.text != x.text || e.truncated != x.truncated)) return false;
  if ((e.kind == Kind::zone_begin || e.kind == Kind::zone_end) && e.region != x.region) return false;
  return true;
}

std::string printable(const std::string& s, std::size_t limit = 60) {
  std::string out;
  for (std::size_t k = 0; k < s.size() && k < limit; ++k) {
    const auto b = static_cast<unsigned char>(s[k]);
    if (b >= 0x20 && b < 0x7F) {
      out += s[k];
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", b);
      out += hex;
    }
  }
  if (s.size() > limit) out += "...(" + std::to_string(s.size()) + " bytes)";
  return out;
}

std::string describe(const StreamEvent& e) {
  std::string s = std::string(name_of(e.kind)) + " \"" + printable(e.name) + "\"";
  if (e.is_text) {
    s += " text=\"" + printable(e.text) + "\"";
  } else if (e.is_double) {
    s += " d=" + std::to_string(std::bit_cast<double>(e.value));
  } else if (e.kind != Kind::zone_begin || e.region || e.name == "step") {
    s += " value=" + std::to_string(static_cast<std::int64_t>(e.value));
  }
  if (e.truncated) s += " truncated";
  if (e.closed_at_stop) s += " closed_at_stop";
  s += " at " + std::to_string(e.time) + " ns";
  return s;
}

std::string describe(const Expected& e) {
  std::string s = std::string(name_of(e.kind)) + " \"" + printable(e.name) + "\"";
  if (e.is_text) {
    s += " text=\"" + printable(e.text) + "\"";
  } else if (e.is_double) {
    s += " d=" + std::to_string(std::bit_cast<double>(e.value));
  } else if (e.has_value) {
    s += " value=" + std::to_string(static_cast<std::int64_t>(e.value));
  }
  if (e.truncated) s += " truncated";
  return s;
}

bool is_handler_event(const StreamEvent& e) { return e.name.rfind("sig.", 0) == 0; }
bool is_step_event(const StreamEvent& e) {
  return (e.kind == Kind::zone_begin || e.kind == Kind::zone_end) && e.name == "step";
}
bool is_switch(const StreamEvent& e) { return e.kind == Kind::switch_out || e.kind == Kind::switch_in; }

// A thread as the stream shows it, one life: the events of one thread key from a hello
// to the next (an OS thread id the kernel gave again starts another life).
struct LogicalThread {
  enum class What { worker, steps, handler_only, unknown } what = What::unknown;
  int slot = -1;
  std::uint64_t key = 0;
  std::uint64_t os_tid = 0;
  std::string thread_name;
  std::vector<const StreamEvent*> events;  // dropped markers and switches aside
  std::uint64_t dropped = 0;
  std::uint64_t closed_at_stop = 0;
};

struct Failures {
  std::string source;
  std::vector<std::string> lines;
  std::map<std::string, int> repeats;  // a kind of failure said at most a few times (each slot's count: all)
  void add(const std::string& kind, const std::string& text) {
    const int limit = kind == "count identity" ? kMaxSlots + 1 : 3;
    int& n = repeats[kind];
    ++n;
    if (n <= limit) lines.push_back(source + ": " + text);
    if (n == limit + 1) lines.push_back(source + ": (more failures of the kind '" + kind + "' not shown)");
  }
};

std::string slot_name(const Manifest& m, int slot) {
  auto it = m.slots.find(slot);
  if (it == m.slots.end()) return "slot " + std::to_string(slot);
  std::string s =
      "slot " + std::to_string(slot) + " (" + name_of(it->second.role) + ", tid " + std::to_string(it->second.tid);
  if (!it->second.comm.empty() && it->second.comm != "-") s += ", '" + it->second.comm + "'";
  return s + ")";
}

// Greedy: `arrived` in order is a subsequence of `expected` iff every event finds its
// match at or after where the previous one matched. Returns the events matched.
std::uint64_t match_subsequence(const std::vector<const StreamEvent*>& arrived, const std::vector<Expected>& expected,
                                const std::string& who, Failures& f, bool all_present) {
  std::size_t at = 0;
  for (std::size_t k = 0; k < arrived.size(); ++k) {
    const StreamEvent& e = *arrived[k];
    std::size_t found = at;
    while (found < expected.size() && !matches(e, expected[found])) ++found;
    if (found == expected.size()) {
      std::string want =
          at < expected.size() ? describe(expected[at]) : std::string("nothing (all expected events arrived)");
      f.add("unexpected event", who + ": arrived event #" + std::to_string(k) + " " + describe(e) +
                                    " is not among what the thread produced from there on (expected next: " + want +
                                    ")");
      return k;  // the rest cannot be placed
    }
    if (all_present && found != at) {
      f.add("missing event", who + ": expected event #" + std::to_string(at) + " " + describe(expected[at]) +
                                 " did not arrive (block policy: nothing may be lost); next arrived: " + describe(e));
    }
    at = found + 1;
  }
  if (all_present && at < expected.size()) {
    f.add("missing event", who + ": " + std::to_string(expected.size() - at) +
                               " expected events at the end did not arrive "
                               "(block policy: nothing may be lost); first: #" +
                               std::to_string(at) + " " + describe(expected[at]));
  }
  return arrived.size();
}

}  // namespace

Manifest read_manifest(const std::filesystem::path& file) {
  Manifest m;
  std::ifstream in(file);
  if (!in) return m;
  m.read = true;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string what;
    words >> what;
    if (what == "config") {
      words >> m.config;
    } else if (what == "scale") {
      words >> m.scale;
    } else if (what == "frame_marks") {
      words >> m.frame_marks;
    } else if (what == "slot") {
      SlotManifest s;
      std::string key, role;
      int blocks = 0;
      words >> s.slot >> key >> role >> key >> s.tid >> key >> s.iterations >> key >> s.handler_runs >> key >>
          s.signals_sent >> key >> blocks >> key;
      s.blocks_signal = blocks != 0;
      std::getline(words, s.comm);
      if (!s.comm.empty() && s.comm[0] == ' ') s.comm.erase(0, 1);
      s.role = role == "main"           ? Role::main
               : role == "long_worker"  ? Role::long_worker
               : role == "short_worker" ? Role::short_worker
               : role == "framer"       ? Role::framer
                                        : Role::other;
      m.slots[s.slot] = s;
    } else if (what == "stats") {
      std::string key;
      std::uint64_t v = 0;
      while (words >> key >> v) m.stats[key] = v;
    } else if (what == "switches_unavailable") {
      std::getline(words, m.switches_unavailable);
      if (!m.switches_unavailable.empty() && m.switches_unavailable[0] == ' ') m.switches_unavailable.erase(0, 1);
    } else if (what == "thread") {
      ThreadRow r;
      words >> r.os_tid >> r.recorded >> r.dropped >> r.switches >> r.name;
      m.threads.push_back(r);
    } else if (what == "exporter_error") {
      std::string rest;
      std::getline(words, rest);
      m.exporter_errors.push_back(rest);
    } else if (what == "done") {
      m.done = true;
    }
  }
  return m;
}

std::vector<std::string> check_manifest(const Manifest& m, const MatrixConfig& config, bool tsc_available) {
  std::vector<std::string> out;
  const auto stat = [&](const char* key) {
    auto it = m.stats.find(key);
    return it == m.stats.end() ? std::uint64_t{0} : it->second;
  };
  for (const std::string& e : m.exporter_errors) out.push_back("session: an exporter failed: " + e);
  if (stat("unbalanced_ends") != 0) {
    out.push_back("session: stats().unbalanced_ends is " + std::to_string(stat("unbalanced_ends")) +
                  " (the workload ends every zone it begins)");
  }
  const bool tsc = stat("tsc") != 0;
  if (config.clock == Clock::monotonic && tsc)
    out.push_back("session: ClockSource::monotonic asked, stats().clock.tsc is true");
  if (config.clock == Clock::tsc && tsc_available && !tsc) {
    out.push_back("session: ClockSource::tsc asked on a CPU with an invariant TSC, stats().clock.tsc is false");
  }
  std::uint64_t rows_dropped = 0;
  for (const ThreadRow& r : m.threads) rows_dropped += r.dropped;
  if (rows_dropped + stat("dropped_without_ring") != stat("dropped")) {
    out.push_back("session: stats().dropped (" + std::to_string(stat("dropped")) + ") is not the threads' drops (" +
                  std::to_string(rows_dropped) + ") plus dropped_without_ring (" +
                  std::to_string(stat("dropped_without_ring")) + ")");
  }
  if (config.policy == Policy::block) {
    // Only handlers that interrupt their thread inside the recording path may drop.
    for (const ThreadRow& r : m.threads) {
      bool signalled = false;
      for (const auto& [slot, s] : m.slots) {
        if (s.tid == r.os_tid && (s.role == Role::other || signalled_worker(slot))) signalled = true;
      }
      if (r.dropped != 0 && !signalled) {
        out.push_back("session: block policy, yet stats() counts " + std::to_string(r.dropped) +
                      " dropped events on thread " + std::to_string(r.os_tid) + " (" + r.name +
                      "), which no signal handler interrupts");
      }
    }
  }
  if (!config.switches && stat("context_switches") != 0) {
    out.push_back("session: context switches not asked for, yet " + std::to_string(stat("context_switches")) +
                  " delivered");
  }
  if (config.switches && m.switches_unavailable.empty() && stat("context_switches") == 0) {
    out.push_back("session: context switches asked for and available, yet none delivered");
  }
  for (const auto& [slot, s] : m.slots) {
    if (s.role == Role::other && s.blocks_signal) {
      out.push_back("note: " + slot_name(m, slot) + " blocks the workload's signal (or exited): no handler runs there");
    }
    if (s.role == Role::other && s.handler_runs < s.signals_sent) {
      out.push_back("workload: " + std::to_string(s.signals_sent - s.handler_runs) + " of " +
                    std::to_string(s.signals_sent) + " signals sent to " + slot_name(m, slot) +
                    " were never handled (the thread did not run for 2 s?)");
    }
  }
  return out;
}

std::vector<std::string> check_stream(const Stream& stream, const Manifest& m, const MatrixConfig& config,
                                      CheckSummary& summary) {
  Failures f;
  f.source = stream.source;
  for (const std::string& p : stream.problems) f.add("reader", "the reader says: " + p);
  const bool block = config.policy == Policy::block;
  const auto stat = [&](const char* key) {
    auto it = m.stats.find(key);
    return it == m.stats.end() ? std::uint64_t{0} : it->second;
  };

  // 1. Order: the stream by time; per thread, zones nested, boundaries apart.
  struct PerKey {
    std::vector<const StreamEvent*> open;
    std::uint64_t last_time = 0;
    std::uint64_t last_boundary = 0;
    bool any_boundary = false;
    bool steps = false;
  };
  std::map<std::uint64_t, PerKey> keys;
  std::uint64_t last_time = 0;
  for (std::size_t k = 0; k < stream.events.size(); ++k) {
    const StreamEvent& e = stream.events[k];
    if (e.time < last_time) {
      f.add("stream order", "event #" + std::to_string(k) + " " + describe(e) + " on thread " +
                                std::to_string(e.os_tid) + " comes after an event at " + std::to_string(last_time) +
                                " ns (the stream goes back in time)");
    }
    last_time = std::max(last_time, e.time);
    if (is_switch(e)) ++summary.switches;
    if (e.late) ++summary.late;
    PerKey& t = keys[e.thread];
    if (is_step_event(e)) t.steps = true;
    const std::string who =
        "thread " + std::to_string(e.os_tid) + (e.thread_name.empty() ? "" : " '" + e.thread_name + "'");
    if (e.time < t.last_time) {
      f.add("thread order", who + ": " + describe(e) + " is earlier than the thread's previous event at " +
                                std::to_string(t.last_time) + " ns");
    }
    t.last_time = std::max(t.last_time, e.time);
    const bool boundary = e.kind == Kind::zone_begin || e.kind == Kind::zone_end;
    if (boundary && !t.steps && !e.late && !e.closed_at_stop) {
      if (t.any_boundary && e.time <= t.last_boundary) {
        f.add("boundaries apart", who + ": " + describe(e) +
                                      " shares the nanosecond of the thread's previous zone boundary "
                                      "(docs/reliability.md: zone boundaries never share a nanosecond)");
      }
      t.any_boundary = true;
      t.last_boundary = e.time;
    }
    if (e.kind == Kind::zone_begin) {
      if (e.depth >= 0 && static_cast<std::size_t>(e.depth) != t.open.size()) {
        f.add("depth", who + ": " + describe(e) + " has depth " + std::to_string(e.depth) + " with " +
                           std::to_string(t.open.size()) + " zones open");
      }
      t.open.push_back(&e);
    } else if (e.kind == Kind::zone_end) {
      if (t.open.empty()) {
        f.add("nesting", who + ": " + describe(e) + " ends a zone while none is open");
      } else {
        const StreamEvent& b = *t.open.back();
        const bool valued = b.region || is_step_event(b);
        if (is_step_event(b) && is_step_event(e) && b.value != e.value) {
          f.add("nesting", "steps track: the end of step " + std::to_string(e.value) + " at " + std::to_string(e.time) +
                               " ns arrived while step " + std::to_string(b.value) + " (begun at " +
                               std::to_string(b.time) + " ns) is the open one; the stream has no begin of step " +
                               std::to_string(e.value) + " (the step zones do not nest)");
        } else if (b.name != e.name || (valued && b.value != e.value)) {
          f.add("nesting", who + ": " + describe(e) + " does not end the innermost open zone, " + describe(b));
        }
        if (e.time < b.time) f.add("nesting", who + ": " + describe(e) + " ends before its begin " + describe(b));
        t.open.pop_back();
        if (e.depth >= 0 && static_cast<std::size_t>(e.depth) != t.open.size()) {
          f.add("depth", who + ": " + describe(e) + " has depth " + std::to_string(e.depth) + " with " +
                             std::to_string(t.open.size()) + " zones open outside it");
        }
      }
    } else if (e.kind == Kind::arg || e.kind == Kind::flow_out || e.kind == Kind::flow_in) {
      if (t.open.empty()) f.add("attachment", who + ": " + describe(e) + " arrived with no zone open to attach to");
      if (e.depth >= 0 && static_cast<std::size_t>(e.depth) != t.open.size()) {
        f.add("depth", who + ": " + describe(e) + " has depth " + std::to_string(e.depth) + " with " +
                           std::to_string(t.open.size()) + " zones open");
      }
    }
  }
  for (const auto& [key, t] : keys) {
    if (!t.open.empty()) {
      f.add("nesting", "thread key " + std::to_string(key) + ": " + std::to_string(t.open.size()) +
                           " zones still open at the end of the stream, innermost " + describe(*t.open.back()));
    }
  }

  // 2. Who is who: each thread's lives, by their first event.
  std::vector<LogicalThread> lives;
  std::map<std::uint64_t, std::size_t> current;  // thread key -> its current life in `lives`
  for (const StreamEvent& e : stream.events) {
    if (is_switch(e)) continue;
    const bool hello = e.kind == Kind::counter && e.name == kHello && !e.is_double;
    auto it = current.find(e.thread);
    if (it == current.end() || hello) {
      LogicalThread life;
      life.key = e.thread;
      life.os_tid = e.os_tid;
      if (hello) {
        life.what = LogicalThread::What::worker;
        life.slot = static_cast<int>(e.value);
      } else if (is_step_event(e)) {
        life.what = LogicalThread::What::steps;
      } else if (is_handler_event(e)) {
        life.what = LogicalThread::What::handler_only;
      }
      if (it != current.end() && hello && lives[it->second].what != LogicalThread::What::worker) {
        f.add("identity", "thread " + std::to_string(e.os_tid) + ": a hello of slot " + std::to_string(e.value) +
                              " after other events on the thread");
      }
      current[e.thread] = lives.size();
      lives.push_back(std::move(life));
      it = current.find(e.thread);
    }
    LogicalThread& life = lives[it->second];
    if (!e.thread_name.empty()) life.thread_name = e.thread_name;
    if (e.kind == Kind::dropped) {
      life.dropped += e.value;
      summary.dropped += e.value;
      continue;
    }
    if (e.closed_at_stop) {
      ++life.closed_at_stop;
      continue;
    }
    life.events.push_back(&e);
    ++summary.events;
  }

  // 3. Each life against what its slot produced.
  std::map<int, std::uint64_t> delivered_by_slot, dropped_by_slot;
  std::uint64_t delivered_unplaced = 0, dropped_unplaced = 0;
  std::map<int, int> lives_of_slot;
  const std::uint64_t marks = m.frame_marks;
  for (LogicalThread& life : lives) {
    const std::string who_tid =
        "thread " + std::to_string(life.os_tid) + (life.thread_name.empty() ? "" : " '" + life.thread_name + "'");
    if (life.what == LogicalThread::What::steps) {
      // The steps track: the framer's frame marks. Only step zones here.
      for (const StreamEvent* e : life.events) {
        if (!is_step_event(*e)) f.add("steps track", "the steps track holds " + describe(*e));
      }
      if (life.closed_at_stop > 1)
        f.add("steps track", std::to_string(life.closed_at_stop) + " step zones closed at stop");
      if (life.dropped != 0)
        f.add("steps track", "the steps track has drops of its own: " + std::to_string(life.dropped));
      delivered_by_slot[kFramerSlot] += life.events.size();
      dropped_by_slot[kFramerSlot] += life.dropped;
      if (block && life.events.size() != 2 * marks - 1) {
        f.add("missing event", "block policy: " + std::to_string(marks) + " frame marks should give " +
                                   std::to_string(2 * marks - 1) +
                                   " step events (the last step closed at stop aside), " +
                                   std::to_string(life.events.size()) + " arrived");
      }
      continue;
    }
    if (life.closed_at_stop != 0) {
      f.add("closed at stop", who_tid + ": " + std::to_string(life.closed_at_stop) +
                                  " zones closed at stop (the workload ends every zone before stop())");
    }
    if (life.what == LogicalThread::What::unknown) {
      f.add("identity", who_tid + ": its first event " +
                            (life.events.empty() ? std::string("(none)") : describe(*life.events.front())) +
                            " is neither a hello, a step nor a handler's: a thread the workload cannot name");
      delivered_unplaced += life.events.size();
      dropped_unplaced += life.dropped;
      continue;
    }
    if (life.what == LogicalThread::What::handler_only) {
      // Which slot: the handler's values say.
      for (const StreamEvent* e : life.events) {
        if (e->name == "sig.seq" || e->name == "sig.counter") {
          life.slot = static_cast<int>((e->value >> 32) & 0x3FFFFFFF);
          break;
        }
      }
      if (life.slot < 0) {
        f.add("identity", who_tid + ": only handler events, none with a value naming its slot");
        delivered_unplaced += life.events.size();
        dropped_unplaced += life.dropped;
        continue;
      }
    }
    auto slot_it = m.slots.find(life.slot);
    if (slot_it == m.slots.end()) {
      f.add("identity", who_tid + ": slot " + std::to_string(life.slot) + " is not in the manifest");
      delivered_unplaced += life.events.size();
      dropped_unplaced += life.dropped;
      continue;
    }
    const SlotManifest& slot = slot_it->second;
    if (++lives_of_slot[life.slot] > 1)
      f.add("identity", slot_name(m, life.slot) + " appears as two threads in the stream");
    if (life.os_tid != 0 && life.os_tid != slot.tid) {
      f.add("identity", slot_name(m, life.slot) + " arrived on thread " + std::to_string(life.os_tid));
    }
    ++summary.threads;
    std::vector<const StreamEvent*> main_flow, handler_flow;
    for (const StreamEvent* e : life.events) (is_handler_event(*e) ? handler_flow : main_flow).push_back(e);
    const std::string who = slot_name(m, life.slot);
    if (slot.role == Role::other && !main_flow.empty()) {
      f.add("identity",
            who + ": a runtime thread delivered events of a workload thread, first " + describe(*main_flow.front()));
    }
    if (slot.role != Role::other) match_subsequence(main_flow, expected_of(slot), who + " main flow", f, block);
    match_subsequence(handler_flow, expected_handler_flow(life.slot, slot.handler_runs), who + " handler", f, false);
    delivered_by_slot[life.slot] += life.events.size();
    dropped_by_slot[life.slot] += life.dropped;
    if (block && life.dropped != 0 && !(slot.role == Role::other || signalled_worker(life.slot))) {
      f.add("block drops", who + ": block policy, yet the stream counts " + std::to_string(life.dropped) +
                               " dropped events on a thread no signal handler interrupts");
    }
    if (!block && (slot.role == Role::main || slot.role == Role::long_worker || slot.role == Role::framer)) {
      // Drop mode may drop anything once a ring is full, but a ring starts empty: a
      // thread's first events fit in it (16 KiB, 12 of them for records other than zone
      // ends) whatever the drainer does: 50 of a main flow (about 2 KiB), the framer's
      // hello and 7 of its 1000-byte messages.
      const std::uint64_t kFloor = slot.role == Role::framer ? 8 : 50;
      const std::uint64_t produced = expected_of(slot).size();
      if (main_flow.size() < std::min(produced, kFloor)) {
        f.add("presence", who + ": drop policy kept only " + std::to_string(main_flow.size()) + " of the " +
                              std::to_string(produced) + " main-flow events the thread produced (" +
                              std::to_string(life.dropped) + " counted as dropped), fewer than its first " +
                              std::to_string(kFloor) + ", which fit in its empty ring");
      }
    }
  }

  // 4. The count identity, per slot and for the whole run: recorded + dropped == produced.
  // One exception, of attribution only: a step left open in the stream by frame marks whose
  // markers were dropped has its end made by a later mark and never written; the runtime
  // counts that end as dropped at stop(), on the thread that stops (main), not on the
  // framer. So in drop mode the framer may be one short exactly when main is one over; the
  // whole run must still add up.
  std::int64_t framer_delta = 0, main_delta = 0;
  for (const auto& [n, slot] : m.slots) {
    if (block || (slot.role != Role::framer && slot.role != Role::main)) continue;
    std::uint64_t produced = kHandlerEvents * slot.handler_runs + expected_of(slot).size();
    if (slot.role == Role::framer) produced += 2 * marks - 1;
    const auto delta =
        static_cast<std::int64_t>(delivered_by_slot[n] + dropped_by_slot[n]) - static_cast<std::int64_t>(produced);
    (slot.role == Role::framer ? framer_delta : main_delta) += delta;
  }
  const bool stop_counted_the_open_step = framer_delta == -1 && main_delta == 1;
  std::uint64_t produced_total = 0, delivered_total = delivered_unplaced, dropped_total = dropped_unplaced;
  std::vector<std::string> unaccounted;
  for (const auto& [n, slot] : m.slots) {
    std::uint64_t produced = kHandlerEvents * slot.handler_runs + expected_of(slot).size();
    if (slot.role == Role::framer)
      produced += 2 * marks - 1;  // a frame mark ends a step and begins one; the first only begins
    produced_total += produced;
    const std::uint64_t delivered = delivered_by_slot[n];
    const std::uint64_t dropped = dropped_by_slot[n];
    delivered_total += delivered;
    dropped_total += dropped;
    const bool seen = lives_of_slot.count(n) != 0 || delivered != 0 || dropped != 0;
    if (!seen) {
      if (produced != 0) {
        unaccounted.push_back(slot_name(m, n) + ": produced " + std::to_string(produced) + " events (" +
                              std::to_string(slot.handler_runs) +
                              " signal handler runs there), none arrived, none counted "
                              "as dropped (on a thread, or in dropped_without_ring): lost uncounted");
      }
      continue;
    }
    if (delivered + dropped != produced &&
        !(stop_counted_the_open_step && (slot.role == Role::framer || slot.role == Role::main))) {
      std::string detail;
      if (slot.role == Role::framer)
        detail = " (its messages, and its " + std::to_string(marks) + " frame marks' step events on the steps track)";
      f.add("count identity",
            slot_name(m, n) + ": recorded " + std::to_string(delivered) + " + dropped " + std::to_string(dropped) +
                " = " + std::to_string(delivered + dropped) + ", produced " + std::to_string(produced) + detail + ": " +
                (delivered + dropped < produced
                     ? std::to_string(produced - delivered - dropped) + " events lost uncounted"
                     : std::to_string(delivered + dropped - produced) + " events counted that were never lost"));
    }
  }
  summary.produced = produced_total;
  const std::uint64_t without_ring = stat("dropped_without_ring");
  if (delivered_total + dropped_total + without_ring != produced_total) {
    std::string text = "whole run: recorded " + std::to_string(delivered_total) + " + dropped in the stream " +
                       std::to_string(dropped_total) + " + dropped_without_ring " + std::to_string(without_ring) +
                       " = " + std::to_string(delivered_total + dropped_total + without_ring) + ", produced " +
                       std::to_string(produced_total);
    f.add("count identity", text);
  }
  if (without_ring == 0) {
    for (const std::string& u : unaccounted) f.add("count identity", u);
  }

  // 5. What the stream says against what the session counted (streams of that session).
  std::uint64_t stream_dropped = 0;
  for (const StreamEvent& e : stream.events) {
    if (e.kind == Kind::dropped) stream_dropped += e.value;
  }
  if (m.stats.count("dropped") != 0 && stream_dropped + without_ring != stat("dropped")) {
    f.add("stats", "the stream's dropped markers count " + std::to_string(stream_dropped) +
                       " (+ dropped_without_ring " + std::to_string(without_ring) +
                       "), the session's stats().dropped " + std::to_string(stat("dropped")));
  }
  // Per thread: the session's row (os_tid) against what the stream delivered for its slot.
  std::uint64_t delivered_all = 0;
  for (const auto& [n, d] : delivered_by_slot) delivered_all += d;
  if (m.stats.count("recorded") != 0 && delivered_all + delivered_unplaced != stat("recorded")) {
    f.add("stats",
          "the stream delivered " + std::to_string(delivered_all + delivered_unplaced) +
              " events (dropped markers, switches and zones closed at stop aside), the session's stats().recorded is " +
              std::to_string(stat("recorded")));
  }
  for (const ThreadRow& row : m.threads) {
    for (const auto& [n, slot] : m.slots) {
      if (slot.tid != row.os_tid) continue;
      if (row.recorded != delivered_by_slot[n] || row.dropped != dropped_by_slot[n]) {
        f.add("stats", slot_name(m, n) + ": the session's row says recorded " + std::to_string(row.recorded) +
                           ", dropped " + std::to_string(row.dropped) + "; the stream has " +
                           std::to_string(delivered_by_slot[n]) + " events and drops of " +
                           std::to_string(dropped_by_slot[n]));
      }
    }
  }
  if (!config.switches && summary.switches != 0) {
    f.add("switches", std::to_string(summary.switches) + " context-switch events without Config::context_switches");
  }
  if (config.switches && m.switches_unavailable.empty() && summary.switches == 0) {
    f.add("switches", "Config::context_switches on and available, yet the stream has no switch event");
  }
  return f.lines;
}

}  // namespace matrix
