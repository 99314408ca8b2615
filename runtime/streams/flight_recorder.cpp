#include "flight_recorder.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <string_view>

#include "thread_book.hpp"   // snapshot stats name threads folded meanwhile
#include "windows.hpp"       // make_window_exporters
#include "zone_tracker.hpp"  // on-CPU and off-CPU times of the trigger's zone

namespace ringtrace::detail {

namespace {

std::uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

bool has_text(const Event& e) {
  return (e.kind == EventKind::arg || e.kind == EventKind::message) && (e.flags & EventFlags::text) != 0;
}

}  // namespace

class FlightRecorderExporter final : public Exporter {
 public:
  ~FlightRecorderExporter() override { std::free(ring_); }
  FlightRecorderExporter(const FlightRecorderExporter&) = delete;
  FlightRecorderExporter& operator=(const FlightRecorderExporter&) = delete;
  FlightRecorderExporter(const Config& config, std::vector<WindowExporterFactory> factories,
                         std::vector<std::filesystem::path> session_outputs)
      : keep_ns_(static_cast<std::uint64_t>(std::chrono::nanoseconds(config.flight_recorder.keep).count())),
        max_bytes_(std::max<std::size_t>(config.flight_recorder.max_bytes, 4096)),
        after_ns_(static_cast<std::uint64_t>(std::chrono::nanoseconds(config.flight_recorder.after).count())),
        min_interval_ns_(
            static_cast<std::uint64_t>(std::chrono::nanoseconds(config.flight_recorder.min_interval).count())),
        trigger_zone_(config.trigger.zone),
        trigger_ns_(static_cast<std::uint64_t>(std::max<std::int64_t>(0, config.trigger.longer_than.count()))),
        trigger_measure_(config.trigger.measure),
        factories_(std::move(factories)),
        session_outputs_(std::move(session_outputs)) {}

  // Any thread. A request waits until the stream reaches its time. What waits is
  // bounded, so a program that asks in a loop costs a constant per request, holds no
  // memory for it and never makes the drainer's work grow: requests are in time order
  // (read under the lock), and of the newest two waiting and a new one less than
  // min_interval after the older of the two, at most one can be served (whichever of them
  // starts a snapshot suppresses the others); the new one takes the newest's place,
  // which is counted as suppressed now. Without a rate limit, at most kMaxWaiting wait;
  // further ones are counted as suppressed at once.
  // An outside request (OutsideSnapshot::done set) is never the one replaced.
  bool request(std::string reason, OutsideSnapshot outside) {
    const bool from_outside = static_cast<bool>(outside.done);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const std::uint64_t now = monotonic_ns();
      const std::size_t n = requests_.size();
      if (!from_outside && n >= 2 && !requests_.back().outside.done &&
          now < requests_[n - 2].time_ns + min_interval_ns_) {
        requests_.back() = Request{std::move(reason), now, {}};
        suppressed_.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
      if (n < kMaxWaiting) {
        requests_.push_back(Request{std::move(reason), now, std::move(outside)});
        if (n == 0) next_due_ns_.store(now, std::memory_order_release);
        return true;
      }
      suppressed_.fetch_add(1, std::memory_order_relaxed);
    }
    if (from_outside) outside.done("64 snapshot requests are waiting already", {});
    return true;
  }
  std::size_t waiting() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_.size();
  }
  std::uint64_t snapshots() const { return snapshots_.load(std::memory_order_relaxed); }
  std::uint64_t suppressed() const { return suppressed_.load(std::memory_order_relaxed); }

  void on_start(const TraceContext& context) override {
    base_ = &context;
    release_ring();
    texts_.clear();
    text_base_ = text_next_ = 0;
    bytes_ = 0;
    threads_.clear();
    is_trigger_.clear();
    active_.reset();
    any_snapshot_ = false;
    newest_ns_ = 0;
    cpu_tracker_ = ZoneTracker{};
  }

