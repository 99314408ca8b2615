// The key-averages table's columns of issue 34 on hand-built streams, against the rules
// of PyTorch's _build_table and key_averages: Total FLOPs (the unit of the smallest
// positive total among the rows shown, three decimals, "--" for a row without, only when
// some row shown has FLOPs; raw counts in CSV and JSON), grouping by input shapes, by any
// argument and by node (the Node ID column only when several nodes are present), and
// source locations.
#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "ringtrace/exporters/table.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"

namespace ringtrace {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The cells of a text table's line, split where two or more spaces separate them.
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::size_t spaces = 0;
  for (const char c : line) {
    if (c == ' ') {
      ++spaces;
      continue;
    }
    if (spaces >= 2 && !cell.empty()) {
      out.push_back(cell);
      cell.clear();
    } else if (spaces == 1 && !cell.empty()) {
      cell.push_back(' ');
    }
    spaces = 0;
    cell.push_back(c);
  }
  if (!cell.empty()) out.push_back(cell);
  return out;
}

// The text table's header cells and, by row name (first cell), each row's cells.
struct TextTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::size_t column(const std::string& name) const {
    for (std::size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return i;
    }
    throw std::runtime_error("no column " + name);
  }
  bool has(const std::string& name) const {
    for (const std::string& h : header) {
      if (h == name) return true;
    }
    return false;
  }
  // The cell in `column` of the row whose `key_column` is `key` (first column: the name).
  std::string cell(const std::string& name, const std::string& col, const std::string& key_column = "",
                   const std::string& key = "") const {
    const std::size_t c = column(col);
    const std::size_t k = key_column.empty() ? 0 : column(key_column);
    for (const auto& r : rows) {
      if (r[0] == name && (key_column.empty() || (k < r.size() && r[k] == key))) return c < r.size() ? r[c] : "";
    }
    throw std::runtime_error("no row " + name + " " + key);
  }
};

TextTable parse_text(const std::string& text) {
  TextTable t;
  const std::vector<std::string> lines = lines_of(text);
  std::size_t i = 0;
  while (i < lines.size() && lines[i].rfind("Name ", 0) != 0) ++i;
  if (i == lines.size()) throw std::runtime_error("no header in:\n" + text);
  t.header = cells(lines[i]);
  for (i += 2; i < lines.size() && lines[i].rfind("---", 0) != 0; ++i) t.rows.push_back(cells(lines[i]));
  return t;
}

// One zone per (name, flops) on one thread, one after the other, each 100 ns; flops < 0:
// the zone has no flops argument.
RecordedTrace zones_with_flops(const std::vector<std::pair<std::string, std::int64_t>>& zones) {
  TraceBuilder b;
  const ThreadId t = b.thread("main");
  const SiteId flops = b.site("flops", SiteKind::value);
  std::uint64_t now = 0;
  for (const auto& [name, n] : zones) {
    b.begin(t, b.site(name), now);
    if (n >= 0) b.value(t, flops, now, n);
    b.end(t, now + 100);
    now += 200;
  }
  return b.build();
}

std::string flops_header(const TextTable& t) {
  for (const std::string& h : t.header) {
    if (h.find("FLOPs") != std::string::npos) return h;
  }
  return "";
}

TEST(TableFlops, UnitOfTheSmallestPositiveTotalWithThreeDecimals) {
  // (smallest total, larger total, header, smallest's cell, larger's cell)
  struct Case {
    std::int64_t small, large;
    const char* header;
    const char* small_cell;
    const char* large_cell;
  };
  const Case cases[] = {
      {1, 999, "Total FLOPs", "1.000", "999.000"},
      {999, 5000, "Total FLOPs", "999.000", "5000.000"},
      {1000, 123456, "Total KFLOPs", "1.000", "123.456"},
      {999999, 1000000, "Total KFLOPs", "999.999", "1000.000"},
      {1000000, 2500000000, "Total MFLOPs", "1.000", "2500.000"},
      {1234567, 1234567, "Total MFLOPs", "1.235", "1.235"},  // rounded half up
      {1999999999, 3000000000, "Total GFLOPs", "2.000", "3.000"},
      {7000000000000, 8000000000000, "Total TFLOPs", "7.000", "8.000"},
      {5000000000000000, 6000000000000000, "Total PFLOPs", "5.000", "6.000"},
      // Beyond PFLOPs the unit stays PFLOPs (PyTorch's table has none larger).
      {2000000000000000000, 3000000000000000000, "Total PFLOPs", "2000.000", "3000.000"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.small);
    // Each row's total is the sum of two zones' flops.
    const std::int64_t a = c.small / 2, b = c.large / 3;
    const RecordedTrace trace =
        zones_with_flops({{"small", a}, {"small", c.small - a}, {"large", b}, {"large", c.large - b}});
    const TextTable t = parse_text(format_table(key_averages(trace)));
    EXPECT_EQ(flops_header(t), c.header);
    EXPECT_EQ(t.cell("small", c.header), c.small_cell);
    EXPECT_EQ(t.cell("large", c.header), c.large_cell);
  }
}

