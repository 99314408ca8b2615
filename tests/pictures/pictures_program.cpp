// A program that records zones of known calls on two threads, with Config::memory, and
// counts its own calls and bytes (ringtrace::memory linked):
//   pictures_program DIR    writes DIR/run.rtrace and DIR/expected.json:
//     {"calls": {name: calls}, "edges": {"caller;callee": calls},
//      "alloc_bytes": {"stack;frames": bytes}, "leaked_bytes": {"stack;frames": bytes}}
// Every zone name has one call site, so that a function of the pstats file (file, line,
// name) is a box of the call graph (a name). "tiny" costs next to nothing (left out of
// the call graph at 0.5%); "fib" is recursive (primitive calls); "hoard" keeps blocks to
// the session's end (its leaks; freed after stop()), "churn" frees what it allocates.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {

void* volatile g_sink;  // keeps every allocation
volatile std::uint64_t g_spin;

void spin_for(std::chrono::microseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) g_spin = g_spin + 1;
}

std::uint64_t fib_calls = 0, fib_inner_edges = 0;
std::uint64_t fib(int n, bool outer) {
  RINGTRACE_ZONE("fib");
  ++fib_calls;
  if (!outer) ++fib_inner_edges;
  spin_for(std::chrono::microseconds(2));
  return n < 2 ? 1 : fib(n - 1, false) + fib(n - 2, false);
}

constexpr int kParses = 200, kLexes = 3, kFibs = 10, kTinies = 5, kCompresses = 100, kCrcs = 2;
constexpr std::size_t kHoardBlocks = 10, kHoardBlock = 3000, kChurns = 100, kChurnBlock = 1000;

void* g_hoard[kHoardBlocks];  // live when the session stops: its leaks

void main_thread_work() {
  RINGTRACE_ZONE("main_loop");
  for (int i = 0; i < kParses; ++i) {
    RINGTRACE_ZONE("parse");
    spin_for(std::chrono::microseconds(20));
    for (int j = 0; j < kLexes; ++j) {
      RINGTRACE_ZONE("lex");
      spin_for(std::chrono::microseconds(30));
    }
  }
  for (int i = 0; i < kFibs; ++i) fib(9, true);
  for (int i = 0; i < kTinies; ++i) {
    RINGTRACE_ZONE("tiny");
  }
  {
    RINGTRACE_ZONE("hoard");
    for (void*& block : g_hoard) g_sink = block = std::malloc(kHoardBlock);  // freed after stop()
  }
  {
    RINGTRACE_ZONE("churn");
    for (std::size_t i = 0; i < kChurns; ++i) {
      void* p = std::malloc(kChurnBlock);
      g_sink = p;
      std::free(p);
    }
  }
}

void worker_thread_work() {
  ringtrace::set_thread_name("worker");
  RINGTRACE_ZONE("worker_loop");
  for (int i = 0; i < kCompresses; ++i) {
    RINGTRACE_ZONE("compress");
    spin_for(std::chrono::microseconds(40));
    for (int j = 0; j < kCrcs; ++j) {
      RINGTRACE_ZONE("crc");
      spin_for(std::chrono::microseconds(15));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: pictures_program DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  ringtrace::Config config;
  config.memory = true;
  config.overflow = ringtrace::OverflowPolicy::block;
  config.process_name = "pictures_program";
  ringtrace::Session session(config);
  session.add_exporter(ringtrace::binary_trace_exporter(dir / "run.rtrace"));
  session.start();
  ringtrace::set_thread_name("main");
  std::thread worker(worker_thread_work);
  main_thread_work();
  worker.join();
  session.stop();
  for (void* block : g_hoard) std::free(block);

  // The program's own counts (made after stop(): their allocations are not recorded).
  const std::map<std::string, std::uint64_t> calls = {{"main_loop", 1},
                                                      {"parse", kParses},
                                                      {"lex", kParses * kLexes},
                                                      {"fib", fib_calls},
                                                      {"tiny", kTinies},
                                                      {"hoard", 1},
                                                      {"churn", 1},
                                                      {"worker_loop", 1},
                                                      {"compress", kCompresses},
                                                      {"crc", kCompresses * kCrcs}};
  const std::map<std::string, std::uint64_t> edges = {
      {"main_loop;parse", kParses}, {"parse;lex", kParses * kLexes},       {"main_loop;fib", kFibs},
      {"fib;fib", fib_inner_edges}, {"main_loop;tiny", kTinies},           {"main_loop;hoard", 1},
      {"main_loop;churn", 1},       {"worker_loop;compress", kCompresses}, {"compress;crc", kCompresses * kCrcs}};
  std::ofstream out(dir / "expected.json");
  const auto object = [&](const std::map<std::string, std::uint64_t>& m) {
    out << "{";
    const char* comma = "";
    for (const auto& [k, v] : m) {
      out << comma << "\"" << k << "\": " << v;
      comma = ", ";
    }
    out << "}";
  };
  out << "{\"calls\": ";
  object(calls);
  out << ", \"edges\": ";
  object(edges);
  out << ", \"alloc_bytes\": {\"main_loop;hoard\": " << kHoardBlocks * kHoardBlock
      << ", \"main_loop;churn\": " << kChurns * kChurnBlock
      << "}, \"leaked_bytes\": {\"main_loop;hoard\": " << kHoardBlocks * kHoardBlock << "}}\n";
  return out ? 0 : 1;
}
