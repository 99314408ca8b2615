// The matrix's workload: one configuration, run in a process of its own (the test
// starts it and kills it if it stops making progress). Usage:
//
//   matrix_workload CONFIG DIR PROGRESS_FD
//
// Records every macro kind on several threads (main, long workers in two waves, short
// workers that come and go), a signal handler recording on some workers and on the
// runtime's own threads (where they let it), frame marks from a thread of their own;
// writes the configured outputs into DIR, and DIR/manifest.txt: what each thread
// produced, the session's stats. Writes "phase progress" lines to PROGRESS_FD while it
// works (the test's watchdog reads them).
#include <dirent.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "spec.hpp"
#include "stream.hpp"

using namespace matrix;

namespace {

const int kSignal = SIGRTMIN + 2;

// --- What each slot produced (written by its own thread, or its handler) ---

struct SlotState {
  std::atomic<int> tid{0};
  std::atomic<bool> armed{false};  // its handler records
  std::atomic<std::uint64_t> iterations{0};
  std::atomic<std::uint64_t> handler_runs{0};
  std::atomic<std::uint64_t> signals_sent{0};  // to other (runtime) threads, by main
  bool blocks = false;  // a runtime thread found blocking the signal (or gone) each time: none sent
  Role role = Role::other;
  std::string comm;
};
SlotState g_slots[kMaxSlots];
std::atomic<std::uint64_t> g_progress{0};
std::atomic<const char*> g_phase{"starting"};
thread_local int t_slot = -1;

const ringtrace::SiteInfo* g_interned_zone = nullptr;
const ringtrace::SiteInfo* g_interned_instant = nullptr;

int gettid_() { return static_cast<int>(::syscall(SYS_gettid)); }

// --- The signal handler: every recording macro it uses is async-signal-safe ---

void on_signal(int) {
  const int saved = errno;
  int slot = t_slot;
  if (slot < 0) {  // a thread the workload did not start: find it by its id
    const int tid = gettid_();
    for (int s = kFirstOtherSlot; s < kMaxSlots; ++s) {
      if (g_slots[s].tid.load(std::memory_order_relaxed) == tid) slot = s;
    }
  }
  if (slot >= 0 && g_slots[slot].armed.load(std::memory_order_acquire)) {
    const std::uint64_t k = g_slots[slot].handler_runs.load(std::memory_order_relaxed);
    const std::int64_t v = handler_value(slot, k);
    {
      RINGTRACE_ZONE("sig.zone");
      RINGTRACE_ZONE_VALUE("sig.seq", v);
      RINGTRACE_INSTANT("sig.instant");
      RINGTRACE_COUNTER("sig.counter", v);
    }
    g_slots[slot].handler_runs.store(k + 1, std::memory_order_release);
  }
  errno = saved;
}

// A per-thread timer signal every `period`, aimed at the calling thread.
class ThreadTimer {
 public:
  explicit ThreadTimer(std::chrono::microseconds period) {
    sigevent event{};
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = kSignal;
    event._sigev_un._tid = gettid_();
    if (timer_create(CLOCK_MONOTONIC, &event, &timer_) != 0) {
      std::perror("timer_create");
      std::exit(3);
    }
    itimerspec spec{};
    spec.it_interval.tv_nsec = static_cast<long>(period.count()) * 1000;
    spec.it_value = spec.it_interval;
    timer_settime(timer_, 0, &spec, nullptr);
  }
  ~ThreadTimer() { timer_delete(timer_); }

 private:
  timer_t timer_{};
};

// Where a handler's events would be left out uncounted the signal waits: inside a
// sampled-out zone (by design: docs/guide.md's known limits), and inside a zone whose
// category is off (a value on a zone recorded inside such a zone is lost uncounted:
// the runtime decides by "some enclosing zone is hidden", not by the innermost zone;
// see the matrix's report, issue 31).
class SignalsHeld {
 public:
  explicit SignalsHeld(bool hold) : hold_(hold) {
    if (!hold_) return;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, kSignal);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
  }
  ~SignalsHeld() {
    if (!hold_) return;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, kSignal);
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  }

 private:
  bool hold_;
};

}  // namespace

namespace matrix_workload {
// RINGTRACE_FUNCTION's zone is named "matrix_workload::recurse".
void recurse(int n) {
  RINGTRACE_FUNCTION();
  if (n > 0) recurse(n - 1);
}
}  // namespace matrix_workload

