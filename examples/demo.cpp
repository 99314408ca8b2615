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
#include <string>
#include <thread>
#include <vector>

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
  // [demo exporters] each exporter issue adds its files here.

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
  std::printf("output folder: %s\n", std::filesystem::absolute(out_dir).c_str());
  return stats.exporter_errors.empty() ? 0 : 1;
}
