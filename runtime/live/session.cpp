#include "ringtrace/session.hpp"
#include "ringtrace/instrument.hpp"
#include "steps.hpp"
#include "windows.hpp"

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "clock_calibration.hpp"
#include "drainer.hpp"
#include "environment.hpp"
#include "flight_recorder.hpp"
#include "function_stack.hpp"
#include "output_claims.hpp"
#include "outside.hpp"
#include "raw_sink.hpp"
#include "ring_file.hpp"
#include "ringtrace/detail/functions.hpp"  // g_keep_inlined
#include "ringtrace/detail/memory.hpp"     // g_memory_on
#include "ringtrace/exporter.hpp"
#include "site_table.hpp"
#include "thread_registry.hpp"

namespace ringtrace {
namespace {

// Inside Session::step() or frame_mark() on this thread (its steps' lock taken or being
// taken): a nested call from a signal handler must not wait for it.
constinit thread_local bool t_stepping = false;

// Guards every Session's running state and g_active. Held only briefly: stop() lets
// go of it while the drainer finishes, so exporters may call stats() and running().
std::mutex g_session_mutex;
Session::Impl* g_active = nullptr;  // the running session, guarded by g_session_mutex
// The running session for frame_mark(), which takes no lock to find it: set when a run
// starts, cleared when it stops, and a frame mark in flight counted in g_frame_users
// (stop() waits for them) so that the session outlives every mark that found it.
std::atomic<Session::Impl*> g_frame_session{nullptr};
std::atomic<std::uint32_t> g_frame_users{0};
// The session started from the environment (RINGTRACE_OUTPUT) or from outside (the
// control channel), and what it writes; guarded by g_session_mutex.
Session::Impl* g_environment = nullptr;
bool g_environment_outside = false;            // g_environment was started through the control channel
void (*g_environment_after_stop)() = nullptr;  // guarded by g_session_mutex
// Session::start() calls it first (outside.hpp).
std::atomic<detail::ControlHook> g_control_hook{nullptr};
// The outputs' text lives in a function's static, made on first use: the environment
// session's constructor function runs in an order of its own among the files' static
// initializers, and with a global std::string here LeakSanitizer found the text it had
// set leaked at exit (the ASan build's functions_record test).
std::string& environment_outputs() {
  // Never destroyed: a static's destructor registered after the session's exit hook would
  // run before it, freeing ringtrace's own text through the program's free while
  // allocations are still recorded (one free the program never made); and the control
  // channel's thread may write it while the program exits.
  static std::string* const outputs = new std::string();
  return *outputs;
}

// The thread that waits for a stop and records nothing meanwhile (the drainer's final
// pass then waits for no record of its): stop()'s caller, or the thread whose _exit asked
// the signal watcher to stop the session (stop_active_before_exit).
std::atomic<std::uint64_t> g_exit_waiter{0};
std::uint64_t stopping_thread() {
  const std::uint64_t waiter = g_exit_waiter.load(std::memory_order_relaxed);
  return waiter != 0 ? waiter : static_cast<std::uint64_t>(::syscall(SYS_gettid));
}

Config normalized(Config config) {
  std::size_t records = std::clamp<std::size_t>(config.buffer_records, 64, std::size_t{1} << 30);
  config.buffer_records = std::bit_ceil(records);
  if (!(config.high_water > 0.0)) config.high_water = 0.5;  // also catches NaN
  config.high_water = std::clamp(config.high_water, 0.01, 1.0);
  config.batch_events = std::clamp<std::size_t>(config.batch_events, 64, std::size_t{1} << 24);
  if (config.drain_interval.count() <= 0) config.drain_interval = std::chrono::microseconds(1);
  if (config.merge_grace.count() < 0) config.merge_grace = std::chrono::microseconds(0);
  config.sample_every = std::clamp<std::uint32_t>(config.sample_every, 1, detail::kMaxSampleEvery);
  return config;
}

void install_process_hooks();

}  // namespace

struct Session::Impl {
  Config config;
  std::vector<std::shared_ptr<Exporter>> exporters;
  std::unique_ptr<detail::Drainer> drainer;
  SessionStats last_stats;
  bool running = false;  // guarded by g_session_mutex
  bool use_tsc = false;
  pid_t pid = 0;          // the process that started the run (a fork child is another)
  std::mutex stop_mutex;  // one stop at a time; held while the drainer finishes
  // Steps and windows.
  std::vector<WindowExporterFactory> window_factories;
  detail::FlightRecorderHandle recorder;        // the run's flight recorder (kept after stop for stats())
  std::unique_ptr<detail::RingFile> ring_file;  // the run's rings, when a binary file asks for a mapping
  // Config::context_switches: a stream of start()'s thread, kept open for the run and never
  // read. The kernel's first switch stream in a process switches its scheduler hooks on (8
  // to 14 ms measured here); this one pays that in start(), not a thread's first event.
  switches::SwitchStream warm_switches;
  std::atomic<std::uint64_t> step{0};
  // Steps (steps.hpp): step() and frame_mark() take turns through this lock (a few
  // instructions and one record while held), so that the markers' times are in the
  // order of their numbers whichever threads call.
  std::atomic_flag step_lock = ATOMIC_FLAG_INIT;
  // A schedule, or window exporters the window router feeds (not a flight recorder's,
  // which get snapshots only): step 0 is a zone from start(), the window router's first
  // step. Without them a step's zone begins at step(), so a program that never calls it
  // has none (a "step #0" as long as the run would be half the table's self time).
  bool windows = false;
  bool recording = true;  // the current step records (else the epoch is paused)
  // The current step's zone was begun. Atomic: a step() that cannot take the lock reads
  // it to count what it loses.
  std::atomic<bool> step_open{false};
  std::uint64_t open_step = 0;  // the step whose zone is open in the stream (with step_open)
  // A marker that would have begun a step was lost: the next step() ends that step, which
  // the stream never began (its end is counted as dropped then; none if no step comes).
  bool end_of_lost_step = false;
  // The last marker's time, and the least distance to the next one (two nanoseconds of
  // ticks): markers are written in the order of their numbers, and stamped so, whichever
  // core each caller reads its clock on and however long it was kept from running.
  std::uint64_t last_step_ticks = 0;
  std::uint64_t step_gap_ticks = 2;
  const SiteInfo* step_site = detail::step_marker_site();
  std::uint64_t phase_until = 0;  // steps before this one are in the current step's phase

