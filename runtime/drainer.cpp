#include "drainer.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <ctime>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <new>

#include <unistd.h>

#include "allocator.hpp"
#include "windows.hpp"  // step_marker_site

namespace ringtrace::detail {

namespace {
constinit thread_local bool t_drainer_thread = false;
constexpr std::uint32_t kUnsorted = ~std::uint32_t{0};
}  // namespace

bool on_drainer_thread() noexcept { return t_drainer_thread; }

namespace {
// Held by a drainer while it works (a pass, the exporters' start), not while it sleeps.
std::timed_mutex g_pass_mutex;
// This thread's fork() took the lock in its prepare handler (two threads may fork at once).
constinit thread_local bool t_fork_holds_pass = false;
}  // namespace

void drainer_fork_prepare() noexcept {
  t_fork_holds_pass = false;
  if (t_drainer_thread) return;
  // Bounded: a drainer stuck in an exporter (or waiting for a lock this thread holds)
  // must not make fork() hang; the child then merely runs the risk it ran before.
  t_fork_holds_pass = g_pass_mutex.try_lock_for(std::chrono::milliseconds(100));
}

void drainer_fork_parent() noexcept {
  if (t_fork_holds_pass) g_pass_mutex.unlock();
  t_fork_holds_pass = false;
}

void drainer_fork_child() noexcept {
  // The child has no drainer: a fresh, unlocked mutex (the parent's copy may be held).
  new (&g_pass_mutex) std::timed_mutex();
  t_fork_holds_pass = false;
}

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
      registry_(Registry::instance()),
      step_marker_(step_marker_site()) {
  const double tps = converter_.ticks_per_second();
  grace_ticks_ = static_cast<std::uint64_t>(static_cast<double>(config_.merge_grace.count()) * tps / 1e6);
  boundary_gap_ = boundary_gap_ticks(use_tsc_, tps);
  sites_.set_per_thread_counters(config_.per_thread_counters);
  refit_period_ticks_ = static_cast<std::uint64_t>(tps);  // about one second
  batch_capacity_ = std::max<std::size_t>(config_.batch_events, 64);
  bool all_raw = !exporters_.empty();
  for (std::size_t i = 0; i < exporters_.size(); ++i) {
    auto* raw = dynamic_cast<RawSink*>(exporters_[i].get());
    if (raw != nullptr) raw_sinks_.emplace_back(i, raw);
    all_raw = all_raw && raw != nullptr && !raw->wants_events();
  }
  raw_only_ = all_raw;
  batch_ = static_cast<Event*>(runtime_alloc(batch_capacity_ * sizeof(Event), 64));
  folded_info_.id = kFoldedThread;
  folded_info_.name = "(exited thread)";
  folded_info_.sort_index = kFoldedThread;
}

const ThreadInfo& Drainer::thread(ThreadId id) const {
  if (id < dense_rows_.size()) return dense_rows_[id].info;
  const auto it = sparse_rows_.find(id);
  return it != sparse_rows_.end() ? it->second.info : folded_info_;
}

Drainer::~Drainer() {
  if (thread_.joinable()) {
    stop_.store(true, std::memory_order_release);
    registry_.wake_drainer();
    thread_.join();
  }
  runtime_free(batch_);
}

Drainer::Cursor::~Cursor() { runtime_free(stage); }

void Drainer::start() {
  thread_ = std::thread([this] { run(); });
}

void Drainer::run() {
  mark_thread_untraced();  // the drainer and the exporters it calls are never traced
  t_drainer_thread = true;
  std::unique_lock<std::timed_mutex> working(g_pass_mutex);  // let go of only while waiting
  for_each_exporter("on_start", [&](Exporter& x) { x.on_start(*this); });
  if (!raw_sinks_.empty()) {
    RawSessionInfo info;
    info.tsc = use_tsc_;
    info.ticks_per_second = converter_.ticks_per_second();
    info.start_ns = clock_info_.start_ns;
    timespec real{}, mono{};
    clock_gettime(CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    info.realtime_anchor_ns = static_cast<std::uint64_t>(real.tv_sec) * 1000000000u + static_cast<std::uint64_t>(real.tv_nsec);
    info.monotonic_anchor_ns = static_cast<std::uint64_t>(mono.tv_sec) * 1000000000u + static_cast<std::uint64_t>(mono.tv_nsec);
    info.merge_grace_ns = static_cast<std::uint64_t>(std::chrono::nanoseconds(config_.merge_grace).count());
    info.ring_records = std::bit_ceil(std::max<std::uint64_t>(config_.buffer_records, 64));
    info.boundary_gap_ticks = boundary_gap_;
    info.per_thread_counters = config_.per_thread_counters;
    for_each_raw("on_raw_start", [&](RawSink& r) { r.on_raw_start(info); });
    raw_segment();
    // A process killed before the first pass still leaves the session and its clock in
    // the trace file, to read the rings with.
    if (rings_in_file_) persist_raw();
  }
  last_refit_ticks_ = read_ticks(use_tsc_);
  while (!stop_.load(std::memory_order_acquire)) {
    pass(false);
    working.unlock();
    registry_.wait_for_wake(config_.drain_interval, stop_);
    working.lock();
  }
  pass(true);
}

void Drainer::finish(std::uint64_t stop_ticks) {
  stop_ticks_.store(stop_ticks, std::memory_order_relaxed);
  stop_.store(true, std::memory_order_release);  // the drainer reads it after seeing this
  registry_.wake_drainer();
  if (thread_.joinable()) thread_.join();
}

void Drainer::accept_registrations() {
  for (ThreadBuffer* next = registry_.take_registrations(); next != nullptr;) {
    ThreadBuffer* buffer = next;
    next = buffer->next_registration;
    if (buffer->epoch != epoch_) {  // cannot happen: stop() takes every registration; never read a stranger's ring
      registry_.release(buffer);
      continue;
    }
    auto cursor = std::make_unique<Cursor>();
    cursor->buffer = buffer;
    cursor->thread = next_thread_++;
    cursor->name_version = buffer->name_version.load(std::memory_order_acquire);
    ThreadRow* row;
    if (cursor->thread < config_.max_thread_rows) {
      row = &dense_rows_.emplace_back();
    } else {
      row = &sparse_rows_[cursor->thread];
    }
    // The slot's reader finds the thread's records in the trace file under this id.
    if (buffer->slot != nullptr) buffer->slot->thread.store(cursor->thread, std::memory_order_release);
    row->info.id = cursor->thread;
    row->info.os_tid = buffer->os_tid;
    row->info.name = buffer->read_name();
    row->info.sort_index = kUnsorted;
    cursor->row = row;
    cursors_.push_back(std::move(cursor));
    raw_thread(*cursors_.back());
  }
}

void Drainer::raw_thread(const Cursor& c) {
  if (raw_sinks_.empty()) return;
  const ThreadInfo& info = c.row->info;
  for_each_raw("on_raw_thread", [&](RawSink& r) { r.on_raw_thread(c.thread, info.os_tid, info.name); });
}

void Drainer::raw_segment() {
  ClockSegment s;
  converter_.newest(s.base_ticks, s.base_ns, s.mult);
  for_each_raw("on_raw_segment", [&](RawSink& r) { r.on_raw_segment(s); });
}

std::uint64_t Drainer::hand_raw(Cursor& c) {
  const std::uint64_t from = c.raw_pos, to = c.read_pos;
  if (from >= to) return 0;
  c.raw_pos = to;
  const Record* const slots = c.buffer->slots;
  const std::uint64_t capacity = c.buffer->capacity;
  const std::uint64_t begin = from & (capacity - 1);
  const std::uint64_t n = to - from;
  const std::uint64_t head = std::min(n, capacity - begin);
  const std::span<const Record> first(slots + begin, head), second(slots, n - head);
  if (!c.first_known) {
    c.first_known = true;
    c.first_ticks = slots[begin].ticks;
    unsorted_threads_ = true;
  }
  delivered_in_pass_ = true;
  std::uint64_t events = 0;
  bool counted = false;
  for_each_raw("on_raw_records", [&](RawSink& r) {
    const std::uint64_t e = r.on_raw_records(c.thread, first, second);
    if (!counted) events = e;
    counted = true;
  });
  return events;
}

void Drainer::update_names(Cursor& c) {
  const std::uint32_t version = c.buffer->name_version.load(std::memory_order_acquire);
  if (version == c.name_version) return;
  c.name_version = version;
  c.row->info.name = c.buffer->read_name();
  raw_thread(c);
}

std::uint64_t Drainer::head_ticks(const Cursor& c) const {
  const std::uint64_t ticks = c.buffer->slots[c.read_pos & (c.buffer->capacity - 1)].ticks;
  return ticks < c.last_ticks ? c.last_ticks : ticks;
}

Event& Drainer::next_event() {
  if (batch_size_ == batch_capacity_) [[unlikely]] flush();
  return batch_[batch_size_++];
}

// Decodes c's records with ticks <= limit into the batch (kStaged false: late events
// are judged against the running last emitted time) or into c's staging array
// (kStaged true: judged against `late_floor`, the last time emitted before this merge;
// the merge of staged arrays then keeps the stream ordered). Returns when c has no
// record left at or below `limit`, or, staging, when the array is full.
//
// The loop state lives in locals written back on the way out: the compiler cannot keep
// members in registers across the Event stores (same types, may alias), and the
// reloads were the hottest instructions of the merge in a profile.
template <bool kStaged>
void Drainer::decode(Cursor& c, std::uint64_t limit, std::uint64_t late_floor) {
  const Record* const slots = c.buffer->slots;
  const std::uint64_t mask = c.buffer->capacity - 1;
  const std::uint64_t end = c.end;
  const ThreadId thread = c.thread;
  std::uint64_t pos = c.read_pos;
  const std::uint64_t start_pos = pos;
  std::uint64_t last_ticks = c.last_ticks;
  const std::uint64_t gap = boundary_gap_;
  std::uint64_t recorded = 0;
  std::uint64_t floor = kStaged ? late_floor : last_emitted_ticks_;
  const TickConverter::Snapshot clock(converter_);
  Event* out;
  std::size_t n, capacity;
  if constexpr (kStaged) {
    out = c.stage;
    n = c.stage_end;
    capacity = kStageEvents;
  } else {
    out = batch_;
    n = batch_size_;
    capacity = batch_capacity_;
  }
  const auto save = [&] {
    if (!c.first_known && pos != start_pos) {
      c.first_known = true;
      c.first_ticks = slots[start_pos & mask].ticks;
      unsorted_threads_ = true;
    }
    c.read_pos = pos;
    c.last_ticks = last_ticks;
    c.row->recorded += recorded;
    recorded = 0;
    if constexpr (kStaged) {
      c.stage_end = static_cast<std::uint32_t>(n);
    } else {
      batch_size_ = n;
      last_emitted_ticks_ = floor;
    }
  };
  while (pos < end) {
    if (n == capacity) [[unlikely]] {
      if constexpr (kStaged) {
        break;
      } else {
        save();
        flush();
        n = batch_size_;
      }
    }
    const Record& rec = slots[pos & mask];
    const std::uint64_t kind = rec.word & record_kind_mask;
    // Per thread, time never goes backwards (a thread that migrates between cores
    // could see a TSC a few cycles behind), and zone boundaries are boundary_gap_
    // apart (boundary_gap_ticks()); across threads, late arrivals are raised to the
    // last time emitted, so the stream stays ordered and zones stay nested.
    const std::uint64_t least = last_ticks + (((kBoundaryKinds >> kind) & 1) != 0 ? gap : 0);
    std::uint64_t ticks = rec.ticks < least ? least : rec.ticks;
    if (ticks > limit) break;
    last_ticks = ticks;
    std::uint8_t flags = 0;
    if (ticks < floor) [[unlikely]] {
      ticks = floor;
      if (rec.ticks != 0) {  // not a record that attaches to its zone (those read no clock)
        flags = EventFlags::late;
        ++late_;
      }
    } else if constexpr (!kStaged) {
      floor = ticks;
    }
    const auto* site = reinterpret_cast<const SiteInfo*>(rec.word & ~record_kind_mask);
    // The slot after a counter, region or dropped header; published with it.
    const auto payload = [&] { return slots[(pos + 1) & mask].ticks; };
    if (kind == record_zone_end) {
      if (c.open.empty()) [[unlikely]] {
        ++unbalanced_;
        pos += 1;
        continue;
      }
      const Open open = c.open.back();
      c.open.pop_back();
      Event& e = out[n++];
      e = Event{clock.to_ns(ticks), open.site(), thread, EventKind::zone_end,
                static_cast<std::uint8_t>(flags | open.flags()), 0, static_cast<std::uint32_t>(c.open.size()), {}};
      e.value.u = open.value;
      ++recorded;
      pos += 1;
      continue;
    }
    Event& e = out[n++];
    e = Event{clock.to_ns(ticks), 0, thread, EventKind::instant, flags, 0,
              static_cast<std::uint32_t>(c.open.size()), {}};
    e.value.u = 0;
    switch (kind) {
      case record_zone_begin:
        e.site = sites_.id_of(site);
        e.kind = EventKind::zone_begin;
        c.open.push_back(make_open(e.site, 0, 0));
        ++recorded;
        pos += 1;
        break;
      case record_region_begin:
        e.kind = EventKind::zone_begin;
        e.value.u = payload();
        if (site == step_marker_) [[unlikely]] {
          // Session::step(): a zone of its own site "step #N", N the recorded value.
          e.site = sites_.step_zone(e.value.u);
          e.value.u = 0;
          c.open.push_back(make_open(e.site, 0, 0));
        } else {
          e.site = sites_.id_of(site);
          e.flags |= EventFlags::region;
          c.open.push_back(make_open(e.site, EventFlags::region, e.value.u));
        }
        ++recorded;
        pos += 2;
        break;
      case record_instant:
        e.site = sites_.id_of(site);
        ++recorded;
        pos += 1;
        break;
      case record_value_int:
      case record_value_double:
        e.site = sites_.id_of(site);
        e.kind = value_event_kind(site->kind);
        if (kind == record_value_double) e.flags |= EventFlags::value_double;
        e.value.u = payload();
        ++recorded;
        pos += 2;
        break;
      case record_text: {
        e.site = sites_.id_of(site);
        e.kind = EventKind::arg;
        const std::uint64_t header = payload();
        const std::uint64_t bytes = header & ~(std::uint64_t{1} << 63);
        e.flags |= EventFlags::text;
        if ((header >> 63) != 0) e.flags |= EventFlags::truncated;
        e.text_size = static_cast<std::uint16_t>(bytes);
        e.value.u = texts_.size();
        const std::uint64_t capacity = mask + 1;
        const std::uint64_t first_slot = (pos + 2) & mask;
        const std::uint64_t head = std::min<std::uint64_t>(bytes, (capacity - first_slot) * sizeof(Record));
        const char* const ring = reinterpret_cast<const char*>(slots);
        texts_.append(ring + first_slot * sizeof(Record), head);
        texts_.append(ring, bytes - head);
        ++recorded;
        pos += 2 + (bytes + sizeof(Record) - 1) / sizeof(Record);
        break;
      }
      case record_dropped:
        e.site = sites_.id_of(&kDroppedSite);
        e.kind = EventKind::dropped;
        e.value.u = payload();
        c.reported_drops += e.value.u;
        pos += 2;
        break;
      default:  // not written by any writer; skip the slot rather than stall
        --n;
        pos += 1;
        break;
    }
  }
  save();
}

EventKind Drainer::value_event_kind(SiteKind kind) {
  switch (kind) {
    case SiteKind::value: return EventKind::arg;
    case SiteKind::flow_out: return EventKind::flow_out;
    case SiteKind::flow_in: return EventKind::flow_in;
    case SiteKind::async_begin: return EventKind::async_begin;
    case SiteKind::async_end: return EventKind::async_end;
    default: return EventKind::counter;
  }
}

std::uint32_t Drainer::process_id() const { return static_cast<std::uint32_t>(::getpid()); }

std::string_view Drainer::text(const Event& e) const {
  if (e.kind != EventKind::arg || (e.flags & EventFlags::text) == 0 || e.value.u + e.text_size > texts_.size()) {
    return {};
  }
  return std::string_view(texts_).substr(e.value.u, e.text_size);
}

// Refills c's staging array (it must be empty). False when c has nothing left at or
// below the watermark.
bool Drainer::refill(Cursor& c, std::uint64_t watermark, std::uint64_t late_floor) {
  if (c.stage == nullptr) c.stage = static_cast<Event*>(runtime_alloc(kStageEvents * sizeof(Event), 64));
  c.stage_begin = c.stage_end = 0;
  decode<true>(c, watermark, late_floor);
  return c.stage_end != 0;
}

void Drainer::merge(std::uint64_t watermark) {
  active_.clear();
  for (auto& c : cursors_) {
    if (c->read_pos >= c->end) continue;
    if (head_ticks(*c) <= watermark) active_.push_back(c.get());
  }
  if (active_.size() >= 2) merge_staged(watermark);
  // One thread left with records (or only one from the start): straight to the batch.
  if (active_.size() == 1) decode<false>(*active_[0], watermark, 0);
}

// Several threads: each decodes a chunk of its records into its own staging array
// (sequential work whose branches are predictable per thread), and the merge only
// compares times and copies events. Threads that interleave event by event would
// otherwise pay a run switch, with its mispredicted branches, for every event.
void Drainer::merge_staged(std::uint64_t watermark) {
  const std::uint64_t late_floor = last_emitted_ticks_;
  std::uint64_t newest = late_floor;
  for (std::size_t i = 0; i < active_.size();) {
    if (refill(*active_[i], watermark, late_floor)) {
      ++i;
    } else {
      newest = std::max(newest, active_[i]->last_ticks);
      active_[i] = active_.back();
      active_.pop_back();
    }
  }
  const auto head_ns = [&](std::size_t i) { return active_[i]->stage[active_[i]->stage_begin].time_ns; };
  // Called when a's staging array is empty: refills it, or drops a from the merge.
  const auto exhausted = [&](std::size_t i) {
    Cursor& c = *active_[i];
    if (refill(c, watermark, late_floor)) return;
    newest = std::max(newest, c.last_ticks);
    active_[i] = active_.back();
    active_.pop_back();
  };
  while (active_.size() >= 2) {
    // The two threads with the oldest heads merge, event by event and without
    // branches on which side goes next (a coin toss when threads interleave), until
    // one runs dry or passes the third-oldest head.
    std::size_t first = 0, second = 1;
    if (head_ns(1) < head_ns(0)) std::swap(first, second);
    std::uint64_t third_ns = ~std::uint64_t{0};
    for (std::size_t i = 2; i < active_.size(); ++i) {
      const std::uint64_t t = head_ns(i);
      if (t < head_ns(first)) {
        third_ns = head_ns(second);
        second = first;
        first = i;
      } else if (t < head_ns(second)) {
        third_ns = head_ns(second);
        second = i;
      } else if (t < third_ns) {
        third_ns = t;
      }
    }
    Cursor& a = *active_[first];
    Cursor& b = *active_[second];
    const Event* pa = a.stage + a.stage_begin;
    const Event* pb = b.stage + b.stage_begin;
    const Event* const ea = a.stage + a.stage_end;
    const Event* const eb = b.stage + b.stage_end;
    // Into the batch through locals (see decode()), in stretches that cannot run past
    // either array's end or the batch's, so that the loop checks neither.
    const auto stretch = [&](std::size_t m, auto bounded) {
      Event* const out = batch_ + batch_size_;
      std::size_t i = 0;
      for (; i < m; ++i) {
        const bool take_b = pb->time_ns < pa->time_ns;
        const Event* const src = take_b ? pb : pa;
        if constexpr (decltype(bounded)::value) {
          if (src->time_ns > third_ns) break;
        }
        out[i] = *src;
        pb += take_b;
        pa += !take_b;
      }
      batch_size_ += i;
      return i == m;
    };
    for (;;) {
      if (batch_size_ == batch_capacity_) flush();
      const std::size_t m = std::min({batch_capacity_ - batch_size_, static_cast<std::size_t>(ea - pa),
                                      static_cast<std::size_t>(eb - pb)});
      if (m == 0) break;  // one of them ran dry
      if (third_ns == ~std::uint64_t{0}) {
        stretch(m, std::false_type{});
      } else if (!stretch(m, std::true_type{})) {
        break;  // past the third-oldest head
      }
    }
    a.stage_begin = static_cast<std::uint32_t>(pa - a.stage);
    b.stage_begin = static_cast<std::uint32_t>(pb - b.stage);
    // At most one of them ran dry; the other (or both, past the third) stay.
    if (pa == ea) {
      exhausted(first);
    } else if (pb == eb) {
      exhausted(second);
    }
  }
  if (active_.size() == 1) {
    // The last one: what it has staged, then (merge() goes on) straight to the batch.
    Cursor& c = *active_[0];
    while (c.stage_begin != c.stage_end) next_event() = c.stage[c.stage_begin++];
    newest = std::max(newest, c.last_ticks);
  }
  last_emitted_ticks_ = newest;
}

void Drainer::close_thread(Cursor& c, std::uint64_t at_ticks, std::uint8_t flags) {
  if (!c.first_known) {  // registered but never recorded: after the others, when it goes
    c.first_known = true;
    c.first_ticks = ~std::uint64_t{0};
  }
  assign_sort_indices();
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
  const std::uint64_t dropped = c.buffer->total_dropped();
  c.row->dropped = dropped;
  if (dropped > c.reported_drops) {
    Event& e = next_event();
    e = Event{ns, sites_.id_of(&kDroppedSite), c.thread, EventKind::dropped, 0, 0, 0, {}};
    e.value.u = dropped - c.reported_drops;
    c.reported_drops = dropped;
  }
}

template <typename Call>
void Drainer::for_each_exporter(const char* callback, Call&& call) {
  for (std::size_t i = 0; i < exporters_.size(); ++i) {
    if (exporter_failed_[i]) continue;
    std::string error;
    try {
      call(*exporters_[i]);
      continue;
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {  // an int, a string literal, anything: never std::terminate
      error = "threw something that is not a std::exception";
    }
    exporter_failed_[i] = true;
    std::string line = "exporter ";
    line += std::to_string(i);
    line += ' ';
    line += callback;
    line += ": ";
    line += error;
    errors_.push_back(std::move(line));
  }
}

void Drainer::deliver(std::span<const Event> events) {
  delivered_in_pass_ = true;
  for_each_exporter("on_events", [&](Exporter& x) { x.on_events(events, *this); });
}

template <typename Call>
void Drainer::for_each_raw(const char* callback, Call&& call) {
  for (const auto& [index, raw] : raw_sinks_) {
    if (exporter_failed_[index]) continue;
    std::string error;
    try {
      call(*raw);
      continue;
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {
      error = "threw something that is not a std::exception";
    }
    exporter_failed_[index] = true;
    errors_.push_back("exporter " + std::to_string(index) + " " + callback + ": " + error);
  }
}

void Drainer::assign_sort_indices() {
  unsorted_threads_ = false;
  std::vector<Cursor*> fresh;
  for (auto& c : cursors_) {
    if (c->first_known && c->row->info.sort_index == kUnsorted) fresh.push_back(c.get());
  }
  std::sort(fresh.begin(), fresh.end(), [&](const Cursor* a, const Cursor* b) {
    const std::uint64_t ta = a->row->info.os_tid, tb = b->row->info.os_tid;
    return a->first_ticks != b->first_ticks ? a->first_ticks < b->first_ticks : ta < tb;
  });
  for (const Cursor* c : fresh) c->row->info.sort_index = next_sort_index_++;
}

void Drainer::flush() {
  if (batch_size_ == 0) return;
  if (unsorted_threads_) [[unlikely]] assign_sort_indices();
  deliver(std::span<const Event>(batch_, batch_size_));
  batch_size_ = 0;
  publish_read_positions();
}

void Drainer::publish_read_positions() {
  if (!raw_sinks_.empty()) {
    for (auto& c : cursors_) {
      if (c->raw_pos < c->read_pos) hand_raw(*c);  // before the slots can be reused
    }
    if (rings_in_file_) persist_raw();
  }
  for (auto& c : cursors_) c->buffer->read_index.store(c->read_pos, std::memory_order_release);
}

void Drainer::persist_raw() {
  for_each_raw("on_raw_persist", [](RawSink& r) { r.on_raw_persist(); });
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
  if (!raw_sinks_.empty()) raw_segment();
}

void Drainer::pass(bool final) {
  ++passes_;
  texts_.clear();  // every event that pointed into it was delivered by the last pass
  registry_.clear_wake();
  accept_registrations();
  std::uint64_t watermark;
  if (!final) {
    const std::uint64_t now = read_ticks(use_tsc_);
    watermark = now > grace_ticks_ ? now - grace_ticks_ : 0;
  } else {
    // Nothing stamped after the stop time is delivered (zones open then are closed at
    // it). A thread that read the clock just before stop() may not have published yet:
    // give it the same grace as every other pass before taking the write indices.
    watermark = stop_ticks_.load(std::memory_order_relaxed);
    const std::uint64_t until = watermark + grace_ticks_;
    while (read_ticks(use_tsc_) < until) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  for (auto& c : cursors_) {
    // Retired before the write index: a retired thread's last writes are then visible.
    c->retired = (c->buffer->flags.load(std::memory_order_acquire) & kRetired) != 0;
    c->end = c->buffer->published->load(std::memory_order_acquire);
    update_names(*c);
  }
  if (raw_only_) {
    // Nothing to decode or merge: every published record goes to the raw sinks as it
    // is (the reader of their file merges, and applies the stop time).
    for (auto& c : cursors_) {
      c->read_pos = c->end;
      c->row->recorded += hand_raw(*c);
    }
    if (unsorted_threads_) assign_sort_indices();
  } else {
    merge(watermark);
  }
  // Threads that are gone and emptied, or every thread at the end: close what they
  // left open, report unreported drops, let go of the ring.
  for (std::size_t i = 0; i < cursors_.size();) {
    Cursor& c = *cursors_[i];
    if (final || (c.retired && c.read_pos >= c.end)) {
      if (raw_only_) {
        c.row->dropped = c.buffer->total_dropped();  // the file's footer carries it
      } else {
        close_thread(c, final ? stop_ticks_.load(std::memory_order_relaxed) : c.last_ticks,
                     EventFlags::closed_at_stop);
      }
      flush();
      // Rings in a file: the released ring may be bound to another thread at once, so
      // its records must be in the trace file first.
      if (rings_in_file_) publish_read_positions();
      registry_.release(c.buffer);
      // Every event of the thread is delivered: a thread past the first
      // max_thread_rows gives its row up (its counts stay in the folded totals).
      if (!final && c.thread >= config_.max_thread_rows) {
        folded_threads_ += 1;
        folded_recorded_ += c.row->recorded;
        folded_dropped_ += c.row->dropped;
        sparse_rows_.erase(c.thread);
      }
      cursors_[i] = std::move(cursors_.back());
      cursors_.pop_back();
    } else {
      c.row->dropped = c.buffer->total_dropped();
      ++i;
    }
  }
  flush();
  publish_read_positions();
  if (!raw_sinks_.empty() && delivered_in_pass_) {
    for_each_raw("on_raw_pass", [&](RawSink& r) { r.on_raw_pass(watermark); });
  }
  if (delivered_in_pass_ && !final) {
    for_each_exporter("on_flush", [&](Exporter& x) { x.on_flush(*this); });
  }
  delivered_in_pass_ = false;
  if (final) {
    // The stop time on the events' own timeline, so that every delivered event is at or
    // before it.
    clock_info_.stop_ns = converter_.to_ns(stop_ticks_.load(std::memory_order_relaxed));
    if (!raw_sinks_.empty()) {
      for_each_raw("on_raw_stop", [&](RawSink& r) { r.on_raw_stop(stop_ticks_.load(std::memory_order_relaxed)); });
    }
  } else {
    maybe_refit();
  }
  update_stats();
  registry_.pass_completed();
  if (final) {
    SessionStats final_stats = stats();
    for_each_exporter("on_finish", [&](Exporter& x) { x.on_finish(*this, final_stats); });
    update_stats();
  }
}

void Drainer::update_stats() {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  // Rows in the order of each thread's first event (threads not yet placed last, by
  // id), then the folded threads' row.
  std::vector<const ThreadRow*>& order = stats_order_;
  order.clear();
  for (const ThreadRow& row : dense_rows_) order.push_back(&row);
  for (const auto& [id, row] : sparse_rows_) order.push_back(&row);
  std::sort(order.begin(), order.end(), [](const ThreadRow* a, const ThreadRow* b) {
    return a->info.sort_index != b->info.sort_index ? a->info.sort_index < b->info.sort_index : a->info.id < b->info.id;
  });
  stats_.threads.resize(order.size() + (folded_threads_ > 0 ? 1 : 0));
  stats_.recorded = 0;
  stats_.dropped = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const ThreadRow& row = *order[k];
    ThreadStats& out = stats_.threads[k];
    out.thread = row.info.id;
    out.os_tid = row.info.os_tid;
    out.name = row.info.name;
    out.recorded = row.recorded;
    out.dropped = row.dropped;
    stats_.recorded += row.recorded;
    stats_.dropped += row.dropped;
  }
  if (folded_threads_ > 0) {
    ThreadStats& out = stats_.threads.back();
    out.thread = kFoldedThread;
    out.os_tid = 0;
    out.name = "(exited threads)";
    out.recorded = folded_recorded_;
    out.dropped = folded_dropped_;
    stats_.recorded += folded_recorded_;
    stats_.dropped += folded_dropped_;
  }
  stats_.folded_threads = folded_threads_;
  const std::uint64_t orphans = registry_.orphan_drops();
  stats_.dropped_without_ring = orphans;
  stats_.dropped += orphans;
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
