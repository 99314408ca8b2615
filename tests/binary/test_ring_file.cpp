// Rings in a file mapping (BinaryTraceOptions::rings_in_file): a process killed with
// SIGKILL loses nothing it had published; replay_file() recovers from the ring file what
// the drainer had not yet written to the trace file.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ring_layout.hpp"  // the ring file's header: its slot count
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/files.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "support/validating_exporter.hpp"
#include "thread_registry.hpp"  // ThreadBuffer, Registry::passes(), run_drainer_pass

namespace ringtrace {
namespace {

namespace fs = std::filesystem;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ringtrace-rings-" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

RecordedTrace replay(const fs::path& file, ReplayResult& result, bool recover = true) {
  MemoryExporter memory;
  ReplayOptions options;
  options.recover_rings = recover;
  // A killed run's temporary (run.rtrace.partial.XXXXXXXX): its ring file is named after
  // the output (run.rtrace.rings). The reader looks beside the file for `.partial` names
  // only, so it is told.
  const fs::path output = output_of_partial(file);
  if (!output.empty()) options.rings = output.string() + ".rings";
  Exporter* const one[] = {&memory};
  result = replay_file(file, std::span<Exporter* const>(one), options);
  return memory.trace();
}

// Zones named `name` that ended on their own (not closed at the end of the recording),
// per OS thread id.
std::map<std::uint64_t, std::uint64_t> finished_zones(const RecordedTrace& t, const std::string& name) {
  std::map<std::uint64_t, std::uint64_t> out;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::zone_end && (e.flags & EventFlags::closed_at_stop) == 0 && t.sites[e.site].name == name) {
      ++out[t.threads[e.thread].os_tid];
    }
  }
  return out;
}

// The slots a ring file holds, as its header says (0 if it cannot be read).
std::uint64_t ring_file_slots(const fs::path& rings) {
  std::ifstream in(rings, std::ios::binary);
  char header[detail::ring_file::kHeaderSlotsOffset + 8] = {};
  if (!in.read(header, sizeof header)) return 0;
  std::uint64_t slots = 0;
  std::memcpy(&slots, header + detail::ring_file::kHeaderSlotsOffset, sizeof slots);
  return slots;
}

// The process's resident memory (VmRSS), in bytes.
std::uint64_t resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

// Counters the child keeps in memory shared with the parent: what it had finished.
struct Shared {
  std::atomic<std::uint64_t> tid[3];
  std::atomic<std::uint64_t> finished[3];  // zones "outer" whose end had been recorded
  std::atomic<int> ready;
};

// A child records zones flat out on three threads (block policy: nothing is dropped,
// so every zone it finishes is published) into a file with its rings in a file mapping,
// and is killed at a random moment. Every zone it had finished is in what replay_file
// reads, and what it reads without the ring file misses some in some runs (the drainer
// writes every 2 ms; the rings hold what came since).
TEST(RingFile, AKilledProcessLosesNothingItHadPublished) {
  const fs::path dir = temp_dir("killed");
  auto* shared =
      static_cast<Shared*>(::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(shared, MAP_FAILED);
  std::mt19937 random(4242);
  const int runs = std::max(6, static_cast<int>(50 * testing::test_scale()));
  int short_without = 0;
  std::uint64_t recovered = 0;
  for (int run = 0; run < runs; ++run) {
    new (shared) Shared{};
    const fs::path file = dir / ("k" + std::to_string(run) + ".rtrace");
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      Config config;
      config.overflow = OverflowPolicy::block;
      config.buffer_records = 1 << 14;
      Session session(config);
      BinaryTraceOptions options;
      options.rings_in_file = true;
      session.add_exporter(binary_trace_exporter(file, options));
      session.start();
      std::vector<std::thread> threads;
      for (int w = 0; w < 3; ++w) {
        threads.emplace_back([shared, w] {
          set_thread_name("worker " + std::to_string(w));
          shared->tid[w] = static_cast<std::uint64_t>(::syscall(SYS_gettid));
          {
            RINGTRACE_ZONE("outer");  // the call sites reach the trace file in the first passes
            RINGTRACE_ZONE("inner");
          }
          shared->finished[w].fetch_add(1);
          shared->ready.fetch_add(1);
          for (std::uint64_t i = 0;; ++i) {
            {
              RINGTRACE_ZONE("outer");
              RINGTRACE_ZONE_VALUE("i", i);
              RINGTRACE_ZONE("inner");
            }
            shared->finished[w].fetch_add(1, std::memory_order_release);  // after the end was published
          }
        });
      }
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    while (shared->ready.load() < 3) std::this_thread::sleep_for(std::chrono::microseconds(100));
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + random() % 40));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status));
    const std::vector<fs::path> partials = partial_files(file);  // the killed run's temporary
    ASSERT_EQ(partials.size(), 1u) << run;
    const fs::path& partial = partials[0];
    ASSERT_TRUE(fs::exists(file.string() + ".rings")) << run;

    ReplayResult r;
    const RecordedTrace t = replay(partial, r);
    EXPECT_FALSE(r.complete);
    EXPECT_EQ(r.rings, file.string() + ".rings");
    EXPECT_NE(r.problem.find("events recovered from"), std::string::npos) << r.problem;
    recovered += r.recovered;
    const auto zones = finished_zones(t, "outer");
    for (int w = 0; w < 3; ++w) {
      const std::uint64_t tid = shared->tid[w].load();
      const std::uint64_t finished = shared->finished[w].load();
      const auto it = zones.find(tid);
      const std::uint64_t got = it == zones.end() ? 0 : it->second;
      // At most one more: a zone whose end was published when the kill came, before the
      // counter moved.
      EXPECT_GE(got, finished) << "run " << run << " worker " << w;
      EXPECT_LE(got, finished + 1) << "run " << run << " worker " << w;
    }
    // Zones balanced and each thread named as it named itself.
    int depth = 0;
    for (const Event& e : t.events) {
      depth += e.kind == EventKind::zone_begin ? 1 : e.kind == EventKind::zone_end ? -1 : 0;
      ASSERT_GE(depth, 0);
    }
    EXPECT_EQ(depth, 0);
    std::map<std::uint64_t, std::string> names;
    for (const ThreadInfo& info : t.threads) names[info.os_tid] = info.name;
    for (int w = 0; w < 3; ++w) EXPECT_EQ(names[shared->tid[w].load()], "worker " + std::to_string(w));

    ReplayResult without;
    const RecordedTrace alone = replay(partial, without, false);
    EXPECT_EQ(without.recovered, 0u);
    const auto zones_alone = finished_zones(alone, "outer");
    std::uint64_t finished_total = 0, alone_total = 0;
    for (int w = 0; w < 3; ++w) finished_total += shared->finished[w].load();
    for (const auto& [tid, n] : zones_alone) alone_total += n;
    short_without += alone_total < finished_total;
  }
  // The ring file is what makes the difference: the trace file alone misses finished
  // zones in some runs (in about half on a quiet machine; on a loaded one the drainer,
  // which the threads wait for in block mode, has more often just written everything).
  EXPECT_GT(recovered, 0u);
  EXPECT_GE(short_without, 1) << "the trace file alone held every finished zone in every run";
  ::munmap(shared, sizeof(Shared));
}

// A call site first used after the drainer's last pass: its name died with the process.
// Its zones are recovered under a placeholder named after its address; a value at such a
// site cannot be interpreted and is left out, and the problem line says so. A thread the
// drainer never saw is named from its slot.
TEST(RingFile, CallSitesTheFileNeverDescribedGetPlaceholders) {
  const fs::path dir = temp_dir("unknown");
  const fs::path file = dir / "u.rtrace";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Config config;
    config.drain_interval = std::chrono::seconds(30);  // the first pass only, at start
    Session session(config);
    BinaryTraceOptions options;
    options.rings_in_file = true;
    session.add_exporter(binary_trace_exporter(file, options));
    session.start();
    if (!ringtrace::detail::run_drainer_pass()) ::_exit(3);  // a pass is over: the next comes in 30 s
    std::thread([] {
      set_thread_name("late thread");
      for (int i = 0; i < 5; ++i) {
        RINGTRACE_ZONE("never described");
        RINGTRACE_ZONE_VALUE("lost value", i);
        RINGTRACE_INSTANT("never described instant");
      }
      ::kill(::getpid(), SIGKILL);
    }).join();
    std::_Exit(3);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  ReplayResult r;
  ASSERT_EQ(partial_files(file).size(), 1u);
  const RecordedTrace t = replay(partial_files(file)[0], r);
  EXPECT_EQ(r.recovered, 10u + 5u);  // 5 zones (2 events each) and 5 instants
  EXPECT_NE(r.problem.find("5 values or texts of call sites first used after the last drainer pass left out"),
            std::string::npos)
      << r.problem;
  std::uint64_t zones = 0, instants = 0;
  for (const Event& e : t.events) {
    const std::string& name = t.sites[e.site].name;
    if (e.kind == EventKind::zone_end) {
      EXPECT_EQ(name.rfind("(call site 0x", 0), 0u) << name;
      EXPECT_EQ(t.threads[e.thread].name, "late thread");
      ++zones;
    }
    if (e.kind == EventKind::instant) {
      EXPECT_EQ(name.rfind("(call site 0x", 0), 0u) << name;
      ++instants;
    }
    EXPECT_NE(e.kind, EventKind::arg);
  }
  EXPECT_EQ(zones, 5u);
  EXPECT_EQ(instants, 5u);
}

// A session that stops leaves the trace file complete and no ring file; the replay is
// that of a session with the rings on the heap; a second exporter on the ring file's
// path is refused; a ring file of another recording is ignored, with a reason.
TEST(RingFile, AStoppedSessionLeavesNoRingFileAndTheSameTrace) {
  const fs::path dir = temp_dir("stopped");
  const fs::path file = dir / "s.rtrace";
  Config config;
  config.buffer_records = 256;  // rings wrap many times
  testing::ValidatingExporter* live = nullptr;
  {
    Session session(config);
    BinaryTraceOptions options;
    options.rings_in_file = true;
    session.add_exporter(binary_trace_exporter(file, options));
    auto validating = std::make_shared<testing::ValidatingExporter>();
    live = validating.get();
    session.add_exporter(validating);
    EXPECT_THROW(session.add_exporter(chrome_trace_exporter(file.string() + ".rings")), std::invalid_argument);
    session.start();
    EXPECT_TRUE(fs::exists(file.string() + ".rings"));
    std::vector<std::thread> threads;
    for (int w = 0; w < 4; ++w) {
      threads.emplace_back([w] {
        set_thread_name("w" + std::to_string(w));
        for (int i = 0; i < 2000; ++i) {
          RINGTRACE_ZONE("z");
          RINGTRACE_COUNTER("c", i);
        }
      });
    }
    for (auto& t : threads) t.join();
    session.stop();
    EXPECT_FALSE(fs::exists(file.string() + ".rings"));
    EXPECT_TRUE(partial_files(file).empty());
    ReplayResult r;
    const RecordedTrace t = replay(file, r);
    EXPECT_TRUE(r.complete) << r.problem;
    EXPECT_EQ(r.recovered, 0u);
    EXPECT_EQ(t.stats.recorded, session.stats().recorded);
    EXPECT_EQ(t.stats.dropped, session.stats().dropped);
    EXPECT_EQ(live->stats.recorded, session.stats().recorded);
  }
  // A ring file beside a cut copy, but of another recording: ignored, named.
  std::filesystem::copy_file(file, dir / "cut.rtrace");
  fs::resize_file(dir / "cut.rtrace", fs::file_size(file) - 20);
  {
    Session other(config);
    BinaryTraceOptions options;
    options.rings_in_file = true;
    other.add_exporter(binary_trace_exporter(dir / "other.rtrace", options));
    other.start();
    { RINGTRACE_ZONE("other"); }
    fs::copy_file(dir / "other.rtrace.rings", dir / "cut.rtrace.rings");
    other.stop();
  }
  ReplayResult r;
  replay(dir / "cut.rtrace", r);
  EXPECT_EQ(r.recovered, 0u);
  EXPECT_NE(r.problem.find("ignored: it belongs to another recording"), std::string::npos) << r.problem;
}

// Every value of the counter "id" in a trace, with how many times it occurs.
std::map<std::int64_t, int> ids_in(const RecordedTrace& t) {
  std::map<std::int64_t, int> ids;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::counter && t.sites[e.site].name == "id") ++ids[e.value.i];
  }
  return ids;
}

// One zone and one counter whose value names the thread: a thread's records found twice,
// or another's taken for its own, show as a value seen twice.
void mark(std::int64_t id) {
  RINGTRACE_ZONE("work");
  RINGTRACE_COUNTER("id", id);
}

// Issue 22, point 10. 5,000 short threads started one after another, with default rings
// (1 MiB) in a file: the file holds the rings of the threads alive at once plus those
// the drainer has not given back yet, however many threads came and went. An exiting
// thread wakes the drainer, whose next pass hands the thread's last records to the trace
// file (with a live exporter beside it, copying those it still holds back for
// merge_grace), then gives the ring to the pool, where the next thread takes it. It used
// to be 70 to 110 slots (one per thread started during a drain interval), and the
// process's resident memory with it.
//
// Deterministic bounds, whatever the machine's load: the drain interval is 10 s, so
// only the exits wake the drainer; each thread's ring is back in the pool by the end of
// the second pass that completes after its exit (the first may have begun before it),
// so a new slot is made only while every ring made so far belongs to a thread the
// drainer has not passed over twice since it exited. The test counts those threads
// (from Registry::passes()) before starting each thread: the file never holds more
// slots than the most of them, plus one. On a quiet machine that is a handful.
TEST(RingFile, ShortThreadsOneAfterAnotherReuseTheirSlots) {
  const fs::path dir = temp_dir("short");
  const int n = std::max(500, static_cast<int>(5000 * testing::test_scale()));
  const detail::Registry& registry = detail::Registry::instance();
  for (const bool live : {false, true}) {
    SCOPED_TRACE(live ? "the binary file and a live exporter" : "the binary file alone");
    const fs::path file = dir / (live ? "live.rtrace" : "alone.rtrace");
    const fs::path rings = file.string() + ".rings";
    Config config;
    config.drain_interval = std::chrono::seconds(10);
    Session session(config);
    BinaryTraceOptions options;
    options.rings_in_file = true;
    session.add_exporter(binary_trace_exporter(file, options));
    auto validator = std::make_shared<testing::ValidatingExporter>();
    if (live) session.add_exporter(validator);
    session.start();
    std::deque<std::uint64_t> waiting;  // the pass count after each exit whose ring may not be back
    std::size_t most_waiting = 0;
    std::uint64_t slots_at_checkpoint = 0, resident_at_checkpoint = 0;
    for (int i = 0; i < n; ++i) {
      const std::uint64_t passes = registry.passes();
      while (!waiting.empty() && waiting.front() + 2 <= passes) waiting.pop_front();
      most_waiting = std::max(most_waiting, waiting.size());
      // The exits wake the drainer: with nothing else to wake it for 10 s, a drainer
      // left asleep would leave every ring waiting (a loaded machine: 70 at most).
      ASSERT_LE(waiting.size(), 256u) << "thread " << i << ": the drainer has not passed since";
      std::thread([i] { mark(i); }).join();
      waiting.push_back(registry.passes());
      if (i + 1 == n / 10) {
        slots_at_checkpoint = ring_file_slots(rings);
        resident_at_checkpoint = resident_bytes();
      }
      ASSERT_LE(ring_file_slots(rings), most_waiting + 1) << "thread " << i;
    }
    const std::uint64_t slots = ring_file_slots(rings);
    const std::uint64_t resident = resident_bytes();
    const std::uint64_t slot_bytes = detail::ring_file::slot_bytes(std::uint64_t{1} << 20);
    ASSERT_EQ(fs::file_size(rings), detail::ring_file::kPage + slots * slot_bytes);  // default rings
    session.stop();
    ::testing::Test::RecordProperty(live ? "slots_live" : "slots_alone", static_cast<int>(slots));
    ::testing::Test::RecordProperty(live ? "most_waiting_live" : "most_waiting_alone", static_cast<int>(most_waiting));
    // Resident memory follows the file: what grew past the tenth thread is its new
    // slots (mapped and touched), and little else.
    if (!kSanitized) {
      EXPECT_LT(resident,
                resident_at_checkpoint + (slots - slots_at_checkpoint) * slot_bytes + (std::uint64_t{16} << 20))
          << "resident " << resident << " bytes, " << resident_at_checkpoint << " after " << n / 10 << " threads";
    }
    const SessionStats stats = session.stats();
    EXPECT_EQ(stats.recorded, 3u * static_cast<std::uint64_t>(n));
    EXPECT_EQ(stats.dropped, 0u);
    if (live) {
      EXPECT_EQ(validator->events_seen, 3u * static_cast<std::uint64_t>(n));
      EXPECT_EQ(validator->nesting_errors, 0u);
      EXPECT_EQ(validator->order_errors, 0u);
    }
    ReplayResult r;
    const RecordedTrace t = replay(file, r);
    EXPECT_TRUE(r.complete) << r.problem;
    const auto ids = ids_in(t);
    ASSERT_EQ(ids.size(), static_cast<std::size_t>(n));
    for (const auto& [id, count] : ids) ASSERT_EQ(count, 1) << "id " << id;
  }
}

// What the child of the next test tells its parent.
struct ReuseShared {
  std::atomic<int> first_reused;   // 1: the first reuser's ring had been a short thread's
  std::atomic<int> second_reused;  // 1: the second reuser's too
  std::atomic<int> first_ready;    // the first reuser has recorded all it will
};

// Waits until the drainer has begun and finished a pass after this call (every ring of
// a thread that exited before is back in the pool, every record before is in the file).
void wait_for_a_whole_pass() {
  detail::Registry& registry = detail::Registry::instance();
  const std::uint64_t passes = registry.passes();
  while (registry.passes() < passes + 2) {
    registry.wake_drainer();
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

// Issue 22, point 10: a process killed after its ring file's slots were reused. The
// child runs 200 short threads (some two at once), each going round its ring more than
// once, lets the drainer take every ring back, then binds two threads to rings that short threads had: the first records,
// is written to the trace file by a pass, and records more; the second records and
// kills the process before the drainer has seen it. Every thread's value is read once:
// the short threads' from the trace file, the reusers' last ones from their slots; a
// slot's old records are never read as its new thread's (the reader would find a value
// twice), and a reuser's are never lost to the old thread's identity (it would find one
// missing). The reusers are named from their slots.
TEST(RingFile, AKilledProcessReadsReusedSlotsAsTheirNewThreads) {
  const fs::path dir = temp_dir("reused");
  const fs::path file = dir / "r.rtrace";
  auto* shared = static_cast<ReuseShared*>(
      ::mmap(nullptr, sizeof(ReuseShared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(shared, MAP_FAILED);
  new (shared) ReuseShared{};
  constexpr int kShort = 200;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Config config;
    config.drain_interval = std::chrono::seconds(10);  // passes only when woken (exits, full rings, below)
    config.buffer_records = 1 << 10;                   // 16 KB rings
    config.overflow = OverflowPolicy::block;           // nothing dropped
    // A short thread goes round its ring more than once: a slot's write position and lap
    // are well past where its next thread starts.
    const auto fill = [] {
      for (int k = 0; k < 1000; ++k) {
        RINGTRACE_ZONE("fill");
      }
    };
    Session session(config);
    BinaryTraceOptions options;
    options.rings_in_file = true;
    session.add_exporter(binary_trace_exporter(file, options));
    session.start();
    std::mutex mutex;
    std::set<void*> used;  // the buffers (each with its slot) short threads had
    const auto note_buffer = [&] {
      std::lock_guard<std::mutex> lock(mutex);
      used.insert(detail::t_writer.buffer);
    };
    const auto reused = [&] {
      std::lock_guard<std::mutex> lock(mutex);
      return used.count(detail::t_writer.buffer) != 0 ? 1 : 0;
    };
    for (int i = 0; i < kShort; i += 2) {
      if (i % 20 == 0) {
        // Two alive at once: the file gets at least two slots.
        std::atomic<int> marked{0};
        const auto pair = [&](int id) {
          set_thread_name("short " + std::to_string(id));
          fill();
          mark(id);
          note_buffer();
          marked.fetch_add(1);
          while (marked.load() < 2) std::this_thread::yield();
        };
        std::thread a(pair, i), b(pair, i + 1);
        a.join();
        b.join();
      } else {
        for (const int id : {i, i + 1}) {
          std::thread([&, id] {
            set_thread_name("short " + std::to_string(id));
            fill();
            mark(id);
            note_buffer();
          }).join();
        }
      }
    }
    wait_for_a_whole_pass();  // every short thread's ring is back in the pool
    std::thread first([&] {
      set_thread_name("first reuser");
      mark(kShort);
      shared->first_reused = reused();
      wait_for_a_whole_pass();  // its registration and first records are in the trace file
      mark(kShort + 1);         // only in its slot: no pass comes before the kill
      shared->first_ready = 1;
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    });
    while (shared->first_ready.load() == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
    std::thread([&] {
      set_thread_name("second reuser");
      mark(kShort + 2);  // bound and recorded after the drainer's last pass: it never saw this thread
      shared->second_reused = reused();
      ::kill(::getpid(), SIGKILL);
    }).join();
    std::_Exit(3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  EXPECT_EQ(shared->first_reused.load(), 1);
  EXPECT_EQ(shared->second_reused.load(), 1);
  const fs::path rings = file.string() + ".rings";
  const std::uint64_t slots = ring_file_slots(rings);
  EXPECT_GE(slots, 2u);
  EXPECT_LT(slots, static_cast<std::uint64_t>(kShort) / 4) << "slots were not reused";
  ASSERT_EQ(partial_files(file).size(), 1u);
  const fs::path partial = partial_files(file)[0];

  ReplayResult r;
  const RecordedTrace t = replay(partial, r);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.rings, rings.string());
  EXPECT_EQ(r.recovered, 6u) << r.problem;  // the reusers' last zones and values: 3 events each
  const auto ids = ids_in(t);
  for (int id = 0; id < kShort + 3; ++id) {
    const auto it = ids.find(id);
    EXPECT_EQ(it == ids.end() ? 0 : it->second, 1) << "id " << id;
  }
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(kShort + 3));
  std::map<std::int64_t, std::string> names;  // id -> the name of the thread that recorded it
  for (const Event& e : t.events) {
    if (e.kind == EventKind::counter && t.sites[e.site].name == "id") names[e.value.i] = t.threads[e.thread].name;
  }
  EXPECT_EQ(names[kShort], "first reuser");
  EXPECT_EQ(names[kShort + 1], "first reuser");
  EXPECT_EQ(names[kShort + 2], "second reuser");
  EXPECT_EQ(names[7], "short 7");
  int depth = 0;
  for (const Event& e : t.events) {
    depth += e.kind == EventKind::zone_begin ? 1 : e.kind == EventKind::zone_end ? -1 : 0;
    ASSERT_GE(depth, 0);
  }
  EXPECT_EQ(depth, 0);

  // The trace file alone lacks what only the slots held.
  ReplayResult without;
  const auto alone = ids_in(replay(partial, without, false));
  EXPECT_EQ(alone.count(kShort), 1u);
  EXPECT_EQ(alone.count(kShort + 1), 0u);
  EXPECT_EQ(alone.count(kShort + 2), 0u);
  ::munmap(shared, sizeof(ReuseShared));
}

// A ring file's bytes, and a copy of them with a little-endian integer of `size` bytes
// replaced at `offset`.
std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
std::string with_field(std::string bytes, std::size_t offset, std::uint64_t value, std::size_t size) {
  std::memcpy(bytes.data() + offset, &value, size);
  return bytes;
}

// Issue 22, point 9: ring files whose header or slot lies (crafted, or damaged). A real
// killed run's ring file, then copies with one field each claiming what the writer
// never writes: a header claiming 2^30 slots, rings of 1 GiB or 1 TiB or 2^63 bytes
// (slot sizes to match), rings that are no power of two, slots of 2^62 bytes, a file
// cut inside its header or its slot; slots whose state, write position, lap or name
// length lie, a record claiming a 1 TiB text. replay_file reads the trace file as it
// would alone and says in its problem line why the ring file was refused or which slot
// was skipped, naming the file; nothing is read or allocated for what the file claims
// (every length is checked against its size first). ASan runs it too.
TEST(RingFile, HostileRingFilesAreRefusedNamingThem) {
  namespace rf = detail::ring_file;
  const fs::path dir = temp_dir("hostile");
  const fs::path file = dir / "h.rtrace";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Config config;
    config.drain_interval = std::chrono::seconds(30);  // passes only when woken
    config.buffer_records = 1 << 10;                   // 16 KB rings
    Session session(config);
    BinaryTraceOptions options;
    options.rings_in_file = true;
    session.add_exporter(binary_trace_exporter(file, options));
    session.start();
    std::thread([] {
      set_thread_name("recorder");
      mark(0);
      wait_for_a_whole_pass();               // the thread and its call sites are in the trace file
      for (int i = 1; i <= 5; ++i) mark(i);  // in the ring only
      ::kill(::getpid(), SIGKILL);
    }).join();
    std::_Exit(3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_EQ(partial_files(file).size(), 1u);
  const std::string trace = file_bytes(partial_files(file)[0]);
  const std::string rings = file_bytes(file.string() + ".rings");
  const std::uint64_t ring_bytes = std::uint64_t{1} << 14;
  const std::uint64_t slot = rf::kPage;  // slot 0: the recorder's
  ASSERT_EQ(rings.size(), rf::kPage + rf::slot_bytes(ring_bytes));

  // Writes `ring_file` beside a copy of the trace (`name`.rtrace, a cut file: its ring
  // file is `name`.rtrace.rings) and reads it.
  int written = 0;
  const auto read_with = [&](const std::string& ring_file, ReplayResult& r) {
    const fs::path copy = dir / ("copy" + std::to_string(written++) + ".rtrace");
    std::ofstream(copy, std::ios::binary) << trace;
    std::ofstream(copy.string() + ".rings", std::ios::binary) << ring_file;
    const RecordedTrace t = replay(copy, r);
    EXPECT_NE(r.problem.find(copy.string() + ".rings"), std::string::npos) << r.problem;
    return ids_in(t);
  };
  ReplayResult good;
  const auto all = read_with(rings, good);
  EXPECT_EQ(good.recovered, 15u) << good.problem;  // five zones and values
  EXPECT_EQ(all.size(), 6u);
  ReplayResult alone;
  const auto in_trace = ids_in(replay(partial_files(file)[0], alone, false));
  ASSERT_EQ(in_trace.size(), 1u);  // mark(0)

  const std::uint64_t huge = std::uint64_t{1} << 30;
  struct Case {
    const char* what;
    std::string bytes;
    std::string says;  // in the problem line, after the ring file's name
  };
  const std::vector<Case> refused = {
      {"2^30 slots", with_field(rings, rf::kHeaderSlotsOffset, huge, 8),
       " refused: its header claims 1073741824 slot(s) of 20480 bytes; its 24576 bytes hold 1"},
      {"1 GiB rings",
       with_field(with_field(rings, rf::kHeaderRingBytesOffset, huge, 8), rf::kHeaderSlotBytesOffset,
                  rf::slot_bytes(huge), 8),
       " refused: its header claims 1 slot(s) of 1073745920 bytes; its 24576 bytes hold 0"},
      {"1 TiB rings",
       with_field(with_field(rings, rf::kHeaderRingBytesOffset, huge << 10, 8), rf::kHeaderSlotBytesOffset,
                  rf::slot_bytes(huge << 10), 8),
       " refused: its header claims rings of 1099511627776 bytes"},
      {"2^63-byte rings",
       with_field(with_field(rings, rf::kHeaderRingBytesOffset, std::uint64_t{1} << 63, 8), rf::kHeaderSlotBytesOffset,
                  rf::slot_bytes(std::uint64_t{1} << 63), 8),
       " refused: its header claims rings of 9223372036854775808 bytes"},
      {"rings of no power of two",
       with_field(with_field(rings, rf::kHeaderRingBytesOffset, 12288, 8), rf::kHeaderSlotBytesOffset,
                  rf::slot_bytes(12288), 8),
       " refused: its header claims rings of 12288 bytes"},
      {"slots of 2^62 bytes", with_field(rings, rf::kHeaderSlotBytesOffset, std::uint64_t{1} << 62, 8),
       " refused: its header claims slots of 4611686018427387904 bytes for rings of 16384 bytes"},
      {"cut inside its slot", rings.substr(0, rf::kPage + 100),
       " refused: its header claims 1 slot(s) of 20480 bytes; its 4196 bytes hold 0"},
      {"cut inside its header", rings.substr(0, 30), " ignored: not a ringtrace ring file"},
  };
  for (const Case& c : refused) {
    SCOPED_TRACE(c.what);
    ReplayResult r;
    const auto ids = read_with(c.bytes, r);
    EXPECT_NE(r.problem.find(".rtrace.rings" + c.says), std::string::npos) << r.problem;
    EXPECT_EQ(r.recovered, 0u);
    EXPECT_TRUE(r.rings.empty());  // not read
    EXPECT_EQ(ids, in_trace);      // the trace file, as it reads alone
  }
  const std::vector<Case> skipped = {
      {"a state that is neither 0 nor 1", with_field(rings, slot + rf::kSlotStateOffset, 7, 4),
       " (slot 0 at byte 4096: state 7)"},
      {"a write position past its ring", with_field(rings, slot + rf::kSlotNextOffset, std::uint64_t{1} << 40, 8),
       " (slot 0 at byte 4096: its write position is outside its ring)"},
      {"a lap of no whole number of rings",
       with_field(rings, slot + rf::kSlotLapBaseOffset, (std::uint64_t{1} << 63) + 1, 8),
       " (slot 0 at byte 4096: its lap (9223372036854775809) is not a whole number of rings)"},
      {"a lap at the end of the numbers", with_field(rings, slot + rf::kSlotLapBaseOffset, ~ring_bytes + 1, 8),
       " (slot 0 at byte 4096: its lap (18446744073709535232) is not a whole number of rings)"},
      {"a name of 2^32 - 1 bytes", with_field(rings, slot + rf::kSlotNameBytesOffset, 0xFFFFFFFFu, 4),
       " (slot 0 at byte 4096: its name claims 4294967295 bytes)"},
  };
  for (const Case& c : skipped) {
    SCOPED_TRACE(c.what);
    ReplayResult r;
    const auto ids = read_with(c.bytes, r);
    EXPECT_NE(r.problem.find(".rtrace.rings; 1 damaged slot(s) skipped" + c.says), std::string::npos) << r.problem;
    EXPECT_EQ(r.recovered, 0u);
    EXPECT_EQ(ids, in_trace);
  }
  // A record in the ring claiming a text of 1 TiB, where the ring's records the trace
  // file lacks begin: nothing is read from the slot past it.
  {
    std::uint64_t used = 0;  // the ring's bytes up to its last non-zero word: six marks
    for (std::uint64_t at = 0; at < ring_bytes; at += 8) {
      std::uint64_t word = 0;
      std::memcpy(&word, rings.data() + slot + rf::kPage + at, 8);
      if (word != 0) used = at + 8;
    }
    ASSERT_EQ(used % 6, 0u);
    const std::uint64_t at = slot + rf::kPage + used / 6;  // mark(1)'s first record
    std::string bytes = rings;
    const std::uint64_t text_header = (std::uint64_t{detail::record_arg_text} << detail::kRecordKindShift) | 0x1000;
    const std::uint64_t claim = std::uint64_t{1} << 40;
    std::memcpy(bytes.data() + at, &text_header, 8);
    std::memcpy(bytes.data() + at + 8, &claim, 8);
    ReplayResult r;
    const auto ids = read_with(bytes, r);
    EXPECT_NE(r.problem.find("0 events recovered from"), std::string::npos) << r.problem;
    EXPECT_EQ(r.recovered, 0u);
    EXPECT_EQ(ids, in_trace);
  }
}

}  // namespace
}  // namespace ringtrace
