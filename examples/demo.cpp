// The demo: a small multi-threaded synthetic runtime, traced by ringtrace.
//
// Worker threads run "steps" of nested ops; some ops run inside capture regions
// (as a compiled graph would), one op is a recursive function, a scheduler thread
// publishes counters and instants. At the end the demo prints the session's stats
// and writes its exporters' files into the output folder (first argument).
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/ringtrace.hpp"
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
  // Chrome trace and folded stacks: trace.json (Perfetto UI, chrome://tracing,
  // DevTools, speedscope) and trace.folded (flamegraph.pl, inferno, speedscope).
  session.add_exporter(ringtrace::chrome_trace_exporter((out_dir / "trace.json").string()));
  session.add_exporter(ringtrace::folded_stacks_exporter((out_dir / "trace.folded").string()));
  // Python profile: trace.prof for python3 -m pstats, snakeviz, gprof2dot.
  const std::string pstats_path = (out_dir / "trace.prof").string();
  const auto pstats = std::dynamic_pointer_cast<ringtrace::PstatsExporter>(ringtrace::pstats_exporter(pstats_path));
  session.add_exporter(pstats);
  // Captured-ops summary and key-averages table: text kept for printing after the stats,
  // CSV files in out_dir. A step wraps ops without being one: transparent.
  std::ostringstream ops_summary_text;
  std::ostringstream table_text;
  ringtrace::OpsSummaryOptions summary_options;
  summary_options.transparent_names = {"step"};
  session.add_exporter(ringtrace::ops_summary_exporter(ops_summary_text, summary_options));
  summary_options.format = ringtrace::OpsSummaryOptions::Format::csv;
  session.add_exporter(ringtrace::ops_summary_exporter((out_dir / "summary.csv").string(), summary_options));
  ringtrace::TableOptions table_options;
  table_options.row_limit = 15;
  session.add_exporter(ringtrace::table_exporter(table_text, table_options));
  table_options.format = ringtrace::TableOptions::Format::csv;
  table_options.row_limit = 0;  // every group in the file
  session.add_exporter(ringtrace::table_exporter((out_dir / "table.csv").string(), table_options));

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

  const ringtrace::SessionStats stats = session.stats();
  std::printf("ringtrace demo: %llu events recorded, %llu dropped, clock %s (%.3f GHz), allocator %s\n",
              static_cast<unsigned long long>(stats.recorded), static_cast<unsigned long long>(stats.dropped),
              stats.clock.tsc ? "invariant TSC" : "CLOCK_MONOTONIC", stats.clock.ticks_per_second / 1e9,
              stats.allocator.c_str());
  std::printf("%-8s %-12s %10s %10s\n", "thread", "name", "recorded", "dropped");
  for (const auto& t : stats.threads) {
    std::printf("%-8llu %-12s %10llu %10llu\n", static_cast<unsigned long long>(t.os_tid), t.name.c_str(),
                static_cast<unsigned long long>(t.recorded), static_cast<unsigned long long>(t.dropped));
  }
  for (const auto& e : stats.exporter_errors) std::printf("exporter error: %s\n", e.c_str());
  // [demo summaries] summaries printed after the stats.
  {
    // Python profile: the raw aggregate table, the top of the pstats report,
    // how to open the file, and the optional call-graph SVG.
    const ringtrace::PstatsTable profile = pstats->table();
    ringtrace::PstatsReportOptions report;
    report.limit = 12;
    std::printf("\n%s\n%s", ringtrace::format_pstats_raw_table(profile).c_str(),
                ringtrace::format_pstats_report(profile, report).c_str());
    std::printf("Python profile: %s\n  open with: python3 -m pstats %s   (then: sort cumulative, stats 20, callers)\n"
                "  or: snakeviz %s   |   pyprof2calltree -k -i %s\n",
                pstats_path.c_str(), pstats_path.c_str(), pstats_path.c_str(), pstats_path.c_str());
    const ringtrace::PstatsSvgResult svg =
        ringtrace::write_pstats_svg(pstats_path, (out_dir / "trace-callgraph.svg").string());
    std::printf("  %s\n", svg.message.c_str());
  }
  std::printf("\n%s\n%s", ops_summary_text.str().c_str(), table_text.str().c_str());
  std::printf("output folder: %s\n", std::filesystem::absolute(out_dir).c_str());
  return stats.exporter_errors.empty() ? 0 : 1;
}
