// Writes, from one live session, every format and the binary file, into the folder given:
// live.json, live.prof, live.folded, live_summary.txt, live_table.txt, run.rtrace.
// tool_tests.sh then converts run.rtrace with the tool and compares. More modes (below):
// a killed run, one of two writers of the same paths (file_safety_tests.sh), names of
// every length and a file whose Chrome JSON is large (cli_tests.sh), every kind of event
// in a live file, a stream file and a killed one, context switches (tests/python's
// rtrace.py comparisons).
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
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
#include "ringtrace/recorded_trace.hpp"
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

// `record_all DIR writer NAME`: one of two processes recording to the same paths at
// once (DIR/shared.json, .folded, .prof, .rtrace), its zones named NAME. Prints
// "started" once a drainer pass has written its files, keeps recording until a line
// arrives on standard input, then stops and prints "stopped".
int writer(const std::filesystem::path& dir, const std::string& name) {
  ringtrace::Config config;
  config.process_name = name;
  config.drain_interval = std::chrono::milliseconds(2);
  ringtrace::Session session(config);
  session.add_exporter(ringtrace::chrome_trace_exporter(dir / "shared.json"));
  session.add_exporter(ringtrace::folded_stacks_exporter(dir / "shared.folded"));
  session.add_exporter(ringtrace::pstats_exporter(dir / "shared.prof"));
  session.add_exporter(ringtrace::binary_trace_exporter(dir / "shared.rtrace"));
  session.start();
  const ringtrace::SiteInfo* const site = ringtrace::intern(name + "_zone");
  std::atomic<bool> stop{false};
  std::thread recorder([&] {
    ringtrace::set_thread_name(name);
    while (!stop.load(std::memory_order_relaxed)) {
      RINGTRACE_ZONE_SITE(site);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  // Two passes that delivered events: the Chrome trace and the binary file are on disk.
  while (session.stats().drain_passes < 2 || session.stats().recorded == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::printf("started\n");
  std::fflush(stdout);
  std::string line;
  std::getline(std::cin, line);
  stop.store(true);
  recorder.join();
  session.stop();
  std::printf("stopped\n");
  return session.stats().exporter_errors.empty() ? 0 : 1;
}

// `record_all DIR large N`: N zones with a name of 2000 characters into DIR/large.rtrace,
// whose Chrome JSON is over 2 KB a zone while the file stays small (a name is stored
// once): for the tool's hint on large JSON without recording millions of events.
int large(const std::filesystem::path& dir, long zones) {
  ringtrace::Config config;
  config.process_name = "large";
  config.overflow = ringtrace::OverflowPolicy::block;
  ringtrace::Session session(config);
  session.add_exporter(ringtrace::binary_trace_exporter(dir / "large.rtrace"));
  session.start();
  const ringtrace::SiteInfo* const site = ringtrace::intern(std::string(2000, 'z'));
  for (long i = 0; i < zones; ++i) {
    RINGTRACE_ZONE_SITE(site);
  }
  session.stop();
  return session.stats().dropped == 0 && session.stats().exporter_errors.empty() ? 0 : 1;
}

// `record_all DIR names`: DIR/names.rtrace, threads and call sites with names of every
// length (one past the tool's cap of 40 characters, one with a tab, an interned site
// without a file), for the alignment of `ringtrace info`'s columns (cli_tests.sh).
int names(const std::filesystem::path& dir) {
  ringtrace::Config config;
  config.process_name = "names";
  ringtrace::Session session(config);
  session.add_exporter(ringtrace::binary_trace_exporter(dir / "names.rtrace"));
  session.start();
  const ringtrace::SiteInfo* const interned = ringtrace::intern("interned");
  std::vector<std::thread> threads;
  const std::pair<const char*, int> named[] = {
      {"t", 1000}, {"tab\there", 1}, {"a-thread-whose-name-is-longer-than-forty-characters", 100}};
  for (const auto& entry : named) {  // no structured binding: clang 14 cannot capture one
    threads.emplace_back(
        [name = entry.first, loops = entry.second, interned] {  // 8 events a loop: counts of 1 to 4 digits
          ringtrace::set_thread_name(name);
          for (int i = 0; i < loops; ++i) {
            RINGTRACE_ZONE("z");
            { RINGTRACE_ZONE("medium_zone_name"); }
            { RINGTRACE_ZONE("a_zone_whose_name_is_longer_than_forty_characters"); }
            { RINGTRACE_ZONE_SITE(interned); }
          }
        });
  }
  for (auto& t : threads) t.join();
  session.stop();
  return session.stats().exporter_errors.empty() ? 0 : 1;
}

// Every kind of event and the values that are hard to print (integers and doubles at
// their limits, NaNs, texts cut at recording or with bytes to escape, names with quotes,
// control bytes or a NUL): what `record_all DIR rich` and the killed runs record on each
// worker thread (zones named at run time, with arguments, manual ones, messages too);
// worker 2 also marks a frame (ringtrace::frame_mark()) every 100 loops: steps from a
// thread other than the one calling Session::step().
void rich_work(int w, int loops, const ringtrace::SiteInfo* escaped) {
  ringtrace::set_thread_name("rich-" + std::to_string(w) + (w == 1 ? std::string("\t\"\xff") : std::string()));
  static const ringtrace::SiteInfo* const with_nul = ringtrace::intern(std::string("nul\0byte", 8));
  const std::string long_text(3000, 'x');
  const char odd_bytes[] = {'a', '\0', '"', '\\', '\n', '\x01', '\x7f', '\x80', '\xff', 'z'};
  constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
  const double doubles[] = {0.1,
                            -0.0,
                            1e300,
                            -2.5e-310,
                            5e-324,
                            std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity(),
                            kNan,
                            -kNan,
                            123456789.125};
  const std::int64_t ints[] = {0, -1, std::numeric_limits<std::int64_t>::min(),
                               std::numeric_limits<std::int64_t>::max(), 1234567890123LL};
  for (int i = 0; i < loops; ++i) {
    RINGTRACE_ZONE("loop");
    RINGTRACE_ZONE_VALUE("i", static_cast<std::int64_t>(i));
    RINGTRACE_ZONE_VALUE("int", ints[i % 5]);
    RINGTRACE_ZONE_VALUE("double", doubles[i % 10]);
    RINGTRACE_ZONE_TEXT("text", odd_bytes, sizeof odd_bytes);
    if (i % 7 == 0) RINGTRACE_ZONE_TEXT("long", long_text.data(), long_text.size());  // cut at recording
    {
      RINGTRACE_REGION("region",
                       i % 3 == 0 ? std::numeric_limits<std::uint64_t>::max() - i : static_cast<std::uint64_t>(i));
      RINGTRACE_ZONE_IN("net", "recv");
      RINGTRACE_INSTANT("tick");
      RINGTRACE_ZONE_SITE(escaped);
      RINGTRACE_ZONE_SITE(with_nul);  // a name is a C string to the stream's readers
    }
    RINGTRACE_COUNTER("ints", ints[(i + w) % 5]);
    RINGTRACE_COUNTER("doubles", doubles[(i + w) % 10]);
    RINGTRACE_COUNTER_PER_THREAD("per_thread", i * 3 + w);
    RINGTRACE_COUNTER_PER_THREAD("per_thread_d", i * 0.5);
    {
      RINGTRACE_ZONE_SAMPLED("sampled", 3);
      RINGTRACE_ZONE("under_sampled");
    }
    const std::uint64_t flow = (static_cast<std::uint64_t>(w) << 40) + static_cast<std::uint64_t>(i) + 1;
    if (w % 2 == 0) RINGTRACE_FLOW_OUT(~flow);
    if (w % 2 == 1) RINGTRACE_FLOW_IN(~(flow - (std::uint64_t{1} << 40)));
    RINGTRACE_ASYNC_BEGIN("upload", flow);
    if (i > 0) RINGTRACE_ASYNC_END("upload", flow - 1);
    if (w == 2 && i % 100 == 99) RINGTRACE_FRAME();
    {
      // Named at run time (a site per name; one cut at 256 bytes), a zone with arguments,
      // a message, a manual zone.
      const std::string dynamic =
          "dyn " + std::to_string(i % 7) + (i % 50 == 3 ? std::string(300, 'n') : std::string());
      RINGTRACE_ZONE_DYNAMIC(dynamic);
      RINGTRACE_ZONE("with args", "n", static_cast<std::int64_t>(i), "half", i * 0.5);
      if (i % 11 == 0) RINGTRACE_MESSAGE(std::string_view(odd_bytes, sizeof odd_bytes));
      RINGTRACE_ZONE_BEGIN("manual");
      RINGTRACE_ZONE_END();
    }
    if (i % 50 == 49) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // several drainer passes
  }
}

// `record_all DIR rich`: DIR/rich.rtrace from a live session of three rich threads (every
// kind of event, texts cut and with bytes to escape, doubles and integers at their
// limits) in 4 KiB rings (the block policy: many drainer passes) and steps from the main
// thread and frame marks from worker 2 (step zones on the "steps" track); the same
// stream through replay() into DIR/stream.rtrace, and each window of two steps into
// DIR/window-N.rtrace. Then DIR/drops.rtrace: threads that overflow their small rings
// under the drop policy (dropped records, texts on zones dropped or not, and drops only
// the stats count), with steps from the main thread.
int rich(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  ringtrace::Config config;
  config.process_name = "rich \"run\"";
  config.buffer_records = 256;  // 4 KiB rings: a pass every few loops
  config.overflow = ringtrace::OverflowPolicy::block;
  config.schedule = ringtrace::Schedule{0, 0, 0, 2, 0};  // always recording, windows of two steps
  {
    ringtrace::Session session(config);
    auto memory = std::make_shared<ringtrace::MemoryExporter>();
    session.add_exporter(memory);
    session.add_exporter(ringtrace::binary_trace_exporter(dir / "rich.rtrace"));
    session.add_window_exporter([dir](const ringtrace::WindowInfo& window) {
      return ringtrace::binary_trace_exporter(dir / ("window-" + std::to_string(window.index) + ".rtrace"));
    });
    session.start();
    const ringtrace::SiteInfo* const escaped = ringtrace::intern(std::string("esc \"q\" \\ \x01\xfe"));  // 12 bytes
    std::vector<std::thread> threads;
    for (int w = 0; w < 3; ++w) threads.emplace_back([w, escaped] { rich_work(w, 400, escaped); });
    for (int k = 0; k < 5; ++k) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      session.step();
    }
    for (auto& t : threads) t.join();
    session.step();
    session.stop();
    replay(memory->trace(), *ringtrace::binary_trace_exporter(dir / "stream.rtrace"), 1000);
    if (!session.stats().exporter_errors.empty()) return 1;
  }
  // Drops.
  config.process_name = "drops";
  config.overflow = ringtrace::OverflowPolicy::drop;
  config.schedule.reset();
  // The drainer wakes every 20 ms only: each burst overflows the ring.
  config.drain_interval = std::chrono::milliseconds(20);
  config.high_water = 1.0;
  config.yield_to_drainer = false;
  config.self_drain = false;  // nor would the threads drop: they would pack their full rings themselves
  ringtrace::Session session(config);
  session.add_exporter(ringtrace::binary_trace_exporter(dir / "drops.rtrace"));
  session.start();
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([w] {
      ringtrace::set_thread_name("burst-" + std::to_string(w));
      const std::string long_text(1500, 'y');  // cut at recording
      for (int round = 0; round < 3;
           ++round) {  // drops recorded in the next round's ring, the last round's in the stats
        for (int i = 0; i < 3000; ++i) {
          RINGTRACE_ZONE("burst");
          RINGTRACE_ZONE_VALUE("i", i);
          RINGTRACE_ZONE_VALUE("half", i / 2.0);
          RINGTRACE_ZONE_TEXT("text", "burst \x01", 7);
          if (i % 100 == 0) RINGTRACE_ZONE_TEXT("long", long_text.data(), long_text.size());
          RINGTRACE_COUNTER("burst_i", i + w);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
      }
    });
  }
  for (int k = 0; k < 8; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    session.step();
  }
  for (auto& t : threads) t.join();
  session.stop();
  const auto stats = session.stats();
  std::printf("record_all rich: drops.rtrace %llu events, %llu dropped\n",
              static_cast<unsigned long long>(stats.recorded), static_cast<unsigned long long>(stats.dropped));
  return stats.exporter_errors.empty() && stats.dropped > 0 ? 0 : 1;
}

// `record_all DIR killed-rich rings|plain`: three rich threads into DIR/killed-rings.rtrace
// (rings in a file) or DIR/killed-plain.rtrace, killed with SIGKILL right after a drainer
// pass, once each thread (and a thread the drainer never saw) has recorded more, some at
// call sites no pass has written (and a frame mark: a step marker of a known site): the
// trace file's temporary is cut short, and the ring file holds what the drainer had not
// written; a step is open at the kill.
int killed_rich(const std::filesystem::path& dir, bool rings) {
  std::filesystem::create_directories(dir);
  ringtrace::Config config;
  config.process_name = rings ? "killed-rings" : "killed-plain";
  config.buffer_records = 1024;  // 16 KiB rings: the threads' records go round them several times
  config.overflow = ringtrace::OverflowPolicy::block;
  config.drain_interval = std::chrono::milliseconds(100);
  ringtrace::Session session(config);
  ringtrace::BinaryTraceOptions options;
  options.rings_in_file = rings;
  session.add_exporter(
      ringtrace::binary_trace_exporter(dir / (rings ? "killed-rings.rtrace" : "killed-plain.rtrace"), options));
  session.start();
  const ringtrace::SiteInfo* const escaped = ringtrace::intern("escaped \x02");
  std::atomic<int> phase{0};
  std::atomic<int> ready{0};
  const auto wait_for = [&](int p) {
    while (phase.load() < p) std::this_thread::sleep_for(std::chrono::microseconds(100));
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < 3; ++w) {
    threads.emplace_back([&, w] {
      rich_work(w, 300, escaped);
      ready.fetch_add(1);
      wait_for(1);
      {
        RINGTRACE_ZONE("open at the kill");
        RINGTRACE_ZONE_VALUE("known", 1);
        for (int i = 0; i < 20; ++i) {
          RINGTRACE_ZONE("after the last pass");
          RINGTRACE_ZONE_VALUE("unknown value", i);
          RINGTRACE_ZONE_TEXT("unknown text", "abc", 3);
          RINGTRACE_COUNTER("unknown counter", i);
          RINGTRACE_INSTANT("unknown instant");
          if (w == 0 && i == 10) RINGTRACE_FRAME();  // a step marker in the rings only
        }
        ready.fetch_add(1);
        wait_for(2);  // killed here, the zone open
      }
    });
  }
  while (ready.load() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Right after a pass: the drainer sleeps 100 ms, and the rest fits in the rings.
  const std::uint64_t passes = session.stats().drain_passes;
  while (session.stats().drain_passes == passes) std::this_thread::sleep_for(std::chrono::microseconds(200));
  phase.store(1);
  std::thread unseen([&] {
    ringtrace::set_thread_name("unseen");
    RINGTRACE_ZONE("unseen zone");
    RINGTRACE_INSTANT("tick");
    ready.fetch_add(1);
    wait_for(2);
  });
  while (ready.load() < 7) std::this_thread::sleep_for(std::chrono::microseconds(100));
  ::kill(::getpid(), SIGKILL);
  return 1;
}

// `record_all DIR switches`: DIR/switches.rtrace with Config::context_switches: three
// threads whose zones sleep (they are switched out and in inside them) and record around
// the sleeps, a drainer pass every 5 ms (switches frames in many passes). Where the
// kernel does not give switches the file says why (its summary frame) and has none.
// The threads live until the session has stopped: with the file as the only exporter, a
// thread that exits while switches are on crashes the drainer (Drainer::pass's raw-only
// loop calls written_end() on the cursor of a thread whose ring was already given back).
int switches(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  ringtrace::Config config;
  config.process_name = "switches";
  config.context_switches = true;
  config.drain_interval = std::chrono::milliseconds(5);
  config.overflow = ringtrace::OverflowPolicy::block;
  ringtrace::Session session(config);
  session.add_exporter(ringtrace::binary_trace_exporter(dir / "switches.rtrace"));
  session.start();
  std::vector<std::thread> threads;
  std::atomic<int> done{0};
  std::atomic<bool> stopped{false};
  for (int w = 0; w < 3; ++w) {
    threads.emplace_back([w, &done, &stopped] {
      ringtrace::set_thread_name("sleeper-" + std::to_string(w));
      for (int i = 0; i < 40; ++i) {
        RINGTRACE_ZONE("sleeps");
        RINGTRACE_ZONE_VALUE("i", i);
        std::this_thread::sleep_for(std::chrono::microseconds(200 + 100 * w));
        { RINGTRACE_ZONE("after"); }
        RINGTRACE_INSTANT("woke");
      }
      done.fetch_add(1);
      while (!stopped.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  }
  while (done.load() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  session.stop();
  stopped.store(true);
  for (auto& t : threads) t.join();
  const auto stats = session.stats();
  std::printf(
      "record_all switches: %llu events, %llu switches%s%s\n", static_cast<unsigned long long>(stats.recorded),
      static_cast<unsigned long long>(stats.context_switches),
      stats.context_switches_unavailable.empty() ? "" : ", unavailable: ", stats.context_switches_unavailable.c_str());
  return stats.exporter_errors.empty() ? 0 : 1;
}

// `record_all DIR columns`: two sessions, of nodes "rank-a" and "rank-b", into
// DIR/columns_a.rtrace and DIR/columns_b.rtrace, with the arguments of the table's
// columns: matmul zones with their input shapes and flops (2 * m * n * k), relu without.
// rank-a: matmul [[64, 128], [128, 256]] 3 times, [[8, 8], [8, 8]] twice, relu; rank-b:
// matmul [[64, 128], [128, 256]] once. tool_tests.sh's report of their merge knows the sums.
void matmul(std::int64_t m, std::int64_t n, std::int64_t k) {
  const std::string shapes = "[[" + std::to_string(m) + ", " + std::to_string(k) + "], [" + std::to_string(k) + ", " +
                             std::to_string(n) + "]]";
  RINGTRACE_ZONE("matmul", "flops", 2 * m * n * k);  // COLUMNS_MATMUL_LINE
  RINGTRACE_ZONE_TEXT("input_shapes", shapes);
}
int columns(const std::filesystem::path& dir) {
  for (const char* node : {"a", "b"}) {
    ringtrace::Config config;
    config.node_id = std::string("rank-") + node;
    ringtrace::Session session(config);
    session.add_exporter(ringtrace::binary_trace_exporter(dir / (std::string("columns_") + node + ".rtrace")));
    session.start();
    if (node[0] == 'a') {
      for (int i = 0; i < 3; ++i) matmul(64, 256, 128);
      for (int i = 0; i < 2; ++i) {
        RINGTRACE_ZONE("small");
        matmul(8, 8, 8);
        RINGTRACE_ZONE_FLOPS(1000);  // on small, after its child closed
      }
      RINGTRACE_ZONE("relu");
    } else {
      matmul(64, 256, 128);
    }
    session.stop();
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[2]) == "columns") return columns(argv[1]);
  if (argc == 3 && std::string(argv[2]) == "switches") return switches(argv[1]);
  if (argc == 3 && std::string(argv[2]) == "killed") return killed(argv[1]);
  if (argc == 3 && std::string(argv[2]) == "names") return names(argv[1]);
  if (argc == 3 && std::string(argv[2]) == "rich") return rich(argv[1]);
  if (argc == 4 && std::string(argv[2]) == "killed-rich") return killed_rich(argv[1], std::string(argv[3]) == "rings");
  if (argc == 4 && std::string(argv[2]) == "large") return large(argv[1], std::stol(argv[3]));
  if (argc == 4 && std::string(argv[2]) == "writer") return writer(argv[1], argv[3]);
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
