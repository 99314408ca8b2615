// ringtrace info: what a binary trace file holds, without converting it: format version,
// process, host, start and duration, threads with names and event counts, call sites,
// drops, and whether the file is complete or where it was cut.
#include <cstdio>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "commands.hpp"
#include "ringtrace/exporters/binary_trace.hpp"

namespace ringtrace::tool {

namespace {

// Counts what info prints; keeps no events.
class Census final : public Exporter {
 public:
  void on_events(std::span<const Event> events, const TraceContext&) override {
    for (const Event& e : events) {
      ++kinds[e.kind];
      if (first == 0 || e.time_ns < first) first = e.time_ns;
      if (e.time_ns > last) last = e.time_ns;
    }
  }
  void on_finish(const TraceContext& context, const SessionStats& s) override {
    stats = s;
    process = context.process_name();
    pid = context.process_id();
    clock = context.clock();
    for (SiteId id = 1; id < context.site_count(); ++id) {
      const SiteInfo& site = context.site(id);
      sites.push_back(std::string(site.name) + (site.file[0] != '\0' ? std::string("  ") + site.file + ":" +
                                                                             std::to_string(site.line)
                                                                       : std::string()));
    }
  }
  std::map<EventKind, std::uint64_t> kinds;
  std::uint64_t first = 0, last = 0;
  SessionStats stats;
  std::string process;
  std::uint32_t pid = 0;
  ClockInfo clock;
  std::vector<std::string> sites;
};

}  // namespace

int info(const std::vector<std::string>& args) {
  const bool rings = !(args.size() == 2 && args[1] == "--no-rings");
  if (wants_help(args) || args.empty() || (args.size() == 2 && rings) || args.size() > 2) {
    return usage(args,
        "usage: ringtrace info FILE [--no-rings]\n"
        "\n"
        "Prints what a binary trace file holds: process, host, start and duration, threads\n"
        "with names and event counts, call sites, drops, and whether the file is complete\n"
        "(a file cut short, e.g. by a killed process, is read up to its last complete chunk\n"
        "and info says where it ends; info still exits 0). A file cut short whose recording\n"
        "kept its rings in a file is read on from the ring file beside it (run.rtrace.rings),\n"
        "unless --no-rings; info says how many events came from there.\n");
  }
  Census census;
  ReplayOptions options;
  options.recover_rings = rings;
  Exporter* const one[] = {&census};
  const ReplayResult r = replay_file(args[0], std::span<Exporter* const>(one), options);
  const SessionStats& s = census.stats;
  std::printf("file:        %s (%llu bytes, format version %u)\n", args[0].c_str(),
              static_cast<unsigned long long>(r.bytes), r.version);
  std::printf("status:      %s\n", r.complete ? "complete" : r.problem.c_str());
  if (!r.rings.empty()) {
    std::printf("rings:       %s: %llu events recovered (recorded after the file's last write)\n", r.rings.c_str(),
                static_cast<unsigned long long>(r.recovered));
  }
  if (r.processes.size() <= 1) {
    std::printf("process:     %s (pid %u) on host %s\n", census.process.c_str(), census.pid, r.host.c_str());
  } else {
    std::printf("processes:   %zu, merged\n", r.processes.size());
    for (const ReplayProcess& p : r.processes) {
      std::printf("  pid %-8u %-20s host %-16s %s%s%s\n", p.pid, p.name.c_str(), p.host.c_str(),
                  p.realtime_aligned ? ("offset " + std::to_string(p.offset_ns) + " ns by CLOCK_REALTIME").c_str()
                                     : "same clock",
                  p.source.empty() ? "" : ", from ", p.source.c_str());
      if (!p.complete) std::printf("    %s\n", p.problem.c_str());
    }
  }
  char when[64] = "?";
  const std::time_t secs = static_cast<std::time_t>(r.realtime_start_ns / 1000000000u);
  std::tm tm{};
  if (gmtime_r(&secs, &tm) != nullptr) std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
  std::printf("started:     %s\n", when);
  std::printf("duration:    %s (clock: %s, %.3f GHz, %llu re-fits)\n",
              duration(census.clock.stop_ns - census.clock.start_ns).c_str(),
              census.clock.tsc ? "invariant TSC" : "CLOCK_MONOTONIC", census.clock.ticks_per_second / 1e9,
              static_cast<unsigned long long>(census.clock.recalibrations));
  std::printf("events:      %llu recorded, %llu dropped", static_cast<unsigned long long>(s.recorded),
              static_cast<unsigned long long>(s.dropped));
  if (s.closed_at_stop != 0) std::printf(", %llu zones closed at the end", static_cast<unsigned long long>(s.closed_at_stop));
  std::printf("\nthreads:     %zu\n", s.threads.size());
  for (const ThreadStats& t : s.threads) {
    std::string tid = std::to_string(t.os_tid);
    if (t.pid != 0) tid = std::to_string(t.pid) + "/" + tid;  // a merged file: pid/tid
    std::printf("  %-24s tid %-8s %12llu events %10llu dropped\n", t.name.empty() ? "(unnamed)" : t.name.c_str(),
                tid.c_str(), static_cast<unsigned long long>(t.recorded),
                static_cast<unsigned long long>(t.dropped));
  }
  std::printf("call sites:  %zu\n", census.sites.size());
  for (std::size_t i = 0; i < census.sites.size() && i < 20; ++i) std::printf("  %s\n", census.sites[i].c_str());
  if (census.sites.size() > 20) std::printf("  ... and %zu more\n", census.sites.size() - 20);
  return 0;
}

}  // namespace ringtrace::tool