  // Takes the steps' lock, or returns false where waiting could be for ever: a signal
  // handler that interrupted its own thread's step() (the lock is its own thread's), and
  // the drainer's thread (an exporter's callback, a handler that ran there), which the
  // holder may be waiting for in block mode. Async-signal-safe.
  bool lock_steps() noexcept {
    if (t_stepping) return false;
    const bool drainer = detail::on_drainer_thread();
    t_stepping = true;
    std::atomic_signal_fence(std::memory_order_seq_cst);  // before the lock: a handler here sees it
    while (step_lock.test_and_set(std::memory_order_acquire)) {
      if (drainer) {
        std::atomic_signal_fence(std::memory_order_seq_cst);
        t_stepping = false;
        return false;
      }
      while (step_lock.test(std::memory_order_relaxed)) std::this_thread::yield();
    }
    return true;
  }
  void unlock_steps() noexcept {
    step_lock.clear(std::memory_order_release);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    t_stepping = false;
  }

  // Step `n` begins (under the step lock): with a schedule, recording is switched by its
  // phase at a phase boundary; the marker ends the step that ends (if its zone is open)
  // and begins step n's (if it records). Written while recording is on: after resuming,
  // before pausing.
  void begin_step(std::uint64_t n) {
    bool rec = recording;
    if (n >= phase_until) {
      const detail::StepPlan plan = detail::plan_step(config.schedule, n);
      phase_until = plan.until;
      rec = detail::records(plan.phase);
    }
    if (rec && !recording) {
      detail::Registry::instance().set_paused(false);
      recording = true;
    }
    // The stream's step zones must nest as a sequence whatever markers the rings dropped:
    // a dropped marker loses the step it begins (its begin counted now, its end when the
    // next step() makes it), and the step open before it stays open in the stream until a
    // marker that is written ends it (a marker of its own first, when the next number is
    // not its successor's).
    if (end_of_lost_step) {
      detail::count_lost_steps(1);
      end_of_lost_step = false;
    }
    bool open = step_open.load(std::memory_order_relaxed);
    const bool begins = rec && (windows || n > 0);
    const auto marker = [&](std::uint64_t value, unsigned lost) {
      const std::uint64_t least = last_step_ticks != 0 ? last_step_ticks + step_gap_ticks : 0;
      const std::uint64_t written = detail::write_step_marker(step_site, value, least, lost);
      if (written != 0) last_step_ticks = written;
      return written != 0;
    };
    if (open && open_step + 1 != n && marker((open_step + 1) | detail::kStepEnds, 0)) open = false;
    if (open && open_step + 1 != n) {
      if (begins) {  // cannot begin inside the step still open
        detail::count_lost_steps(1);
        end_of_lost_step = true;
      }
    } else if (open || begins) {
      const std::uint64_t value = n | (open ? detail::kStepEnds : 0) | (begins ? detail::kStepBegins : 0);
      if (marker(value, begins ? 1 : 0)) {
        open = begins;
        open_step = n;
      } else {
        end_of_lost_step = begins;
      }
    }
    step_open.store(open, std::memory_order_relaxed);
    if (!rec && recording) {
      detail::Registry::instance().set_paused(true);
      recording = false;
    }
  }

