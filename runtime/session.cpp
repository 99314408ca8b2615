#include "ringtrace/session.hpp"

#include <algorithm>
#include <bit>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "clock_calibration.hpp"
#include "drainer.hpp"
#include "ringtrace/exporter.hpp"
#include "thread_registry.hpp"

namespace ringtrace {
namespace {

std::mutex g_session_mutex;
const void* g_active_session = nullptr;  // guarded by g_session_mutex

Config normalized(Config config) {
  std::size_t records = std::clamp<std::size_t>(config.buffer_records, 64, std::size_t{1} << 30);
  config.buffer_records = std::bit_ceil(records);
  if (!(config.high_water > 0.0)) config.high_water = 0.5;  // also catches NaN
  config.high_water = std::clamp(config.high_water, 0.01, 1.0);
  config.batch_events = std::clamp<std::size_t>(config.batch_events, 64, std::size_t{1} << 24);
  if (config.drain_interval.count() <= 0) config.drain_interval = std::chrono::microseconds(1);
  if (config.merge_grace.count() < 0) config.merge_grace = std::chrono::microseconds(0);
  return config;
}

}  // namespace

struct Session::Impl {
  Config config;
  std::vector<std::shared_ptr<Exporter>> exporters;
  std::unique_ptr<detail::Drainer> drainer;
  SessionStats last_stats;
  bool running = false;
  bool use_tsc = false;
};

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
  if (impl_->running) throw std::logic_error("ringtrace: add_exporter called on a running session; add exporters before start()");
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
  std::lock_guard<std::mutex> lock(g_session_mutex);
  if (impl_->running) throw std::logic_error("ringtrace: start() called on a session that is already running");
  if (g_active_session != nullptr) {
    throw std::logic_error("ringtrace: start() called while another session is running; stop it first");
  }
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

  detail::Registry& registry = detail::Registry::instance();
  const std::uint32_t epoch = registry.publish_epoch(params);
  try {
    impl_->drainer = std::make_unique<detail::Drainer>(config, impl_->exporters, converter, clock, use_tsc, epoch);
    impl_->drainer->start();
  } catch (...) {
    registry.retract_epoch();
    impl_->drainer.reset();
    throw;
  }
  impl_->use_tsc = use_tsc;
  impl_->running = true;
  g_active_session = impl_.get();
}

void Session::stop() {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  if (!impl_->running) return;
  detail::Registry::instance().retract_epoch();
  const std::uint64_t stop_ticks = detail::read_ticks(impl_->use_tsc);
  impl_->drainer->finish(stop_ticks, detail::monotonic_ns());
  impl_->last_stats = impl_->drainer->stats();
  impl_->drainer.reset();
  impl_->running = false;
  g_active_session = nullptr;
}

bool Session::running() const noexcept {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  return impl_->running;
}

SessionStats Session::stats() const {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  if (impl_->running) return impl_->drainer->stats();
  return impl_->last_stats;
}

const Config& Session::config() const noexcept { return impl_->config; }

}  // namespace ringtrace