TEST(TableFlops, RowsWithoutFlopsShowTwoDashesAndNoColumnWithoutAny) {
  const RecordedTrace trace = zones_with_flops({{"matmul", 3000}, {"relu", -1}, {"zero", 0}});
  const KeyAverages table = key_averages(trace);
  const TextTable t = parse_text(format_table(table));
  ASSERT_EQ(flops_header(t), "Total KFLOPs");
  EXPECT_EQ(t.cell("matmul", "Total KFLOPs"), "3.000");
  EXPECT_EQ(t.cell("relu", "Total KFLOPs"), "--");
  EXPECT_EQ(t.cell("zero", "Total KFLOPs"), "--");  // a count of 0 is no count (PyTorch: flops <= 0)
  // No zone with flops: no column in any form.
  const RecordedTrace none = zones_with_flops({{"matmul", -1}, {"relu", -1}});
  TableOptions csv;
  csv.format = TableOptions::Format::csv;
  TableOptions json;
  json.format = TableOptions::Format::json;
  const KeyAverages plain = key_averages(none);
  EXPECT_EQ(flops_header(parse_text(format_table(plain))), "");
  EXPECT_EQ(format_table(plain, csv).find("flops"), std::string::npos);
  EXPECT_EQ(format_table(plain, json).find("flops"), std::string::npos);
}

TEST(TableFlops, UnitFromTheRowsShownOnly) {
  // "big" has the most self time, "tiny" the fewest flops: with one row shown, the unit
  // is big's; with both, tiny's.
  TraceBuilder b;
  const ThreadId t = b.thread("main");
  const SiteId flops = b.site("flops", SiteKind::value);
  b.begin(t, b.site("big"), 0).value(t, flops, 0, std::int64_t{4000000}).end(t, 1000);
  b.begin(t, b.site("tiny"), 2000).value(t, flops, 2000, std::int64_t{20}).end(t, 2010);
  const RecordedTrace trace = b.build();
  TableOptions one;
  one.row_limit = 1;
  const TextTable shown = parse_text(format_table(key_averages(trace, one), one));
  EXPECT_EQ(flops_header(shown), "Total MFLOPs");
  EXPECT_EQ(shown.cell("big", "Total MFLOPs"), "4.000");
  const TextTable all = parse_text(format_table(key_averages(trace)));
  EXPECT_EQ(flops_header(all), "Total FLOPs");
  EXPECT_EQ(all.cell("big", "Total FLOPs"), "4000000.000");
  EXPECT_EQ(all.cell("tiny", "Total FLOPs"), "20.000");
  // With one row shown that has none, no column at all.
  TableOptions by_calls;
  by_calls.row_limit = 1;
  TraceBuilder c;
  const ThreadId u = c.thread("main");
  const SiteId f = c.site("flops", SiteKind::value);
  const SiteId often = c.site("often");
  c.begin(u, c.site("once"), 0).value(u, f, 0, std::int64_t{10}).end(u, 5);
  for (std::uint64_t i = 0; i < 3; ++i) c.begin(u, often, 10 + 100 * i).end(u, 100 + 100 * i);
  EXPECT_EQ(flops_header(parse_text(format_table(key_averages(c.build(), by_calls), by_calls))), "");
}

