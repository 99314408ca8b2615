// A live session for the `clients` tests: several named threads with nested zones,
// regions, instants, counters, hostile names and a zone still open at stop(), traced
// by the Chrome and folded exporters and by a MemoryExporter. Writes, into the folder
// given as argument:
//   live.json, live.json.gz       Chrome trace (source locations on), plain and gzip
//   live_counters.json            Chrome trace with per_thread_counters
//   live.perfetto-trace, live_counters.perfetto-trace   the same in Perfetto's format
//   live.folded                   folded stacks, self time (the default)
//   live_calls.folded             folded stacks, call counts, thread root frames
//   expected.json                 what the readers must report, from the MemoryExporter
//                                 stream through tests' own reference computation:
//                                 threads (in sort order) with their zones, counter
//                                 samples; and "made": the zones (per name) and instants
//                                 the program made, counted by the program beside each
//                                 macro, not read from any stream (every reader checks
//                                 its reading against both)
//   ties.json, ties.perfetto-trace, ties_expected.json, ties_perfetto_expected.json
//                                 a hand-built stream whose zones begin or end in the
//                                 same nanosecond as the zone around them (a coarse
//                                 clock), in both formats, and what each must hold
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chrome_folded/chrome_folded_streams.hpp"
#include "output.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/exporters/perfetto.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {

volatile double g_sink = 0;

// What the program made, counted by itself as it made it: zones per name, instants.
struct Made {
  std::mutex mutex;
  std::map<std::string, std::uint64_t> zones;
  std::uint64_t instants = 0;
  void add(const std::map<std::string, std::uint64_t>& thread_zones, std::uint64_t thread_instants) {
    std::lock_guard lock(mutex);
    for (const auto& [name, n] : thread_zones) zones[name] += n;
    instants += thread_instants;
  }
};
Made g_made;

void spin(int n) {
  double x = 1;
  for (int i = 0; i < n; ++i) x = x * 1.0000001 + 1e-9;
  g_sink = g_sink + x;
}

void worker(int index, const ringtrace::SiteInfo* weird_site) {
  if (index == 1) {
    // Renamed after its first events: readers must show the last name.
    ringtrace::set_thread_name("worker-1 starting");
  } else if (index == 2) {
    ringtrace::set_thread_name(ringtrace::testing::kWeirdThread);
  } else {
    ringtrace::set_thread_name(std::string("worker-") + std::to_string(index));
  }
  std::map<std::string, std::uint64_t> made;
  std::uint64_t instants = 0;
  for (int i = 0; i < 60; ++i) {
    if (index == 1 && i == 30) {
      // Give the drainer time to deliver (and name) the thread first; if it has not,
      // the file simply holds the last name only.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ringtrace::set_thread_name("worker-1");
    }
    RINGTRACE_ZONE("step");
    ++made["step"];
    {
      RINGTRACE_ZONE("compute");
      ++made["compute"];
      spin(2000);
      {
        RINGTRACE_ZONE("inner");
        ++made["inner"];
        spin(1000);
      }
    }
    if (i % 3 == 0) {
      RINGTRACE_REGION("graph", i);
      RINGTRACE_ZONE("compute");
      made["graph"] += 1;
      made["compute"] += 1;
      spin(500);
    }
    if (index == 2) {
      RINGTRACE_ZONE_SITE(weird_site);
      ++made[weird_site->name];
      spin(300);
    }
    RINGTRACE_INSTANT("tick");
    ++instants;
    RINGTRACE_COUNTER("progress", i);
    RINGTRACE_COUNTER("ratio", i / 60.0);
  }
  g_made.add(made, instants);
}

std::string json(std::string_view s) {
  std::string out;
  ringtrace::detail::append_json_string(out, s);
  return out;
}