  void on_events(std::span<const Event> events, const TraceContext& context) override {
    base_ = &context;
    for (const Event& e : events) {
      newest_ns_ = std::max(newest_ns_, e.time_ns);
      if (active_ && e.time_ns > active_->until_ns) finish_snapshot(active_->until_ns);
      keep(e, context);
      if (active_) forward(back());
      // One compare per event, however many requests wait: the oldest one's time.
      if (e.time_ns >= next_due_ns_.load(std::memory_order_relaxed)) [[unlikely]]
        serve_requests(e.time_ns);
      if (has_trigger_ && (e.kind == EventKind::zone_begin || e.kind == EventKind::zone_end) &&
          trigger_measure_ == Trigger::Measure::wall && is_trigger(e.site, context)) [[unlikely]] {
        trigger_zone(e);
      }
      if (has_trigger_ && trigger_measure_ != Trigger::Measure::wall) [[unlikely]]
        cpu_trigger(e, context);
    }
    if (active_) send_active();
    evict();
  }

  void on_flush(const TraceContext& context) override {
    base_ = &context;
    if (active_) {
      send_active();
      for (const auto& x : active_->out) x->on_flush(snapshot_context_);
    }
  }

  void on_finish(const TraceContext& context, const SessionStats&) override {
    base_ = &context;
    serve_requests(~std::uint64_t{0});  // requests still waiting: what the recorder holds now
    if (active_) finish_snapshot(std::min(active_->until_ns, std::max(newest_ns_, context.clock().stop_ns)));
    release_ring();
    texts_.clear();
    threads_.clear();
  }

  // A pass of the drainer ended at `up_to_ns` less its grace (quiet_passes): the requests
  // up to then are due, whether or not an event at their time came.
  void serve_quiet(const TraceContext& context, std::uint64_t up_to_ns) {
    base_ = &context;
    if (next_due_ns_.load(std::memory_order_relaxed) <= up_to_ns) serve_requests(up_to_ns);
    if (active_ && after_ns_ == 0) finish_snapshot(active_->until_ns);
  }

  // The bytes of a kept text event (its value is the text's number in texts_).
  std::string_view text_of(const Event& e) const {
    if (!has_text(e) || e.value.u < text_base_ || e.value.u >= text_next_) return {};
    return texts_[e.value.u - text_base_];
  }

 private:
  struct Request {
    std::string reason;
    std::uint64_t time_ns;
    OutsideSnapshot outside;
  };
  struct TriggerOpen {
    std::uint64_t time_ns;
    std::uint32_t depth;
  };
  struct ThreadState {
    std::vector<TriggerOpen> open;    // the trigger's zones open on this thread
    std::vector<Event> evicted_open;  // begins evicted from the ring whose zones are still open
  };
  struct Open {
    SiteId site;
    std::uint8_t flags;
    std::uint64_t value;
  };
  struct Active {
    std::vector<std::shared_ptr<Exporter>> out;
    WindowInfo info;
    std::uint64_t until_ns = 0;
    std::vector<std::vector<Open>> stacks;  // per thread: the snapshot's open zones
    std::vector<std::uint64_t> recorded;    // per thread: events delivered
    std::vector<Event> batch;
    // An outside snapshot's (OutsideSnapshot::done), and its files.
    std::function<void(const std::string&, const std::vector<std::filesystem::path>&)> done;
    std::vector<std::filesystem::path> files;
  };

  // The TraceContext the snapshot's exporters get: the session's, but texts come from
  // the recorder's own copies.
  class SnapshotContext final : public TraceContext {
   public:
    explicit SnapshotContext(const FlightRecorderExporter& owner) : owner_(owner) {}
    const SiteInfo& site(SiteId id) const override { return owner_.base_->site(id); }
    std::uint32_t site_count() const override { return owner_.base_->site_count(); }
    const ThreadInfo& thread(ThreadId id) const override { return owner_.base_->thread(id); }
    std::uint32_t thread_count() const override { return owner_.base_->thread_count(); }
    const ClockInfo& clock() const override { return owner_.base_->clock(); }
    const std::string& process_name() const override { return owner_.base_->process_name(); }
    std::string_view text(const Event& e) const override { return owner_.text_of(e); }
    std::uint32_t process_id() const override { return owner_.base_->process_id(); }
    const std::string& process_name_of(std::uint32_t pid) const override { return owner_.base_->process_name_of(pid); }
    std::string_view node_id_of(std::uint32_t pid) const override { return owner_.base_->node_id_of(pid); }

   private:
    const FlightRecorderExporter& owner_;
  };