TEST(TableFlops, SummedPerRowPerZoneNotIntoParentsRawInCsvAndJsonAndSortable) {
  // step [0,1000] { matmul [100,200] flops 300, matmul [300,400] flops 300 + 100 (two
  // values on one zone add up), relu [500,600] } with step's own flops after its
  // children closed; a double count and negative ones.
  TraceBuilder b;
  const ThreadId t = b.thread("main");
  const SiteId flops = b.site("flops", SiteKind::value);
  const SiteId step = b.site("step"), matmul = b.site("matmul"), relu = b.site("relu");
  b.begin(t, step, 0);
  b.begin(t, matmul, 100).value(t, flops, 100, std::int64_t{300}).end(t, 200);
  b.begin(t, matmul, 300).value(t, flops, 300, std::int64_t{300}).value(t, flops, 300, 100.4).end(t, 400);
  b.begin(t, relu, 500).value(t, flops, 500, std::int64_t{-7}).end(t, 600);
  b.value(t, flops, 600, std::int64_t{5});
  b.end(t, 1000);
  const RecordedTrace trace = b.build();
  TableOptions options;
  options.sort_by = TableOptions::SortBy::flops;
  const KeyAverages table = key_averages(trace, options);
  ASSERT_EQ(table.rows.size(), 3u);
  EXPECT_EQ(table.rows[0].name, "matmul");
  EXPECT_EQ(table.rows[0].flops, 700u);
  EXPECT_EQ(table.rows[1].name, "step");
  EXPECT_EQ(table.rows[1].flops, 5u);
  EXPECT_EQ(table.rows[2].flops, 0u);  // relu: a negative count is none
  options.format = TableOptions::Format::csv;
  const std::vector<std::string> csv = lines_of(format_table(table, options));
  EXPECT_EQ(csv[0],
            "name,self_percent,self_ns,total_percent,total_ns,avg_ns,min_ns,max_ns,p50_ns,p99_ns,calls,flops\r");
  EXPECT_EQ(csv[1].substr(0, 7), "matmul,");
  EXPECT_EQ(csv[1].substr(csv[1].rfind(',')), ",700\r");
  EXPECT_EQ(csv[3].substr(csv[3].rfind(',')), ",0\r");
  options.format = TableOptions::Format::json;
  const std::string json = format_table(table, options);
  EXPECT_NE(json.find("\"calls\":2,\"flops\":700}"), std::string::npos) << json;
  // Top-level zones only: the children's flops are not counted.
  TableOptions top;
  top.top_level_only = true;
  const KeyAverages tops = key_averages(trace, top);
  ASSERT_EQ(tops.rows.size(), 1u);
  EXPECT_EQ(tops.rows[0].flops, 5u);
}

// matmul zones with input shapes (or none), one after the other.
RecordedTrace shaped() {
  TraceBuilder b;
  const ThreadId t = b.thread("main");
  const SiteId shapes = b.site("input_shapes", SiteKind::value);
  const SiteId batch = b.site("batch", SiteKind::value);
  const SiteId matmul = b.site("matmul"), child = b.site("child");
  const char* const given[] = {"[[64, 128], [128, 256]]", "[[1, 2]]", "[[64, 128], [128, 256]]", nullptr};
  std::uint64_t now = 0;
  std::int64_t n = 1;
  for (const char* s : given) {
    b.begin(t, matmul, now);
    // The text comes after a child zone closed: the zone is regrouped all the same.
    b.begin(t, child, now + 10).end(t, now + 20);
    if (s != nullptr) b.text(t, shapes, now + 20, s);
    b.value(t, batch, now + 20, n++ % 2);
    b.end(t, now + 100 * n);
    now += 1000;
  }
  return b.build();
}

