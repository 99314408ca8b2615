// Split outputs (ringtrace/stream_filter.hpp, split_output): each piece at most its bound
// (the exporter's own count and the file's size), complete (a JSON array from "[" to "]",
// its process and threads named), and the zones of the pieces adding up to the whole
// stream's: every zone once in the piece it ends in, plus one begun again (marked) in
// each later piece it is open in. Loading the pieces in trace_processor: filter_tests.sh.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/perfetto.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/stream_filter.hpp"
#include "support/validating_exporter.hpp"

namespace ringtrace {
namespace {

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Two threads of nested zones, one zone open across the whole stream on each.
RecordedTrace long_stream(std::uint64_t pairs) {
  TraceBuilder b;
  const ThreadId t = b.thread("main", 10), u = b.thread("worker", 11);
  const SiteId run = b.site("run"), step = b.site("step"), inner = b.site("inner_work");
  const SiteId depth = b.site("depth", SiteKind::counter);
  std::uint64_t now = 1000;
  b.begin(t, run, now).begin(u, run, now + 1);
  for (std::uint64_t i = 0; i < pairs; ++i) {
    b.begin(t, step, now + 10).begin(t, inner, now + 20).end(t, now + 30).end(t, now + 40);
    b.begin(u, inner, now + 15).end(u, now + 35);
    if (i % 100 == 0) b.counter(u, depth, now + 36, static_cast<std::int64_t>(i));
    now += 50;
  }
  b.end(t, now).end(u, now + 1);
  return b.build(now + 2);
}

struct Pieces {
  std::filesystem::path dir;
  std::vector<std::filesystem::path> paths;
  std::shared_ptr<SplitOutput> split;
};

Pieces split_into(const RecordedTrace& trace, std::uint64_t bound, bool perfetto) {
  Pieces p;
  p.dir = std::filesystem::temp_directory_path() /
          ("ringtrace_split_" + std::to_string(::getpid()) + (perfetto ? "_perfetto" : "_chrome"));
  std::filesystem::remove_all(p.dir);
  std::filesystem::create_directories(p.dir);
  const std::filesystem::path dir = p.dir;
  p.split = split_output(bound, [dir, perfetto](std::size_t i) {
    const std::filesystem::path path = dir / ("piece" + std::to_string(i));
    return perfetto ? perfetto_exporter(path) : chrome_trace_exporter(path);
  });
  replay(trace, *p.split);
  for (const SplitPiece& piece : p.split->pieces()) p.paths.push_back(piece.paths.at(0));
  return p;
}

TEST(SplitOutput, ChromePiecesAreUnderTheBoundCompleteAndAddUp) {
  const RecordedTrace trace = long_stream(40000);
  std::ostringstream whole;
  replay(trace, *chrome_trace_exporter(whole));
  const std::size_t zones = occurrences(whole.str(), "\"ph\":\"X\"");
  ASSERT_EQ(zones, 2 + 40000 * 3u);
  constexpr std::uint64_t kBound = 1'000'000;
  const Pieces p = split_into(trace, kBound, false);
  ASSERT_GE(p.paths.size(), 3u) << whole.str().size() << " bytes unsplit";
  std::size_t seen = 0, reopened = 0;
  std::vector<std::size_t> closed_at_end, opened_at_start;
  for (std::size_t i = 0; i < p.paths.size(); ++i) {
    const std::string text = read(p.paths[i]);
    EXPECT_LE(text.size(), kBound) << p.paths[i];
    EXPECT_EQ(text.size(), p.split->pieces()[i].bytes);
    EXPECT_TRUE(text.starts_with("[\n{\"ph\":\"M\",\"name\":\"process_name\"")) << p.paths[i];
    EXPECT_TRUE(text.ends_with("}}\n]\n")) << p.paths[i];
    EXPECT_EQ(occurrences(text, "\"name\":\"thread_name\""), 2u) << p.paths[i];
    EXPECT_NE(text.find("\"split.piece\":" + std::to_string(i + 1)), std::string::npos);
    seen += occurrences(text, "\"ph\":\"X\"");
    opened_at_start.push_back(occurrences(text, "\"opened_at_window_start\":true"));
    closed_at_end.push_back(occurrences(text, "\"closed_at_window_end\":true"));
    reopened += opened_at_start.back();
    if (i > 0) {
      EXPECT_NE(text.find("\"ph\":\"C\",\"cat\":\"counter\",\"name\":\"depth\""), std::string::npos)
          << "piece " << i + 1 << " starts without the counter's value";
    }
  }
  // What a piece ends at its cut the next one begins again: the two `run` zones at least.
  EXPECT_EQ(opened_at_start.front(), 0u);
  EXPECT_EQ(closed_at_end.back(), 0u);
  for (std::size_t i = 0; i + 1 < p.paths.size(); ++i) {
    EXPECT_GE(closed_at_end[i], 2u);
    EXPECT_EQ(closed_at_end[i], opened_at_start[i + 1]);
  }
  EXPECT_GE(reopened, 2 * (p.paths.size() - 1));
  EXPECT_EQ(seen - reopened, zones);
  std::filesystem::remove_all(p.dir);
}

TEST(SplitOutput, PerfettoPiecesAreUnderTheBound) {
  const RecordedTrace trace = long_stream(60000);
  constexpr std::uint64_t kBound = 1'000'000;
  const Pieces p = split_into(trace, kBound, true);
  ASSERT_GE(p.paths.size(), 2u);
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < p.paths.size(); ++i) {
    EXPECT_LE(std::filesystem::file_size(p.paths[i]), kBound);
    EXPECT_EQ(std::filesystem::file_size(p.paths[i]), p.split->pieces()[i].bytes);
    bytes += p.split->pieces()[i].bytes;
  }
  std::ostringstream whole;
  replay(trace, *perfetto_exporter(whole));
  EXPECT_GE(bytes, whole.str().size());  // each piece again names what it uses
  std::filesystem::remove_all(p.dir);
}

// Each piece's exporter gets a stream of its own: ordered, nested, its zones closed.
TEST(SplitOutput, EachPieceGetsAWholeStream) {
  const RecordedTrace trace = long_stream(30000);
  std::vector<std::shared_ptr<testing::ValidatingExporter>> pieces;
  std::vector<std::shared_ptr<Exporter>> chromes;
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "ringtrace_split_valid";
  std::filesystem::create_directories(dir);
  // A Chrome exporter counts the bytes; a validating one beside it, through a filter
  // that leaves nothing out, checks the stream.
  auto split = split_output(1'000'000, [&](std::size_t i) {
    auto chrome = chrome_trace_exporter(dir / ("v" + std::to_string(i)));
    pieces.push_back(std::make_shared<testing::ValidatingExporter>());
    class Both final : public Exporter {
     public:
      Both(std::shared_ptr<Exporter> a, std::shared_ptr<Exporter> b) : a_(std::move(a)), b_(std::move(b)) {}
      void on_start(const TraceContext& c) override { a_->on_start(c), b_->on_start(c); }
      void on_events(std::span<const Event> e, const TraceContext& c) override {
        a_->on_events(e, c), b_->on_events(e, c);
      }
      void on_finish(const TraceContext& c, const SessionStats& s) override {
        a_->on_finish(c, s), b_->on_finish(c, s);
      }
      std::uint64_t output_bytes() const override { return a_->output_bytes(); }

     private:
      std::shared_ptr<Exporter> a_, b_;
    };
    return std::make_shared<Both>(chrome, pieces.back());
  });
  replay(trace, *split);
  ASSERT_GE(pieces.size(), 2u);
  for (const auto& v : pieces) {
    EXPECT_EQ(v->starts, 1);
    EXPECT_EQ(v->finishes, 1);
    EXPECT_EQ(v->order_errors, 0u);
    EXPECT_EQ(v->nesting_errors, 0u);
    EXPECT_EQ(v->depth_errors, 0u);
    EXPECT_EQ(v->unclosed_threads, 0u);
  }
  std::filesystem::remove_all(dir);
}

TEST(SplitOutput, RefusesABoundUnderOneMegabyte) {
  EXPECT_THROW(split_output(999'999, [](std::size_t) { return chrome_trace_exporter(std::cout); }),
               std::invalid_argument);
}

}  // namespace
}  // namespace ringtrace
