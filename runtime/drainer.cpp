#include "drainer.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>

#include "allocator.hpp"

namespace ringtrace::detail {

Drainer::Drainer(const Config& config, std::vector<std::shared_ptr<Exporter>> exporters, TickConverter clock,
                 ClockInfo clock_info, bool use_tsc, std::uint32_t epoch)
    : config_(config),
      process_name_(config.process_name),
      exporters_(std::move(exporters)),
      exporter_failed_(exporters_.size(), false),
      converter_(clock),
      clock_info_(clock_info),
      use_tsc_(use_tsc),
      epoch_(epoch),
      registry_(Registry::instance()) {
  const double tps = converter_.ticks_per_second();
  grace_ticks_ = static_cast<std::uint64_t>(static_cast<double>(config_.merge_grace.count()) * tps / 1e6);
  refit_period_ticks_ = static_cast<std::uint64_t>(tps);  // about one second
  batch_capacity_ = std::max<std::size_t>(config_.batch_events, 64);
  batch_ = static_cast<Event*>(runtime_alloc(batch_capacity_ * sizeof(Event), 64));
}

Drainer::~Drainer() {
  if (thread_.joinable()) {
    stop_.store(true, std::memory_order_release);
    registry_.wake_drainer();
    thread_.join();
  }
  runtime_free(batch_);
}

void Drainer::start() {
  thread_ = std::thread([this] { run(); });
}

void Drainer::run() {
  mark_thread_untraced();  // the drainer and the exporters it calls are never traced
  for (std::size_t i = 0; i < exporters_.size(); ++i) {
    try {
      exporters_[i]->on_start(*this);
    } catch (const std::exception& e) {
      exporter_failed_[i] = true;
      errors_.push_back(std::string("exporter ") + std::to_string(i) + " on_start: " + e.what());
    }
  }
  last_refit_ticks_ = read_ticks(use_tsc_);
  while (!stop_.load(std::memory_order_acquire)) {
    pass(false);
    registry_.wait_for_wake(config_.drain_interval, stop_);
  }
  pass(true);
}

void Drainer::finish(std::uint64_t stop_ticks, std::uint64_t stop_ns) {
  stop_ticks_.store(stop_ticks, std::memory_order_relaxed);
  stop_ns_.store(stop_ns, std::memory_order_relaxed);
  stop_.store(true, std::memory_order_release);  // the drainer reads both after seeing this
  registry_.wake_drainer();
  if (thread_.joinable()) thread_.join();
}

void Drainer::accept_registrations() {
  ThreadBuffer* buffer = nullptr;
  while (registry_.take_registration(buffer)) {
    if (buffer->epoch != epoch_) {  // cannot happen: stop() drains the queue; never read a stranger's ring
      registry_.release(buffer);
      continue;
    }
    auto cursor = std::make_unique<Cursor>();
    cursor->buffer = buffer;
    cursor->thread = static_cast<ThreadId>(threads_.size());
    cursor->name_version = buffer->name_version.load(std::memory_order_acquire);
    ThreadRow row;
    row.info.id = cursor->thread;
    row.info.os_tid = buffer->os_tid;
    row.info.name = buffer->read_name();
    row.info.sort_index = cursor->thread;
    threads_.push_back(std::move(row));
    cursors_.push_back(std::move(cursor));
  }
}

void Drainer::update_names(Cursor& c) {
  const std::uint32_t version = c.buffer->name_version.load(std::memory_order_acquire);
  if (version == c.name_version) return;
  c.name_version = version;
  threads_[c.thread].info.name = c.buffer->read_name();
}

std::uint64_t Drainer::head_ticks(const Cursor& c) const {
  const std::uint64_t ticks = c.buffer->slots[c.read_pos & (c.buffer->capacity - 1)].ticks;
  return ticks < c.last_ticks ? c.last_ticks : ticks;
}

Event& Drainer::next_event() {
  if (batch_size_ == batch_capacity_) [[unlikely]] flush();
  return batch_[batch_size_++];
}

std::uint64_t Drainer::emit_run(Cursor& c, std::uint64_t limit) {
  const Record* const slots = c.buffer->slots;
  const std::uint64_t mask = c.buffer->capacity - 1;
  ThreadRow& row = threads_[c.thread];
  while (c.read_pos < c.end) {
    const Record& rec = slots[c.read_pos & mask];
    // Per thread, time never goes backwards (a thread that migrates between cores
    // could see a TSC a few cycles behind); across threads, late arrivals are raised
    // to the last time emitted, so the stream stays ordered and zones stay nested.
    std::uint64_t ticks = rec.ticks < c.last_ticks ? c.last_ticks : rec.ticks;
    if (ticks > limit) return ticks;
    c.last_ticks = ticks;
    std::uint8_t flags = 0;
    if (ticks < last_emitted_ticks_) [[unlikely]] {
      ticks = last_emitted_ticks_;
      flags = EventFlags::late;
      ++late_;
    } else {
      last_emitted_ticks_ = ticks;
    }
    const std::uint64_t kind = rec.word & record_kind_mask;
    const auto* site = reinterpret_cast<const SiteInfo*>(rec.word & ~record_kind_mask);
    // The slot after a counter, region or dropped header; published with it.
    const auto payload = [&] { return slots[(c.read_pos + 1) & mask].ticks; };
    if (kind == record_zone_end) {
      if (c.open.empty()) [[unlikely]] {
        ++unbalanced_;
        c.read_pos += 1;
        continue;
      }
      const Open open = c.open.back();
      c.open.pop_back();
      Event& e = next_event();
      e = Event{converter_.to_ns(ticks), open.site(), c.thread, EventKind::zone_end,
                static_cast<std::uint8_t>(flags | open.flags()), 0, static_cast<std::uint32_t>(c.open.size()), {}};
      e.value.u = open.value;
      ++row.recorded;
      c.read_pos += 1;
      continue;
    }
    Event& e = next_event();
    e = Event{converter_.to_ns(ticks), 0, c.thread, EventKind::instant, flags, 0,
              static_cast<std::uint32_t>(c.open.size()), {}};
    e.value.u = 0;
    switch (kind) {
      case record_zone_begin:
        e.site = sites_.id_of(site);
        e.kind = EventKind::zone_begin;
        c.open.push_back(make_open(e.site, 0, 0));
        ++row.recorded;
        c.read_pos += 1;
        break;
      case record_region_begin:
        e.site = sites_.id_of(site);
        e.kind = EventKind::zone_begin;
        e.flags |= EventFlags::region;
        e.value.u = payload();
        c.open.push_back(make_open(e.site, EventFlags::region, e.value.u));
        ++row.recorded;
        c.read_pos += 2;
        break;
      case record_instant:
        e.site = sites_.id_of(site);
        ++row.recorded;
        c.read_pos += 1;
        break;
      case record_counter_int:
      case record_counter_double:
        e.site = sites_.id_of(site);
        e.kind = EventKind::counter;
        if (kind == record_counter_double) e.flags |= EventFlags::counter_double;
        e.value.u = payload();
        ++row.recorded;
        c.read_pos += 2;
        break;
      case record_dropped:
        e.site = sites_.id_of(&kDroppedSite);
        e.kind = EventKind::dropped;
        e.value.u = payload();
        c.reported_drops += e.value.u;
        c.read_pos += 2;
        break;
      default:  // not written by any writer; skip the slot rather than stall
        --batch_size_;
        c.read_pos += 1;
        break;
    }
  }
  return kExhausted;
}

void Drainer::merge(std::uint64_t watermark) {
  active_.clear();
  for (auto& c : cursors_) {
    if (c->read_pos >= c->end) continue;
    const std::uint64_t head = head_ticks(*c);
    if (head <= watermark) active_.push_back(Active{c.get(), head});
  }
  while (!active_.empty()) {
    // The thread with the oldest head emits a run up to the second-oldest head: with
    // threads that interleave at microsecond scale, runs are long and this is cheap.
    std::size_t min_index = 0;
    std::uint64_t min_ticks = active_[0].head;
    std::uint64_t second = kExhausted;
    for (std::size_t i = 1; i < active_.size(); ++i) {
      const std::uint64_t h = active_[i].head;
      if (h < min_ticks) {
        second = min_ticks;
        min_ticks = h;
        min_index = i;
      } else if (h < second) {
        second = h;
      }
    }
    Active& a = active_[min_index];
    a.head = emit_run(*a.cursor, std::min(second, watermark));
    if (a.head == kExhausted || a.head > watermark) {  // emptied, or the rest is too young
      a = active_.back();
      active_.pop_back();
    }
  }
}

void Drainer::close_thread(Cursor& c, std::uint64_t at_ticks, std::uint8_t flags) {
  const std::uint64_t ticks = std::max({at_ticks, c.last_ticks, last_emitted_ticks_});
  last_emitted_ticks_ = ticks;
  c.last_ticks = ticks;
  const std::uint64_t ns = converter_.to_ns(ticks);
  while (!c.open.empty()) {
    const Open open = c.open.back();
    c.open.pop_back();
    Event& e = next_event();
    e = Event{ns, open.site(), c.thread, EventKind::zone_end, static_cast<std::uint8_t>(open.flags() | flags), 0,
              static_cast<std::uint32_t>(c.open.size()), {}};
    e.value.u = open.value;
    ++closed_at_stop_;
  }
  const std::uint64_t dropped = c.buffer->dropped.load(std::memory_order_acquire);
  threads_[c.thread].dropped = dropped;
  if (dropped > c.reported_drops) {
    Event& e = next_event();
    e = Event{ns, sites_.id_of(&kDroppedSite), c.thread, EventKind::dropped, 0, 0, 0, {}};
    e.value.u = dropped - c.reported_drops;
    c.reported_drops = dropped;
  }
}

void Drainer::deliver(std::span<const Event> events) {
  for (std::size_t i = 0; i < exporters_.size(); ++i) {
    if (exporter_failed_[i]) continue;
    try {
      exporters_[i]->on_events(events, *this);
    } catch (const std::exception& e) {
      exporter_failed_[i] = true;
      errors_.push_back(std::string("exporter ") + std::to_string(i) + ": " + e.what());
    }
  }
}

void Drainer::flush() {
  if (batch_size_ == 0) return;
  deliver(std::span<const Event>(batch_, batch_size_));
  batch_size_ = 0;
  publish_read_positions();
}

void Drainer::publish_read_positions() {
  for (auto& c : cursors_) c->buffer->read_index.store(c->read_pos, std::memory_order_release);
}

void Drainer::maybe_refit() {
  if (!use_tsc_) return;
  const std::uint64_t now = read_ticks(true);
  if (now - last_refit_ticks_ < refit_period_ticks_) return;
  const ClockSample sample = sample_clock(true);
  const std::int64_t offset = converter_.refit(sample, refit_period_ticks_);
  last_refit_ticks_ = sample.ticks;
  clock_info_.recalibrations += 1;
  clock_info_.ticks_per_second = converter_.ticks_per_second();
  clock_info_.max_correction_ns = std::max(clock_info_.max_correction_ns, std::fabs(static_cast<double>(offset)));
}

void Drainer::pass(bool final) {
  ++passes_;
  registry_.clear_wake();
  accept_registrations();
  std::uint64_t watermark = std::numeric_limits<std::uint64_t>::max();
  if (!final) {
    const std::uint64_t now = read_ticks(use_tsc_);
    watermark = now > grace_ticks_ ? now - grace_ticks_ : 0;
  }
  for (auto& c : cursors_) {
    // Retired before the write index: a retired thread's last writes are then visible.
    c->retired = (c->buffer->flags.load(std::memory_order_acquire) & kRetired) != 0;
    c->end = c->buffer->write_index.load(std::memory_order_acquire);
    update_names(*c);
  }
  merge(watermark);
  // Threads that are gone and emptied, or every thread at the end: close what they
  // left open, report unreported drops, let go of the ring.
  for (std::size_t i = 0; i < cursors_.size();) {
    Cursor& c = *cursors_[i];
    if (final || (c.retired && c.read_pos >= c.end)) {
      close_thread(c, final ? stop_ticks_.load(std::memory_order_relaxed) : c.last_ticks, EventFlags::closed_at_stop);
      flush();
      registry_.release(c.buffer);
      cursors_[i] = std::move(cursors_.back());
      cursors_.pop_back();
    } else {
      threads_[c.thread].dropped = c.buffer->dropped.load(std::memory_order_relaxed);
      ++i;
    }
  }
  flush();
  publish_read_positions();
  if (final) {
    clock_info_.stop_ns = stop_ns_.load(std::memory_order_relaxed);
  } else {
    maybe_refit();
  }
  update_stats();
  if (final) {
    SessionStats final_stats = stats();
    for (std::size_t i = 0; i < exporters_.size(); ++i) {
      if (exporter_failed_[i]) continue;
      try {
        exporters_[i]->on_finish(*this, final_stats);
      } catch (const std::exception& e) {
        exporter_failed_[i] = true;
        errors_.push_back(std::string("exporter ") + std::to_string(i) + " on_finish: " + e.what());
      }
    }
    update_stats();
  }
}

void Drainer::update_stats() {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  stats_.threads.resize(threads_.size());
  stats_.recorded = 0;
  stats_.dropped = 0;
  for (std::size_t i = 0; i < threads_.size(); ++i) {
    const ThreadRow& row = threads_[i];
    ThreadStats& out = stats_.threads[i];
    out.thread = row.info.id;
    out.os_tid = row.info.os_tid;
    out.name = row.info.name;
    out.recorded = row.recorded;
    out.dropped = row.dropped;
    stats_.recorded += row.recorded;
    stats_.dropped += row.dropped;
  }
  stats_.late_events = late_;
  stats_.unbalanced_ends = unbalanced_;
  stats_.closed_at_stop = closed_at_stop_;
  stats_.drain_passes = passes_;
  stats_.clock = clock_info_;
  stats_.allocator = runtime_allocator_name();
  stats_.exporter_errors = errors_;
}

SessionStats Drainer::stats() const {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  return stats_;
}

}  // namespace ringtrace::detail