TEST(TableGrouping, ByInputShapesAsPyTorch) {
  TableOptions options;
  options.group_by_input_shapes = true;
  options.sort_by = TableOptions::SortBy::calls;
  const KeyAverages table = key_averages(shaped(), options);
  EXPECT_EQ(table.arg_key, "input_shapes");
  ASSERT_EQ(table.rows.size(), 4u);  // matmul x 3 shapes (one empty), child
  EXPECT_EQ(table.rows[0].name, "child");
  EXPECT_EQ(table.rows[0].calls, 4u);
  EXPECT_EQ(table.rows[0].arg, "");
  EXPECT_EQ(table.rows[1].name, "matmul");
  EXPECT_EQ(table.rows[1].arg, "[[64, 128], [128, 256]]");
  EXPECT_EQ(table.rows[1].calls, 2u);
  EXPECT_EQ(table.rows[1].total_ns, 200u + 400u);
  EXPECT_EQ(table.rows[1].self_ns, 190u + 390u);
  // Ties on calls: by name, then the argument's text ("" before "[[1...").
  EXPECT_EQ(table.rows[2].arg, "");
  EXPECT_EQ(table.rows[2].total_ns, 500u);
  EXPECT_EQ(table.rows[3].arg, "[[1, 2]]");
  const TextTable t = parse_text(format_table(table, options));
  ASSERT_TRUE(t.has("Input Shapes"));
  EXPECT_EQ(t.header.back(), "Input Shapes");
  EXPECT_EQ(t.cell("matmul", "Calls", "Input Shapes", "[[1, 2]]"), "1");
  // Without the option: one matmul row, no column, nothing regrouped.
  const KeyAverages plain = key_averages(shaped());
  ASSERT_EQ(plain.rows.size(), 2u);
  EXPECT_EQ(plain.arg_key, "");
  EXPECT_FALSE(parse_text(format_table(plain)).has("Input Shapes"));
}

TEST(TableGrouping, ByAnyArgumentKey) {
  TableOptions options;
  options.group_by_arg = "batch";
  options.sort_by = TableOptions::SortBy::name;
  const KeyAverages table = key_averages(shaped(), options);
  // child has no batch; matmul's are 1, 0, 1, 0.
  ASSERT_EQ(table.rows.size(), 3u);
  EXPECT_EQ(table.rows[1].name, "matmul");
  EXPECT_EQ(table.rows[1].arg, "0");
  EXPECT_EQ(table.rows[1].calls, 2u);
  EXPECT_EQ(table.rows[2].arg, "1");
  EXPECT_EQ(table.rows[2].total_ns, 200u + 400u);
  EXPECT_TRUE(parse_text(format_table(table, options)).has("batch"));
  options.format = TableOptions::Format::csv;
  EXPECT_EQ(lines_of(format_table(table, options))[0].substr(0, 15), "name,arg:batch,");
  options.format = TableOptions::Format::json;
  const std::string json = format_table(table, options);
  EXPECT_NE(json.find("\"arg_key\":\"batch\""), std::string::npos);
  EXPECT_NE(json.find("\"arg\":\"1\""), std::string::npos);
  // Two different grouping arguments: refused.
  TableOptions both;
  both.group_by_input_shapes = true;
  both.group_by_arg = "batch";
  EXPECT_THROW(key_averages(shaped(), both), std::invalid_argument);
  std::ostringstream sink;
  EXPECT_THROW(table_exporter(sink, both), std::invalid_argument);
  // The same grouping asked both ways: the table grouped by input shapes.
  both.group_by_arg = "input_shapes";
  TableOptions shapes;
  shapes.group_by_input_shapes = true;
  const KeyAverages asked_twice = key_averages(shaped(), both), asked_once = key_averages(shaped(), shapes);
  ASSERT_EQ(asked_twice.rows.size(), asked_once.rows.size());
  ASSERT_GE(asked_once.rows.size(), 2u);
  for (std::size_t i = 0; i < asked_once.rows.size(); ++i) {
    EXPECT_EQ(asked_twice.rows[i].name, asked_once.rows[i].name) << i;
    EXPECT_EQ(asked_twice.rows[i].arg, asked_once.rows[i].arg) << i;
    EXPECT_EQ(asked_twice.rows[i].calls, asked_once.rows[i].calls) << i;
    EXPECT_EQ(asked_twice.rows[i].total_ns, asked_once.rows[i].total_ns) << i;
  }
}

