// Rich events (values, texts, flows, async spans, categories) in the exporters: the
// Chrome trace's golden text for a hand-built stream with known answers, and every
// aggregating exporter's output unchanged by them (compared with the same stream
// without them).
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "chrome_folded_streams.hpp"
#include "golden_files.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/exporters/ops_summary.hpp"
#include "ringtrace/exporters/pstats.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/recorded_trace.hpp"

namespace ringtrace::testing {
namespace {

std::string chrome(const RecordedTrace& trace, std::size_t batch = 4096) {
  std::ostringstream out;
  ChromeTraceOptions options;
  options.pid = 77;
  replay(trace, *chrome_trace_exporter(out, options), batch);
  return out.str();
}

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

TEST(RichEvents, ChromeGolden) {
  const std::string text = chrome(rich_trace());
  expect_golden("rich.json", text);
  // The values that matter, by hand, so that a golden update cannot hide them.
  EXPECT_TRUE(has(text,
                  "\"name\":\"request\",\"pid\":77,\"tid\":2001,\"ts\":1.000,\"dur\":1.000,\"args\":{"
                  "\"bytes\":4096,\"ratio\":0.5,\"ratio\":null,\"q\\\"b\\\\s\\nl;x\\u0001 12 "))
      << text;
  EXPECT_TRUE(
      has(text, "\":\"cut here\",\"q\\\"b\\\\s\\nl;x\\u0001 12 \xF0\x9F\x99\x82 \xEF\xBF\xBD end 7.truncated\":true}"))
      << text;
  EXPECT_TRUE(has(text,
                  "{\"ph\":\"X\",\"cat\":\"net\",\"name\":\"recv\",\"pid\":77,\"tid\":2001,\"ts\":1.100,\"dur\":0.300,"
                  "\"args\":{\"path\":\"/tmp/a \\\"b\\\"\\n\\u0001\xEF\xBF\xBD\"}}"))
      << text;
  // Flow events at their zones' begins; the end binds to its enclosing slice.
  EXPECT_TRUE(has(text,
                  "{\"ph\":\"s\",\"cat\":\"flow\",\"name\":\"flow\",\"id\":\"0xabcdef0123456789\",\"pid\":77,"
                  "\"tid\":2001,\"ts\":1.000}"))
      << text;
  EXPECT_TRUE(has(text,
                  "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"flow\",\"name\":\"flow\",\"id\":\"0xabcdef0123456789\","
                  "\"pid\":77,\"tid\":2002,\"ts\":2.500}"))
      << text;
  EXPECT_TRUE(has(text,
                  "{\"ph\":\"b\",\"cat\":\"async\",\"name\":\"upload\",\"id\":\"0x2a\",\"pid\":77,\"tid\":2001,"
                  "\"ts\":1.500}"))
      << text;
  EXPECT_TRUE(has(text,
                  "{\"ph\":\"e\",\"cat\":\"async\",\"name\":\"upload\",\"id\":\"0x2a\",\"pid\":77,\"tid\":2002,"
                  "\"ts\":2.600}"))
      << text;
  EXPECT_TRUE(
      has(text, "\"name\":\"handle\",\"pid\":77,\"tid\":2002,\"ts\":2.500,\"dur\":0.500,\"args\":{\"bytes\":-7}}"))
      << text;
  EXPECT_TRUE(has(text, "\"args_without_zone\":1,")) << text;
}

TEST(RichEvents, ChromeSameTextInAnyBatching) {
  const RecordedTrace trace = rich_trace();
  const std::string whole = chrome(trace);
  for (const std::size_t batch : {1u, 2u, 3u, 7u}) EXPECT_EQ(chrome(trace, batch), whole) << batch;
}

TEST(RichEvents, AggregatingExportersIgnoreThem) {
  const RecordedTrace rich = rich_trace();
  const RecordedTrace plain = strip_rich(rich);
  ASSERT_LT(plain.events.size(), rich.events.size());
  const auto folded = [](const RecordedTrace& trace) {
    std::ostringstream out;
    replay(trace, *folded_stacks_exporter(out));
    return out.str();
  };
  EXPECT_EQ(folded(rich), folded(plain));
  EXPECT_FALSE(folded(rich).empty());
  EXPECT_EQ(encode_pstats(pstats_table(rich)), encode_pstats(pstats_table(plain)));
  EXPECT_EQ(format_table(key_averages(rich)), format_table(key_averages(plain)));
  EXPECT_EQ(format_ops_summary(ops_summary(rich)), format_ops_summary(ops_summary(plain)));
}

TEST(RichEvents, MemoryExporterKeepsTexts) {
  const RecordedTrace rich = rich_trace();
  MemoryExporter memory;
  replay(rich, memory, 2);
  const RecordedTrace copy = memory.trace();
  ASSERT_EQ(copy.events.size(), rich.events.size());
  RecordedTraceContext a(rich), b(copy);
  std::size_t texts = 0;
  for (std::size_t i = 0; i < rich.events.size(); ++i) {
    EXPECT_EQ(a.text(rich.events[i]), b.text(copy.events[i])) << i;
    texts += !a.text(rich.events[i]).empty();
  }
  EXPECT_EQ(texts, 2u);
}

}  // namespace
}  // namespace ringtrace::testing
