// ringtrace info: what a binary trace file holds, without converting it: format version,
// process, host, start and duration, threads with names and event counts, call sites,
// drops, and whether the file is complete or where it was cut.
#include <cstdio>
#include <ctime>
#include <map>
#include <string>
#include <string_view>
#include <utility>
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
      sites.push_back(
          {site.name, site.file[0] != '\0' ? std::string(site.file) + ":" + std::to_string(site.line) : ""});
    }
  }
  std::map<EventKind, std::uint64_t> kinds;
  std::uint64_t first = 0, last = 0;
  SessionStats stats;
  std::string process;
  std::uint32_t pid = 0;
  ClockInfo clock;
  std::vector<std::pair<std::string, std::string>> sites;  // name, file:line ("" when interned)
};

constexpr std::size_t kShownSites = 20;  // the rest is counted

void print_processes(const std::vector<ReplayProcess>& processes) {
  std::printf("processes:   %zu, merged\n", processes.size());
  Columns rows({{}, {Columns::Align::left, kNameCap}, {Columns::Align::left, kNameCap}, {}});
  for (std::size_t i = 0; i < processes.size(); ++i) {
    const ReplayProcess& p = processes[i];
    const std::string from = p.source.empty() ? "" : "from " + p.source;
    rows.add({"pid " + std::to_string(p.pid), p.name, "host " + p.host, from + pid_note(processes, i)});
  }
  rows.print(stdout, "  ");
  // Each process's clock on the file's timeline: exact, by CLOCK_REALTIME, or measured
  // from the flows between hosts (format 2.3).
  std::printf("clocks:\n");
  bool contradicted = false;
  for (const ReplayProcess& p : processes) {
    std::printf("  pid %u: %s\n", p.stream_pid != 0 ? p.stream_pid : p.pid, describe_clock(p).c_str());
    contradicted = contradicted || p.clock.contradicted;
  }
  if (contradicted) {
    std::printf("  the flows between hosts contradict every clock offset: some receive is before its send\n");
  }
  for (const ReplayProcess& p : processes) {
    if (!p.complete) std::printf("  pid %u: %s\n", p.pid, p.problem.c_str());
  }
}

void print_threads(const std::vector<ThreadStats>& threads) {
  std::printf("threads:     %zu\n", threads.size());
  Columns rows({{Columns::Align::left, kNameCap}, {}, {Columns::Align::right}, {Columns::Align::right}});
  for (const ThreadStats& t : threads) {
    std::string tid = std::to_string(t.os_tid);
    if (t.pid != 0) tid = std::to_string(t.pid) + "/" + tid;  // a merged file: pid/tid
    rows.add({t.name.empty() ? "(unnamed)" : t.name, "tid " + tid, std::to_string(t.recorded) + " events",
              std::to_string(t.dropped) + " dropped"});
  }
  rows.print(stdout, "  ");
}

void print_sites(const std::vector<std::pair<std::string, std::string>>& sites) {
  std::printf("call sites:  %zu\n", sites.size());
  Columns rows({{Columns::Align::left, kNameCap}, {}});
  for (std::size_t i = 0; i < sites.size() && i < kShownSites; ++i) rows.add({sites[i].first, sites[i].second});
  rows.print(stdout, "  ");
  if (sites.size() > kShownSites) std::printf("  ... and %zu more\n", sites.size() - kShownSites);
}

}  // namespace

int info(const std::vector<std::string>& args) {
  const bool rings = !(args.size() == 2 && args[1] == "--no-rings");
  if (wants_help(args) || args.empty() || (args.size() == 2 && rings) || args.size() > 2) {
    return usage(args,
                 "usage: ringtrace info FILE [--no-rings]\n"
                 "\n"
                 "Prints what a binary trace file holds: its format version (major.minor, e.g. 2.1),\n"
                 "process, host, start and duration, threads with names and event counts, call\n"
                 "sites, drops, and whether the file is complete\n"
                 "(a file cut short, e.g. by a killed process, is read up to its last complete chunk\n"
                 "and info says where it ends; info still exits 0). A file cut short whose recording\n"
                 "kept its rings in a file is read on from the ring file beside it (run.rtrace.rings),\n"
                 "unless --no-rings; info says how many events came from there. FILE is a regular\n"
                 "file (a FIFO, '-' or a device is refused).\n");
  }
  check_input(args[0], rings);
  Census census;
  ReplayOptions options;
  options.recover_rings = rings;
  if (rings) options.rings = ring_file_of(args[0]);
  Exporter* const one[] = {&census};
  const ReplayResult r = replay_file(args[0], std::span<Exporter* const>(one), options);
  const SessionStats& s = census.stats;
  // major.minor: format 2's minor says which frames the file may hold (2.1: modules,
  // functions, switches); format 1 had one number.
  const std::string version = r.version == 1 ? "1" : std::to_string(r.version) + "." + std::to_string(r.minor_version);
  std::printf("file:        %s (%llu bytes, format version %s)\n", args[0].c_str(),
              static_cast<unsigned long long>(r.bytes), version.c_str());
  std::printf("status:      %s\n", r.complete ? "complete" : r.problem.c_str());
  if (!r.rings.empty()) {
    std::printf("rings:       %s: %llu events recovered (recorded after the file's last write)\n", r.rings.c_str(),
                static_cast<unsigned long long>(r.recovered));
  }
  if (r.processes.size() <= 1) {
    std::printf("process:     %s (pid %u) on host %s\n", census.process.c_str(), census.pid, r.host.c_str());
  } else {
    print_processes(r.processes);
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
  if (s.closed_at_stop != 0)
    std::printf(", %llu zones closed at the end", static_cast<unsigned long long>(s.closed_at_stop));
  std::printf("\n");
  if (!s.rings_unavailable.empty()) {
    std::printf("             %llu of them lost with no ring: %s\n",
                static_cast<unsigned long long>(s.dropped_without_ring), s.rings_unavailable.c_str());
  }
  if (s.drainer_out_of_memory != 0) {
    std::printf(
        "             the drainer ran out of memory in %llu passes: threads dropped instead of waiting "
        "meanwhile, and %llu events those passes had decoded were lost\n",
        static_cast<unsigned long long>(s.drainer_out_of_memory),
        static_cast<unsigned long long>(s.drainer_events_lost));
  }
  if (!s.context_switches_unavailable.empty()) {
    std::printf("switches:    unavailable: %s\n", s.context_switches_unavailable.c_str());
  } else if (s.context_switches != 0) {
    std::printf("switches:    %llu context switches, %llu lost\n", static_cast<unsigned long long>(s.context_switches),
                static_cast<unsigned long long>(s.context_switches_lost));
  }
  // memory_summary's lines ("Memory: ...", then "Memory, ...") as info's.
  std::string memory = memory_summary(s.memory, census.clock.start_ns, r.processes.size());
  if (!memory.empty()) {
    memory.replace(0, std::string_view("Memory: ").size(), "memory:      ");
    for (std::size_t at = memory.find("\nMemory, "); at != std::string::npos; at = memory.find("\nMemory, ", at + 1))
      memory.replace(at + 1, std::string_view("Memory, ").size(), "             ");
    std::fputs(memory.c_str(), stdout);
  }
  const std::string left_out = functions_left_out(s.functions, 0);
  if (!left_out.empty()) std::printf("functions:   %s", left_out.c_str());
  print_threads(s.threads);
  print_sites(census.sites);
  return 0;
}

}  // namespace ringtrace::tool
