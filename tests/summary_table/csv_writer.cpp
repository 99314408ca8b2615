// Writes table.csv and summary.csv (and their JSON forms) for a hand-built stream with
// hostile names into the folder it is given; check_csv.py reads them back with miller.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "ringtrace/exporters/ops_summary.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/recorded_trace.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <output folder>\n", argv[0]);
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    using namespace ringtrace;
    TraceBuilder b("csv");
    const ThreadId t1 = b.thread("worker, \"one\"", 11);
    const ThreadId t2 = b.thread("two", 12);
    const SiteId graph = b.site("graph", SiteKind::region);
    const SiteId matmul = b.site("mat,mul");
    const SiteId say = b.site("say \"hi\"");
    const SiteId multi = b.site("multi\nline");
    const SiteId padded = b.site(" padded ");
    const SiteId unicode = b.site(
        "\xC3\xBCn\xC3\xAF"
        "code");
    const SiteId plain = b.site("plain");
    b.begin(t1, graph, 0, 1).begin(t1, matmul, 100).end(t1, 400).begin(t1, say, 400).end(t1, 500).end(t1, 1000);
    b.begin(t1, multi, 1000).begin(t1, padded, 1100).end(t1, 1200).end(t1, 1300);
    b.begin(t2, graph, 0, 2).begin(t2, unicode, 10).end(t2, 590).end(t2, 600);
    b.begin(t2, plain, 700).end(t2, 800);
    const RecordedTrace trace = b.build();

    TableOptions table_csv;
    table_csv.format = TableOptions::Format::csv;
    table_csv.sort_by = TableOptions::SortBy::name;
    replay(trace, *table_exporter((dir / "table.csv").string(), table_csv));
    OpsSummaryOptions summary_csv;
    summary_csv.format = OpsSummaryOptions::Format::csv;
    replay(trace, *ops_summary_exporter((dir / "summary.csv").string(), summary_csv));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "csv_writer: %s\n", e.what());
    return 1;
  }
}
