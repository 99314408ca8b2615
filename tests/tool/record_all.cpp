// Writes, from one live session, every format and the binary file, into the folder given:
// live.json, live.prof, live.folded, live_summary.txt, live_table.txt, run.rtrace.
// tool_tests.sh then converts run.rtrace with the tool and compares.
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>  // kill
#include <unistd.h>  // getpid

#include <chrono>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/exporters/ops_summary.hpp"
#include "ringtrace/exporters/perfetto.hpp"
#include "ringtrace/exporters/pstats.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/ringtrace.hpp"

// `record_all DIR killed`: records into DIR/killed.rtrace with the rings in a file, one
// zone "late" and, once the drainer has written its call site, 1000 more, then kills
// itself with SIGKILL before the drainer's next pass (every 50 ms): the 1000 are in the
// ring file only.
int killed(const std::filesystem::path& dir) {
  ringtrace::Config config;
  config.process_name = "killed";
  config.drain_interval = std::chrono::milliseconds(50);
  ringtrace::Session session(config);
  ringtrace::BinaryTraceOptions options;
  options.rings_in_file = true;
  session.add_exporter(ringtrace::binary_trace_exporter(dir / "killed.rtrace", options));
  session.start();
  ringtrace::set_thread_name("doomed");
  for (int i = 0; i < 1001; ++i) {
    { RINGTRACE_ZONE("late"); }
    if (i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));  // passes write its call site
  }
  ::kill(::getpid(), SIGKILL);
  return 1;
}

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[2]) == "killed") return killed(argv[1]);
  if (argc != 2) return 2;
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  ringtrace::Config config;
  config.process_name = "tool test";
  config.overflow = ringtrace::OverflowPolicy::block;
  ringtrace::Session session(config);
  session.add_exporter(ringtrace::chrome_trace_exporter(dir / "live.json"));
  session.add_exporter(ringtrace::pstats_exporter(dir / "live.prof"));
  session.add_exporter(ringtrace::folded_stacks_exporter(dir / "live.folded"));
  ringtrace::OpsSummaryOptions summary;
  summary.transparent_names = {"step"};
  session.add_exporter(ringtrace::ops_summary_exporter(dir / "live_summary.txt", summary));
  session.add_exporter(ringtrace::table_exporter(dir / "live_table.txt"));
  session.add_exporter(ringtrace::perfetto_exporter(dir / "live.perfetto-trace"));
  // Estimates of the sampled site: calls in the folded file, and the table.
  ringtrace::FoldedStacksOptions estimated_folded;
  estimated_folded.value = ringtrace::FoldedValue::calls;
  estimated_folded.estimate_sampled = true;
  session.add_exporter(ringtrace::folded_stacks_exporter(dir / "live_estimated.folded", estimated_folded));
  ringtrace::TableOptions estimated_table;
  estimated_table.estimate_sampled = true;
  session.add_exporter(ringtrace::table_exporter(dir / "live_estimated_table.txt", estimated_table));
  session.add_exporter(ringtrace::binary_trace_exporter(dir / "run.rtrace"));
  session.start();
  std::vector<std::thread> threads;
  // Flow ids unique to this process: a merge of two runs (tool_tests.sh) keeps flows
  // apart, as the README asks of programs whose files are merged.
  const std::uint64_t flow_base = static_cast<std::uint64_t>(::getpid()) << 32;
  for (int w = 0; w < 3; ++w) {
    threads.emplace_back([w, flow_base] {
      ringtrace::set_thread_name("worker-" + std::to_string(w));
      for (int i = 0; i < 2000; ++i) {
        RINGTRACE_ZONE("step");
        RINGTRACE_ZONE_VALUE("i", i);
        if (i % 2 == 0) {
          RINGTRACE_REGION("graph", i % 5);
          RINGTRACE_ZONE("op");
        }
        RINGTRACE_ZONE("eager");
        RINGTRACE_COUNTER("depth", i % 9);
        {
          RINGTRACE_ZONE_SAMPLED("sampled", 4);  // 500 of 2000 recorded per thread
          RINGTRACE_ZONE("under");
        }
        if (w == 0) RINGTRACE_FLOW_OUT(flow_base + i + 1);
        if (w == 1) RINGTRACE_FLOW_IN(flow_base + i + 1);
      }
    });
  }
  for (auto& t : threads) t.join();
  session.stop();
  const auto stats = session.stats();
  std::printf("record_all: %llu events, %zu exporter errors\n", static_cast<unsigned long long>(stats.recorded),
              stats.exporter_errors.size());
  return stats.exporter_errors.empty() && stats.dropped == 0 ? 0 : 1;
}
