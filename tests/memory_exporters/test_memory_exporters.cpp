// The exporters' side of Config::memory on hand-built streams: the key-averages table's
// "CPU Mem" / "Self CPU Mem" against the seed's rules (PyTorch's profile_memory columns:
// shown only with memory, _format_memory's text, bytes in CSV and JSON, sortable, self
// excludes children), the Chrome trace's zone args and heap counter, folded stacks and
// pstats weighed by bytes allocated.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "memory_streams.hpp"
#include "report_text.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/exporters/pstats.hpp"
#include "ringtrace/exporters/table.hpp"

namespace ringtrace {
namespace {

using memory_test::MemoryStream;

constexpr std::int64_t kKB = 1024, kMB = 1024 * kKB, kGB = 1024 * kMB;

// step [0,1000] { load [100,200] { alloc 1536 }, compute [300,600] { alloc 3 GB;
// load [400,500] { alloc 512 } ; free 3 GB }, free 2 MB (a block from before) }
RecordedTrace model_stream() {
  MemoryStream m;
  const ThreadId t = m.b.thread("main", 1);
  const SiteId step = m.b.site("step"), load = m.b.site("load"), compute = m.b.site("compute");
  m.b.begin(t, step, 0);
  m.b.begin(t, load, 100);
  m.alloc(t, 150, 1536);
  m.b.end(t, 200);
  m.b.begin(t, compute, 300);
  m.alloc(t, 350, 3 * kGB);
  m.b.begin(t, load, 400);
  m.alloc(t, 450, 512);
  m.b.end(t, 500);
  m.free(t, 550, 3 * kGB);
  m.b.end(t, 600);
  m.free(t, 700, 2 * kMB, EventFlags::untracked);
  m.b.end(t, 1000);
  return m.build();
}

const TableRow& row(const KeyAverages& table, const std::string& name) {
  for (const TableRow& r : table.rows) {
    if (r.name == name) return r;
  }
  throw std::runtime_error("no row " + name);
}

TEST(MemoryTable, ColumnsHoldBytesAllocatedLessFreedWithAndWithoutChildren) {
  const KeyAverages t = key_averages(model_stream());
  ASSERT_TRUE(t.memory);
  EXPECT_EQ(row(t, "load").cpu_memory_usage, 1536 + 512);  // two calls, both outermost
  EXPECT_EQ(row(t, "load").self_cpu_memory_usage, 1536 + 512);
  EXPECT_EQ(row(t, "compute").cpu_memory_usage, 512);  // 3 GB in and out, and its child's 512
  EXPECT_EQ(row(t, "compute").self_cpu_memory_usage, 0);
  EXPECT_EQ(row(t, "step").cpu_memory_usage, 1536 + 512 - 2 * kMB);
  EXPECT_EQ(row(t, "step").self_cpu_memory_usage, -2 * kMB);
  // Self excludes children: a parent's self is its total less its direct children's.
  EXPECT_EQ(row(t, "step").self_cpu_memory_usage,
            row(t, "step").cpu_memory_usage - 1536 - row(t, "compute").cpu_memory_usage);
}

TEST(MemoryTable, NoColumnsWithoutMemoryEvents) {
  TraceBuilder b("proc");
  const ThreadId t = b.thread("main", 1);
  b.begin(t, b.site("work"), 0).end(t, 10);
  const KeyAverages table = key_averages(b.build());
  EXPECT_FALSE(table.memory);
  for (const auto format : {TableOptions::Format::text, TableOptions::Format::csv, TableOptions::Format::json}) {
    TableOptions options;
    options.format = format;
    const std::string text = format_table(table, options);
    EXPECT_EQ(text.find("CPU Mem"), std::string::npos);
    EXPECT_EQ(text.find("cpu_memory"), std::string::npos);
    EXPECT_EQ(text.find("memory"), std::string::npos);
  }
}

// PyTorch's _format_memory: binary units from 1024 up, two decimals, by the magnitude.
TEST(MemoryTable, FormatMemoryAsTheSeed) {
  using detail::report::format_memory;
  EXPECT_EQ(format_memory(0), "0 B");
  EXPECT_EQ(format_memory(1023), "1023 B");
  EXPECT_EQ(format_memory(-1023), "-1023 B");
  EXPECT_EQ(format_memory(1024), "1.00 KB");
  EXPECT_EQ(format_memory(-1536), "-1.50 KB");
  EXPECT_EQ(format_memory(kMB - 1), "1024.00 KB");  // 1023.999 KB rounds up, still in KB
  EXPECT_EQ(format_memory(kMB), "1.00 MB");
  EXPECT_EQ(format_memory(-2 * kMB + 1536 + 512), "-2.00 MB");
  EXPECT_EQ(format_memory(3 * kGB), "3.00 GB");
  EXPECT_EQ(format_memory(5 * kGB / 4), "1.25 GB");
  EXPECT_EQ(format_memory(1126), "1.10 KB");  // 1.099609375
  EXPECT_EQ(format_memory(std::numeric_limits<std::int64_t>::min()), "-8589934592.00 GB");
}

TEST(MemoryTable, TextFormShowsTheColumnsAfterTheTimesFormattedAsTheSeed) {
  TableOptions options;
  options.sort_by = TableOptions::SortBy::name;
  const std::string text = format_table(key_averages(model_stream(), options), options);
  std::istringstream lines(text);
  std::string header, rule, compute, load, step;
  std::getline(lines, header);
  std::getline(lines, rule);
  std::getline(lines, compute);
  std::getline(lines, load);
  std::getline(lines, step);
  // Right-aligned columns after Calls, as wide as their widest cell.
  EXPECT_TRUE(std::regex_search(header, std::regex("  Calls   CPU Mem  Self CPU Mem$"))) << header;
  EXPECT_TRUE(std::regex_search(compute, std::regex("  1     512 B           0 B$"))) << compute;
  EXPECT_TRUE(std::regex_search(load, std::regex("  2   2.00 KB       2.00 KB$"))) << load;
  EXPECT_TRUE(std::regex_search(step, std::regex("  1  -2.00 MB      -2.00 MB$"))) << step;
}

TEST(MemoryTable, CsvAndJsonHoldBytes) {
  TableOptions options;
  options.sort_by = TableOptions::SortBy::name;
  options.format = TableOptions::Format::csv;
  const KeyAverages table = key_averages(model_stream(), options);
  const std::string csv = format_table(table, options);
  EXPECT_NE(csv.find("calls,cpu_memory_bytes,self_cpu_memory_bytes\r\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",1,512,0\r\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",2,2048,2048\r\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",1,-2095104,-2097152\r\n"), std::string::npos) << csv;
  options.format = TableOptions::Format::json;
  const std::string json = format_table(table, options);
  EXPECT_NE(json.find("\"memory\":true"), std::string::npos);
  EXPECT_NE(json.find("\"calls\":1,\"cpu_memory_bytes\":-2095104,\"self_cpu_memory_bytes\":-2097152}"),
            std::string::npos)
      << json;
}

TEST(MemoryTable, SortsByEitherColumnLargestFirstNegativesLast) {
  TableOptions options;
  options.sort_by = TableOptions::SortBy::cpu_memory;
  std::vector<std::string> names;
  for (const TableRow& r : key_averages(model_stream(), options).rows) names.push_back(r.name);
  EXPECT_EQ(names, (std::vector<std::string>{"load", "compute", "step"}));
  options.sort_by = TableOptions::SortBy::self_cpu_memory;
  names.clear();
  for (const TableRow& r : key_averages(model_stream(), options).rows) names.push_back(r.name);
  EXPECT_EQ(names, (std::vector<std::string>{"load", "compute", "step"}));  // 2048, 0, -2 MB
}

// rec [0,100] { alloc 100; rec [10,50] { alloc 10 } }: CPU Mem counts the outermost
// call only (as Total time: recursion once), Self CPU Mem every call.
TEST(MemoryTable, RecursionCountedOnceAsTotalTime) {
  MemoryStream m;
  const ThreadId t = m.b.thread("main", 1);
  const SiteId rec = m.b.site("rec");
  m.b.begin(t, rec, 0);
  m.alloc(t, 5, 100);
  m.b.begin(t, rec, 10);
  m.alloc(t, 20, 10);
  m.b.end(t, 50).end(t, 100);
  const KeyAverages table = key_averages(m.build());
  EXPECT_EQ(row(table, "rec").cpu_memory_usage, 110);
  EXPECT_EQ(row(table, "rec").self_cpu_memory_usage, 110);
  EXPECT_EQ(row(table, "rec").calls, 2u);
}

std::string chrome_of(const RecordedTrace& trace, ChromeTraceOptions options = {}) {
  std::ostringstream out;
  auto exporter = chrome_trace_exporter(out, options);
  replay(trace, *exporter);
  return out.str();
}

// The "X" event of the zone named `name` that begins at `ts` (microseconds text).
std::string zone_event(const std::string& json, const std::string& name, const std::string& ts) {
  std::istringstream lines(json);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("\"ph\":\"X\"") != std::string::npos && line.find("\"name\":\"" + name + "\"") != std::string::npos &&
        line.find("\"ts\":" + ts + ",") != std::string::npos) {
      return line;
    }
  }
  return {};
}

TEST(MemoryChrome, ZonesThatAllocatedCarryTheirBytesAndAllocations) {
  const std::string json = chrome_of(model_stream());
  EXPECT_NE(zone_event(json, "step", "0.000").find("\"alloc_bytes\":3221227520,\"allocs\":3"), std::string::npos);
  EXPECT_NE(zone_event(json, "compute", "0.300").find("\"alloc_bytes\":3221225984,\"allocs\":2"), std::string::npos);
  EXPECT_NE(zone_event(json, "load", "0.400").find("\"alloc_bytes\":512,\"allocs\":1"), std::string::npos);
  // A zone that allocated nothing has no such args.
  MemoryStream m;
  const ThreadId t = m.b.thread("main", 1);
  m.b.begin(t, m.b.site("frees"), 0);
  m.free(t, 1, 10);
  m.b.end(t, 2);
  m.b.begin(t, m.b.site("idle"), 3).end(t, 4);
  const std::string other = chrome_of(m.build());
  EXPECT_EQ(zone_event(other, "frees", "0.000").find("alloc_bytes"), std::string::npos);
  EXPECT_EQ(zone_event(other, "idle", "0.003").find("alloc_bytes"), std::string::npos);
  EXPECT_FALSE(zone_event(other, "idle", "0.003").empty());
}

// The heap counter: samples of "ringtrace: heap (bytes)", untracked frees left out.
TEST(MemoryChrome, HeapCounterEveryChangeAndItsPeak) {
  ChromeTraceOptions options;
  options.heap_interval_ns = 0;
  const std::string json = chrome_of(model_stream(), options);
  std::vector<std::string> samples;
  std::istringstream lines(json);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("\"name\":\"ringtrace: heap (bytes)\"") == std::string::npos) continue;
    const std::size_t ts = line.find("\"ts\":") + 5;
    const std::size_t value = line.find("\"value\":") + 8;
    samples.push_back(line.substr(ts, line.find(',', ts) - ts) + "=" +
                      line.substr(value, line.find('}', value) - value));
  }
  EXPECT_EQ(samples, (std::vector<std::string>{"0.150=1536", "0.350=3221227008", "0.450=3221227520", "0.550=2048"}));
  // Coalesced into one interval: the first change, the peak, the value at the end.
  options.heap_interval_ns = 1'000'000;
  const std::string coarse = chrome_of(model_stream(), options);
  std::size_t count = 0;
  for (std::size_t at = coarse.find("ringtrace: heap (bytes)"); at != std::string::npos;
       at = coarse.find("ringtrace: heap (bytes)", at + 1)) {
    ++count;
  }
  EXPECT_EQ(count, 3u);
  EXPECT_NE(coarse.find("\"ts\":0.450,\"args\":{\"value\":3221227520}"), std::string::npos) << coarse;
  EXPECT_NE(coarse.find("\"ts\":0.550,\"args\":{\"value\":2048}"), std::string::npos);
}