TEST(TableGrouping, RecursionWithinOneShapeCountedOnce) {
  // matmul A [0,100] { matmul A [10,50] }, then matmul A [200,300] { matmul B [210,250] }:
  // the inner A is nested in an outer A (its total not counted again); B is not.
  TraceBuilder b;
  const ThreadId t = b.thread("main");
  const SiteId shapes = b.site("input_shapes", SiteKind::value);
  const SiteId matmul = b.site("matmul");
  b.begin(t, matmul, 0).text(t, shapes, 0, "A");
  b.begin(t, matmul, 10).text(t, shapes, 10, "A").end(t, 50);
  b.end(t, 100);
  b.begin(t, matmul, 200).text(t, shapes, 200, "A");
  b.begin(t, matmul, 210).text(t, shapes, 210, "B").end(t, 250);
  b.end(t, 300);
  TableOptions options;
  options.group_by_input_shapes = true;
  options.sort_by = TableOptions::SortBy::name;
  const KeyAverages table = key_averages(b.build(), options);
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(table.rows[0].arg, "A");
  EXPECT_EQ(table.rows[0].calls, 3u);
  EXPECT_EQ(table.rows[0].total_ns, 100u + 100u);
  EXPECT_EQ(table.rows[0].self_ns, 60u + 40u + 60u);
  EXPECT_EQ(table.rows[1].arg, "B");
  EXPECT_EQ(table.rows[1].total_ns, 40u);
}

// Two processes (pids 11 and 22) of two nodes, each with a thread running "work" and
// "io"; the same thread id on both nodes' sides is not the point here (ThreadIds are
// the file's).
RecordedTrace two_nodes(const std::string& node_a, const std::string& node_b, std::int64_t flops_a = -1) {
  TraceBuilder b;
  const ThreadId a = b.thread("rank0", 1);
  const ThreadId c = b.thread("rank1", 1);
  const SiteId work = b.site("work"), io = b.site("io");
  const SiteId flops = b.site("flops", SiteKind::value);
  b.begin(a, work, 0);
  if (flops_a >= 0) b.value(a, flops, 0, flops_a);
  b.begin(a, io, 10).end(a, 30).end(a, 100);
  b.begin(c, work, 0).end(c, 300);
  b.begin(c, work, 400).end(c, 500);
  RecordedTrace trace = b.build();
  trace.threads[a].pid = 11;
  trace.threads[c].pid = 22;
  trace.node_ids[11] = node_a;
  trace.node_ids[22] = node_b;
  return trace;
}

TEST(TableGrouping, ByNodeWithItsColumnOnlyForSeveralNodes) {
  TableOptions options;
  options.group_by_node = true;
  options.sort_by = TableOptions::SortBy::total;
  const KeyAverages table = key_averages(two_nodes("hostA:11", "hostB:22"), options);
  EXPECT_EQ(table.nodes, 2u);
  ASSERT_EQ(table.rows.size(), 3u);
  EXPECT_EQ(table.rows[0].name, "work");
  EXPECT_EQ(table.rows[0].node_id, "hostB:22");
  EXPECT_EQ(table.rows[0].calls, 2u);
  EXPECT_EQ(table.rows[0].total_ns, 400u);
  EXPECT_EQ(table.rows[1].node_id, "hostA:11");
  EXPECT_EQ(table.rows[1].total_ns, 100u);
  EXPECT_EQ(table.rows[2].name, "io");
  const TextTable t = parse_text(format_table(table, options));
  ASSERT_TRUE(t.has("Node ID"));
  EXPECT_EQ(t.cell("work", "Calls", "Node ID", "hostA:11"), "1");
  EXPECT_EQ(t.cell("io", "Node ID"), "hostA:11");
  TableOptions csv = options;
  csv.format = TableOptions::Format::csv;
  EXPECT_EQ(lines_of(format_table(table, csv))[0].substr(0, 13), "name,node_id,");
  // With the stack too: a child's node is its parent's.
  TableOptions stacks = options;
  stacks.group_by_stack_n = 1;
  const KeyAverages s = key_averages(two_nodes("hostA:11", "hostB:22"), stacks);
  ASSERT_EQ(s.rows.size(), 3u);
  EXPECT_EQ(s.rows[2].name, "io");
  EXPECT_EQ(s.rows[2].node_id, "hostA:11");
  EXPECT_EQ(s.rows[2].stack, std::vector<std::string>{"work"});
  // One node (both processes named alike): grouped, but no column.
  const KeyAverages one = key_averages(two_nodes("rack1", "rack1"), options);
  EXPECT_EQ(one.nodes, 1u);
  ASSERT_EQ(one.rows.size(), 2u);
  EXPECT_EQ(one.rows[0].calls, 3u);
  EXPECT_FALSE(parse_text(format_table(one, options)).has("Node ID"));
  EXPECT_EQ(format_table(one, csv).find("node_id"), std::string::npos);
  // Not grouped by node: one row per name, no column.
  const KeyAverages plain = key_averages(two_nodes("hostA:11", "hostB:22"));
  EXPECT_EQ(plain.nodes, 0u);
  ASSERT_EQ(plain.rows.size(), 2u);
  EXPECT_EQ(plain.rows[0].node_id, "");
  EXPECT_FALSE(parse_text(format_table(plain)).has("Node ID"));
}