  // The ring: a power-of-two array from the oldest event kept (head_), doubled while
  // what `keep` asks for does not fit, up to max_bytes; full at that size, each new
  // event evicts the oldest. It stays as small as the window needs (cache, memory).
  Event& at(std::size_t i) { return ring_[(head_ + i) & mask_]; }
  const Event& front() const { return ring_[head_]; }
  Event& back() { return at(size_ - 1); }
  void grow() {
    const std::size_t most = std::bit_floor(std::max<std::size_t>(64, max_bytes_ / sizeof(Event)));
    const std::size_t cap = ring_ == nullptr ? std::min<std::size_t>(4096, most) : capacity_ * 2;
    auto* bigger = static_cast<Event*>(std::malloc(cap * sizeof(Event)));
    if (bigger == nullptr) throw std::bad_alloc();
    // Oldest first: the part from head_ to the array's end, then the part before it.
    const std::size_t first = std::min(size_, capacity_ - head_);
    if (size_ != 0) {
      std::memcpy(bigger, ring_ + head_, first * sizeof(Event));
      std::memcpy(bigger + first, ring_, (size_ - first) * sizeof(Event));
    }
    std::free(ring_);
    ring_ = bigger;
    capacity_ = cap;
    mask_ = cap - 1;
    head_ = 0;
  }
  void release_ring() {
    std::free(ring_);
    ring_ = nullptr;
    capacity_ = mask_ = head_ = size_ = 0;
  }

  // Appends e to the ring (its text copied).
  void keep(const Event& e, const TraceContext& context) {
    if (size_ == capacity_) [[unlikely]] {
      if (capacity_ * 2 * sizeof(Event) <= max_bytes_ || ring_ == nullptr) {
        grow();
      } else {
        evict_front();
      }
    }
    if (e.thread >= threads_.size()) [[unlikely]]
      threads_.resize(e.thread + 1);  // evict() indexes it
    Event& kept = at(size_++);
    kept = e;
    bytes_ += sizeof(Event);
    if (has_text(e)) {
      const std::string_view text = context.text(e);
      texts_.emplace_back(text);
      bytes_ += sizeof(std::string) + text.size();  // what the copy holds (short texts fit in the string)
      kept.value.u = text_next_++;
    }
  }

  RINGTRACE_ALWAYS_INLINE bool is_trigger(SiteId site, const TraceContext& context) {
    if (site >= is_trigger_.size()) [[unlikely]]
      is_trigger_.resize(std::max<std::size_t>(site + 1, context.site_count()), -1);
    std::int8_t& match = is_trigger_[site];
    if (match < 0) [[unlikely]]
      match = trigger_zone_ == context.site(site).name ? 1 : 0;
    return match != 0;
  }

  // A begin or end of the trigger's zone: at the end, a snapshot if it ran too long.
  void trigger_zone(const Event& e) {
    std::vector<TriggerOpen>& open = threads_[e.thread].open;
    if (e.kind == EventKind::zone_begin) {
      open.push_back(TriggerOpen{e.time_ns, e.depth});
      return;
    }
    if (open.empty() || open.back().depth != e.depth) return;
    const std::uint64_t took = e.time_ns - open.back().time_ns;
    open.pop_back();
    if (took <= trigger_ns_) return;
    char text[96];
    std::snprintf(text, sizeof(text), "' took %.3f ms", static_cast<double>(took) / 1e6);
    std::string reason = "zone '";
    reason.append(trigger_zone_).append(text);
    start_snapshot(std::move(reason), e.time_ns);
  }

  // The trigger on a zone's on-CPU or off-CPU time: the one computation of those
  // (ZoneTracker) follows every zone and switch, and the trigger's zones are judged as
  // they close.
  RINGTRACE_NOINLINE void cpu_trigger(const Event& e, const TraceContext& context) {
    if (e.kind != EventKind::zone_begin && e.kind != EventKind::zone_end && !is_switch(e.kind)) return;
    cpu_tracker_.feed(e, [&](const ClosedZone& z, std::span<const detail::OpenZone>) {
      if (!is_trigger(z.site, context)) return;
      const bool on = trigger_measure_ == Trigger::Measure::on_cpu;
      const std::uint64_t took = on ? z.on_cpu_ns() : z.off_cpu_ns;
      if (took <= trigger_ns_) return;
      char text[96];
      std::snprintf(text, sizeof(text), on ? "' ran %.3f ms on-CPU" : "' waited %.3f ms off-CPU",
                    static_cast<double>(took) / 1e6);
      std::string reason = "zone '";
      reason.append(trigger_zone_).append(text);
      start_snapshot(std::move(reason), z.end_ns);
    });
  }