  // Session::step() and frame_mark().
  void next_step() noexcept {
    if (!lock_steps()) {
      // Not recorded and not counted as a step (the number stays): the boundary's events
      // are counted as dropped, an end if a step zone is open and the begin.
      if (g_frame_session.load(std::memory_order_relaxed) == this) {
        detail::count_lost_steps(1 + unsigned{step_open.load(std::memory_order_relaxed)});
      }
      return;
    }
    const std::uint64_t next = step.load(std::memory_order_relaxed) + 1;
    step.store(next, std::memory_order_relaxed);
    // Between start() and stop() (read under the lock stop() takes too: a step after the
    // stop records nothing).
    if (g_frame_session.load(std::memory_order_relaxed) == this) begin_step(next);
    unlock_steps();
  }

  // A fork child's copy of a running session: its drainer thread does not exist here
  // and its exporters belong to the parent. Leaked on purpose: destroying the drainer
  // would join a thread that is not there and run the exporters' destructors.
  bool inherited() const { return running && pid != ::getpid(); }
  void abandon() {
    (void)drainer.release();
    running = false;
  }

  void stop();
};

void Session::Impl::stop() {
  if (detail::on_drainer_thread()) {
    throw std::logic_error("ringtrace: stop() called from an exporter's callback; it would wait for itself");
  }
  std::lock_guard<std::mutex> stopping(stop_mutex);
  {
    std::lock_guard<std::mutex> lock(g_session_mutex);
    if (!running) return;
    if (inherited()) {
      abandon();
      return;
    }
    running = false;  // running() is false from here; stats() reads the drainer's
    // Allocations end here: what stop() frees and allocates is ringtrace's own.
    detail::g_memory_on.store(0, std::memory_order_relaxed);
  }
  // No step or frame mark from here on (they wait for this to end); the current step's
  // zone is left open: the drainer closes it at the stop time.
  if (g_frame_session.load() == this) {
    g_frame_session.store(nullptr);
    while (g_frame_users.load() != 0) std::this_thread::yield();  // marks that found this session
  }
  lock_steps();
  // A step left open in the stream by markers that were lost after it: its end was made
  // by a later step() and never written (the stop closes it): counted as dropped. The
  // last step's end is the stop's, made by no step().
  if (step_open.load(std::memory_order_relaxed) && open_step != step.load(std::memory_order_relaxed)) {
    detail::count_lost_steps(1);
  }
  step_open = false;
  end_of_lost_step = false;
  unlock_steps();
  detail::Registry::instance().retract_epoch();
  drainer->finish(detail::read_ticks(use_tsc), stopping_thread());
  warm_switches.close();
  // Every record is in the trace file now: the rings' file is not needed any more (the
  // slots stay mapped until their threads bind rings of another session).
  if (ring_file) {
    ring_file->remove();
    ring_file.reset();
  }
  SessionStats stats = drainer->stats();
  std::lock_guard<std::mutex> lock(g_session_mutex);
  last_stats = std::move(stats);
  drainer.reset();
  if (g_active == this) g_active = nullptr;
  if (g_environment == this) g_environment = nullptr;
}

Session::Session(Config config) : impl_(std::make_unique<Impl>()) { impl_->config = normalized(std::move(config)); }

Session::~Session() {
  try {
    stop();
  } catch (...) {  // a destructor must not throw; stop() reports through stats()
  }
}

void Session::add_exporter(std::shared_ptr<Exporter> exporter) {
  if (!exporter) throw std::invalid_argument("ringtrace: add_exporter got a null exporter");
  std::lock_guard<std::mutex> lock(g_session_mutex);
  if (impl_->running && !impl_->inherited()) {
    throw std::logic_error("ringtrace: add_exporter called on a running session; add exporters before start()");
  }
  // Two exporters writing one file would interleave into a broken one: refuse the second.
  detail::OutputClaims taken(impl_->exporters);
  if (const std::optional<std::filesystem::path> clash = taken.claim(*exporter)) {
    throw std::invalid_argument("ringtrace: add_exporter: " + clash->string() +
                                " is already written by another exporter of this session");
  }
  impl_->exporters.push_back(std::move(exporter));
}

void Session::start() {
  if (const detail::ControlHook hook = g_control_hook.load(std::memory_order_acquire)) hook(impl_->config);
  // Allocations are recorded from the end of start(): what it allocates and frees itself
  // (the drainer's thread, its locals) is ringtrace's own, not the program's.
  // A start that records nothing (another session runs) leaves the running one's as it was.
  const std::uint8_t was = detail::g_memory_on.exchange(0, std::memory_order_relaxed);
  bool started = false;
  try {
    started = start_recording();
  } catch (...) {
    detail::g_memory_on.store(was, std::memory_order_relaxed);
    throw;
  }
  detail::g_memory_on.store(started ? (impl_->config.memory ? 1 : 0) : was, std::memory_order_relaxed);
}

bool Session::start_recording() {
  std::lock_guard<std::mutex> stopping(impl_->stop_mutex);
  std::lock_guard<std::mutex> lock(g_session_mutex);
  if (impl_->inherited()) impl_->abandon();
  if (impl_->running) throw std::logic_error("ringtrace: start() called on a session that is already running");
  if (g_active != nullptr && g_active == g_environment) {
    // `ringtrace record` (or RINGTRACE_OUTPUT) records this process already: the
    // program runs on, its session records nothing. Said once.
    static bool said = false;
    if (!said) {
      said = true;
      std::fprintf(stderr,
                   "ringtrace: this process is recorded %s: the program's own "
                   "Session::start() records nothing and its exporters get no events (one session at a time)\n",
                   environment_outputs().c_str());
    }
    return false;
  }
  if (g_active != nullptr) {
    throw std::logic_error("ringtrace: start() called while another session is running; stop it first");
  }
  install_process_hooks();
  const Config& config = impl_->config;
  bool use_tsc = false;
  if (config.clock != ClockSource::monotonic) use_tsc = RINGTRACE_HAVE_TSC && detail::cpu_has_invariant_tsc();

  detail::TickConverter converter;
  if (use_tsc) {
    const detail::ClockPair samples = detail::provisional_tsc_samples();  // the drainer fits the rest
    converter.start_tsc(samples.anchor, samples.later);
  } else {
    converter.start_identity();
  }
  ClockInfo clock;
  clock.tsc = use_tsc;
  clock.ticks_per_second = converter.ticks_per_second();
  clock.start_ns = detail::monotonic_ns();

  detail::ActiveParams params;
  params.ring_bytes = detail::ring_bytes_for(config.buffer_records);
  params.high_water = std::clamp<std::uint64_t>(
      static_cast<std::uint64_t>(static_cast<double>(params.ring_bytes) * config.high_water), 128, params.ring_bytes);
  params.overflow = config.overflow;
  params.use_tsc = use_tsc;
  params.grace_ns = static_cast<std::uint64_t>(std::chrono::nanoseconds(config.merge_grace).count());
  params.yield_to_drainer = config.yield_to_drainer;
  params.context_switches = config.context_switches;
  params.memory_stack_bytes = config.memory ? config.memory_stack_bytes : 0;
  if (config.context_switches) {
    impl_->warm_switches = switches::SwitchStream::open(static_cast<pid_t>(::syscall(SYS_gettid)), 1);
  }

  // Everything that can fail comes before the epoch is published, so that a failed
  // start leaves no thread bound to it; starting the drainer's thread is the one step
  // after, and its failure takes back the registrations it let in.
  std::vector<std::shared_ptr<Exporter>> exporters = impl_->exporters;
  // A window's exporters may not write these (make_window_exporters refuses them).
  const std::vector<std::filesystem::path> session_outputs = detail::OutputClaims(impl_->exporters).paths();
  const bool recorder = config.flight_recorder.keep.count() > 0;
  // With the flight recorder and no schedule, the factories get snapshots only.
  const bool window_router = !impl_->window_factories.empty() && (config.schedule.has_value() || !recorder);
  if (window_router) {
    exporters.push_back(detail::make_window_router(config.schedule, impl_->window_factories, session_outputs));
  }
  detail::FlightRecorderHandle flight;
  if (recorder) {
    flight = detail::make_flight_recorder(config, impl_->window_factories, session_outputs);
    exporters.push_back(detail::as_exporter(flight));
  }
  auto drainer = std::make_unique<detail::Drainer>(config, exporters, converter, clock, use_tsc, 0);
  for (const std::string& category : config.disabled_categories) ringtrace::set_category_enabled(category, false);
  detail::g_sample_every.store(config.sample_every, std::memory_order_relaxed);
  // Rings in a file mapping, when the binary file asks for it (one exporter at most).
  std::unique_ptr<detail::RingFile> ring_file;
  {
    std::filesystem::path rings;
    for (const auto& exporter : exporters) {
      const auto* raw = dynamic_cast<const detail::RawSink*>(exporter.get());
      const std::filesystem::path asked = raw != nullptr ? raw->rings_path() : std::filesystem::path();
      if (asked.empty()) continue;
      if (!rings.empty()) {
        throw std::invalid_argument("ringtrace: two exporters ask for the rings in a file (" + rings.string() +
                                    " and " + asked.string() + "); a session has one set of rings");
      }
      rings = asked;
    }
    if (!rings.empty()) {
      ring_file =
          detail::RingFile::create(rings, static_cast<std::uint32_t>(::getpid()), clock.start_ns, params.ring_bytes);
      params.ring_file = ring_file.get();
      drainer->set_rings_in_file(true);
    }
  }
  detail::set_function_max_depth(config.functions.max_depth);
  detail::g_keep_inlined.store(config.functions.inlined, std::memory_order_relaxed);
  detail::Registry& registry = detail::Registry::instance();
  const std::uint32_t epoch = registry.publish_epoch(params);
  drainer->set_epoch(epoch);
  try {
    drainer->start();
  } catch (...) {
    registry.retract_epoch();
    registry.release_pending_registrations();
    if (ring_file) ring_file->remove();
    throw;
  }
  impl_->drainer = std::move(drainer);
  impl_->ring_file = std::move(ring_file);
  impl_->recorder = std::move(flight);
  impl_->use_tsc = use_tsc;
  impl_->pid = ::getpid();
  impl_->running = true;
  g_active = impl_.get();
  impl_->step = 0;
  impl_->recording = true;
  impl_->step_open.store(false, std::memory_order_relaxed);
  impl_->last_step_ticks = 0;
  impl_->end_of_lost_step = false;
  impl_->step_gap_ticks = std::max<std::uint64_t>(2, static_cast<std::uint64_t>(2 * clock.ticks_per_second / 1e9) + 1);
  impl_->phase_until = 0;
  impl_->windows = config.schedule.has_value() || window_router;
  impl_->lock_steps();
  impl_->begin_step(0);
  impl_->unlock_steps();
  g_frame_session.store(impl_.get(), std::memory_order_release);
  return true;
}

namespace detail {
void mark_environment_session(Session& session, std::string described, void (*after_stop)()) {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  g_environment = g_active;
  g_environment_outside = false;
  g_environment_after_stop = after_stop;
  environment_outputs() = "from the environment (" + described + ")";
  (void)session;
}

void mark_outside_session(Session& session, std::string described) {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  g_environment = g_active;
  g_environment_outside = true;
  g_environment_after_stop = nullptr;
  environment_outputs() = "from outside (" + described + ")";
  (void)session;
}

RunningSession running_session() {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  RunningSession r;
  Session::Impl* active = g_active;
  if (active == nullptr || !active->running || active->inherited()) return r;
  r.origin = active != g_environment ? SessionOrigin::program
             : g_environment_outside ? SessionOrigin::outside
                                     : SessionOrigin::environment;
  if (active == g_environment) r.described = environment_outputs();
  r.decodes = active->drainer && active->drainer->decodes();
  r.keep = active->recorder.exporter ? active->config.flight_recorder.keep : std::chrono::milliseconds(0);
  r.window_factories = active->window_factories.size();
  r.merge_grace = active->config.merge_grace;
  if (active->drainer) {
    const SessionStats stats = active->drainer->stats();
    r.recorded = stats.recorded;
    r.dropped = stats.dropped;
  }
  return r;
}

bool attach_tap(std::shared_ptr<Exporter> tap, std::string& why) {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  Session::Impl* active = g_active;
  if (active == nullptr || !active->running || active->inherited() || !active->drainer) {
    why = "no session is running";
    return false;
  }
  if (!active->drainer->decodes()) {
    why =
        "the running session only writes a binary trace file, whose records its drainer hands over undecoded: "
        "there is no stream of events to join";
    return false;
  }
  active->drainer->taps().attach(std::move(tap));
  return true;
}

void detach_tap(const Exporter* tap) {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  Session::Impl* active = g_active;
  if (active != nullptr && active->running && !active->inherited() && active->drainer) {
    active->drainer->taps().detach(tap);
  }
}

bool request_outside_snapshot(OutsideSnapshot outside, std::string& why) {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  Session::Impl* active = g_active;
  if (active == nullptr || !active->running || active->inherited()) {
    why = "no session is running, so no flight recorder";
    return false;
  }
  if (!active->recorder.exporter || !active->drainer) {
    why = "the running session has no flight recorder (Config::flight_recorder.keep is 0)";
    return false;
  }
  // A quiet program: the drainer's passes serve the request until it is done.
  detail::Taps& taps = active->drainer->taps();
  std::shared_ptr<Exporter> quiet = active->recorder.quiet_passes(active->config.merge_grace);
  outside.done = [done = std::move(outside.done), &taps, quiet = quiet.get()](
                     const std::string& error, const std::vector<std::filesystem::path>& files) {
    taps.detach(quiet);
    done(error, files);
  };
  taps.attach(std::move(quiet));
  return active->recorder.request("external", std::move(outside));
}

void set_control_hook(ControlHook hook) noexcept { g_control_hook.store(hook, std::memory_order_release); }
}  // namespace detail

void Session::add_window_exporter(WindowExporterFactory factory) {
  if (!factory) throw std::invalid_argument("ringtrace: add_window_exporter got an empty factory");
  std::lock_guard<std::mutex> lock(g_session_mutex);
  if (impl_->running && !impl_->inherited()) {
    throw std::logic_error("ringtrace: add_window_exporter called on a running session; add them before start()");
  }
  impl_->window_factories.push_back(std::move(factory));
}

void Session::step() { impl_->next_step(); }

void frame_mark() noexcept {
  g_frame_users.fetch_add(1);  // sequentially consistent with stop()'s store and load
  if (Session::Impl* s = g_frame_session.load()) s->next_step();
  g_frame_users.fetch_sub(1);
}

std::uint64_t Session::current_step() const noexcept { return impl_->step.load(std::memory_order_relaxed); }

void Session::stop() { impl_->stop(); }

bool Session::running() const noexcept {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  return impl_->running && !impl_->inherited();
}

SessionStats Session::stats() const {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  // While stop() finishes, the drainer still exists (running is already false).
  SessionStats stats = impl_->drainer && !impl_->inherited() ? impl_->drainer->stats() : impl_->last_stats;
  stats.snapshots = impl_->recorder.snapshots();
  stats.snapshots_suppressed = impl_->recorder.suppressed();
  return stats;
}

bool Session::snapshot(std::string reason) {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  if (!impl_->running || impl_->inherited()) return false;
  return impl_->recorder.request(std::move(reason));
}

const Config& Session::config() const noexcept { return impl_->config; }

// ---------------------------------------------------------------------------------------
// Process hooks: exit paths, fork, and opt-in signals.

namespace {

// exit() from any thread, quick_exit(), and returning from main with a session that is
// still running (its Session object never destroyed: on the heap, or in a frame that
// exit() skips): stop it so every exporter finishes its files. Registered at the first
// start(), so it runs before the destructors of Sessions constructed earlier (which then
// find them stopped).
void stop_active_at_exit() {
  Session::Impl* active = nullptr;
  void (*after_stop)() = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_session_mutex);
    active = g_active;
    if (active == nullptr || active->inherited() || detail::on_drainer_thread()) return;
    if (active == g_environment) after_stop = g_environment_after_stop;
  }
  try {
    active->stop();
  } catch (...) {  // nothing to report to at exit; the files are as complete as they got
  }
  if (after_stop != nullptr) after_stop();
}