TEST(MemoryChrome, NoCounterWithoutMemory) {
  TraceBuilder b("proc");
  const ThreadId t = b.thread("main", 1);
  b.begin(t, b.site("work"), 0).end(t, 10);
  const std::string json = chrome_of(b.build());
  EXPECT_EQ(json.find("heap"), std::string::npos);
  EXPECT_EQ(json.find("alloc_bytes"), std::string::npos);
}

std::string folded_of(const RecordedTrace& trace, FoldedStacksOptions options) {
  std::ostringstream out;
  auto exporter = folded_stacks_exporter(out, options);
  replay(trace, *exporter);
  return out.str();
}

TEST(MemoryFolded, StacksWeighedByBytesAllocatedInTheLeaf) {
  MemoryStream m;
  const ThreadId t = m.b.thread("main", 1);
  const SiteId outer = m.b.site("outer"), inner = m.b.site("inner");
  m.alloc(t, 1, 7);  // outside every zone
  m.b.begin(t, outer, 10);
  m.alloc(t, 11, 1000);
  m.b.begin(t, inner, 20);
  m.alloc(t, 21, 300).free(t, 22, 300);
  m.b.end(t, 30);
  m.b.begin(t, inner, 40);
  m.alloc(t, 41, 50);
  m.b.end(t, 50).end(t, 60);
  FoldedStacksOptions options;
  options.value = FoldedValue::alloc_bytes;
  EXPECT_EQ(folded_of(m.build(), options), "(no zone) 7\nouter 1000\nouter;inner 350\n");
  options.value = FoldedValue::allocs;
  EXPECT_EQ(folded_of(m.build(), options), "(no zone) 1\nouter 1\nouter;inner 2\n");
  options.thread_root = true;
  options.value = FoldedValue::alloc_bytes;
  EXPECT_EQ(folded_of(m.build(), options), "main;(no zone) 7\nmain;outer 1000\nmain;outer;inner 350\n");
}