namespace {

// One iteration of a thread's main flow: every macro kind, nested. The checker's model
// (checker.cpp, expected_main_flow) lists the same events in the same order.
void iteration(int slot, std::uint64_t i, bool hold_signals) {
  const std::int64_t v = key(slot, i);
  {
    RINGTRACE_ZONE("m.outer");
    RINGTRACE_ZONE_VALUE("m.seq", v);
    {
      RINGTRACE_ZONE("m.args", "m.a", v, "m.b", dkey(slot, i));
      RINGTRACE_INSTANT("m.instant");
      RINGTRACE_COUNTER("m.cint", v);
      RINGTRACE_COUNTER("m.cdbl", dcounter(slot, i));
      RINGTRACE_COUNTER_PER_THREAD("m.cthread", v);
    }
    RINGTRACE_ZONE_BEGIN("m.manual");
    const std::string text = text_of(slot, i);
    RINGTRACE_ZONE_TEXT("m.text", text.data(), text.size());
    {
      const std::string name = dynamic_name_of(slot, i);
      RINGTRACE_ZONE_DYNAMIC(name);
      RINGTRACE_ZONE_VALUE("m.dval", dkey(slot, i));
      RINGTRACE_FLOW_OUT(flow_id(slot, i));
    }
    {
      RINGTRACE_ZONE_SITE(g_interned_zone);
      RINGTRACE_FLOW_IN(flow_id(slot, i));
    }
    RINGTRACE_ZONE_END();
    RINGTRACE_MESSAGE(message_of(slot, i));
    {
      RINGTRACE_REGION("m.region", v);
      matrix_workload::recurse(recursion_of(i));
      { RINGTRACE_ZONE_IN("m.cat", "m.incat"); }
      {
        // A category switched off at start(): neither the zone nor its value (nor, in
        // drop mode, a count of them when an enclosing zone was dropped).
        SignalsHeld held(hold_signals);
        RINGTRACE_ZONE_IN("m.offcat", "m.hidden");
        RINGTRACE_ZONE_VALUE("m.hiddenval", v);
      }
    }
    {
      SignalsHeld held(hold_signals);
      RINGTRACE_ZONE_SAMPLED("m.sampled", 3);
      RINGTRACE_INSTANT("m.insampled");
    }
    if (async_begins(i)) RINGTRACE_ASYNC_BEGIN("m.async", v);
    if (async_ends(i)) RINGTRACE_ASYNC_END("m.async", key(slot, i - 3));
  }
  RINGTRACE_INSTANT_SITE(g_interned_instant);
}

constexpr std::uint64_t kShortIterations = 3;  // a short worker's life

void pause_a_little() { std::this_thread::sleep_for(std::chrono::microseconds(1000)); }

// A thread's first events: its hello (which binds its ring, before any handler can
// run on it) and, for the framer, its first frame mark.
void begin_slot(int slot, bool frame) {
  t_slot = slot;
  SlotState& state = g_slots[slot];
  state.tid.store(gettid_());
  std::string name = "w";  // appended, not "w" + ...: g++ 12's -Wrestrict false positive
  name += std::to_string(slot);
  ringtrace::set_thread_name(slot == 0 ? std::string("main") : name);
  RINGTRACE_COUNTER("m.hello", static_cast<std::int64_t>(slot));
  if (frame) RINGTRACE_FRAME();
  state.armed.store(true, std::memory_order_release);
}

// Iterations [first, last) of a thread's main flow; `between` runs at every burst's end.
template <class Between>
void run_iterations(int slot, std::uint64_t first, std::uint64_t last, Between&& between) {
  SlotState& state = g_slots[slot];
  const bool signalled = signalled_worker(slot);
  for (std::uint64_t i = first; i < last; ++i) {
    iteration(slot, i, signalled);
    state.iterations.store(i + 1, std::memory_order_relaxed);
    g_progress.fetch_add(1, std::memory_order_relaxed);
    if ((i + 1) % kBurst == 0) {
      between();
      pause_a_little();
    }
  }
}

// The async span left open: async_begins(i) for the last multiple of 4.
void end_slot(int slot, std::uint64_t iterations) {
  if (iterations % 4 != 0) RINGTRACE_ASYNC_END("m.async", key(slot, iterations - iterations % 4));
}

// The framer's whole life: frames between bursts of messages (spec.hpp).
void run_framer(std::uint64_t marks) {
  begin_slot(kFramerSlot, true);
  SlotState& state = g_slots[kFramerSlot];
  state.iterations.store(1, std::memory_order_relaxed);
  std::uint64_t n = 0;
  for (std::uint64_t mark = 1; mark < marks; ++mark) {
    for (std::uint64_t k = 0; k < kFrameFill; ++k) RINGTRACE_MESSAGE(fill_text_of(n++));
    RINGTRACE_FRAME();
    state.iterations.store(mark + 1, std::memory_order_relaxed);
    g_progress.fetch_add(1, std::memory_order_relaxed);
    pause_a_little();
  }
}

// A worker's whole life.
void run_worker(int slot, std::uint64_t iterations) {
  begin_slot(slot, false);
  const bool signalled = signalled_worker(slot);
  std::unique_ptr<ThreadTimer> timer;
  if (signalled) timer = std::make_unique<ThreadTimer>(std::chrono::microseconds(250));
  run_iterations(slot, 0, iterations, [] {});
  end_slot(slot, iterations);
  timer.reset();
  // A signal already on its way is handled now, while the session runs.
  if (signalled) std::this_thread::sleep_for(std::chrono::microseconds(300));
}

std::set<int> thread_ids() {
  std::set<int> out;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (dirent* entry = ::readdir(d)) {
      if (entry->d_name[0] != '.') out.insert(std::atoi(entry->d_name));
    }
    ::closedir(d);
  }
  return out;
}

