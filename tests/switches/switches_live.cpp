// A live session with context switches whose Perfetto and Chrome files the real reader
// (trace_processor v20.1) loads (check_switches_trace.mjs): writes them into the folder
// given, with expected.json from the session's own event stream: every "nap" zone
// (thread, start, duration, on-CPU ns computed by the test from the switch events) and
// each thread's total off-CPU time. Exits 77 (skipped, saying why) only where the machine
// refuses perf_event_open (perf_refusal.hpp); 1 when a stream fails to open otherwise.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/perfetto.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "session_support.hpp"

int main(int argc, char** argv) {
  using namespace switch_session;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <folder>\n", argv[0]);
    return 2;
  }
  const switch_test::PerfCheck perf = switch_test::check_perf_access();  // perf_refusal.hpp's rule
  if (perf.access != switch_test::PerfAccess::open) {
    const bool refused = perf.access == switch_test::PerfAccess::refused;
    std::fprintf(stderr, "perf_event_open %s: %s\n", refused ? "refused (skipped)" : "failed", perf.why.c_str());
    return refused ? 77 : 1;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  ringtrace::Config config;
  config.process_name = "switches live";
  config.context_switches = true;
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  ringtrace::Session session(config);
  session.add_exporter(memory);
  session.add_exporter(ringtrace::perfetto_exporter(dir / "switches.perfetto-trace"));
  session.add_exporter(ringtrace::chrome_trace_exporter(dir / "switches.json"));
  session.start();
  {
    std::vector<std::unique_ptr<TracedThread>> threads;
    for (int w = 0; w < 2; ++w) {
      threads.push_back(std::make_unique<TracedThread>([] {
        for (int i = 0; i < 5; ++i) {
          RINGTRACE_ZONE("nap");
          std::this_thread::sleep_for(std::chrono::milliseconds(3));
          RINGTRACE_ZONE("spin");
          const std::uint64_t until = now_ns() + kMs;
          while (now_ns() < until) {}
        }
      }));
    }
    std::vector<std::uint64_t> tids;
    for (auto& t : threads) tids.push_back(t->tid());
    if (!wait_for_streams(session, tids)) {
      std::fprintf(stderr, "streams did not open\n");
      return 1;
    }
  }
  session.stop();
  const ringtrace::RecordedTrace trace = memory->trace();
  std::ofstream out(dir / "expected.json");
  out << "{\"zones\":[";
  bool first = true;
  for (const ZoneTimes& z : zone_times(trace)) {
    if (z.name != "nap" || !z.known) continue;
    out << (first ? "" : ",") << "[" << trace.threads[z.thread].os_tid << "," << z.begin_ns << ","
        << (z.end_ns - z.begin_ns) << "," << (z.end_ns - z.begin_ns - z.off_ns) << "]";
    first = false;
  }
  out << "]}\n";
  return out ? 0 : 1;
}
