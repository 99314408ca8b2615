// The demo: a small multi-threaded synthetic runtime, traced by ringtrace.
//
// Worker threads run "steps" of nested ops; some ops run inside capture regions
// (as a compiled graph would), one op is a recursive function, a scheduler thread
// publishes counters and instants. The exporters write their files into the output
// folder (first argument); at the end the demo prints a short summary and how to open
// each file.
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/ringtrace.hpp"
#include "ringtrace/exporters/binary_trace.hpp"   // trace.rtrace for the ringtrace tool
#include "ringtrace/exporters/chrome_trace.hpp"   // trace.json for Perfetto/DevTools
#include "ringtrace/exporters/folded_stacks.hpp"  // trace.folded for flame graphs
#include "ringtrace/exporters/ops_summary.hpp"  // captured-ops summary
#include "ringtrace/exporters/table.hpp"        // key-averages table
#include "ringtrace/exporters/pstats.hpp"       // trace.prof for pstats/snakeviz

namespace {

volatile double g_sink = 0;  // keeps the synthetic work from being optimised away

void spin(int iterations) {
  double x = 1.0;
  for (int i = 0; i < iterations; ++i) x = std::sqrt(x + i);
  g_sink = g_sink + x;
}

int fibonacci(int n) {
  RINGTRACE_FUNCTION();
  if (n < 2) return n;
  return fibonacci(n - 1) + fibonacci(n - 2);
}

void matmul() {
  RINGTRACE_ZONE("matmul");
  spin(2000);
}

void relu() {
  RINGTRACE_ZONE("relu");
  spin(300);
}

void layer_norm() {
  RINGTRACE_ZONE("layer_norm");
  { RINGTRACE_ZONE("mean"); spin(200); }
  { RINGTRACE_ZONE("variance"); spin(300); }
}

void allreduce() {
  RINGTRACE_ZONE("allreduce");
  spin(1500);
}

void run_step(int worker, int step) {
  RINGTRACE_ZONE("step");
  if (step % 4 != 3) {
    RINGTRACE_REGION("compiled_graph", step % 3);  // captured ops
    matmul();
    relu();
    layer_norm();
  } else {
    matmul();  // a step that fell back to eager ops
    relu();
  }
  allreduce();  // never captured
  if (worker == 0 && step % 10 == 0) {
    RINGTRACE_ZONE("checkpoint_fib");
    g_sink = g_sink + fibonacci(12);
  }
  RINGTRACE_INSTANT("step_done");
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path out_dir = argc > 1 ? argv[1] : "ringtrace-demo-out";
  std::filesystem::create_directories(out_dir);

  ringtrace::Config config;
  config.process_name = "ringtrace-demo";
  ringtrace::Session session(config);
  // Timeline and flame graph: trace.json (Perfetto UI, chrome://tracing, DevTools,
  // speedscope) and trace.folded (speedscope, flamegraph.pl, inferno).
  session.add_exporter(ringtrace::chrome_trace_exporter(out_dir / "trace.json"));
  session.add_exporter(ringtrace::folded_stacks_exporter(out_dir / "trace.folded"));
  // The binary trace file: everything recorded, cheapest to write, converted later by
  // the ringtrace tool (convert, report, info).
  session.add_exporter(ringtrace::binary_trace_exporter(out_dir / "trace.rtrace"));
  // Python profile: trace.prof for python3 -m pstats, snakeviz, pyprof2calltree.
  session.add_exporter(ringtrace::pstats_exporter(out_dir / "trace.prof"));
  // Captured-ops summary and key-averages table, written whole as CSV files; their
  // results are also read in process for the lines printed at the end.
  ringtrace::OpsSummaryOptions summary_options;
  summary_options.format = ringtrace::OpsSummaryOptions::Format::csv;
  summary_options.transparent_names = {"step"};  // a step wraps ops without being one
  const auto summary = std::dynamic_pointer_cast<ringtrace::OpsSummaryExporter>(
      ringtrace::ops_summary_exporter(out_dir / "summary.csv", summary_options));
  session.add_exporter(summary);
  ringtrace::TableOptions table_options;
  table_options.format = ringtrace::TableOptions::Format::csv;
  table_options.row_limit = 0;  // every group in the file
  const auto table = std::dynamic_pointer_cast<ringtrace::TableExporter>(
      ringtrace::table_exporter(out_dir / "table.csv", table_options));
  session.add_exporter(table);

  ringtrace::set_thread_name("main");
  session.start();
  std::atomic<bool> done{false};
  std::thread scheduler([&] {
    ringtrace::set_thread_name("scheduler");
    int depth = 0;
    while (!done.load(std::memory_order_relaxed)) {
      depth = (depth * 7 + 3) % 50;
      RINGTRACE_COUNTER("queue_depth", depth);
      RINGTRACE_COUNTER("load", depth / 50.0);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([w] {
      ringtrace::set_thread_name("worker-" + std::to_string(w));
      for (int step = 0; step < 200; ++step) run_step(w, step);
    });
  }
  for (auto& t : workers) t.join();
  done = true;
  scheduler.join();
  session.stop();

  // At most about 25 lines: the session, the captured-ops line, the ten most expensive
  // rows, and each file with a way to open it on a fresh Debian 12 machine. The full
  // reports are in the files.
  const ringtrace::SessionStats stats = session.stats();
  std::printf("ringtrace demo: %llu events from %zu threads, %llu dropped (clock: %s)\n",
              static_cast<unsigned long long>(stats.recorded), stats.threads.size(),
              static_cast<unsigned long long>(stats.dropped),
              stats.clock.tsc ? "invariant TSC" : "CLOCK_MONOTONIC");
  for (const auto& e : stats.exporter_errors) std::printf("exporter error: %s\n", e.c_str());
  std::printf("Captured ops: %s\n", ringtrace::one_line(summary->summary().total).c_str());
  ringtrace::KeyAverages top = table->table();
  if (top.rows.size() > 10) top.rows.resize(10);
  ringtrace::TableOptions text;
  text.name_width = 16;
  std::string rows = ringtrace::format_table(top, text);
  rows.resize(rows.find("Self time total"));  // the footer is in the files
  std::printf("\n%s", rows.c_str());
  const std::string dir = std::filesystem::absolute(out_dir).lexically_normal().string();
  std::printf("Files in %s:\n", dir.c_str());
  std::printf("  trace.json    timeline: drag it onto ui.perfetto.dev (or open it in chrome://tracing)\n");
  std::printf("  trace.folded  flame graph: npx speedscope trace.folded (or drag it onto speedscope.app)\n");
  std::printf("  trace.prof    python3 -m pstats trace.prof, then: sort cumulative / stats 20 / callers\n");
  std::printf("                (apt install pyprof2calltree kcachegrind; pyprof2calltree -k -i trace.prof)\n");
  std::printf("  table.csv     the whole table (%zu rows), for a spreadsheet or python3's csv module\n",
              table->table().rows.size());
  std::printf("  summary.csv   captured ops per thread, the same way\n");
  std::printf("  trace.rtrace  everything recorded: ringtrace info|report trace.rtrace, or\n"
              "                ringtrace convert trace.rtrace --chrome t.json --pstats t.prof --folded t.folded\n");
  return stats.exporter_errors.empty() ? 0 : 1;
}
