// The demo: a small multi-threaded synthetic runtime, traced by ringtrace.
//
// Worker threads run "steps" of nested ops; some ops run inside capture regions
// (as a compiled graph would), one op is a recursive function, a scheduler thread
// publishes counters and instants. The exporters write their files into the output
// folder (first argument); at the end the demo prints a short summary and how to open
// each file: commands that work from the current directory, the ringtrace tool's
// included (the one built beside the demo).
#include <unistd.h>  // access

#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/exporters/binary_trace.hpp"   // trace.rtrace for the ringtrace tool
#include "ringtrace/exporters/chrome_trace.hpp"   // trace.json for Perfetto/DevTools
#include "ringtrace/exporters/folded_stacks.hpp"  // trace.folded for flame graphs
#include "ringtrace/exporters/ops_summary.hpp"    // captured-ops summary
#include "ringtrace/exporters/perfetto.hpp"       // trace.perfetto-trace for Perfetto UI
#include "ringtrace/exporters/pstats.hpp"         // trace.prof for pstats/snakeviz
#include "ringtrace/exporters/table.hpp"          // key-averages table
#include "ringtrace/ringtrace.hpp"

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
  {
    RINGTRACE_ZONE("mean");
    spin(200);
  }
  {
    RINGTRACE_ZONE("variance");
    spin(300);
  }
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

// A path as the user types it in a command: relative to the current directory when
// that is shorter than the absolute path, quoted for the shell when it has to be.
std::string shown(const std::filesystem::path& path) {
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec).lexically_normal();
  const std::filesystem::path relative = absolute.lexically_relative(std::filesystem::current_path(ec));
  std::string text = absolute.string();
  if (!ec && !relative.empty() && relative.string().size() < text.size()) text = relative.string();
  if (text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./+:=,@%-") ==
      std::string::npos) {
    return text;
  }
  std::string quoted = "'";
  for (const char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// The ringtrace tool of the same build (build/release/tools/ringtrace beside
// build/release/examples/ringtrace_demo), as a command: with a '/' (a bare name would be
// looked up in PATH). Empty when it was not built (-DRINGTRACE_BUILD_TOOL=OFF).
std::string tool_command() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const std::filesystem::path tool = (self.parent_path() / ".." / "tools" / "ringtrace").lexically_normal();
  if (::access(tool.c_str(), X_OK) != 0) return {};
  const std::string command = shown(tool);
  return command.find('/') == std::string::npos ? "./" + command : command;
}