// --- opt-in signals: the handler only posts a semaphore (async-signal-safe); a watcher
// thread stops the session and re-raises the signal with its default action.
sem_t g_signal_semaphore;
std::atomic<int> g_signal_number{0};
// An _exit while the environment's session runs (stop_active_before_exit): the watcher
// stops the session without raising anything, then posts this.
constexpr int kExitRequest = -1;
sem_t g_stopped_semaphore;
std::atomic<bool> g_watcher_started{false};
struct SavedAction {
  int signal = 0;
  struct sigaction action {};
};
std::vector<SavedAction> g_saved_actions;  // guarded by g_session_mutex; read in the fork child

void on_flush_signal(int signal) {
  int none = 0;
  g_signal_number.compare_exchange_strong(none, signal);
  sem_post(&g_signal_semaphore);
}

void signal_watcher() {
  detail::mark_thread_untraced();
  while (sem_wait(&g_signal_semaphore) != 0) {}
  const int signal = g_signal_number.load();
  stop_active_at_exit();
  if (signal == kExitRequest) {
    sem_post(&g_stopped_semaphore);
    return;
  }
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigaction(signal, &fallback, nullptr);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, signal);
  pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
  raise(signal);  // default action: the process ends as the signal meant it to
}

// --- fork: the child has one thread and none of the parent's drainer. It records
// nothing, touches nothing of the parent's, and may start a session of its own.
void after_fork_in_child() {
  detail::drainer_fork_child();
  if (g_active != nullptr) g_active->warm_switches.release_in_child();  // the parent's thread's
  detail::g_epoch.store(0, std::memory_order_relaxed);
  detail::unbind_thread_after_fork();   // the parent's ring stays the parent's (not even mapped here)
  new (&g_session_mutex) std::mutex();  // another thread of the parent may have held it
  // The steps' lock too; and frame_mark() in the child finds no session.
  if (g_active != nullptr) g_active->step_lock.clear();
  g_frame_session.store(nullptr, std::memory_order_relaxed);
  g_frame_users.store(0, std::memory_order_relaxed);
  g_active = nullptr;
  g_environment = nullptr;
  g_environment_outside = false;
  g_environment_after_stop = nullptr;
  detail::Registry::reset_after_fork();
  detail::reset_intern_lock_after_fork();
  for (const SavedAction& saved : g_saved_actions) sigaction(saved.signal, &saved.action, nullptr);
  g_saved_actions.clear();
  g_watcher_started.store(false, std::memory_order_relaxed);  // the parent's thread; the child has none
}