TEST(MemoryPstats, TottimeAndCumtimeAreBytesAllocated) {
  const RecordedTrace trace = model_stream();
  PstatsAggregator aggregator;
  aggregator.set_alloc_bytes(true);
  aggregator.add(trace.events, RecordedTraceContext(trace));
  aggregator.finish(trace.clock.stop_ns);
  const PstatsTable table = aggregator.table();
  EXPECT_TRUE(table.alloc_bytes);
  const auto function = [&](const std::string& name) -> const PstatsFunction& {
    for (const PstatsFunction& f : table.functions) {
      if (f.name == name) return f;
    }
    throw std::runtime_error("no function " + name);
  };
  EXPECT_EQ(function("load").self_ns, 1536u + 512u);
  EXPECT_EQ(function("load").calls, 2u);
  EXPECT_EQ(function("compute").self_ns, static_cast<std::uint64_t>(3 * kGB));
  EXPECT_EQ(function("compute").cumulative_ns, static_cast<std::uint64_t>(3 * kGB + 512));
  EXPECT_EQ(function("step").cumulative_ns, static_cast<std::uint64_t>(3 * kGB + 1536 + 512));
  EXPECT_EQ(function("step").self_ns, 0u);
  const std::string report = format_pstats_report(table);
  EXPECT_NE(report.find("megabytes allocated"), std::string::npos);
  EXPECT_NE(encode_pstats(table).find("<ringtrace: times are MB allocated>"), std::string::npos);
}

}  // namespace
}  // namespace ringtrace
