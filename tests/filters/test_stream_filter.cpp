// The filter stage (ringtrace/stream_filter.hpp) on streams built by hand, each with the
// answer worked out here from the stream's own times: what a time range keeps and cuts
// (and what it begins again at its start: values, counters, spans, a thread off the
// CPU), --min-duration's hold (order kept, short zones and their values gone, counted by
// name), --zone, --exclude, --max-depth and --thread, the bound on the stacks, and the
// reader's texts of messages let go once delivered.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "ringtrace/stream_filter.hpp"
#include "support/validating_exporter.hpp"

namespace ringtrace {
namespace {

// What came out of a filter: the events (texts resolved as the context gave them), the
// context's clock and metadata at on_finish, the stats.
class Kept final : public Exporter {
 public:
  struct Out {
    Event e;
    std::string text;
    std::string name;
  };
  void on_events(std::span<const Event> events, const TraceContext& context) override {
    for (const Event& e : events) out.push_back({e, std::string(context.text(e)), context.site(e.site).name});
  }
  void on_finish(const TraceContext& context, const SessionStats& s) override {
    clock = context.clock();
    for (const TraceMetadata& m : context.metadata()) facts[m.key] = m.value;
    stats = s;
    for (ThreadId t = 0; t < context.thread_count(); ++t) listed.push_back(context.thread(t).id == t);
  }
  std::vector<Out> out;
  ClockInfo clock;
  std::map<std::string, std::variant<std::int64_t, std::string>> facts;
  SessionStats stats;
  std::vector<bool> listed;
  std::int64_t fact(const std::string& key) const { return std::get<std::int64_t>(facts.at(key)); }
};

struct Filtered {
  std::shared_ptr<Kept> kept = std::make_shared<Kept>();
  std::shared_ptr<testing::ValidatingExporter> valid = std::make_shared<testing::ValidatingExporter>();
  FilterCounts counts;
};

Filtered run(const RecordedTrace& trace, FilterOptions options) {
  Filtered f;
  auto filter = stream_filter(std::move(options), {f.kept, f.valid});
  replay(trace, *filter, 3);  // small batches: the hold crosses them
  f.counts = filter->counts();
  EXPECT_EQ(f.valid->order_errors, 0u);
  EXPECT_EQ(f.valid->nesting_errors, 0u);
  EXPECT_EQ(f.valid->depth_errors, 0u);
  return f;
}

// "kind name time [flags]" of every event out, for comparing with a list.
std::vector<std::string> lines(const Kept& k) {
  std::vector<std::string> out;
  for (const Kept::Out& o : k.out) {
    static const char* const kinds[] = {"begin",   "end",      "instant", "counter", "dropped",
                                        "arg",     "flow_out", "flow_in", "async",   "async_end",
                                        "message", "out",      "in",      "alloc",   "free"};
    std::string line =
        std::string(kinds[static_cast<int>(o.e.kind)]) + " " + o.name + " " + std::to_string(o.e.time_ns);
    if ((o.e.flags & EventFlags::opened_at_window_start) != 0) line += " opened";
    if ((o.e.flags & EventFlags::closed_at_window_end) != 0) line += " closed";
    if (!o.text.empty()) line += " '" + o.text + "'";
    out.push_back(line);
  }
  return out;
}

TEST(StreamFilter, TimeRangeCutsWhatCrossesItsEdgesAndBeginsWhatIsOpenAgain) {
  TraceBuilder b;
  const ThreadId t = b.thread("main", 10), u = b.thread("other", 11);
  const SiteId a = b.site("a"), inner = b.site("inner"), c = b.site("c"), key = b.site("key", SiteKind::value);
  const SiteId label = b.site("label", SiteKind::value), tick = b.site("tick", SiteKind::instant);
  const SiteId depth = b.site("depth", SiteKind::counter);
  const SiteId span = b.site("req", SiteKind::async_begin), span_end = b.site("req", SiteKind::async_end);
  b.begin(t, a, 100).value(t, key, 100, std::int64_t{42});
  b.counter(t, depth, 150, std::int64_t{7});
  b.async_begin(t, span, 160, 5);
  b.begin(t, inner, 200).end(t, 300);  // wholly before the range
  b.switch_out(t, 320, 1);             // preempted, back at 500
  b.instant(t, tick, 340);
  b.instant(t, tick, 350);
  b.begin(t, c, 400).text(t, label, 400, "[2, 3]");
  b.switch_in(t, 500);
  b.instant(t, tick, 600);
  b.instant(t, tick, 601);
  b.end(t, 900).end(t, 1000);
  b.async_end(u, span_end, 2000, 5);
  FilterOptions o;
  o.from = TimeBound{false, 350};
  o.to = TimeBound{false, 600};
  const Filtered f = run(b.build(3000), o);
  const std::vector<std::string> want = {"out ringtrace: switched out 350",  // off the CPU at the start: stream_start
                                         "begin a 350 opened",
                                         "arg key 350",
                                         "async req 350 opened",
                                         "counter depth 350",
                                         "instant tick 350",
                                         "begin c 400",
                                         "arg label 400 '[2, 3]'",
                                         "in ringtrace: switched in 500",
                                         "instant tick 600",
                                         "end c 600 closed",
                                         "end a 600 closed",
                                         "async_end req 600 closed"};
  EXPECT_EQ(lines(*f.kept), want);
  const auto& out = f.kept->out;
  EXPECT_EQ(out[0].e.value.u, SwitchBits::stream_start | SwitchBits::preempted);
  EXPECT_EQ(out[2].e.value.i, 42);
  EXPECT_EQ(out[4].e.value.i, 7);
  EXPECT_EQ(f.counts.zones_in, 3u);
  EXPECT_EQ(f.counts.zones_out, 2u);
  EXPECT_EQ(f.counts.by_time, 1u);
  EXPECT_EQ(f.counts.cut_at_start, 1u);
  EXPECT_EQ(f.counts.cut_at_end, 2u);
  EXPECT_EQ(f.counts.zones_left_out(), 1u);
  EXPECT_EQ(f.kept->clock.start_ns, 350u);
  EXPECT_EQ(f.kept->clock.stop_ns, 600u);
  EXPECT_EQ(f.kept->fact("filter.time_from_ns"), 350);
  EXPECT_EQ(f.kept->fact("filter.zones_left_out.time"), 1);
  EXPECT_NE(std::get<std::string>(f.kept->facts.at("filter")).find("1 of 3 zones left out"), std::string::npos);
}

TEST(StreamFilter, TimeRangeRelativeToTheStartAndZonesEndingOnItsEdges) {
  TraceBuilder b;
  const ThreadId t = b.thread("main", 10);
  const SiteId z = b.site("z");
  b.begin(t, z, 1000).end(t, 1100);  // ends at the start: [A, A]
  b.begin(t, z, 1200).end(t, 1300);
  b.begin(t, z, 1400).end(t, 1500);  // begins at the end: [B, B]
  b.begin(t, z, 1600).end(t, 1700);
  RecordedTrace trace = b.build(2000);
  trace.clock.start_ns = 1000;
  FilterOptions o;
  o.from = TimeBound{true, 100};
  o.to = TimeBound{true, 400};
  const Filtered f = run(trace, o);
  const std::vector<std::string> want = {"begin z 1100 opened", "end z 1100",   "begin z 1200",
                                         "end z 1300",          "begin z 1400", "end z 1400 closed"};
  EXPECT_EQ(lines(*f.kept), want);
  EXPECT_EQ(f.counts.by_time, 1u);
}

TEST(StreamFilter, MinDurationHoldsBeginsKeepsOrderAndCountsShortZonesByName) {
  TraceBuilder b;
  const ThreadId t = b.thread("one", 1), u = b.thread("two", 2);
  const SiteId outer = b.site("outer"), fast = b.site("fast"), slow = b.site("slow");
  const SiteId key = b.site("key", SiteKind::value), tick = b.site("tick", SiteKind::instant);
  b.begin(t, outer, 100);
  b.begin(t, fast, 110).text(t, key, 110, "gone").instant(t, tick, 115).end(t, 150);  // 40 ns
  b.begin(u, slow, 120).text(u, key, 120, "kept");
  b.instant(u, tick, 130);
  b.begin(t, fast, 160).end(t, 190);
  b.end(u, 400);  // 280 ns
  b.end(t, 500);  // 400 ns
  FilterOptions o;
  o.min_duration_ns = 100;
  const Filtered f = run(b.build(600), o);
  const std::vector<std::string> want = {"begin outer 100",  "instant tick 115", "begin slow 120", "arg key 120 'kept'",
                                         "instant tick 130", "end slow 400",     "end outer 500"};
  EXPECT_EQ(lines(*f.kept), want);
  EXPECT_EQ(f.kept->out[1].e.depth, 1u);  // the instant of a short zone belongs to the zone around it
  EXPECT_EQ(f.counts.by_duration, 2u);
  ASSERT_EQ(f.counts.short_by_name.size(), 1u);
  EXPECT_EQ(f.counts.short_by_name[0], (std::pair<std::string, std::uint64_t>{"fast", 2}));
  EXPECT_EQ(f.kept->fact("filter.min_duration.fast"), 2);
  EXPECT_EQ(f.counts.other_events, 1u);  // the short zone's text
}

TEST(StreamFilter, ZoneExcludeAndMaxDepthTakeWhatZonesContain) {
  TraceBuilder b;
  const ThreadId t = b.thread("main", 10);
  const SiteId run_site = b.site("run"), parse = b.site("parse_doc"), lock = b.site("lock_wait"), leaf = b.site("leaf"),
               tick = b.site("tick", SiteKind::instant);
  b.begin(t, run_site, 10).instant(t, tick, 11);
  b.begin(t, parse, 20).begin(t, leaf, 30).begin(t, leaf, 40).end(t, 50).end(t, 60);
  b.begin(t, lock, 70).instant(t, tick, 75).begin(t, parse, 80).end(t, 90).end(t, 95);
  b.end(t, 100).end(t, 200);
  const RecordedTrace trace = b.build(300);
  // run { tick, parse_doc { leaf { leaf }, lock_wait { tick, parse_doc } } }
  FilterOptions zone;
  zone.zones = {"^parse"};
  Filtered f = run(trace, zone);
  EXPECT_EQ(lines(*f.kept),
            (std::vector<std::string>{"begin parse_doc 20", "begin leaf 30", "begin leaf 40", "end leaf 50",
                                      "end leaf 60", "begin lock_wait 70", "instant tick 75", "begin parse_doc 80",
                                      "end parse_doc 90", "end lock_wait 95", "end parse_doc 100"}));
  EXPECT_EQ(f.counts.by_zone, 1u);       // run
  EXPECT_EQ(f.counts.other_events, 1u);  // the instant outside parse_doc
  FilterOptions exclude;
  exclude.excludes = {"lock"};
  exclude.max_depth = 2;
  f = run(trace, exclude);
  EXPECT_EQ(lines(*f.kept), (std::vector<std::string>{"begin run 10", "instant tick 11", "begin parse_doc 20",
                                                      "end parse_doc 100", "end run 200"}));
  EXPECT_EQ(f.counts.by_exclude, 2u);    // lock_wait and the parse_doc inside it
  EXPECT_EQ(f.counts.by_depth, 2u);      // the leaves
  EXPECT_EQ(f.counts.other_events, 1u);  // the instant inside lock_wait
  FilterOptions both;
  both.zones = {"parse"};
  both.max_depth = 1;  // depth counts the zones kept: parse_doc is top-level, and an instant stays
  f = run(trace, both);
  EXPECT_EQ(lines(*f.kept), (std::vector<std::string>{"begin parse_doc 20", "instant tick 75", "end parse_doc 100"}));
  EXPECT_EQ(f.kept->out[1].e.depth, 1u);
  EXPECT_EQ(f.counts.by_depth, 4u);
}

TEST(StreamFilter, ThreadsByNameTidAndPidTidAndTheOthersUnlisted) {
  TraceBuilder b;
  const ThreadId t1 = b.thread("alpha", 101), t2 = b.thread("beta", 102), t3 = b.thread("gamma", 103);
  const SiteId z = b.site("z");
  for (const ThreadId t : {t1, t2, t3}) b.begin(t, z, 10 + t).end(t, 20 + t);
  const RecordedTrace trace = b.build(100);
  FilterOptions o;
  o.threads = {"alpha", "103"};
  Filtered f = run(trace, o);
  EXPECT_EQ(f.counts.zones_out, 2u);
  EXPECT_EQ(f.counts.by_thread, 1u);
  EXPECT_EQ(f.kept->listed, (std::vector<bool>{true, false, true}));
  for (const ThreadStats& s : f.kept->stats.threads) EXPECT_NE(s.name, "beta");
  o.threads = {"0/102"};  // pid 0: the context's own process (a hand-built stream's)
  f = run(trace, o);
  ASSERT_EQ(f.kept->out.size(), 2u);
  EXPECT_EQ(f.kept->out[0].e.thread, t2);
}

TEST(StreamFilter, ZonesPastTheTrackedDepthAreLeftOutAndCounted) {
  TraceBuilder b;
  const ThreadId t = b.thread("deep", 1);
  const SiteId z = b.site("z");
  constexpr std::uint64_t kDepth = 70000;
  for (std::uint64_t i = 0; i < kDepth; ++i) b.begin(t, z, 10 + i);
  for (std::uint64_t i = 0; i < kDepth; ++i) b.end(t, 10 + kDepth + i);
  FilterOptions o;
  o.excludes = {"nothing matches this"};
  const Filtered f = run(b.build(10 + 3 * kDepth), o);
  EXPECT_EQ(f.counts.zones_out, 65536u);
  EXPECT_EQ(f.counts.past_bound, kDepth - 65536);
  EXPECT_EQ(f.valid->unclosed_threads, 0u);
}

// A file's message texts are the reader's until delivered, then let go (they were kept
// for the whole file: memory grew with the messages).
TEST(StreamFilter, TheReaderLetsGoOfMessageTextsOnceDelivered) {
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "ringtrace_messages_test.rtrace";
  {
    Config config;
    Session session(config);
    session.add_exporter(binary_trace_exporter(file));
    session.start();
    for (int i = 0; i < 1000; ++i) RINGTRACE_MESSAGE("message number " + std::to_string(i));
    session.stop();
  }
  class FirstMessage final : public Exporter {
   public:
    void on_events(std::span<const Event> events, const TraceContext& context) override {
      for (const Event& e : events) {
        if (e.kind != EventKind::message) continue;
        ++messages;
        if (messages == 1) {
          first = e;
          first_text = std::string(context.text(e));
        }
      }
    }
    void on_finish(const TraceContext& context, const SessionStats&) override { later_text = context.text(first); }
    Event first{};
    std::uint64_t messages = 0;
    std::string first_text, later_text;
  } probe;
  replay_file(file, probe);
  std::filesystem::remove(file);
  EXPECT_EQ(probe.messages, 1000u);
  EXPECT_EQ(probe.first_text, "message number 0");
  EXPECT_EQ(probe.later_text, "");  // gone from the reader's tables
}

}  // namespace
}  // namespace ringtrace
