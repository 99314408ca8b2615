// Test helper run by the Python checks: builds a stream from a scenario file with
// TraceBuilder, replays it into a real PstatsExporter and writes the .prof file (and the
// text reports), so that Python's own tools can check what the C++ side wrote.
//
//   pstats_scenario_writer <scenario.txt> <out.prof> [<report.txt>]
//   pstats_scenario_writer --big <out.prof>      a table with huge counts and odd names
//
// Scenario lines (whitespace separated; a name is the rest of its line):
//   func <id> <line> <file or -> <name...>   a zone site; "-" = no file (interned)
//   thread <id>                               threads in id order, from 0
//   B <thread> <func id> <ns>                 zone begin
//   E <thread> <ns>                           zone end
//   D <thread> <ns> <count>                   dropped events
//   stop <ns>                                 build(stop): closes open zones
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "ringtrace/exporters/pstats.hpp"
#include "ringtrace/recorded_trace.hpp"

namespace {

int write_big(const std::string& out) {
  ringtrace::PstatsTable table;
  const std::uint64_t big = (std::uint64_t{1} << 33) + 12345;  // beyond 2^31 and 2^32
  table.functions.push_back({"/src/caf\xC3\xA9/\xE6\x97\xA5\xE6\x9C\xAC.cpp", 7, "\xCE\xBB-zone \xF0\x9F\x94\xA5", big,
                             big - 1, 3'000'000'000ull, 9'000'000'000'000ull});
  table.functions.push_back({"~", 0, std::string(100000, 'x') + "-end", 2147483648ull, 2147483647ull, 1, 2});
  table.functions.push_back({"/src/a.cpp", 4000000000u, "max", ~std::uint64_t{0}, 0, 0, 0});
  table.edges.push_back({1, 0, big, 2147483648ull, 3'000'000'000ull, 9'000'000'000'000ull});
  ringtrace::write_pstats(table, out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--big") return write_big(argv[2]);
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <scenario.txt> <out.prof> [<report.txt>]\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", argv[1]);
    return 2;
  }
  ringtrace::TraceBuilder builder("pstats-scenario");
  std::map<int, ringtrace::SiteId> sites;
  std::uint64_t stop = 0;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string op;
    if (!(s >> op) || op[0] == '#') continue;
    if (op == "func") {
      int id = 0;
      std::uint32_t lineno = 0;
      std::string file, name;
      s >> id >> lineno >> file;
      std::getline(s >> std::ws, name);
      sites[id] = builder.site(name, ringtrace::SiteKind::zone, file == "-" ? "" : file, lineno, "fn");
    } else if (op == "thread") {
      builder.thread();
    } else if (op == "B") {
      unsigned thread = 0;
      int func = 0;
      std::uint64_t t = 0;
      s >> thread >> func >> t;
      builder.begin(thread, sites.at(func), t);
    } else if (op == "E") {
      unsigned thread = 0;
      std::uint64_t t = 0;
      s >> thread >> t;
      builder.end(thread, t);
    } else if (op == "D") {
      unsigned thread = 0;
      std::uint64_t t = 0, count = 0;
      s >> thread >> t >> count;
      builder.dropped(thread, t, count);
    } else if (op == "stop") {
      s >> stop;
    } else {
      std::fprintf(stderr, "bad scenario line: %s\n", line.c_str());
      return 2;
    }
  }
  const ringtrace::RecordedTrace trace = builder.build(stop);
  ringtrace::PstatsOptions options;
  if (argc > 3) options.report_path = argv[3];
  const auto exporter =
      std::dynamic_pointer_cast<ringtrace::PstatsExporter>(ringtrace::pstats_exporter(argv[2], options));
  ringtrace::replay(trace, *exporter, 7);  // small batches: state must carry across them
  if (argc > 3) {
    std::ofstream raw(std::string(argv[3]) + ".raw");
    raw << ringtrace::format_pstats_raw_table(exporter->table());
  }
  return 0;
}
