// The matrix's memory workload (issue 42): one memory configuration (spec.hpp), in a
// process of its own. Built twice: matrix_memory_workload links ringtrace and
// ringtrace::memory (MW_LINKED 1: zones are RINGTRACE_ZONE), matrix_memory_plain links
// nothing of ringtrace (MW_LINKED 0, built with -finstrument-functions: each zone is a
// function of that name, recorded by `ringtrace record --memory`'s preload). Usage:
//
//   memory_workload CONFIG DIR PROGRESS_FD      the main role
//   memory_workload child CONFIG DIR            the child role (started by the main role)
//
// Each zone is also a window of the counting preload (memtruth.h), opened first thing in
// the zone and closed last (and each thread's life between the session's start and stop
// is a window "life_*" of its own, no zone: the session's totals are the windows' sum); the workload counts the calls it makes itself in each window
// where it knows them all, and writes DIR/memory.<pid>.txt: its own counts, its children,
// its threads. Config mode writes its outputs itself (trace.rtrace, table.csv,
// chrome.json, window.<n>.rtrace or snapshot.rtrace); the other modes get theirs from
// the environment the test sets (run.<pid>.rtrace, table.<pid>.txt, chrome.<pid>.json).
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <string>
#include <thread>

#include "memtruth.h"
#include "spec.hpp"

#if MW_LINKED
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/ringtrace.hpp"
#define MW_ZONE(name) RINGTRACE_ZONE(name)
#else
#define MW_ZONE(name) static_cast<void>(0)
#endif

// A zone: a function of its name (the plain build's zones), never inlined.
#define MW_FN extern "C" __attribute__((noinline))
// Not a zone in the plain build.
#define MW_HELPER __attribute__((no_instrument_function))

extern char** environ;

using namespace matrix;

namespace {

// --- The workload's own count, by window ---

enum Win {
  w_spawn_threads,
  w_handoff,
  w_sampled_outer,
  w_hold,
  w_unhold,
  w_window_phase,
  w_snapshot_phase,
  w_children,
  w_join,
  w_churn,
  w_takeback,
  w_release,
  w_sig,
  w_exit_keys,
  w_child_work,
  w_count
};
const char* const kWinNames[w_count] = {"mw_spawn_threads", "mw_handoff",      "mw_sampled_outer",  "mw_hold",
                                        "mw_unhold",        "mw_window_phase", "mw_snapshot_phase", "mw_children",
                                        "mw_join",          "mw_churn",        "mw_takeback",       "mw_release",
                                        "mw_sig",           "mw_exit_keys",    "mw_child_work"};

struct Own {
  std::atomic<std::uint64_t> allocs{0}, alloc_bytes{0}, frees{0}, free_bytes{0}, live_blocks{0}, live_bytes{0};
  std::atomic<bool> used{false};
  bool known = true;  // false: the C and C++ libraries allocate there too (the counter alone knows)
};
Own g_own[w_count];

MW_HELPER void own_alloc(Win w, std::uint64_t size) {
  g_own[w].allocs.fetch_add(1, std::memory_order_relaxed);
  g_own[w].alloc_bytes.fetch_add(size, std::memory_order_relaxed);
}
MW_HELPER void own_free(Win w, std::uint64_t size) {
  g_own[w].frees.fetch_add(1, std::memory_order_relaxed);
  g_own[w].free_bytes.fetch_add(size, std::memory_order_relaxed);
}
// A block allocated in `w` that stays live to the end.
MW_HELPER void own_leak(Win w, std::uint64_t size) {
  g_own[w].live_blocks.fetch_add(1, std::memory_order_relaxed);
  g_own[w].live_bytes.fetch_add(size, std::memory_order_relaxed);
}

// The counter's window over a zone's body.
class Window {
 public:
  MW_HELPER explicit Window(Win w, bool close = true) : close_(close) {
    g_own[w].used.store(true, std::memory_order_relaxed);
    memtruth_begin(kWinNames[w]);
  }
  MW_HELPER ~Window() {
    if (close_) memtruth_end();
  }