bool write_expected(const ringtrace::RecordedTrace& trace, const ringtrace::SessionStats& stats,
                    const std::map<std::string, std::uint64_t>& made_zones, std::uint64_t made_instants,
                    const std::filesystem::path& path);

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: chrome_folded_live <output folder>\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);

  ringtrace::Config config;
  config.process_name = "ringtrace live \"test\"";
  config.overflow = ringtrace::OverflowPolicy::block;  // lossless: the expectations are exact
  ringtrace::Session session(config);
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(memory);
  ringtrace::ChromeTraceOptions chrome;
  chrome.source_locations = true;
  session.add_exporter(ringtrace::chrome_trace_exporter((dir / "live.json").string(), chrome));
  session.add_exporter(ringtrace::chrome_trace_exporter((dir / "live.json.gz").string(), chrome));
  ringtrace::ChromeTraceOptions per_thread;
  per_thread.per_thread_counters = true;
  session.add_exporter(ringtrace::chrome_trace_exporter((dir / "live_counters.json").string(), per_thread));
  session.add_exporter(ringtrace::perfetto_exporter(dir / "live.perfetto-trace"));
  ringtrace::PerfettoOptions perfetto_per_thread;
  perfetto_per_thread.per_thread_counters = true;
  session.add_exporter(ringtrace::perfetto_exporter(dir / "live_counters.perfetto-trace", perfetto_per_thread));
  ringtrace::PerfettoOptions perfetto_delta;
  perfetto_delta.delta_timestamps = true;
  session.add_exporter(ringtrace::perfetto_exporter(dir / "live_delta.perfetto-trace", perfetto_delta));
  session.add_exporter(ringtrace::folded_stacks_exporter((dir / "live.folded").string()));
  ringtrace::FoldedStacksOptions calls;
  calls.value = ringtrace::FoldedValue::calls;
  calls.thread_root = true;
  session.add_exporter(ringtrace::folded_stacks_exporter((dir / "live_calls.folded").string(), calls));

  const ringtrace::SiteInfo* weird = ringtrace::intern(ringtrace::testing::kWeirdZone);
  ringtrace::set_thread_name("main");
  session.start();
  {
    RINGTRACE_ZONE("main_open_at_stop");
    g_made.zones["main_open_at_stop"] += 1;  // before any worker starts
    std::vector<std::thread> threads;
    for (int i = 0; i < 3; ++i) threads.emplace_back(worker, i, weird);
    for (auto& t : threads) t.join();
    session.stop();  // the zone is still open: closed at the stop time
  }
  const ringtrace::SessionStats stats = session.stats();
  for (const auto& e : stats.exporter_errors) std::fprintf(stderr, "exporter error: %s\n", e.c_str());
  if (!stats.exporter_errors.empty() || stats.dropped != 0) return 1;

  if (!write_expected(memory->trace(), stats, g_made.zones, g_made.instants, dir / "expected.json")) return 1;

  // Zones that begin or end with the zone around them, even all three levels at once.
  // The Perfetto file moves a begin to 1 ns after the thread's previous boundary and an
  // end to 1 ns after the previous begin (`moved`: what the file must then hold).
  // Each round begins 7 zones: on thread a outer, mid, leaf, leaf, mid; on c outer, mid.
  const std::map<std::string, std::uint64_t> ties_made = {{"outer", 2 * 50}, {"mid", 3 * 50}, {"leaf", 2 * 50}};
  const auto ties = [](bool moved) {
    const std::uint64_t m = moved ? 1 : 0;
    ringtrace::TraceBuilder b("ties");
    const ringtrace::ThreadId a = b.thread("a", 501), c = b.thread("c", 502);
    const ringtrace::SiteId outer = b.site("outer"), mid = b.site("mid"), leaf = b.site("leaf");
    std::uint64_t now = 1'000'000;
    for (int i = 0; i < 50; ++i, now += 10'000) {
      b.begin(a, outer, now).begin(a, mid, now + m).begin(a, leaf, now + 2 * m).end(a, now + 100);
      b.begin(a, leaf, now + 100 + m).end(a, now + 200).end(a, now + 300).begin(a, mid, now + 300 + m);
      b.end(a, now + 400).end(a, now + 400);
      b.begin(c, outer, now + 5).begin(c, mid, now + 5 + m).end(c, now + 50).end(c, now + 50);
    }
    return b.build();
  };
  const ringtrace::RecordedTrace exact = ties(false), moved = ties(true);
  ringtrace::replay(exact, *ringtrace::chrome_trace_exporter((dir / "ties.json").string()));
  ringtrace::replay(exact, *ringtrace::perfetto_exporter(dir / "ties.perfetto-trace"));
  ringtrace::PerfettoOptions delta;
  delta.delta_timestamps = true;
  ringtrace::replay(exact, *ringtrace::perfetto_exporter(dir / "ties_delta.perfetto-trace", delta));
  if (!write_expected(exact, exact.stats, ties_made, 0, dir / "ties_expected.json")) return 1;
  if (!write_expected(moved, moved.stats, ties_made, 0, dir / "ties_perfetto_expected.json")) return 1;
  std::printf("live session and ties: files in %s\n", dir.c_str());
  return 0;
}