// What the demo prints after its table: each file it wrote, with a way to open it that
// works from the current directory on a fresh Debian 12 machine (README, "Opening the
// files"), and the tool's commands on trace.rtrace, one per line, as they run.
void print_files(const std::filesystem::path& out_dir, std::size_t table_rows) {
  const auto file = [&](const char* name) { return shown(out_dir / name); };
  std::printf("Files in %s:\n", std::filesystem::absolute(out_dir).lexically_normal().string().c_str());
  std::printf("  trace.json            timeline: drag it onto ui.perfetto.dev (or open it in chrome://tracing)\n");
  std::printf("  trace.perfetto-trace  the same timeline in Perfetto's format, a third of the size: ui.perfetto.dev\n");
  std::printf("  trace.folded          flame graph: npx speedscope %s\n", file("trace.folded").c_str());
  std::printf("  trace.prof            python3 -m pstats %s (then: sort cumulative / stats 20 / callers)\n",
              file("trace.prof").c_str());
  std::printf("  table.csv             the whole table (%zu rows), for a spreadsheet or python3's csv module\n",
              table_rows);
  std::printf("  summary.csv           captured ops per thread, the same way\n");
  const std::string tool = tool_command();
  if (tool.empty()) {
    std::printf(
        "  trace.rtrace          everything recorded, for the ringtrace tool (not built: -DRINGTRACE_BUILD_TOOL=ON)\n");
    return;
  }
  std::printf("  trace.rtrace          everything recorded, for the ringtrace tool (info, report, convert, merge):\n");
  std::printf("    %s info %s\n", tool.c_str(), file("trace.rtrace").c_str());
  // The demo's "step" zones wrap ops without being one (summary_options below): the
  // report says so too, and prints the demo's captured-ops line.
  std::printf("    %s report %s --transparent step\n", tool.c_str(), file("trace.rtrace").c_str());
  std::printf("    %s convert %s --chrome %s\n", tool.c_str(), file("trace.rtrace").c_str(),
              file("converted.json").c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path out_dir = argc > 1 ? argv[1] : "ringtrace-demo-out";
  std::filesystem::create_directories(out_dir);

  ringtrace::Config config;
  config.process_name = "ringtrace-demo";
  // Each thread's context switches (docs/context-switches.md): every zone gets its
  // on-CPU time, the timelines show when threads were off the CPU. Where the kernel
  // refuses (perf_event_paranoid 3, a seccomp filter) the demo runs without them.
  config.context_switches = true;
  ringtrace::Session session(config);
  // Timeline and flame graph: trace.json (Perfetto UI, chrome://tracing, DevTools,
  // speedscope), trace.perfetto-trace (Perfetto UI, trace_processor; about a third of
  // the JSON) and trace.folded (speedscope, flamegraph.pl, inferno).
  session.add_exporter(ringtrace::chrome_trace_exporter(out_dir / "trace.json"));
  session.add_exporter(ringtrace::perfetto_exporter(out_dir / "trace.perfetto-trace"));
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
      {
        // A worker's setup, waiting for its inputs: its thread's first zone, off the CPU
        // while it sleeps (the thread's context-switch stream opens in its first event).
        RINGTRACE_ZONE("load_inputs");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      for (int step = 0; step < 200; ++step) run_step(w, step);
    });
  }
  for (auto& t : workers) t.join();
  done = true;
  scheduler.join();
  session.stop();

  // At most 25 lines: the session, the captured-ops line, the seven most expensive rows,
  // why their maxima can be far above their medians (with the on-CPU columns: which
  // zone's maximum was a wait), and each file with a way to open it. The full reports
  // are in the files.
  const ringtrace::SessionStats stats = session.stats();
  std::printf("ringtrace demo: %llu events from %zu threads, %llu dropped (clock: %s)\n",
              static_cast<unsigned long long>(stats.recorded), stats.threads.size(),
              static_cast<unsigned long long>(stats.dropped), stats.clock.tsc ? "invariant TSC" : "CLOCK_MONOTONIC");
  for (const auto& e : stats.exporter_errors) std::printf("exporter error: %s\n", e.c_str());
  std::printf("Captured ops: %s\n", ringtrace::one_line(summary->summary().total).c_str());
  const ringtrace::KeyAverages all = table->table();
  ringtrace::TableOptions text;
  text.name_width = 16;
  const std::string table_text = ringtrace::format_table(all, text);
  // The header, its rule (with on-CPU columns, the line that says what they are before
  // them) and the first seven rows: the rest is in the files.
  constexpr std::size_t kRowsShown = 7;
  const int lines = (all.on_cpu ? 3 : 2) + static_cast<int>(kRowsShown);
  std::string rows;
  std::size_t line_end = 0;
  for (int line = 0; line < lines && line_end != std::string::npos; ++line) {
    line_end = table_text.find('\n', line_end == 0 ? 0 : line_end + 1);
  }
  rows = table_text.substr(0, line_end == std::string::npos ? table_text.size() : line_end + 1);
  ringtrace::KeyAverages top = all;  // the rows shown
  if (top.rows.size() > kRowsShown) top.rows.resize(kRowsShown);
  std::printf("%s", rows.c_str());
  // A zone's time includes whatever kept its thread off the CPU: on a busy machine the
  // Max of a 13 us zone can be milliseconds: said under the table, where maxima are read.
  std::printf(
      "Max far above p50? Times are wall-clock: the thread was preempted in the zone"
      " (README: \"Times are wall-clock and on-CPU\").\n");
  if (all.on_cpu) {
    // The row whose slowest call waited longest: no call ran longer than its on-CPU
    // maximum, so that call spent at least Max - On-CPU max off the CPU.
    const ringtrace::TableRow* waited = nullptr;
    for (const ringtrace::TableRow& r : top.rows) {
      if (waited == nullptr || r.max_ns - r.on_cpu_max_ns > waited->max_ns - waited->on_cpu_max_ns) waited = &r;
    }
    if (waited != nullptr && waited->max_ns > waited->on_cpu_max_ns + 1000) {  // printed as at least 0.001 ms
      std::printf(
          "On-CPU: %s's Max is %.3f ms, yet no call ran over %.3f ms on the CPU: at least %.3f ms was a wait.\n",
          waited->name.c_str(), static_cast<double>(waited->max_ns) / 1e6,
          static_cast<double>(waited->on_cpu_max_ns) / 1e6,
          static_cast<double>(waited->max_ns - waited->on_cpu_max_ns) / 1e6);
    } else {
      // (A zone that ended before the drainer opened its thread's stream counts its wall
      // time as on-CPU: its waits are unknown.)
      std::printf("On-CPU: no row's slowest call is known to have waited.\n");
    }
  } else {
    std::printf("No on-CPU columns: %s\n", stats.context_switches_unavailable.c_str());
  }
  print_files(out_dir, table->table().rows.size());
  return stats.exporter_errors.empty() ? 0 : 1;
}