 private:
  bool close_;
};

void* volatile g_sink;
MW_HELPER void* kept(void* p) {
  g_sink = p;
  return p;
}

MemoryConfig g_config;
std::filesystem::path g_dir;
std::string g_self;
std::uint64_t g_iterations = 0;
std::atomic<std::uint64_t> g_progress{0};

// --- Blocks (all the room the workload needs, taken before anything is recorded) ---

constexpr std::uint64_t kMaxIterations = 4096;
struct Block {
  void* p = nullptr;
  std::uint64_t size = 0;
  int how = 0;  // 0 free(), 1 operator delete
};
Block g_churn[kMemWorkers + 1][kMaxIterations];
void* g_handoff[kHandoff];
void* g_hold[kHold];
#if MW_LINKED
void* g_sampled[240];
#endif
void* g_phase[20];
void* g_sig_blocks[100000];
std::atomic<int> g_sig_runs{0};
int g_sig_wanted = 0;
pid_t g_children[4];
int g_child_count = 0;
std::atomic<int> g_exit_threads{0};
pid_t g_tids[kMemWorkers + 1];

// --- Main-thread zones ---

MW_FN void mw_hello() { MW_ZONE("mw_hello"); }

MW_FN void mw_handoff() {
  MW_ZONE("mw_handoff");
  Window w(w_handoff);
  for (std::uint64_t k = 0; k < kHandoff; ++k) {
    g_handoff[k] = kept(std::malloc(handoff_size(k)));
    own_alloc(w_handoff, handoff_size(k));
  }
}

#if MW_LINKED
MW_FN void mw_sampled_outer() {
  MW_ZONE("mw_sampled_outer");
  Window w(w_sampled_outer);
  for (int z = 0; z < 60; ++z) {
    RINGTRACE_ZONE_SAMPLED("mw_sampled", 4);
    void* a = kept(std::malloc(100));
    void* b = kept(std::malloc(101));
    g_sampled[z] = kept(std::malloc(102));
    std::free(a);
    std::free(b);
    own_alloc(w_sampled_outer, 100);
    own_alloc(w_sampled_outer, 101);
    own_alloc(w_sampled_outer, 102);
    own_free(w_sampled_outer, 100);
    own_free(w_sampled_outer, 101);
    own_leak(w_sampled_outer, 102);
  }
}
#endif

MW_FN void mw_hold() {
  MW_ZONE("mw_hold");
  Window w(w_hold);
  for (void*& p : g_hold) {
    p = kept(std::malloc(16));
    own_alloc(w_hold, 16);
  }
}

MW_FN void mw_unhold() {
  MW_ZONE("mw_unhold");
  Window w(w_unhold);
  for (void* p : g_hold) {
    std::free(p);
    own_free(w_unhold, 16);
  }
}

// 20 blocks of 113 bytes, 10 freed: 10 (1,130 bytes) live to the end.
MW_HELPER void phase_blocks(Win win) {
  for (void*& p : g_phase) {
    p = kept(std::malloc(113));
    own_alloc(win, 113);
  }
  for (int k = 0; k < 10; ++k) {
    std::free(g_phase[k]);
    own_free(win, 113);
  }
  for (int k = 10; k < 20; ++k) own_leak(win, 113);
}

MW_FN void mw_window_phase() {
  MW_ZONE("mw_window_phase");
  Window w(w_window_phase);
  phase_blocks(w_window_phase);
}

MW_FN void mw_snapshot_phase() {
  MW_ZONE("mw_snapshot_phase");
  Window w(w_snapshot_phase);
  phase_blocks(w_snapshot_phase);
}

// --- Worker zones ---

MW_FN void mw_worker_hello() { MW_ZONE("mw_worker_hello"); }

MW_FN void mw_churn(int slot) {
  MW_ZONE("mw_churn");
  Window w(w_churn);
  for (std::uint64_t i = 0; i < g_iterations; ++i) {
    const std::uint64_t size = churn_size(slot, i);
    Block& b = g_churn[slot][i];
    b.size = size;
    switch (i % 4) {
      case 0:
        b.p = kept(std::malloc(size));
        break;
      case 1:
        b.p = kept(std::calloc(1, size));
        break;
      case 2:
        b.p = kept(::operator new(size));
        b.how = 1;
        break;
      default: {
        void* first = kept(std::malloc(size));
        own_alloc(w_churn, size);
        b.p = kept(std::realloc(first, size + 7));  // the free of `size`, the allocation of size + 7
        own_free(w_churn, size);
        b.size = size + 7;
        break;
      }
    }
    own_alloc(w_churn, b.size);
    if (!churn_kept(i)) {
      if (b.how == 1) {
        ::operator delete(b.p);
      } else {
        std::free(b.p);
      }
      own_free(w_churn, b.size);
      b.p = nullptr;
    }
    g_progress.fetch_add(1, std::memory_order_relaxed);
  }
}

MW_FN void mw_takeback(int slot) {
  MW_ZONE("mw_takeback");
  Window w(w_takeback);
  for (std::uint64_t k = static_cast<std::uint64_t>(slot - 1); k < kHandoff; k += kMemWorkers) {
    std::free(g_handoff[k]);
    own_free(w_takeback, handoff_size(k));
  }
}

MW_FN void mw_release(int slot) {
  MW_ZONE("mw_release");
  Window w(w_release);
  for (std::uint64_t i = 0; i < g_iterations; ++i) {
    Block& b = g_churn[slot][i];
    if (b.p == nullptr) continue;
    if (churn_leaked(i)) {
      own_leak(w_churn, b.size);
      continue;
    }
    if (b.how == 1) {
      ::operator delete(b.p);
    } else {
      std::free(b.p);
    }
    own_free(w_release, b.size);
  }
}

// --- Signals: a handler that allocates in a zone of its own ---

const int kSignal = SIGRTMIN + 4;

MW_FN void mw_sig() {
  MW_ZONE("mw_sig");
  Window w(w_sig);
  const int k = g_sig_runs.load(std::memory_order_relaxed);
  g_sig_blocks[k] = kept(std::malloc(48));
  own_alloc(w_sig, 48);
  own_leak(w_sig, 48);
  g_sig_runs.store(k + 1, std::memory_order_release);
}

MW_HELPER void on_signal(int) {
  const int saved = errno;
  if (g_sig_runs.load(std::memory_order_relaxed) < g_sig_wanted) mw_sig();
  errno = saved;
}

MW_FN void mw_spin_step() { MW_ZONE("mw_spin_step"); }

// The thread records empty zones (it allocates nothing: the handler may land anywhere)
// until the handler has run g_sig_wanted times.
MW_FN void mw_spin() {
  MW_ZONE("mw_spin");
  sigevent event{};
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = kSignal;
  event._sigev_un._tid = static_cast<pid_t>(::syscall(SYS_gettid));
  timer_t timer{};
  if (timer_create(CLOCK_MONOTONIC, &event, &timer) != 0) return;
  itimerspec spec{};
  spec.it_interval.tv_nsec = 200'000;
  spec.it_value = spec.it_interval;
  timer_settime(timer, 0, &spec, nullptr);
  while (g_sig_runs.load(std::memory_order_acquire) < g_sig_wanted) {
    mw_spin_step();
    g_progress.fetch_add(1, std::memory_order_relaxed);
  }
  timer_delete(timer);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, kSignal);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

// --- Thread exit: a pthread key whose destructor frees, a thread_local's destructor ---

pthread_key_t g_key;
struct Holder {
  void* block = nullptr;
  MW_HELPER ~Holder() { std::free(block); }
};
thread_local Holder t_holder;

// Both blocks are freed by the C and C++ libraries as the thread exits: the window stays
// open until then (the counter sees those frees in it).
MW_FN void mw_exit_keys() {
  MW_ZONE("mw_exit_keys");
  Window w(w_exit_keys, false);
  void* key_block = kept(std::malloc(kExitKeyBlock));
  pthread_setspecific(g_key, key_block);
  t_holder.block = kept(std::malloc(kExitLocalBlock));
  own_alloc(w_exit_keys, kExitKeyBlock);
  own_alloc(w_exit_keys, kExitLocalBlock);
  g_exit_threads.fetch_add(1, std::memory_order_relaxed);
}

MW_HELPER void worker(int slot) {
  // The thread's whole life is a window of the counter (not a zone): what it allocates
  // outside its zones counts there, so that the session's totals are the windows' sum.
  memtruth_begin("life_worker");
  g_tids[slot] = static_cast<pid_t>(::syscall(SYS_gettid));
  const bool exits = g_config.thread_exit && slot == 2;
  if (exits) g_sink = &t_holder;  // constructed before the thread's first event
  mw_worker_hello();
  mw_churn(slot);
  mw_takeback(slot);
  mw_release(slot);
  if (g_config.signals && slot == 1) mw_spin();
  if (exits) mw_exit_keys();
}

std::thread g_workers[kMemWorkers + 1];

MW_FN void mw_spawn_threads() {
  MW_ZONE("mw_spawn_threads");
  Window w(w_spawn_threads);
  for (int slot = 1; slot <= kMemWorkers; ++slot) g_workers[slot] = std::thread(worker, slot);
}

MW_FN void mw_join() {
  MW_ZONE("mw_join");
  Window w(w_join);
  for (int slot = 1; slot <= kMemWorkers; ++slot) g_workers[slot].join();
}

// --- Children ---

MW_FN void mw_children() {
  MW_ZONE("mw_children");
  Window w(w_children);
  if (g_config.linked()) {
    // A program that links ringtrace keeps RINGTRACE_OUTPUT from the programs it starts:
    // its children are given theirs.
    ::setenv("RINGTRACE_OUTPUT", ("rtrace:" + (g_dir / "run.%p.rtrace").string()).c_str(), 1);
    ::setenv("RINGTRACE_MEMORY", "1", 1);
    ::setenv("RINGTRACE_POLICY", name_of(g_config.policy), 1);
  }
  std::string config = name_of(g_config);
  std::string dir = g_dir.string();
  char child_word[] = "child";
  char* argv[] = {g_self.data(), child_word, config.data(), dir.data(), nullptr};
  pid_t pid = -1;
  int status = 0;
  switch (g_config.children) {
    case Children::none:
      return;
    case Children::fork_exec:
      pid = ::fork();
      if (pid == 0) {
        ::execv(g_self.c_str(), argv);
        ::_exit(127);
      }
      break;
    case Children::spawn:
      if (posix_spawn(&pid, g_self.c_str(), nullptr, nullptr, argv, environ) != 0) pid = -1;
      break;
    case Children::system:
      status = std::system((g_self + " child " + config + " " + dir).c_str());
      break;
  }
  if (pid > 0) ::waitpid(pid, &status, 0);
  g_children[g_child_count++] = pid;  // -1 for system(): the child names itself in its manifest
}

// The child role: 7 blocks of 1000 + i bytes, 3 freed, 4 live to the end.
MW_FN void mw_child_work() {
  MW_ZONE("mw_child_work");
  Window w(w_child_work);
  static void* blocks[7];  // reachable to the end (LeakSanitizer's view too)
  for (int i = 0; i < 7; ++i) {
    blocks[i] = kept(std::malloc(1000 + static_cast<std::size_t>(i)));
    own_alloc(w_child_work, 1000 + static_cast<std::uint64_t>(i));
  }
  for (int i = 0; i < 3; ++i) {
    std::free(blocks[i]);
    own_free(w_child_work, 1000 + static_cast<std::uint64_t>(i));
  }
  for (int i = 3; i < 7; ++i) own_leak(w_child_work, 1000 + static_cast<std::uint64_t>(i));
}

// --- The manifest ---

MW_HELPER void write_manifest(const char* role, const std::string& stats) {
  std::string name = kMemoryManifest;
  name.replace(name.find("%p"), 2, std::to_string(::getpid()));
  FILE* f = std::fopen((g_dir / name).c_str(), "w");
  if (f == nullptr) return;
  std::fprintf(f, "memory_workload 1\nconfig %s\nrole %s\npid %d\n", name_of(g_config).c_str(), role,
               static_cast<int>(::getpid()));
  for (int w = 0; w < w_count; ++w) {
    const Own& o = g_own[w];
    if (!o.used.load()) continue;
    std::fprintf(f,
                 "window %s known %d allocs %llu alloc_bytes %llu frees %llu free_bytes %llu live_blocks %llu "
                 "live_bytes %llu\n",
                 kWinNames[w], o.known ? 1 : 0, static_cast<unsigned long long>(o.allocs.load()),
                 static_cast<unsigned long long>(o.alloc_bytes.load()), static_cast<unsigned long long>(o.frees.load()),
                 static_cast<unsigned long long>(o.free_bytes.load()),
                 static_cast<unsigned long long>(o.live_blocks.load()),
                 static_cast<unsigned long long>(o.live_bytes.load()));
  }
  for (int slot = 1; slot <= kMemWorkers; ++slot) {
    if (g_tids[slot] != 0) std::fprintf(f, "worker %d tid %d\n", slot, static_cast<int>(g_tids[slot]));
  }
  for (int k = 0; k < g_child_count; ++k) std::fprintf(f, "child %d\n", static_cast<int>(g_children[k]));
  std::fprintf(f, "exit_threads %d\nsignal_runs %d\n", g_exit_threads.load(), g_sig_runs.load());
  if (!stats.empty()) std::fprintf(f, "%s\n", stats.c_str());
  std::fprintf(f, "done\n");
  std::fclose(f);
}

MW_HELPER double test_scale() {
  const char* text = std::getenv("RINGTRACE_TEST_SCALE");
  const double scale = text != nullptr ? std::atof(text) : 1.0;
  return scale > 0 ? scale : 1.0;
}

[[maybe_unused]] MW_HELPER bool wait_for_file(const std::filesystem::path& file) {
  for (int i = 0; i < 5000; ++i) {
    if (std::filesystem::exists(file)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

MW_HELPER int child_role() {
  mw_hello();
  mw_child_work();
  memtruth_snapshot("end");
  write_manifest("child", "");
  return 0;
}

#if MW_LINKED
MW_HELPER ringtrace::Config session_config() {
  ringtrace::Config rc;
  rc.memory = true;
  rc.overflow = g_config.policy == Policy::drop ? ringtrace::OverflowPolicy::drop : ringtrace::OverflowPolicy::block;
  rc.buffer_records = g_config.policy == Policy::drop ? 1 << 9 : 1 << 12;  // drop mode drops now and then
  if (g_config.small_limit) rc.memory_max_blocks = 100;
  if (g_config.windows == MemWindows::window) rc.schedule = ringtrace::Schedule{};  // every step a window
  if (g_config.windows == MemWindows::snapshot) {
    rc.flight_recorder.keep = std::chrono::milliseconds(600000);
    rc.flight_recorder.min_interval = std::chrono::milliseconds(0);
  }
  rc.process_name = "matrix_memory";
  return rc;
}

MW_HELPER void add_outputs(ringtrace::Session& session) {
  session.add_exporter(ringtrace::binary_trace_exporter(g_dir / "trace.rtrace"));
  ringtrace::TableOptions csv;
  csv.format = ringtrace::TableOptions::Format::csv;
  csv.row_limit = 0;
  session.add_exporter(ringtrace::table_exporter(g_dir / "table.csv", csv));
  session.add_exporter(ringtrace::chrome_trace_exporter(g_dir / "chrome.json"));
  if (g_config.windows != MemWindows::none) {
    const std::filesystem::path dir = g_dir;
    const bool snapshot = g_config.windows == MemWindows::snapshot;
    session.add_window_exporter([dir, snapshot](const ringtrace::WindowInfo& info) {
      return ringtrace::binary_trace_exporter(
          dir / (snapshot ? std::string("snapshot.rtrace") : "window." + std::to_string(info.index) + ".rtrace"));
    });
  }
}
#endif

// The main role's flow between the session's start and its stop.
MW_HELPER void main_flow(void* session) {
  (void)session;
  memtruth_begin("life_main");  // as the workers' (its end: before the snapshot)
  mw_hello();
  mw_handoff();  // before the workers: they free these
  mw_spawn_threads();
#if MW_LINKED
  if (g_config.sampled) mw_sampled_outer();
#endif
  mw_hold();
  mw_unhold();
  if (g_config.windows == MemWindows::window) {
#if MW_LINKED
    static_cast<ringtrace::Session*>(session)->step();
    mw_window_phase();
    static_cast<ringtrace::Session*>(session)->step();
#endif
  }
  if (g_config.windows == MemWindows::snapshot) {
#if MW_LINKED
    mw_snapshot_phase();
    static_cast<ringtrace::Session*>(session)->snapshot("mw_snapshot_phase");
    wait_for_file(g_dir / "snapshot.rtrace");
#endif
  }
  if (g_config.children != Children::none) mw_children();
  mw_join();
  memtruth_end();
  memtruth_snapshot("end");
}

}  // namespace

int main(int argc, char** argv) {
  memtruth_init();
  g_self = std::filesystem::absolute(argv[0]).string();
  const bool child = argc == 4 && std::string(argv[1]) == "child";
  if (!child && argc != 4) {
    std::fprintf(stderr, "usage: memory_workload CONFIG DIR PROGRESS_FD | child CONFIG DIR\n");
    return 2;
  }
  if (!parse_memory_config(argv[child ? 2 : 1], g_config)) {
    std::fprintf(stderr, "memory_workload: unknown configuration %s\n", argv[child ? 2 : 1]);
    return 2;
  }
  g_dir = argv[child ? 3 : 2];
  for (Win w : {w_spawn_threads, w_children, w_join}) g_own[w].known = false;
  if (child) return child_role();
  const int progress_fd = std::atoi(argv[3]);
  g_iterations = std::min<std::uint64_t>(kMaxIterations,
                                         std::max<std::uint64_t>(20, static_cast<std::uint64_t>(400 * test_scale())));
  g_sig_wanted = static_cast<int>(std::max<double>(10, 100 * test_scale()));
  pthread_key_create(&g_key, std::free);
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(kSignal, &action, nullptr);

  std::atomic<bool> finished{false};
  std::thread heartbeat([&] {
    while (!finished.load()) {
      char line[64];
      const int n =
          std::snprintf(line, sizeof line, "memory %llu\n", static_cast<unsigned long long>(g_progress.load()));
      if (::write(progress_fd, line, static_cast<std::size_t>(n)) < 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });

  std::string stats;
#if MW_LINKED
  if (g_config.how == MemHow::config) {
    ringtrace::Session session(session_config());
    add_outputs(session);
    session.start();
    main_flow(&session);
    session.stop();
    const ringtrace::SessionStats s = session.stats();
    stats = "stats recorded " + std::to_string(s.recorded) + " dropped " + std::to_string(s.dropped) +
            " unrecorded_nested " + std::to_string(s.memory.unrecorded_nested) + " untracked_blocks " +
            std::to_string(s.memory.untracked_blocks) + " lost_frees " + std::to_string(s.memory.lost_frees);
  } else {
    main_flow(nullptr);
  }
#else
  main_flow(nullptr);
#endif
  write_manifest("main", stats);
  finished = true;
  heartbeat.join();
  return 0;
}