  // Requests made at or before `up_to` (the stream has reached their time): the front of
  // the queue, which is in time order.
  void serve_requests(std::uint64_t up_to) {
    std::vector<Request> due;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (!requests_.empty() && requests_.front().time_ns <= up_to) {
        due.push_back(std::move(requests_.front()));
        requests_.pop_front();
      }
      next_due_ns_.store(requests_.empty() ? kNever : requests_.front().time_ns, std::memory_order_relaxed);
    }
    for (Request& r : due) start_snapshot(std::move(r.reason), std::min(r.time_ns, newest_ns_), std::move(r.outside));
  }

  // Whether a snapshot may start now: else it is counted as suppressed (and an outside
  // request told why).
  bool may_start(std::uint64_t at_ns, const OutsideSnapshot& outside) {
    const bool from_outside = static_cast<bool>(outside.done);
    const bool too_soon = !from_outside && any_snapshot_ && at_ns < last_start_ns_ + min_interval_ns_;
    const bool writers = !factories_.empty() || (from_outside && !outside.factories.empty());
    if (!active_ && !too_soon && writers) return true;
    suppressed_.fetch_add(1, std::memory_order_relaxed);
    if (from_outside) {
      outside.done(active_ ? "a snapshot is still being written (its flight_recorder.after has not passed)"
                           : "the program's flight recorder has no window exporters to write a snapshot with",
                   {});
    }
    return false;
  }

  // The snapshot's exporters. The program's own: throws (the session then disables the
  // recorder) when they would write a file the session's exporters write, or one file
  // twice. An outside request's: empty, and the request told why (the recorder goes on).
  std::vector<std::shared_ptr<Exporter>> snapshot_exporters(const WindowInfo& info, const OutsideSnapshot& outside) {
    if (!outside.done) return make_window_exporters(factories_, info, session_outputs_);
    try {
      return make_window_exporters(outside.factories.empty() ? factories_ : outside.factories, info, session_outputs_);
    } catch (const std::exception& e) {
      suppressed_.fetch_add(1, std::memory_order_relaxed);
      outside.done(e.what(), {});
      return {};
    }
  }

  void start_snapshot(std::string reason, std::uint64_t at_ns, OutsideSnapshot outside = {}) {
    if (!may_start(at_ns, outside)) return;
    Active a;
    a.until_ns = at_ns + after_ns_;
    a.info.index = snapshots_.load(std::memory_order_relaxed);
    a.info.reason = std::move(reason);
    // Zones open where the ring begins, in time order over the threads, then the ring.
    std::vector<Event> head;
    for (const ThreadState& t : threads_) head.insert(head.end(), t.evicted_open.begin(), t.evicted_open.end());
    std::stable_sort(head.begin(), head.end(), [](const Event& x, const Event& y) { return x.time_ns < y.time_ns; });
    a.info.begin_ns = !head.empty() ? head.front().time_ns : (size_ != 0 ? front().time_ns : at_ns);
    a.out = snapshot_exporters(a.info, outside);
    if (a.out.empty()) return;
    a.done = std::move(outside.done);
    if (a.done) {
      for (const auto& x : a.out) {
        for (auto& path : x->output_paths()) a.files.push_back(std::move(path));
      }
    } else {
      any_snapshot_ = true;
      last_start_ns_ = at_ns;
    }
    active_ = std::move(a);
    snapshots_.fetch_add(1, std::memory_order_relaxed);
    for (const auto& x : active_->out) x->on_start(snapshot_context_);
    for (const Event& e : head) forward(e);
    forward_ring(active_->until_ns);
    if (after_ns_ == 0) finish_snapshot(at_ns);
  }

  // The snapshot's zone stacks and counts for an event it gets; false for one it must
  // not (an end whose begin it never had: cannot happen, every open zone's begin comes first).
  RINGTRACE_ALWAYS_INLINE bool account(const Event& e) {
    Active& a = *active_;
    if (e.thread >= a.stacks.size()) [[unlikely]] {
      a.stacks.resize(e.thread + 1);
      a.recorded.resize(e.thread + 1, 0);
    }
    std::vector<Open>& stack = a.stacks[e.thread];
    if (e.kind == EventKind::zone_begin) {
      stack.push_back(Open{e.site, e.flags, e.value.u});
    } else if (e.kind == EventKind::zone_end) {
      if (stack.empty()) [[unlikely]]
        return false;
      stack.pop_back();
    }
    book_.see(e.thread, *base_);
    a.recorded[e.thread] += 1;
    return true;
  }

  // Into the snapshot's batch, keeping its zone stacks.
  void forward(const Event& e) {
    if (!account(e)) return;
    Active& a = *active_;
    a.batch.push_back(e);
    if (a.batch.size() >= 4096) send_active();
  }

  // The ring's events up to `until_ns` to the snapshot's exporters where they lie (its
  // two contiguous pieces, in spans of at most 16384 events: no copy), after what the
  // batch holds. Returns the number forwarded.
  std::size_t forward_ring(std::uint64_t until_ns) {
    send_active();
    const auto send = [&](const Event* from, std::size_t n) {
      if (n == 0) return;
      for (const auto& x : active_->out) x->on_events(std::span<const Event>(from, n), snapshot_context_);
    };
    std::size_t i = 0;
    while (i < size_) {
      const std::size_t start = (head_ + i) & mask_;
      const std::size_t n = std::min<std::size_t>({size_ - i, capacity_ - start, 16384});
      const Event* piece = ring_ + start;
      std::size_t from = 0;
      for (std::size_t k = 0; k < n; ++k) {
        if (piece[k].time_ns > until_ns) {  // the rest comes with the next events
          send(piece + from, k - from);
          return i + k;
        }
        if (!account(piece[k])) {
          send(piece + from, k - from);
          from = k + 1;
        }
      }
      send(piece + from, n - from);
      i += n;
    }
    return i;
  }

  void send_active() {
    Active& a = *active_;
    if (a.batch.empty()) return;
    for (const auto& x : a.out) x->on_events(std::span<const Event>(a.batch.data(), a.batch.size()), snapshot_context_);
    a.batch.clear();
  }

  // Ends the snapshot at `end_ns`: zones still open close there, flagged.
  void finish_snapshot(std::uint64_t end_ns) {
    Active& a = *active_;
    for (ThreadId t = 0; t < a.stacks.size(); ++t) {
      std::vector<Open>& stack = a.stacks[t];
      while (!stack.empty()) {
        const Open o = stack.back();
        stack.pop_back();
        Event end{end_ns,
                  o.site,
                  t,
                  EventKind::zone_end,
                  static_cast<std::uint8_t>((o.flags & EventFlags::region) | EventFlags::closed_at_window_end),
                  0,
                  static_cast<std::uint32_t>(stack.size()),
                  {}};
        end.value.u = o.value;
        a.batch.push_back(end);
      }
    }
    send_active();
    a.info.end_ns = end_ns;
    SessionStats stats;
    stats.clock = base_->clock();
    stats.clock.start_ns = a.info.begin_ns;
    stats.clock.stop_ns = end_ns;
    for (ThreadId t = 0; t < a.recorded.size(); ++t) {
      if (a.recorded[t] == 0) continue;
      const ThreadInfo& info = book_.info(t, *base_);
      stats.threads.push_back(ThreadStats{t, info.os_tid, info.name, a.recorded[t], 0});
      stats.recorded += a.recorded[t];
    }
    const std::vector<std::shared_ptr<Exporter>> out = std::move(a.out);
    const auto done = std::move(a.done);
    const std::vector<std::filesystem::path> files = std::move(a.files);
    active_.reset();
    for (const auto& x : out) x->on_finish(snapshot_context_, stats);
    if (done) done("", files);
  }

  // Drops what is older than `keep` before the newest event, or past max_bytes; begins
  // of zones still open are kept aside (a snapshot starts with them).
  void evict() {
    while (size_ != 0 && (front().time_ns + keep_ns_ < newest_ns_ || bytes_ > max_bytes_)) evict_front();
  }
  RINGTRACE_ALWAYS_INLINE void evict_front() {
    {
      const Event& e = front();
      ThreadState& t = threads_[e.thread];
      if (e.kind == EventKind::zone_begin) {
        t.evicted_open.push_back(e);
      } else if (e.kind == EventKind::zone_end && !t.evicted_open.empty()) {
        t.evicted_open.pop_back();
      }
      bytes_ -= sizeof(Event);
      if (has_text(e)) {
        bytes_ -= sizeof(std::string) + texts_.front().size();
        texts_.pop_front();
        ++text_base_;
      }
    }
    head_ = (head_ + 1) & mask_;
    --size_;
  }

  const std::uint64_t keep_ns_;
  const std::size_t max_bytes_;
  const std::uint64_t after_ns_;
  const std::uint64_t min_interval_ns_;
  const std::string trigger_zone_;
  const std::uint64_t trigger_ns_;
  const Trigger::Measure trigger_measure_;
  const bool has_trigger_ = !trigger_zone_.empty();
  ZoneTracker cpu_tracker_;  // trigger_measure_ on or off CPU: every zone and switch
  const std::vector<WindowExporterFactory> factories_;
  const std::vector<std::filesystem::path> session_outputs_;

  const TraceContext* base_ = nullptr;
  SnapshotContext snapshot_context_{*this};
  ThreadBook book_;

  Event* ring_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t mask_ = 0;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
  std::deque<std::string> texts_;
  std::uint64_t text_base_ = 0;  // number of texts_.front()
  std::uint64_t text_next_ = 0;
  std::size_t bytes_ = 0;
  std::uint64_t newest_ns_ = 0;
  std::vector<ThreadState> threads_;
  std::vector<std::int8_t> is_trigger_;  // by site: -1 not looked up, 0, 1

  std::optional<Active> active_;
  bool any_snapshot_ = false;
  std::uint64_t last_start_ns_ = 0;

  static constexpr std::uint64_t kNever = ~std::uint64_t{0};
  static constexpr std::size_t kMaxWaiting = 64;
  mutable std::mutex mutex_;
  std::deque<Request> requests_;                    // time order; at most kMaxWaiting
  std::atomic<std::uint64_t> next_due_ns_{kNever};  // requests_.front().time_ns, or kNever
  std::atomic<std::uint64_t> snapshots_{0};
  std::atomic<std::uint64_t> suppressed_{0};
};

