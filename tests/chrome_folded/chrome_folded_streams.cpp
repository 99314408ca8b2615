#include "chrome_folded_streams.hpp"

#include <limits>
#include <stdexcept>

namespace ringtrace::testing {

namespace {
// A recorded trace's context, plus metadata.
class MetadataContext final : public TraceContext {
 public:
  MetadataContext(const RecordedTrace& trace, std::vector<TraceMetadata> metadata)
      : base_(trace), metadata_(std::move(metadata)) {}
  const SiteInfo& site(SiteId id) const override { return base_.site(id); }
  std::uint32_t site_count() const override { return base_.site_count(); }
  const ThreadInfo& thread(ThreadId id) const override { return base_.thread(id); }
  std::uint32_t thread_count() const override { return base_.thread_count(); }
  const ClockInfo& clock() const override { return base_.clock(); }
  const std::string& process_name() const override { return base_.process_name(); }
  std::string_view text(const Event& e) const override { return base_.text(e); }
  std::span<const TraceMetadata> metadata() const override { return metadata_; }

 private:
  RecordedTraceContext base_;
  std::vector<TraceMetadata> metadata_;
};
}  // namespace

void replay_with_metadata(const RecordedTrace& trace, Exporter& exporter, std::vector<TraceMetadata> metadata) {
  const MetadataContext context(trace, std::move(metadata));
  exporter.on_start(context);
  exporter.on_events(trace.events, context);
  exporter.on_finish(context, trace.stats);
}

RecordedTrace golden_trace() {
  TraceBuilder b("golden \"proc\"");
  const SiteId main = b.site("main", SiteKind::zone, "src/main.cpp", 10);
  const SiteId parse = b.site("parse", SiteKind::zone, "src/parse.cpp", 20);
  const SiteId lex = b.site("lex", SiteKind::zone, "src/lex.cpp", 30);
  const SiteId graph = b.site("graph", SiteKind::region, "src/graph.cpp", 40);
  const SiteId tick = b.site("tick", SiteKind::instant, "src/main.cpp", 12);
  const SiteId depth = b.site("queue_depth", SiteKind::counter, "src/main.cpp", 13);
  const SiteId load = b.site("load", SiteKind::counter, "src/main.cpp", 14);
  const SiteId weird = b.site(kWeirdZone);                                 // interned: no file, no line
  const SiteId lex2 = b.site("lex", SiteKind::zone, "src/other.cpp", 50);  // same name, other site

  const ThreadId t0 = b.thread("main", 1001);
  const ThreadId t1 = b.thread(kWeirdThread, 1002);

  b.begin(t0, main, 1000).begin(t0, parse, 1500).begin(t0, lex, 2000).end(t0, 2750).end(t0, 4000);
  b.instant(t0, tick, 4100).counter(t0, depth, 4200, std::int64_t{5}).counter(t0, load, 4300, 0.25);
  b.begin(t0, graph, 5000, 7).begin(t0, parse, 5100).end(t0, 5600).end(t0, 6000);
  b.dropped(t0, 6100, 3);
  b.begin(t0, lex2, 7000);  // open at stop, like main

  b.begin(t1, weird, 1200).begin(t1, parse, 1300).end(t1, 1400).end(t1, 2500);
  b.counter(t1, depth, 2600, std::int64_t{-2});
  b.begin(t1, main, 3000);  // open at stop
  return b.build(9000);
}

RecordedTrace rich_trace() {
  TraceBuilder b("rich");
  const SiteId request = b.site("request", SiteKind::zone, "src/server.cpp", 10);
  const SiteId recv = b.site("recv", SiteKind::zone, "src/net.cpp", 20, "", "net");
  const SiteId handle = b.site("handle", SiteKind::zone, "src/server.cpp", 30);
  const SiteId bytes = b.site("bytes", SiteKind::value);
  const SiteId ratio = b.site("ratio", SiteKind::value);
  const SiteId path = b.site("path", SiteKind::value);
  const SiteId weird_key = b.site(kWeirdZone, SiteKind::value);
  const SiteId upload_b = b.site("upload", SiteKind::async_begin);
  const SiteId upload_e = b.site("upload", SiteKind::async_end);
  const ThreadId t0 = b.thread("main", 2001);
  const ThreadId t1 = b.thread("worker", 2002);

  b.value(t0, bytes, 900, std::int64_t{1});  // no zone open: belongs to nothing
  b.begin(t0, request, 1000).value(t0, bytes, 1000, std::int64_t{4096}).value(t0, ratio, 1000, 0.5);
  b.begin(t0, recv, 1100).text(t0, path, 1100, "/tmp/a \"b\"\n\x01\xFF").end(t0, 1400);
  b.value(t0, ratio, 1400, std::numeric_limits<double>::quiet_NaN());
  b.text(t0, weird_key, 1400, "cut here", true);
  b.flow_out(t0, 1400, 0xABCDEF0123456789ull).async_begin(t0, upload_b, 1500, 42).end(t0, 2000);
  b.begin(t1, handle, 2500).flow_in(t1, 2500, 0xABCDEF0123456789ull).value(t1, bytes, 2500, std::int64_t{-7});
  b.async_end(t1, upload_e, 2600, 42).end(t1, 3000);
  return b.build(4000);
}

RecordedTrace strip_rich(const RecordedTrace& trace) {
  RecordedTrace out = trace;
  out.events.clear();
  out.texts.clear();
  for (const Event& e : trace.events) {
    if (e.kind == EventKind::arg || e.kind == EventKind::flow_out || e.kind == EventKind::flow_in ||
        e.kind == EventKind::async_begin || e.kind == EventKind::async_end) {
      continue;
    }
    out.events.push_back(e);
  }
  return out;
}

std::vector<RefZone> reference_zones(const RecordedTrace& trace) {
  std::vector<RefZone> zones;
  std::vector<std::vector<std::size_t>> open(trace.threads.size());
  for (const Event& e : trace.events) {
    if (e.thread >= open.size()) open.resize(e.thread + 1);
    auto& stack = open[e.thread];
    if (e.kind == EventKind::zone_begin) {
      const std::int64_t parent = stack.empty() ? -1 : static_cast<std::int64_t>(stack.back());
      zones.push_back(
          RefZone{e.thread, e.site, e.time_ns, 0, parent, static_cast<std::uint32_t>(stack.size()), false, 0});
      stack.push_back(zones.size() - 1);
    } else if (e.kind == EventKind::zone_end) {
      if (stack.empty()) throw std::logic_error("reference_zones: end without begin");
      RefZone& z = zones[stack.back()];
      stack.pop_back();
      if (z.site != e.site) throw std::logic_error("reference_zones: end of another site");
      z.end_ns = e.time_ns;
      z.closed_at_stop = (e.flags & EventFlags::closed_at_stop) != 0;
    }
  }
  for (const auto& stack : open) {
    if (!stack.empty()) throw std::logic_error("reference_zones: zone never closed");
  }
  for (RefZone& z : zones) z.self_ns = z.end_ns - z.begin_ns;
  for (const RefZone& z : zones) {
    if (z.parent >= 0) zones[static_cast<std::size_t>(z.parent)].self_ns -= z.end_ns - z.begin_ns;
  }
  return zones;
}

std::uint64_t top_level_total(const RecordedTrace& trace) {
  std::uint64_t total = 0;
  for (const RefZone& z : reference_zones(trace)) {
    if (z.parent < 0) total += z.end_ns - z.begin_ns;
  }
  return total;
}

}  // namespace ringtrace::testing
