// filter_files [--huge] DIR: writes synthetic.rtrace (40 ms; large.rtrace the same for 1 s;
// with --huge only huge.rtrace, for 20 s: a Chrome trace past 256 MB), a stream of every kind of event a filter
// decides on, built by hand (TraceBuilder) and written by the binary file's writer:
// three named threads with nested zones of many lengths (a region among them), values
// and texts on zones, flows between threads, async spans that end on another thread,
// counters of two threads, instants, messages, drops and context switches. The times
// come from a fixed pseudo-random sequence, so the file is the same on every run.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/recorded_trace.hpp"

namespace {

using namespace ringtrace;

struct Random {  // xorshift64*: the same numbers everywhere
  std::uint64_t s = 0x9e3779b97f4a7c15u;
  std::uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545f4914f6cdd1du;
  }
  std::uint64_t below(std::uint64_t n) { return next() % n; }
};

struct Sites {
  std::vector<SiteId> zones;
  SiteId region, count, ratio, note, label, instant, counter_int, counter_double, span, span_end;
};

// A zone and what it nests, from `now` on; returns its end time.
std::uint64_t zone(TraceBuilder& b, const Sites& s, Random& r, ThreadId t, std::uint64_t now, int depth,
                   std::uint64_t& flow_id) {
  const bool region = depth == 1 && r.below(8) == 0;
  const SiteId site = region ? s.region : s.zones[r.below(s.zones.size())];
  b.begin(t, site, now, region ? static_cast<std::int64_t>(r.below(1000)) : 0);
  if (r.below(3) == 0) b.value(t, s.count, now, static_cast<std::int64_t>(r.below(100000)));
  if (r.below(5) == 0) b.value(t, s.ratio, now, static_cast<double>(r.below(1000)) / 7.0);
  if (r.below(6) == 0) b.text(t, s.label, now, "shape [" + std::to_string(r.below(64)) + ", 3]");
  std::uint64_t at = now + 1 + r.below(2000);
  const int children = depth < 6 ? static_cast<int>(r.below(4)) : 0;
  for (int c = 0; c < children; ++c) {
    at = zone(b, s, r, t, at, depth + 1, flow_id) + 1 + r.below(500);
    if (r.below(10) == 0) b.instant(t, s.instant, at++);
    if (r.below(12) == 0) b.counter(t, s.counter_int, at++, static_cast<std::int64_t>(r.below(50)));
  }
  if (r.below(15) == 0) b.flow_out(t, at, ++flow_id);
  const std::uint64_t end = at + (r.below(4) == 0 ? r.below(200000) : r.below(3000));
  b.end(t, end);
  return end;
}

RecordedTrace synthetic(std::uint64_t duration_ns) {
  TraceBuilder b("synthetic");
  Sites s;
  for (const char* name : {"outer", "parse", "parse_header", "lock_wait", "compute", "io", "serialize"}) {
    s.zones.push_back(b.site(name));
  }
  s.region = b.site("capture", SiteKind::region);
  s.count = b.site("count", SiteKind::value);
  s.ratio = b.site("ratio", SiteKind::value);
  s.label = b.site("input_shapes", SiteKind::value);
  s.instant = b.site("tick", SiteKind::instant);
  s.counter_int = b.site("queue_depth", SiteKind::counter);
  s.counter_double = b.site("load", SiteKind::counter);
  s.span = b.site("request", SiteKind::async_begin);
  s.span_end = b.site("request", SiteKind::async_end);
  s.note = b.site("note", SiteKind::instant);
  const ThreadId threads[] = {b.thread("alpha", 1001), b.thread("beta", 1002), b.thread("gamma", 1003)};
  Random r;
  std::uint64_t flow_id = 0, span_id = 0;
  const std::uint64_t start = 5'000'000'000;
  for (std::size_t i = 0; i < 3; ++i) {
    const ThreadId t = threads[i];
    std::uint64_t now = start + 1000 * i;
    std::uint64_t flows_in = 0;
    while (now < start + duration_ns) {
      if (r.below(3) == 0) {  // off the CPU a while
        b.switch_out(t, now, r.below(2));
        now += 1 + r.below(300000);
        b.switch_in(t, now++);
      }
      now = zone(b, s, r, t, now, 1, flow_id) + 1 + r.below(20000);
      // A flow out of alpha's zones lands in one of beta's; a span begun on alpha ends on gamma.
      if (i == 1 && flows_in < flow_id) {
        b.begin(t, s.zones[1], now).flow_in(t, now + 1, ++flows_in).end(t, now + 2 + r.below(5000));
        now += 6000;
      }
      if (i == 0 && r.below(3) == 0) b.async_begin(t, s.span, now++, ++span_id);
      if (i == 2 && span_id > 0 && r.below(2) == 0) b.async_end(t, s.span_end, now++, span_id - r.below(span_id));
      if (i == 2 && r.below(4) == 0) b.counter(t, s.counter_double, now++, static_cast<double>(r.below(900)) / 9.0);
      if (r.below(40) == 0) b.dropped(t, now++, 1 + r.below(9));
      if (r.below(25) == 0) b.instant(t, s.note, now++);
    }
  }
  return b.build(start + duration_ns + 1'000'000);
}

}  // namespace

int main(int argc, char** argv) {
  const bool huge = argc == 3 && std::string(argv[1]) == "--huge";
  if (argc != 2 && !huge) {
    std::fprintf(stderr, "usage: filter_files [--huge] DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[argc - 1];
  std::filesystem::create_directories(dir);
  std::vector<std::pair<const char*, std::uint64_t>> files = {{"synthetic.rtrace", 40'000'000},
                                                              {"large.rtrace", 1'000'000'000}};
  if (huge) files = {{"huge.rtrace", 20'000'000'000}};  // a Chrome trace of about 330 MB
  for (const auto& [name, duration_ns] : files) {
    const RecordedTrace trace = synthetic(duration_ns);
    replay(trace, *binary_trace_exporter(dir / name));
    std::printf("%s: %zu events\n", name, trace.events.size());
  }
  return 0;
}