namespace {

class QuietPasses final : public Exporter {
 public:
  QuietPasses(std::shared_ptr<FlightRecorderExporter> recorder, std::uint64_t margin_ns)
      : recorder_(std::move(recorder)), margin_ns_(margin_ns) {}
  void on_events(std::span<const Event>, const TraceContext&) override {}
  void on_flush(const TraceContext& context) override {
    const std::uint64_t now = monotonic_ns();
    if (now > margin_ns_) recorder_->serve_quiet(context, now - margin_ns_);
  }

 private:
  std::shared_ptr<FlightRecorderExporter> recorder_;
  std::uint64_t margin_ns_;
};

}  // namespace

std::shared_ptr<Exporter> FlightRecorderHandle::quiet_passes(std::chrono::nanoseconds grace) const {
  if (!exporter) return nullptr;
  const auto margin = grace + std::chrono::milliseconds(2);
  return std::make_shared<QuietPasses>(exporter, static_cast<std::uint64_t>(margin.count()));
}

bool FlightRecorderHandle::request(std::string reason, OutsideSnapshot outside) {
  return exporter && exporter->request(std::move(reason), std::move(outside));
}
std::uint64_t FlightRecorderHandle::snapshots() const { return exporter ? exporter->snapshots() : 0; }
std::uint64_t FlightRecorderHandle::suppressed() const { return exporter ? exporter->suppressed() : 0; }
std::size_t FlightRecorderHandle::waiting() const { return exporter ? exporter->waiting() : 0; }

FlightRecorderHandle make_flight_recorder(const Config& config, std::vector<WindowExporterFactory> factories,
                                          std::vector<std::filesystem::path> session_outputs) {
  return FlightRecorderHandle{
      std::make_shared<FlightRecorderExporter>(config, std::move(factories), std::move(session_outputs))};
}

std::shared_ptr<Exporter> as_exporter(const FlightRecorderHandle& handle) { return handle.exporter; }

}  // namespace ringtrace::detail
