// A process killed with SIGKILL while it records, for the `clients` tests: its own
// Chrome trace, left in its temporary trace.json.partial.XXXXXXXX (flushed after every
// drainer pass, never closed), must load in Perfetto's trace_processor and Catapult up
// to its last drain.
//
//   chrome_killed <dir>
// Forks a child that records nested zones on two named threads into
// <dir>/trace.json and <dir>/run.rtrace, kills it with SIGKILL once its Chrome trace
// holds a few hundred zones, renames that temporary, as it is, to <dir>/killed.json
// (the name the next test is given), then writes <dir>/expected.json from the killed
// run's binary file (flushed before the Chrome trace in every pass, so it holds every
// zone the Chrome trace holds): [name, begin_ns, duration_ns] per thread, the format
// check_cut_files.mjs reads, and "made": the zones the child began, per name, counted by
// the child itself in memory it shares with this process (none of them can be in the
// trace more often). Exit 0 when the files are there, 1 otherwise.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/files.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"

namespace fs = std::filesystem;

namespace {

// The zones the child began, counted by the child: "outer", "inner" (shared memory).
struct Begun {
  std::atomic<std::uint64_t> outer{0}, inner{0};
};

[[noreturn]] void record_until_killed(const fs::path& dir, Begun* begun) {
  alarm(60);  // never outlives a test that lost track of it
  ringtrace::Config config;
  config.drain_interval = std::chrono::microseconds(500);
  ringtrace::Session session(config);
  session.add_exporter(ringtrace::binary_trace_exporter(dir / "run.rtrace"));
  session.add_exporter(ringtrace::chrome_trace_exporter(dir / "trace.json"));
  session.start();
  auto work = [begun](const char* name) {
    ringtrace::set_thread_name(name);
    for (unsigned i = 0;; ++i) {
      RINGTRACE_ZONE("outer");
      begun->outer.fetch_add(1, std::memory_order_relaxed);
      {
        RINGTRACE_ZONE("inner");
        begun->inner.fetch_add(1, std::memory_order_relaxed);
        std::this_thread::sleep_for(std::chrono::microseconds(20 + i % 7));
      }
    }
  };
  std::thread a(work, "killed-a");
  work("killed-b");
  a.join();
  std::_Exit(2);  // not reached
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: chrome_killed <dir>\n");
    return 2;
  }
  const fs::path dir = argv[1];
  fs::remove_all(dir);
  fs::create_directories(dir);
  void* shared = mmap(nullptr, sizeof(Begun), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return 1;
  Begun* begun = new (shared) Begun;
  const pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) record_until_killed(dir, begun);
  // The temporaries of trace.json and run.rtrace (<ringtrace/files.hpp>), once created.
  const auto partial_of = [&](const char* output) {
    const std::vector<fs::path> found = ringtrace::partial_files(dir / output);
    return found.size() == 1 ? found[0] : fs::path();
  };
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < until &&
         (partial_of("trace.json").empty() || count_of(read_file(partial_of("trace.json")), "\"ph\":\"X\"") < 400)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
    std::fprintf(stderr, "the recording child did not die of SIGKILL (status %d)\n", status);
    return 1;
  }
  if (fs::exists(dir / "trace.json") || partial_of("trace.json").empty() || partial_of("run.rtrace").empty()) {
    std::fprintf(stderr, "expected only the killed run's temporaries of trace.json and run.rtrace\n");
    return 1;
  }
  const fs::path partial = dir / "killed.json";
  fs::rename(partial_of("trace.json"), partial);
  ringtrace::MemoryExporter memory;
  const ringtrace::ReplayResult replay = ringtrace::replay_file(partial_of("run.rtrace"), memory);
  const ringtrace::RecordedTrace trace = memory.trace();
  // Zones closed in the file (replay closes the ones open at the cut, flagged: not in
  // the Chrome trace, which writes a zone when it ends).
  std::map<ringtrace::ThreadId, std::vector<std::size_t>> open;
  std::map<ringtrace::ThreadId, std::string> zones;
  std::size_t count = 0;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const ringtrace::Event& e = trace.events[i];
    if (e.kind == ringtrace::EventKind::zone_begin) {
      open[e.thread].push_back(i);
    } else if (e.kind == ringtrace::EventKind::zone_end && !open[e.thread].empty()) {
      const ringtrace::Event& b = trace.events[open[e.thread].back()];
      open[e.thread].pop_back();
      if ((e.flags & ringtrace::EventFlags::closed_at_stop) != 0) continue;
      std::string& out = zones[e.thread];
      out += out.empty() ? "\n[\"" : ",\n[\"";
      out += trace.sites.at(b.site).name + "\"," + std::to_string(b.time_ns) + "," +
             std::to_string(e.time_ns - b.time_ns) + "]";
      ++count;
    }
  }
  std::string json = "{\"threads\":[";
  bool first = true;
  for (const auto& [thread, list] : zones) {
    json += first ? "\n" : ",\n";
    first = false;
    json += "{\"tid\":" + std::to_string(trace.threads.at(thread).os_tid) + ",\"name\":\"" +
            trace.threads.at(thread).name + "\",\"zones\":[" + list + "]}";
  }
  const std::uint64_t outer = begun->outer.load(), inner = begun->inner.load();
  json += "],\n\"made\":{\"zones\":{\"outer\":" + std::to_string(outer) + ",\"inner\":" + std::to_string(inner) +
          "},\"zone_count\":" + std::to_string(outer + inner) + ",\"instants\":0}}\n";
  std::ofstream(dir / "expected.json", std::ios::binary) << json;
  std::printf("killed run: %zu zones in the binary file (%s), Chrome trace %ju bytes\n", count,
              replay.complete ? "complete" : "cut", static_cast<std::uintmax_t>(fs::file_size(partial)));
  return count >= 400 ? 0 : 1;
}
