#include "ringtrace/session.hpp"
#include "ringtrace/instrument.hpp"
#include "windows.hpp"

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
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
#include "flight_recorder.hpp"
#include "ring_file.hpp"
#include "ringtrace/detail/raw_sink.hpp"
#include "ringtrace/exporter.hpp"
#include "site_table.hpp"
#include "thread_registry.hpp"

namespace ringtrace {
namespace {

// Guards every Session's running state and g_active. Held only briefly: stop() lets
// go of it while the drainer finishes, so exporters may call stats() and running().
std::mutex g_session_mutex;
Session::Impl* g_active = nullptr;  // the running session, guarded by g_session_mutex

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
  bool running = false;   // guarded by g_session_mutex
  bool use_tsc = false;
  pid_t pid = 0;          // the process that started the run (a fork child is another)
  std::mutex stop_mutex;  // one stop at a time; held while the drainer finishes
  // Steps and windows.
  std::vector<WindowExporterFactory> window_factories;
  detail::FlightRecorderHandle recorder;  // the run's flight recorder (kept after stop for stats())
  std::unique_ptr<detail::RingFile> ring_file;  // the run's rings, when a binary file asks for a mapping
  std::atomic<std::uint64_t> step{0};
  bool steps_recorded = false;  // a schedule or window exporters: steps are zones
  bool recording = true;        // the current step records (else the epoch is paused)
  const SiteInfo* step_site = detail::step_marker_site();
  std::uint32_t step_epoch = detail::kNoSession;
  std::uint64_t phase_until = 0;  // steps before this one are in the current step's phase