TEST(TableSourceLocations, FileAndLineOfTheCallSite) {
  TraceBuilder b;
  const ThreadId t = b.thread("main");
  const std::string long_path = "/very/long/path/" + std::string(80, 'd') + "/kernels.cpp";
  const SiteId parse = b.site("parse", SiteKind::zone, "src/parse.cpp", 42, "parse");
  const SiteId parse_again = b.site("parse", SiteKind::zone, "src/parse.cpp", 97, "parse");
  const SiteId kernel = b.site("kernel", SiteKind::zone, long_path, 7, "kernel");
  const SiteId named = b.site("named");  // a name given at run time: no file
  const SiteId function =
      b.site("ns::f", SiteKind::zone, "lib/f.cpp", 12, "ns::f", "", SiteOptions::function);  // its definition
  b.begin(t, parse, 0).end(t, 50);
  b.begin(t, parse_again, 100).end(t, 120);
  b.begin(t, parse, 200).end(t, 210);
  b.begin(t, kernel, 300).end(t, 310);
  b.begin(t, named, 400).end(t, 405);
  b.begin(t, function, 500).end(t, 501);
  const RecordedTrace trace = b.build();
  TableOptions options;
  options.source_locations = true;
  const KeyAverages table = key_averages(trace, options);
  ASSERT_TRUE(table.source_locations);
  const TextTable text = parse_text(format_table(table, options));
  ASSERT_TRUE(text.has("Source Location"));
  EXPECT_EQ(text.header.back(), "Source Location");
  EXPECT_EQ(text.cell("parse", "Source Location"), "src/parse.cpp:42 and 1 more");
  EXPECT_EQ(text.cell("ns::f", "Source Location"), "lib/f.cpp:12");
  const std::string k = text.cell("kernel", "Source Location");
  EXPECT_EQ(k.size(), 75u);  // cut to 75, its end kept
  EXPECT_EQ(k.substr(0, 3), "...");
  EXPECT_EQ(k.substr(k.size() - 14), "/kernels.cpp:7");
  for (const auto& row : text.rows) {
    if (row[0] == "named") {
      EXPECT_EQ(row.size(), text.header.size() - 1);  // an empty last cell
    }
  }
  for (const TableRow& r : table.rows) {
    if (r.name == "parse") {
      EXPECT_EQ(r.source_file, "src/parse.cpp");
      EXPECT_EQ(r.source_line, 42u);
      EXPECT_EQ(r.source_locations, 2u);
    }
  }
  options.format = TableOptions::Format::csv;
  const std::string csv = format_table(table, options);
  EXPECT_NE(csv.find(",source_file,source_line,source_locations\r\n"), std::string::npos);
  EXPECT_NE(csv.find(",src/parse.cpp,42,2\r\n"), std::string::npos);
  // Off: no column, no fields.
  const KeyAverages plain = key_averages(trace);
  EXPECT_FALSE(parse_text(format_table(plain)).has("Source Location"));
  EXPECT_EQ(plain.rows[0].source_file, "");
}

TEST(TableColumns, OrderAfterCalls) {
  // Every optional column at once: Node ID, the argument, FLOPs, Source Location, after Calls.
  TableOptions options;
  options.group_by_node = true;
  options.group_by_input_shapes = true;
  options.source_locations = true;
  const KeyAverages table = key_averages(two_nodes("a", "b", 2000), options);
  const TextTable t = parse_text(format_table(table, options));
  ASSERT_GE(t.header.size(), 5u);
  const std::vector<std::string> tail(t.header.end() - 5, t.header.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"Calls", "Node ID", "Input Shapes", "Total KFLOPs", "Source Location"}));
  for (const TableRow& r : table.rows) EXPECT_EQ(r.flops, r.name == "work" && r.node_id == "a" ? 2000u : 0u);
}

}  // namespace
}  // namespace ringtrace