void install_process_hooks() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::atexit(stop_active_at_exit);
    std::at_quick_exit(stop_active_at_exit);
    pthread_atfork(detail::drainer_fork_prepare, detail::drainer_fork_parent, after_fork_in_child);
  });
}

}  // namespace

void flush_on_signals(std::initializer_list<int> signals) {
  for (const int signal : signals) {
    if (signal <= 0 || signal >= NSIG || signal == SIGKILL || signal == SIGSTOP) {
      throw std::invalid_argument("ringtrace: flush_on_signals: signal " + std::to_string(signal) +
                                  " cannot be caught");
    }
  }
  static std::once_flag once;
  std::call_once(once, [] {
    if (sem_init(&g_signal_semaphore, 0, 0) != 0 || sem_init(&g_stopped_semaphore, 0, 0) != 0)
      throw std::system_error(errno, std::generic_category(), "sem_init");
    install_process_hooks();
    detail::start_own_thread(signal_watcher).detach();
    g_watcher_started.store(true, std::memory_order_release);
  });
  std::lock_guard<std::mutex> lock(g_session_mutex);
  for (const int signal : signals) {
    const bool known = std::any_of(g_saved_actions.begin(), g_saved_actions.end(),
                                   [&](const SavedAction& saved) { return saved.signal == signal; });
    struct sigaction action {};
    action.sa_handler = on_flush_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    SavedAction saved;
    saved.signal = signal;
    if (sigaction(signal, &action, &saved.action) != 0) {
      throw std::system_error(errno, std::generic_category(), "ringtrace: flush_on_signals: sigaction");
    }
    if (!known) g_saved_actions.push_back(saved);
  }
}

namespace detail {

bool stop_active_before_exit(std::chrono::milliseconds timeout) noexcept {
  if (!g_watcher_started.load(std::memory_order_acquire)) return false;
  {
    std::lock_guard<std::mutex> lock(g_session_mutex);
    if (g_active == nullptr || g_active->inherited()) return false;
  }
  int none = 0;
  if (!g_signal_number.compare_exchange_strong(none, kExitRequest)) return false;  // a signal is being handled
  g_exit_waiter.store(static_cast<std::uint64_t>(::syscall(SYS_gettid)), std::memory_order_relaxed);
  sem_post(&g_signal_semaphore);
  timespec until{};
  clock_gettime(CLOCK_REALTIME, &until);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
  until.tv_sec += static_cast<time_t>(ns / 1000000000);
  until.tv_nsec += static_cast<long>(ns % 1000000000);
  if (until.tv_nsec >= 1000000000) {
    until.tv_sec += 1;
    until.tv_nsec -= 1000000000;
  }
  while (sem_timedwait(&g_stopped_semaphore, &until) != 0) {
    if (errno != EINTR) return false;
  }
  return true;
}

}  // namespace detail

}  // namespace ringtrace