  // Begins step `n`: switches recording by the schedule, opens its zone.
  void begin_step(std::uint64_t n) {
    const detail::StepPlan plan = detail::plan_step(config.schedule, n);
    phase_until = plan.until;
    const bool rec = detail::records(plan.phase);
    if (rec != recording) {
      detail::Registry::instance().set_paused(!rec);
      recording = rec;
    }
    step_epoch = detail::kNoSession;
    if (rec) step_epoch = detail::zone_open<true>(step_site, n);  // the drainer names it "step #n"
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
  }
  // The current step's zone is left open: the drainer closes it at the stop time (it may
  // have been opened on another thread than this one).
  step_epoch = detail::kNoSession;
  detail::Registry::instance().retract_epoch();
  drainer->finish(detail::read_ticks(use_tsc));
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
  const auto key = [](const std::filesystem::path& path) {
    std::error_code ignored;
    const std::filesystem::path canonical = std::filesystem::weakly_canonical(path, ignored);
    return canonical.empty() ? path.lexically_normal() : canonical;
  };
  std::vector<std::filesystem::path> taken;
  for (const auto& other : impl_->exporters) {
    for (const auto& path : other->output_paths()) taken.push_back(key(path));
  }
  for (const auto& path : exporter->output_paths()) {
    const std::filesystem::path k = key(path);
    if (std::find(taken.begin(), taken.end(), k) != taken.end()) {
      throw std::invalid_argument("ringtrace: add_exporter: " + path.string() +
                                  " is already written by another exporter of this session");
    }
    taken.push_back(k);
  }
  impl_->exporters.push_back(std::move(exporter));
}

void Session::start() {
  std::lock_guard<std::mutex> stopping(impl_->stop_mutex);
  std::lock_guard<std::mutex> lock(g_session_mutex);
  if (impl_->inherited()) impl_->abandon();
  if (impl_->running) throw std::logic_error("ringtrace: start() called on a session that is already running");
  if (g_active != nullptr) {
    throw std::logic_error("ringtrace: start() called while another session is running; stop it first");
  }
  install_process_hooks();
  const Config& config = impl_->config;
  bool use_tsc = false;
  if (config.clock != ClockSource::monotonic) use_tsc = RINGTRACE_HAVE_TSC && detail::cpu_has_invariant_tsc();

  detail::TickConverter converter;
  if (use_tsc) {
    const detail::ClockSample first = detail::sample_clock(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    converter.start_tsc(first, detail::sample_clock(true));
  } else {
    converter.start_identity();
  }
  ClockInfo clock;
  clock.tsc = use_tsc;
  clock.ticks_per_second = converter.ticks_per_second();
  clock.start_ns = detail::monotonic_ns();

  detail::ActiveParams params;
  params.capacity = config.buffer_records;
  params.high_water = std::clamp<std::uint64_t>(
      static_cast<std::uint64_t>(static_cast<double>(config.buffer_records) * config.high_water), 8,
      config.buffer_records);
  params.overflow = config.overflow;
  params.use_tsc = use_tsc;
  params.grace_ns = static_cast<std::uint64_t>(std::chrono::nanoseconds(config.merge_grace).count());

  // Everything that can fail comes before the epoch is published, so that a failed
  // start leaves no thread bound to it; starting the drainer's thread is the one step
  // after, and its failure takes back the registrations it let in.
  std::vector<std::shared_ptr<Exporter>> exporters = impl_->exporters;
  const bool recorder = config.flight_recorder.keep.count() > 0;
  // With the flight recorder and no schedule, the factories get snapshots only.
  if (!impl_->window_factories.empty() && (config.schedule.has_value() || !recorder)) {
    exporters.push_back(detail::make_window_router(config.schedule, impl_->window_factories));
  }
  detail::FlightRecorderHandle flight;
  if (recorder) {
    flight = detail::make_flight_recorder(config, impl_->window_factories);
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
      ring_file = detail::RingFile::create(rings, static_cast<std::uint32_t>(::getpid()), clock.start_ns,
                                           config.buffer_records);
      params.ring_file = ring_file.get();
      drainer->set_rings_in_file(true);
    }
  }
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
  impl_->steps_recorded = config.schedule.has_value() || !impl_->window_factories.empty();
  if (impl_->steps_recorded) impl_->begin_step(0);
}

void Session::add_window_exporter(WindowExporterFactory factory) {
  if (!factory) throw std::invalid_argument("ringtrace: add_window_exporter got an empty factory");
  std::lock_guard<std::mutex> lock(g_session_mutex);
  if (impl_->running && !impl_->inherited()) {
    throw std::logic_error("ringtrace: add_window_exporter called on a running session; add them before start()");
  }
  impl_->window_factories.push_back(std::move(factory));
}

void Session::step() {
  Impl& s = *impl_;
  // One thread at a time calls step(): a load and a store, not a read-modify-write.
  const std::uint64_t next = s.step.load(std::memory_order_relaxed) + 1;
  s.step.store(next, std::memory_order_relaxed);
  if (!s.steps_recorded || !s.running) return;
  if (next < s.phase_until) [[likely]] {
    // No window boundary: nothing to switch. A recording step closes the step that ends
    // and opens the next with one clock read (wait and skip steps have no zone).
    if (s.recording) s.step_epoch = detail::zone_switch(s.step_site, s.step_epoch, next);
    return;
  }
  detail::zone_close(s.step_site, s.step_epoch);  // the step that ends
  s.begin_step(next);
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
  {
    std::lock_guard<std::mutex> lock(g_session_mutex);
    active = g_active;
    if (active == nullptr || active->inherited() || detail::on_drainer_thread()) return;
  }
  try {
    active->stop();
  } catch (...) {  // nothing to report to at exit; the files are as complete as they got
  }
}

// --- opt-in signals: the handler only posts a semaphore (async-signal-safe); a watcher
// thread stops the session and re-raises the signal with its default action.
sem_t g_signal_semaphore;
std::atomic<int> g_signal_number{0};
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
  while (sem_wait(&g_signal_semaphore) != 0) {
  }
  const int signal = g_signal_number.load();
  stop_active_at_exit();
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
  detail::g_epoch.store(0, std::memory_order_relaxed);
  detail::ThreadWriter& t = detail::t_writer;
  t = detail::ThreadWriter{};  // the parent's ring stays the parent's
  new (&g_session_mutex) std::mutex();  // another thread of the parent may have held it
  g_active = nullptr;
  detail::Registry::reset_after_fork();
  detail::reset_intern_lock_after_fork();
  for (const SavedAction& saved : g_saved_actions) sigaction(saved.signal, &saved.action, nullptr);
  g_saved_actions.clear();
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
    if (sem_init(&g_signal_semaphore, 0, 0) != 0) throw std::system_error(errno, std::generic_category(), "sem_init");
    install_process_hooks();
    std::thread(signal_watcher).detach();
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

}  // namespace ringtrace