namespace {

// expected.json: names as JSON strings (invalid UTF-8 already replaced), times in ns.
bool write_expected(const ringtrace::RecordedTrace& trace, const ringtrace::SessionStats& stats,
                    const std::map<std::string, std::uint64_t>& made_zones, std::uint64_t made_instants,
                    const std::filesystem::path& path) {
  const std::vector<ringtrace::testing::RefZone> zones = ringtrace::testing::reference_zones(trace);
  std::string out = std::string("{\"process_name\":") + json(trace.process_name) + ",\n\"threads\":[";
  // Threads in the session's order (ThreadInfo::sort_index: first event first).
  std::vector<ringtrace::ThreadId> order(trace.threads.size());
  for (ringtrace::ThreadId t = 0; t < order.size(); ++t) order[trace.threads[t].sort_index] = t;
  for (ringtrace::ThreadId t : order) {
    const auto& info = trace.threads[t];
    out += (t == order.front() ? "\n" : ",\n");
    out += std::string("{\"tid\":") + std::to_string(info.os_tid) + ",\"name\":" + json(info.name) +
           ",\"sort_index\":" + std::to_string(info.sort_index) + ",\"zones\":[";
    bool first = true;
    std::map<std::int64_t, std::size_t> index;  // zone index -> index within the thread
    for (std::size_t i = 0; i < zones.size(); ++i) {
      const auto& z = zones[i];
      if (z.thread != t) continue;
      const std::size_t position = index.size();
      index[static_cast<std::int64_t>(i)] = position;
      const std::int64_t parent = z.parent < 0 ? -1 : static_cast<std::int64_t>(index.at(z.parent));
      out += first ? "\n" : ",\n";
      first = false;
      // [name, begin_ns, duration_ns, parent (index in this list), closed_at_stop, self_ns]
      out += std::string("[") + json(trace.sites[z.site].name) + "," + std::to_string(z.begin_ns) + "," +
             std::to_string(z.end_ns - z.begin_ns) + "," + std::to_string(parent) + "," +
             (z.closed_at_stop ? "true" : "false") + "," + std::to_string(z.self_ns) + "]";
    }
    out += "]}";
  }
  // Counter samples: [name, tid, time_ns, value].
  out += "],\n\"counters\":[";
  bool first_sample = true;
  for (const ringtrace::Event& e : trace.events) {
    if (e.kind != ringtrace::EventKind::counter) continue;
    out += first_sample ? "\n[" : ",\n[";
    first_sample = false;
    out += json(trace.sites[e.site].name) + "," + std::to_string(trace.threads[e.thread].os_tid) + "," +
           std::to_string(e.time_ns) + ",";
    if ((e.flags & ringtrace::EventFlags::counter_double) != 0) {
      ringtrace::detail::append_double(out, e.value.d);
    } else {
      out += std::to_string(e.value.i);
    }
    out += "]";
  }
  std::uint64_t self_total = 0, instants = 0;
  for (const auto& z : zones) self_total += z.self_ns;
  for (const ringtrace::Event& e : trace.events) {
    instants += e.kind == ringtrace::EventKind::instant || e.kind == ringtrace::EventKind::dropped;
  }
  out += std::string("],\n\"zone_count\":") + std::to_string(zones.size()) +
         ",\"self_total_ns\":" + std::to_string(self_total) +
         ",\"top_level_total_ns\":" + std::to_string(ringtrace::testing::top_level_total(trace)) +
         ",\"closed_at_stop\":" + std::to_string(stats.closed_at_stop) +
         ",\"recorded\":" + std::to_string(stats.recorded) + ",\"instant_count\":" + std::to_string(instants);
  std::uint64_t made_total = 0;
  out += ",\n\"made\":{\"zones\":{";
  for (const auto& [name, n] : made_zones) {
    out += (made_total == 0 ? "" : ",") + json(name) + ":" + std::to_string(n);
    made_total += n;
  }
  out += "},\"zone_count\":" + std::to_string(made_total) + ",\"instants\":" + std::to_string(made_instants) + "}}\n";
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr || std::fwrite(out.data(), 1, out.size(), file) != out.size() || std::fclose(file) != 0) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace
