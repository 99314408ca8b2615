// Issue 42's scenarios in a program that links ringtrace and ringtrace::memory
// (test_truth_*.cpp run it, mostly under `ringtrace record --memory`). Each mode makes the
// issue's allocations inside zones, counts them itself and prints what it counted
// ("truth KEY=VALUE ..."); its zones are also the counting preload's windows (memtruth.h),
// so that where it runs the counter says the same from outside.
//
//   truth_linked work                 5 x malloc(100) in zone `work` (point 1)
//   truth_linked child                7 allocations, 3 frees in zone `child` (point 2)
//   truth_linked thread_local N seq|par   threads whose thread_local frees at exit (point 3)
//   truth_linked sampled              100 sampled zones (1 in 10) leaking 5 x 100 B (point 4)
//   truth_linked signals N            N allocations in a signal handler's zone (point 4)
//   truth_linked limit DIR            1,000 blocks of 10 B from `a` freed in `b`, limit 100 (point 5)
//   truth_linked dropped DIR          drop mode's dropped allocations, 7 blocks from before (point 6)
//   truth_linked failed_realloc       a realloc that fails, then the free (point 6)
//   truth_linked window DIR           10 blocks leaked in a window and in a snapshot (point 6)
//   truth_linked units                11,200 B and 4,198 B in two zones (point 6)
//   truth_linked merge_a DIR, merge_b DIR   1 MB held while another process holds 2 MB (point 6)
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "memtruth.h"
#include "ringtrace/exporter.hpp"
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {

void* volatile g_sink;
volatile std::size_t g_huge = SIZE_MAX / 4;

void* kept(void* p) {
  g_sink = p;
  return p;
}

void truth(const std::string& line) {
  std::printf("truth %s\n", line.c_str());
  std::fflush(stdout);
}

std::string u(std::uint64_t v) { return std::to_string(v); }

// --- point 1: 5 x malloc(100) in `work` ---
int work() {
  {
    RINGTRACE_ZONE("work");
    memtruth_begin("work");
    for (int i = 0; i < 5; ++i) kept(std::malloc(100));
    memtruth_end();
  }
  truth("zone=work allocs=5 alloc_bytes=500 frees=0 free_bytes=0");
  return 0;
}

// --- point 2: a child process's own allocations ---
int child() {
  void* blocks[7];
  {
    RINGTRACE_ZONE("child");
    memtruth_begin("child");
    for (int i = 0; i < 7; ++i) blocks[i] = kept(std::malloc(1000 + static_cast<std::size_t>(i)));
    for (int i = 0; i < 3; ++i) std::free(blocks[i]);
    memtruth_end();
  }
  truth("child pid=" + u(static_cast<std::uint64_t>(::getpid())) +
        " zone=child allocs=7 alloc_bytes=" + u(7 * 1000 + 21) + " frees=3 free_bytes=" + u(3 * 1000 + 3));
  return 0;
}

// --- point 3: thread_local destructors that free at the thread's exit ---
// The thread_local is constructed (empty: nothing allocated, its destructor registered)
// when the thread starts, before its first event, as a library's per-thread cache is;
// its block comes later, in the zone. Its destructor runs at the thread's exit.
struct Holder {
  void* block = nullptr;
  ~Holder() { std::free(block); }
};
thread_local Holder t_holder;

void thread_local_worker() {
  g_sink = &t_holder;
  RINGTRACE_ZONE("tl_worker");
  memtruth_begin("tl_worker");  // left open: the destructor's free at the exit counts in it
  t_holder.block = kept(std::malloc(333));
}

int thread_local_threads(int n, bool one_after_another) {
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back(thread_local_worker);
    if (one_after_another) threads.back().join();
  }
  for (std::thread& t : threads) {
    if (t.joinable()) t.join();
  }
  truth("zone=tl_worker threads=" + u(static_cast<std::uint64_t>(n)) + " block=333 freed_at_exit=" + u(n));
  return 0;
}

// --- point 4: sampled zones that leak ---
int sampled() {
  static void* blocks[500];
  {
    RINGTRACE_ZONE("sampled_outer");
    memtruth_begin("sampled_outer");
    for (int z = 0; z < 100; ++z) {
      RINGTRACE_ZONE_SAMPLED("leaky", 10);
      for (int k = 0; k < 5; ++k) blocks[z * 5 + k] = std::malloc(100);
    }
    memtruth_end();
  }
  g_sink = blocks;
  truth("zone=sampled_outer leaked_blocks=500 leaked_bytes=50000 allocs=500");
  return 0;
}

// --- point 4: allocations in a signal handler ---
std::atomic<int> g_handled{0};
void* g_handler_blocks[100000];
const int kSignal = SIGRTMIN + 3;

void on_signal(int) {
  const int saved = errno;
  const int k = g_handled.load(std::memory_order_relaxed);
  if (k < 100000) {
    RINGTRACE_ZONE("sig");
    memtruth_begin("sig");
    g_handler_blocks[k] = std::malloc(64);
    memtruth_end();
    g_handled.store(k + 1, std::memory_order_release);
  }
  errno = saved;
}

int signals(int wanted) {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(kSignal, &action, nullptr);
  sigevent event{};
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = kSignal;
  event._sigev_un._tid = static_cast<pid_t>(::syscall(SYS_gettid));
  timer_t timer{};
  if (timer_create(CLOCK_MONOTONIC, &event, &timer) != 0) return 3;
  itimerspec spec{};
  spec.it_interval.tv_nsec = 50'000;  // 20 kHz: many land while the thread records
  spec.it_value = spec.it_interval;
  { RINGTRACE_ZONE("spin_first"); }  // the thread's ring, bound before the first signal
  timer_settime(timer, 0, &spec, nullptr);
  // The thread records zones (no allocation of its own: a handler may allocate wherever
  // it lands) until the handler has run `wanted` times.
  while (g_handled.load(std::memory_order_acquire) < wanted) {
    RINGTRACE_ZONE("spin");
  }
  timer_delete(timer);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, kSignal);
  sigprocmask(SIG_BLOCK, &set, nullptr);  // none after the count is read
  const int n = g_handled.load();
  g_sink = g_handler_blocks;
  truth("zone=sig handler_allocs=" + u(static_cast<std::uint64_t>(n)) +
        " alloc_bytes=" + u(64 * static_cast<std::uint64_t>(n)));
  return 0;
}

// --- point 5: past memory_max_blocks, live table against the file's ---
int limit(const std::filesystem::path& dir) {
  ringtrace::Config config;
  config.memory = true;
  config.memory_max_blocks = 100;
  config.overflow = ringtrace::OverflowPolicy::block;
  ringtrace::Session session(config);
  ringtrace::TableOptions text;
  ringtrace::TableOptions csv;
  csv.format = ringtrace::TableOptions::Format::csv;
  session.add_exporter(ringtrace::table_exporter(dir / "live_table.txt", text));
  session.add_exporter(ringtrace::table_exporter(dir / "live_table.csv", csv));
  session.add_exporter(ringtrace::binary_trace_exporter(dir / "run.rtrace"));
  static void* blocks[1000];
  session.start();
  {
    RINGTRACE_ZONE("a");
    for (void*& b : blocks) b = kept(std::malloc(10));
  }
  {
    RINGTRACE_ZONE("b");
    for (void* b : blocks) std::free(b);
  }
  session.stop();
  truth("zone=a net=10000 zone=b net=-10000");
  return 0;
}

// --- point 6: what drop mode dropped is not "from before the recording" ---
// An exporter that holds the drainer (it calls every exporter) while `held` is set: the
// rings fill and drop mode drops, every time.
class HoldingExporter final : public ringtrace::Exporter {
 public:
  void on_events(std::span<const ringtrace::Event>, const ringtrace::TraceContext&) override {
    while (held.load(std::memory_order_acquire)) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  std::atomic<bool> held{false};
};

int dropped(const std::filesystem::path& dir) {
  void* before[7];
  for (void*& b : before) b = kept(std::malloc(48));  // truly before the recording
  ringtrace::Config config;
  config.memory = true;
  config.overflow = ringtrace::OverflowPolicy::drop;
  config.buffer_records = 1 << 8;  // 4 KiB rings, nobody packing them but the drainer,
  config.self_drain = false;       // which is held while the thread allocates
  ringtrace::Session session(config);
  auto holding = std::make_shared<HoldingExporter>();
  session.add_exporter(holding);
  session.add_exporter(ringtrace::binary_trace_exporter(dir / "run.rtrace"));
  std::vector<void*> blocks(20000);  // before start(): not in the recording
  session.start();
  holding->held.store(true, std::memory_order_release);
  {
    RINGTRACE_ZONE("churn");
    for (void*& b : blocks) b = kept(std::malloc(32));
  }
  holding->held.store(false, std::memory_order_release);
  {
    RINGTRACE_ZONE("release");
    for (void* b : blocks) std::free(b);
    for (void* b : before) std::free(b);
  }
  session.stop();
  truth("frees_before_recording=7 allocs=20000 frees=20007");
  return 0;
}

// --- point 6: a realloc that fails leaves its block, allocated during the recording ---
int failed_realloc() {
  {
    RINGTRACE_ZONE("r");
    memtruth_begin("r");
    void* p = kept(std::malloc(100));
    void* q = std::realloc(p, g_huge);
    if (q != nullptr) std::abort();
    std::free(p);
    memtruth_end();
  }
  truth("zone=r allocs=1 alloc_bytes=100 frees=1 free_bytes=100 frees_before_recording=0");
  return 0;
}

// --- point 6: a window's and a snapshot's file have no addresses: leaks unknown ---
int window(const std::filesystem::path& dir) {
  static void* blocks[20];
  {
    ringtrace::Config config;
    config.memory = true;
    config.schedule = ringtrace::Schedule{.skip_first = 0, .wait = 0, .warmup = 0, .active = 1, .repeat = 1};
    ringtrace::Session session(config);
    session.add_window_exporter(
        [dir](const ringtrace::WindowInfo&) { return ringtrace::binary_trace_exporter(dir / "window.rtrace"); });
    session.start();
    {
      RINGTRACE_ZONE("win");
      for (int i = 0; i < 10; ++i) blocks[i] = kept(std::malloc(113));
    }
    session.step();  // the window's one active step ends
    session.stop();
  }
  {
    ringtrace::Config config;
    config.memory = true;
    config.flight_recorder.keep = std::chrono::milliseconds(60000);
    config.flight_recorder.min_interval = std::chrono::milliseconds(0);
    ringtrace::Session session(config);
    session.add_window_exporter(
        [dir](const ringtrace::WindowInfo&) { return ringtrace::binary_trace_exporter(dir / "snapshot.rtrace"); });
    session.start();
    {
      RINGTRACE_ZONE("snap");
      for (int i = 10; i < 20; ++i) blocks[i] = kept(std::malloc(113));
    }
    session.snapshot("leaks");
    session.stop();
  }
  g_sink = blocks;
  truth("window=win live_blocks=10 live_bytes=1130 snapshot=snap live_blocks=10 live_bytes=1130");
  return 0;
}

// --- point 6: one unit convention ---
int units() {
  static void* blocks[14];
  {
    RINGTRACE_ZONE("units_big");
    for (int i = 0; i < 7; ++i) blocks[i] = kept(std::malloc(1600));  // 11,200 B
  }
  {
    RINGTRACE_ZONE("units_small");
    for (int i = 7; i < 14; ++i) blocks[i] = kept(std::malloc(i == 13 ? 598 : 600));  // 4,198 B
  }
  g_sink = blocks;
  truth("zone=units_big net=11200 zone=units_small net=4198");
  return 0;
}

// --- point 6: two processes merged ---
// Started together by a shell (a program that links ringtrace keeps RINGTRACE_OUTPUT
// from the programs it starts): A holds 1 MB from before B allocates its 2 MB until after
// B freed them (files in DIR say when), so that 3 MB were live at once.
bool wait_for(const std::filesystem::path& file) {
  for (int i = 0; i < 20000; ++i) {  // 20 s at most
    if (std::filesystem::exists(file)) return true;
    ::usleep(1000);
  }
  std::fprintf(stderr, "truth_linked: %s never came\n", file.c_str());
  return false;
}

void touch(const std::filesystem::path& file) { std::fclose(std::fopen(file.c_str(), "w")); }

int merge_a(const std::filesystem::path& dir) {
  void* held = nullptr;
  {
    RINGTRACE_ZONE("a_hold");
    held = kept(std::malloc(1'000'000));
    std::memset(held, 1, 1'000'000);
  }
  {
    RINGTRACE_ZONE("a_leak");
    kept(std::malloc(111));
  }
  touch(dir / "a_holds");
  if (!wait_for(dir / "b_freed")) return 3;
  std::free(held);
  truth("merged a_peak=1000000 b_peak=2000000 together=3000000 a_leak=111 b_leak=222");
  return 0;
}

int merge_b(const std::filesystem::path& dir) {
  if (!wait_for(dir / "a_holds")) return 3;
  void* big = nullptr;
  {
    RINGTRACE_ZONE("b_big");
    big = kept(std::malloc(2'000'000));
    std::memset(big, 2, 2'000'000);
  }
  std::free(big);
  {
    RINGTRACE_ZONE("b_leak");
    kept(std::malloc(222));
  }
  touch(dir / "b_freed");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  memtruth_init();
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "work") return work();
  if (mode == "child") return child();
  if (mode == "thread_local" && argc > 3)
    return thread_local_threads(std::atoi(argv[2]), std::string(argv[3]) == "seq");
  if (mode == "sampled") return sampled();
  if (mode == "signals" && argc > 2) return signals(std::atoi(argv[2]));
  if (mode == "limit" && argc > 2) return limit(argv[2]);
  if (mode == "dropped" && argc > 2) return dropped(argv[2]);
  if (mode == "failed_realloc") return failed_realloc();
  if (mode == "window" && argc > 2) return window(argv[2]);
  if (mode == "units") return units();
  if (mode == "merge_a" && argc > 2) return merge_a(argv[2]);
  if (mode == "merge_b" && argc > 2) return merge_b(argv[2]);
  std::fprintf(stderr, "truth_linked: unknown mode '%s'\n", mode.c_str());
  return 2;
}