// Whether thread `tid` is alive and lets the workload's signal in (/proc: SigBlk, a hex
// mask of the signals it blocks).
bool takes_signal(int tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("SigBlk:", 0) == 0) {
      const unsigned long long mask = std::strtoull(line.c_str() + 7, nullptr, 16);
      return ((mask >> (kSignal - 1)) & 1) == 0;
    }
  }
  return false;  // gone
}

std::string comm_of(int tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/comm");
  std::string s;
  std::getline(in, s);
  return s;
}

double test_scale() {
  const char* text = std::getenv("RINGTRACE_TEST_SCALE");
  if (text == nullptr) return 1.0;
  const double scale = std::atof(text);
  return scale > 0 ? scale : 1.0;
}

std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: matrix_workload CONFIG DIR PROGRESS_FD\n");
    return 2;
  }
  MatrixConfig config;
  if (!parse_config(argv[1], config)) {
    std::fprintf(stderr, "matrix_workload: unknown configuration %s\n", argv[1]);
    return 2;
  }
  const std::filesystem::path dir = argv[2];
  const int progress_fd = std::atoi(argv[3]);

  // Progress for the test's watchdog: "phase count" every 50 ms.
  std::atomic<bool> finished{false};
  std::thread heartbeat([&] {
    while (!finished.load()) {
      char line[128];
      const int n = std::snprintf(line, sizeof line, "%s %llu\n", g_phase.load(),
                                  static_cast<unsigned long long>(g_progress.load()));
      if (::write(progress_fd, line, static_cast<std::size_t>(n)) < 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });

  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(kSignal, &action, nullptr);

  const double scale = test_scale();
  const auto scaled = [&](double n, std::uint64_t least) {
    return std::max<std::uint64_t>(least, static_cast<std::uint64_t>(n * scale));
  };
  const std::uint64_t main_iterations = scaled(480, 12);
  const std::uint64_t long_iterations = scaled(480, 12);
  const int long_workers = 4;    // slots 1-4: two waves of two
  const int short_workers = 12;  // slots 5-16: one at a time, 3 iterations each
  const std::uint64_t frame_marks = scaled(40, 4);

  g_interned_zone = ringtrace::intern(kInternedZone, ringtrace::SiteKind::zone);
  g_interned_instant = ringtrace::intern(kInternedInstant, ringtrace::SiteKind::instant);

  ringtrace::Config rc;
  rc.clock = config.clock == Clock::tsc ? ringtrace::ClockSource::tsc : ringtrace::ClockSource::monotonic;
  rc.overflow = config.policy == Policy::drop ? ringtrace::OverflowPolicy::drop : ringtrace::OverflowPolicy::block;
  rc.context_switches = config.switches;
  rc.self_drain = config.outputs != Outputs::file_noselfdrain;
  rc.buffer_records = 1 << 10;  // 16 KiB rings: a burst outruns them, so drop mode drops now and then
  rc.disabled_categories = {"m.offcat"};
  rc.process_name = "matrix";

  std::shared_ptr<CollectingExporter> collector;
  ringtrace::Session session(rc);
  try {
    if (config.collector()) {
      collector = std::make_shared<CollectingExporter>(dir / kCollectedFile);
      session.add_exporter(collector);
    }
    if (config.plain_file()) session.add_exporter(ringtrace::binary_trace_exporter(dir / kPlainTraceFile));
    if (config.ring_file()) {
      ringtrace::BinaryTraceOptions options;
      options.rings_in_file = true;
      session.add_exporter(ringtrace::binary_trace_exporter(dir / kRingTraceFile, options));
    }
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "matrix_workload: cannot set up the outputs: %s\n", ex.what());
    return 4;
  }

  const std::set<int> before = thread_ids();
  session.start();
  // The runtime's own threads (the drainer): handlers record there too.
  std::vector<int> others;
  {
    int next = kFirstOtherSlot;
    for (int tid : thread_ids()) {
      if (before.count(tid) != 0 || next >= kMaxSlots) continue;
      SlotState& s = g_slots[next];
      s.role = Role::other;
      s.tid.store(tid);
      s.comm = comm_of(tid);
      s.armed.store(true, std::memory_order_release);
      others.push_back(next++);
    }
  }
  g_phase = "workload";

  g_slots[0].role = Role::main;
  for (int s = 1; s <= long_workers; ++s) g_slots[s].role = Role::long_worker;
  for (int s = long_workers + 1; s <= long_workers + short_workers; ++s) g_slots[s].role = Role::short_worker;

  // Two waves of two long workers while the main thread records (signalling the
  // runtime's threads at the end of each burst) and the framer marks frames; short
  // workers come and go one at a time, started at the main thread's bursts.
  int next_short = long_workers + 1;
  std::thread short_thread;
  const auto next_short_worker = [&] {
    if (short_thread.joinable()) short_thread.join();
    if (next_short > long_workers + short_workers) return;
    const int slot = next_short++;
    short_thread = std::thread([slot] { run_worker(slot, kShortIterations); });
  };
  const auto between = [&] {
    for (int s : others) {
      // A thread that blocks the signal would keep it pending for ever (and one that
      // has exited has none to take): not sent. Read each time: a new thread blocks
      // every signal for a moment while it starts.
      if (!takes_signal(g_slots[s].tid.load())) continue;
      g_slots[s].signals_sent.fetch_add(1, std::memory_order_relaxed);
      ::syscall(SYS_tgkill, ::getpid(), g_slots[s].tid.load(), kSignal);
    }
    next_short_worker();
  };
  g_slots[kFramerSlot].role = Role::framer;
  std::thread framer([frame_marks] { run_framer(frame_marks); });
  begin_slot(0, false);
  for (int wave = 0; wave < 2; ++wave) {
    std::vector<std::thread> workers;
    for (int k = 0; k < long_workers / 2; ++k) {
      const int slot = 1 + wave * (long_workers / 2) + k;
      workers.emplace_back([slot, long_iterations] { run_worker(slot, long_iterations); });
    }
    const std::uint64_t half = main_iterations / 2;
    run_iterations(0, wave == 0 ? 0 : half, wave == 0 ? half : main_iterations, between);
    for (std::thread& t : workers) t.join();
  }
  end_slot(0, main_iterations);
  while (next_short <= long_workers + short_workers) next_short_worker();
  if (short_thread.joinable()) short_thread.join();
  framer.join();

  // Every handler sent to a runtime thread has run (bounded: a thread that never runs it
  // is said in the manifest), so that none records across stop().
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (int s : others) {
    while (g_slots[s].handler_runs.load(std::memory_order_acquire) < g_slots[s].signals_sent.load() &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  for (SlotState& s : g_slots) s.armed.store(false, std::memory_order_release);
  for (int s : others) g_slots[s].blocks = g_slots[s].signals_sent.load() == 0;
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a handler past its check finishes
  g_phase = "stopping";
  session.stop();
  g_phase = "writing";
  const ringtrace::SessionStats stats = session.stats();

  std::ofstream m(dir / kManifestFile);
  m << "config " << name_of(config) << "\n";
  m << "scale " << scale << "\n";
  m << "frame_marks " << g_slots[kFramerSlot].iterations.load() << "\n";
  for (int s = 0; s < kMaxSlots; ++s) {
    const SlotState& st = g_slots[s];
    if (st.tid.load() == 0) continue;
    m << "slot " << s << " role " << name_of(st.role) << " tid " << st.tid.load() << " iterations "
      << st.iterations.load() << " handler_runs " << st.handler_runs.load() << " signals_sent "
      << st.signals_sent.load() << " blocks_signal " << (st.blocks ? 1 : 0) << " comm "
      << (st.comm.empty() ? "-" : one_line(st.comm)) << "\n";
  }
  m << "stats recorded " << stats.recorded << " dropped " << stats.dropped << " dropped_without_ring "
    << stats.dropped_without_ring << " late_events " << stats.late_events << " unbalanced_ends "
    << stats.unbalanced_ends << " closed_at_stop " << stats.closed_at_stop << " self_drained " << stats.self_drained
    << " tsc " << (stats.clock.tsc ? 1 : 0) << " context_switches " << stats.context_switches
    << " threads_without_switches " << stats.threads_without_switches << " drain_passes " << stats.drain_passes << "\n";
  m << "switches_unavailable " << one_line(stats.context_switches_unavailable) << "\n";
  for (const ringtrace::ThreadStats& t : stats.threads) {
    m << "thread " << t.os_tid << " " << t.recorded << " " << t.dropped << " " << t.switches << " "
      << (t.name.empty() ? "-" : one_line(t.name)) << "\n";
  }
  for (const std::string& e : stats.exporter_errors) m << "exporter_error " << one_line(e) << "\n";
  m << "done\n";
  m.close();
  finished = true;
  heartbeat.join();
  return m ? 0 : 5;
}
