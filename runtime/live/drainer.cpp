#include "drainer.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>  // getenv, strtoll
#include <cstring>
#include <ctime>
#include <limits>
#include <mutex>
#include <new>
#include <utility>  // std::exchange

#include <sys/mman.h>
#include <unistd.h>

#include "allocator.hpp"
#include "function_stack.hpp"  // function_counts
#include "memory_names.hpp"    // symbols: memory sites and stacks named
#include "memory_stacks.hpp"   // kStackMethod
#include "node_id.hpp"         // default_node_id
#include "steps.hpp"           // kStepsThreadName

namespace ringtrace::detail {

// ---------------------------------------------------------------------------------------
// What the drainer module keeps for the process. Sessions run one at a time, and those who
// need these know no drainer: fork's handlers, and threads packing their own ring.

namespace {
constinit thread_local bool t_drainer_thread = false;

// The pass lock: held by a drainer while it works (a pass, the exporters' start), never
// while it sleeps. Fork's prepare handler takes it (waiting at most 100 ms), so that a
// child inherits no lock a pass held; a thread packing its own ring only tries it
// (drain_own_ring), and finds its drainer through its ring once it holds it.
std::timed_mutex g_pass_mutex;
// This thread's fork() took the lock in its prepare handler (two threads may fork at once).
constinit thread_local bool t_fork_holds_pass = false;
// The working drainer that has context-switch streams open, for fork's child handler.
// Set and cleared by that drainer under the pass lock.
Drainer* g_switch_drainer = nullptr;
// How often a pass remakes stats()' per-function lists while the session runs.
constexpr std::uint64_t kListsPeriodNs = 100'000'000;

// For tests only (docs/guide.md, "Several processes"): RINGTRACE_TEST_REALTIME_SKEW_NS,
// read when a session starts, is added to the CLOCK_REALTIME anchor the binary file
// records, standing for a host whose clock is off by that much, so that a test of
// merge's offsets measured from flows knows the error it must find. Not an integer: 0.
std::int64_t realtime_skew_for_tests() {
  const char* text = std::getenv("RINGTRACE_TEST_REALTIME_SKEW_NS");
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  errno = 0;
  const long long skew = std::strtoll(text, &end, 10);
  return errno != 0 || *end != '\0' ? 0 : skew;
}

// For tests only (docs/reliability.md): RINGTRACE_TEST_DRAINER_ALLOC_FAILURES=N, read
// when a session starts, makes the drainer's first N merges fail where their first
// allocation of a ring's staging array failed in an exhausted address space
// (std::bad_alloc, before any ring is read).
std::uint64_t stage_failures_for_tests() {
  const char* text = std::getenv("RINGTRACE_TEST_DRAINER_ALLOC_FAILURES");
  return text == nullptr ? 0 : std::strtoull(text, nullptr, 10);
}

// For tests only: RINGTRACE_TEST_DRAINER_DELIVER_FAILURES=N makes the first N deliveries
// of a batch fail as an allocation of the drainer's own would there (std::bad_alloc after
// the rings were read, before the exporters get the batch).
std::uint64_t deliver_failures_for_tests() {
  const char* text = std::getenv("RINGTRACE_TEST_DRAINER_DELIVER_FAILURES");
  return text == nullptr ? 0 : std::strtoull(text, nullptr, 10);
}
}  // namespace

bool on_drainer_thread() noexcept { return t_drainer_thread; }

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
  // The parent's switch streams: the child's copies of their descriptors keep the
  // parent's threads traced while they are open. The drainer's structures are whole if
  // it was between passes (this thread's fork holds the pass lock) or is the forker.
  if ((t_fork_holds_pass || t_drainer_thread) && g_switch_drainer != nullptr)
    g_switch_drainer->release_switches_in_child();
  g_switch_drainer = nullptr;
  // No thread of the child packs into the parent's file: its one thread has no ring
  // (unbind_thread_after_fork), so it never reads a ThreadBuffer::own_drain of the parent's.
  // The child has no drainer: a fresh, unlocked mutex (the parent's copy may be held).
  new (&g_pass_mutex) std::timed_mutex();
  t_fork_holds_pass = false;
}

OwnDrain drain_own_ring(ThreadBuffer& b) noexcept {
  if (b.own_drain.load(std::memory_order_relaxed) == nullptr) return OwnDrain::none;
  std::unique_lock<std::timed_mutex> lock(g_pass_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return OwnDrain::none;
  // Set and cleared only under the lock: while it is set, its drainer holds the cursor
  // (the drainer clears it when it lets go of the ring, before its thread ends).
  RingCursor* const cursor = b.own_drain.load(std::memory_order_relaxed);
  return cursor != nullptr ? cursor->own_drainer->drain_own(*cursor) : OwnDrain::none;
}

namespace {
// SessionStats::rings_unavailable from the registry's first ring failure.
std::string ring_failure_text(int error, std::size_t buffer_records) {
  if (error == 0) return {};
  if (error == Registry::kRingNoMemory) return "no memory for a thread's ring";
  const std::uint64_t bytes = ring_bytes_for(buffer_records);
  const std::string size =
      bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes >> 10) + " KiB";
  return "cannot make a thread's ring of " + size + ": " + std::strerror(error);
}

// The session's node id: Config::node_id, else RINGTRACE_NODE_ID, else "host:pid".
std::string node_id_of_session(const Config& config) {
  std::string id = config.node_id;
  if (id.empty()) {
    const char* env = std::getenv("RINGTRACE_NODE_ID");
    if (env != nullptr) id = env;
  }
  if (id.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    return default_node_id(host, static_cast<std::uint32_t>(::getpid()));
  }
  if (id.size() > kMaxNodeId) id.resize(kMaxNodeId);
  return id;
}

// The batch: pages mapped for it alone, not the runtime allocator's. Its pages are
// touched as the passes fill them.
Event* map_batch(std::size_t events) {
  void* p = ::mmap(nullptr, events * sizeof(Event), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return static_cast<Event*>(p);
}

void unmap_batch(Event* batch, std::size_t events) noexcept {
  if (batch != nullptr) ::munmap(batch, events * sizeof(Event));
}

}  // namespace

// ---------------------------------------------------------------------------------------
// The drainer's thread.

Drainer::Drainer(const Config& config, std::vector<std::shared_ptr<Exporter>> exporters, TickConverter clock,
                 ClockInfo clock_info, bool use_tsc, std::uint32_t epoch)
    : config_(config),
      process_name_(config.process_name),
      node_id_(node_id_of_session(config)),
      use_tsc_(use_tsc),
      epoch_(epoch),
      registry_(Registry::instance()),
      rows_(config.max_thread_rows),
      converter_(clock),
      clock_info_(clock_info),
      exporters_(std::move(exporters)),
      filter_(config.functions),
      filter_held_cap_(std::max<std::size_t>(config.buffer_records, RingCursor::kStageEvents)),
      switches_wanted_(config.context_switches) {
  const double tps = converter_.ticks_per_second();
  grace_ticks_ = static_cast<std::uint64_t>(static_cast<double>(config_.merge_grace.count()) * tps / 1e6);
  boundary_gap_ = boundary_gap_ticks(use_tsc_, tps);
  sites_.set_per_thread_counters(config_.per_thread_counters);
  sites_.set_max_runtime_names(config_.max_runtime_names);
  manual_ends_base_ = g_unbalanced_manual_ends.load(std::memory_order_relaxed);
  for (unsigned cause = 0; cause < kMemoryLeftOutCauses; ++cause) {
    const MemoryLeftOutCounts& c = g_memory_left_out[cause];
    memory_left_out_base_[cause] = {c.allocations.load(std::memory_order_relaxed),
                                    c.frees.load(std::memory_order_relaxed), c.bytes.load(std::memory_order_relaxed)};
  }
  pipeline_.heap() = HeapTracker(config_.memory_max_blocks);
  pipeline_.heap().set_stack_bytes(config_.memory_stack_bytes);
  pipeline_.set_accounts_memory(config_.memory);
  refit_period_ticks_ = static_cast<std::uint64_t>(tps);  // about one second
  last_fit_ticks_ = converter_.anchor_ticks();
  converted_until_ = converter_.anchor_ticks();
  test_stage_failures_ = stage_failures_for_tests();
  test_deliver_failures_ = deliver_failures_for_tests();
  batch_capacity_ = std::max<std::size_t>(config_.batch_events, 64);
  batch_ = map_batch(batch_capacity_);
}

Drainer::~Drainer() {
  if (thread_.joinable()) {
    stop_.store(true, std::memory_order_release);
    registry_.wake_drainer();
    thread_.join();
  }
  unmap_batch(batch_, batch_capacity_);
}

void Drainer::start() {
  // The runtime allocator's first use loads mimalloc (dlopen, about 0.25 ms, once a
  // process): here, on start()'s thread, not on the drainer's. A dlopen waits for the
  // dynamic linker's lock, which a dlclose holds while the unloading object's destructors
  // run, and one of them may be waiting for the drainer's passes (drain_before_unload): a
  // drainer that loaded mimalloc at its own start made no pass for the whole 200 ms of
  // that wait, and the object's functions went unnamed (ASan stage, 4 in 20 runs).
  (void)runtime_allocator_name();
  thread_ = start_own_thread([this] { run(); });
}

void Drainer::finish(std::uint64_t stop_ticks, std::uint64_t quiet_tid) {
  stop_ticks_.store(stop_ticks, std::memory_order_relaxed);
  quiet_tid_.store(quiet_tid, std::memory_order_relaxed);
  stop_.store(true, std::memory_order_release);  // the drainer reads it after seeing this
  registry_.wake_drainer();
  if (thread_.joinable()) thread_.join();
}

void Drainer::run() {
  mark_thread_untraced();  // the drainer and the exporters it calls are never traced
  sites_.prepare();
  t_drainer_thread = true;
  std::unique_lock<std::timed_mutex> working(g_pass_mutex);  // let go of only while waiting
  start_exporters();
  if (config_.context_switches) g_switch_drainer = this;
  // Block mode only: a drop-mode thread never does the drainer's work (packing a full
  // 128 KiB ring took it 20 us and more: the tail that drop mode exists to avoid).
  self_drain_ = config_.self_drain && config_.overflow == OverflowPolicy::block && exporters_.raw_only() &&
                exporters_.raw_count() == 1 && !rings_in_file_;
  while (!stop_.load(std::memory_order_acquire)) {
    pass_or_note_failure(false);
    working.unlock();
    registry_.wait_for_wake(config_.drain_interval, stop_);
    working.lock();
  }
  pass_or_note_failure(true);
  if (g_switch_drainer == this) g_switch_drainer = nullptr;
}

void Drainer::pass_or_note_failure(bool final) {
  try {
    pass(final);
    registry_.set_drainer_short(false);
  } catch (const std::bad_alloc&) {
    ++out_of_memory_;
    let_go_of_undelivered();
    registry_.set_drainer_short(true);
    {
      std::lock_guard<std::mutex> lock(stats_mutex_);
      stats_.drainer_out_of_memory = out_of_memory_;
      stats_.drainer_events_lost = events_lost_;
    }
    try {
      update_stats(final);  // the threads' counts (their drops) as they are now
    } catch (const std::bad_alloc&) {}
  }
}

void Drainer::let_go_of_undelivered() noexcept {
  // Of `recorded`: a drop marker's event is not one (its count is in `dropped`).
  const auto recorded_in = [](const Event* from, const Event* to) {
    return static_cast<std::uint64_t>(
        std::count_if(from, to, [](const Event& e) { return e.kind != EventKind::dropped; }));
  };
  events_lost_ += recorded_in(batch_, batch_ + batch_size_);
  batch_size_ = 0;
  for (auto& c : cursors_) {
    if (c->run.next != nullptr) events_lost_ += recorded_in(c->run.next, c->run.end);
    c->run = MergeRun{};
    if (c->switches && c->switches->run.next != nullptr) {
      // Its switches merged in this pass went out with a batch delivered before the
      // failure or with the one let go of: consumed either way, never delivered twice.
      // (Switches are not in `recorded`; those let go of are not counted as lost events.)
      ThreadSwitches& s = *c->switches;
      s.pending.consume(s.pending.delivered(s.run).size());
      s.run = MergeRun{};
    }
  }
  pipeline_.clear_runs();
}

void Drainer::start_exporters() {
  exporters_.each("on_start", [&](Exporter& x) { x.on_start(*this); });
  if (!exporters_.has_raw()) return;
  RawSessionInfo info;
  info.tsc = use_tsc_;
  info.ticks_per_second = converter_.ticks_per_second();
  info.start_ns = clock_info_.start_ns;
  read_clock_anchors(info);
  info.realtime_anchor_ns += static_cast<std::uint64_t>(realtime_skew_for_tests());
  info.merge_grace_ns = static_cast<std::uint64_t>(std::chrono::nanoseconds(config_.merge_grace).count());
  info.ring_bytes = ring_bytes_for(config_.buffer_records);
  info.boundary_gap_ticks = boundary_gap_;
  info.per_thread_counters = config_.per_thread_counters;
  info.memory = config_.memory;
  info.memory_max_blocks = config_.memory_max_blocks;
  info.memory_stack_bytes = config_.memory_stack_bytes;
  if (config_.memory_stack_bytes != 0) info.memory_stack_method = kStackMethod;
  exporters_.each_raw("on_raw_start", [&](RawSink& r) { r.on_raw_start(info); });
  raw_segment();
  // A process killed before the first pass still leaves the session and its clock in
  // the trace file, to read the rings with.
  if (rings_in_file_) persist_raw();
}

// ---------------------------------------------------------------------------------------
// A pass.

// The texts of the last pass's events were delivered with them, but for those the
// functions' filter still holds (a call not decided yet): theirs move to the front of the
// arena, the rest goes. (An arg's text, a memory event's address and size.)
void Drainer::keep_held_texts() {
  if (!filter_.active()) {
    texts_.clear();
    return;
  }
  kept_texts_.clear();
  for (auto& c : cursors_) {
    c->filtered.each_held([&](Event& e) {
      if (e.text_size == 0 || e.value.u + e.text_size > texts_.size()) return;
      const bool text = (e.kind == EventKind::arg || e.kind == EventKind::message) && (e.flags & EventFlags::text) != 0;
      if (!text && e.kind != EventKind::alloc && e.kind != EventKind::free) return;
      const std::uint64_t at = kept_texts_.size();
      kept_texts_.append(texts_, e.value.u, e.text_size);
      e.value.u = at;
    });
  }
  texts_.swap(kept_texts_);
}

void Drainer::pass(bool final) {
  ++passes_;
  keep_held_texts();
  registry_.clear_wake();
  sites_.forget_unloaded_functions();
  // A test's request for a pass now (run_drainer_pass): read before the registrations are
  // taken and the write indices read, so that the pass that serves it knows every thread
  // that recorded before the request (a thread's first event registers its ring: read
  // after, the request was served by a pass that had not seen that thread yet).
  const std::uint64_t requested = registry_.pass_requests();
  const std::uint64_t watermark = collect(final, requested);
  std::uint64_t switches_until_ns = converter_.to_ns(watermark);
  if (taps_.any()) taps_.update(*this);
  if (exporters_.raw_only()) {
    hand_over_raw(switches_until_ns);
  } else {
    if (filter_.active()) {
      fill_filters(watermark, final);
      switches_until_ns = std::min(switches_until_ns, filter_limit_);  // a thread's switches wait with its events
    }
    merge(watermark, switches_until_ns);
  }
  retire_threads(final);
  if (final && counts_.steps.open) close_step_at_stop();
  deliver();
  persist();
  complete(final, watermark, requested);
}

std::uint64_t Drainer::collect(bool final, std::uint64_t requested) {
  accept_registrations();
  const std::uint64_t watermark = take_watermark(final, requested);
  fit_clock(final);
  for (auto& c : cursors_) {
    if (c->buffer == nullptr) {  // detached: its records are copied, its thread has exited
      c->published_ns = ~std::uint64_t{0};
      continue;
    }
    // Retired before the write index: a retired thread's last writes are then visible.
    c->retired = (c->buffer->flags.load(std::memory_order_acquire) & kRetired) != 0;
    // Before its end is read: what the look finds published is then in the records read.
    c->published_ns = filter_.active() && !final ? look_at_thread(*c) : 0;
    c->end = c->reserved_end();
    update_names(*c);
    // After the watermark was taken: every switch before it is in the stream now (the
    // kernel writes a record within the switch).
    if (c->switches) read_switches(*c);
  }
  return watermark;
}

void Drainer::accept_registrations() {
  for (ThreadBuffer* next = registry_.take_registrations(); next != nullptr;) {
    ThreadBuffer* buffer = next;
    next = buffer->next_registration;
    if (buffer->epoch != epoch_) {  // cannot happen: stop() takes every registration; never read a stranger's ring
      registry_.release(buffer);
      continue;
    }
    auto cursor = std::make_unique<RingCursor>();
    cursor->buffer = buffer;
    cursor->thread = next_thread_++;
    cursor->state.thread = cursor->thread;
    cursor->name_version = buffer->name_version.load(std::memory_order_acquire);
    // The slot's reader finds the thread's records in the trace file under this id.
    if (buffer->slot.header != nullptr) buffer->slot.header->thread.store(cursor->thread, std::memory_order_release);
    cursor->row = &rows_.add_thread(cursor->thread, buffer->os_tid, buffer->read_name());
    if (self_drain_) {
      cursor->own_drainer = this;
      buffer->own_drain.store(cursor.get(), std::memory_order_relaxed);
    }
    cursors_.push_back(std::move(cursor));
    raw_thread(*cursors_.back());
    if (config_.context_switches) open_switches(*cursors_.back());
  }
}

std::uint64_t Drainer::take_watermark(bool final, std::uint64_t requested) {
  if (!final) {
    const std::uint64_t now = read_ticks(use_tsc_);
    const bool on_demand = requested != registry_.passes_served();
    const std::uint64_t watermark = on_demand ? now : (now > grace_ticks_ ? now - grace_ticks_ : 0);
    passed_watermark_ = std::max(passed_watermark_, watermark);
    return watermark;
  }
  // Nothing stamped after the stop time is delivered (zones open then are closed at
  // it). The stop time is when stop() read the clock, or a pass's watermark if a pass
  // that began before the drainer heard of the stop had already gone past it (it may
  // have delivered events stamped up to there: they stay, and the binary file's reader
  // takes the same time from the stop frame). A thread that read the clock just before
  // stop() may not have published yet: give it the same grace as every other pass
  // before taking the write indices. Only a thread that may be running can be such a
  // thread: none when every ring's thread has exited but stop()'s caller, which records
  // nothing while it waits here (a program's exit: no wait).
  stop_ticks_.store(std::max(stop_ticks_.load(std::memory_order_relaxed), passed_watermark_),
                    std::memory_order_relaxed);
  const std::uint64_t watermark = stop_ticks_.load(std::memory_order_relaxed);
  const std::uint64_t until = watermark + grace_ticks_;
  if (!writers_may_be_busy()) return watermark;
  while (read_ticks(use_tsc_) < until) std::this_thread::sleep_for(std::chrono::microseconds(50));
  return watermark;
}

bool Drainer::writers_may_be_busy() const {
  const std::uint64_t quiet = quiet_tid_.load(std::memory_order_relaxed);
  return std::any_of(cursors_.begin(), cursors_.end(), [quiet](const auto& c) {
    return c->buffer != nullptr && (c->buffer->flags.load(std::memory_order_acquire) & kRetired) == 0 &&
           (quiet == 0 || c->buffer->os_tid != quiet);
  });
}

// Decodes c's records (from its read position to what its thread had reserved at the
// pass's start, stamped at or before `watermark`) into out[n, capacity) with the core's
// decoder (runtime/core/decoder.hpp): every rule of turning records into events is there.
DecodeStop Drainer::decode(RingCursor& c, Event* out, std::size_t& n, std::size_t capacity, std::uint64_t watermark) {
  if (!filter_.active()) return decode_ring(c, out, n, capacity, watermark);
  n += c.filtered.release(filter_limit_, out + n, capacity - n);  // fill_filters decoded them
  return n == capacity ? DecodeStop::room : DecodeStop::end;
}

// The functions' filter decides a short call when its end arrives, however late: a call
// begun on one thread holds every thread's events stamped after its begin until it is
// decided, so the stream stays in time order. The filter knows a call long before its end
// from the thread's own later events, or from what the kernel tells of the thread
// (look_at_thread). Each thread holds at most filter_held_cap_ decided events; past that
// its records wait in its ring (whose overflow policy applies), and nothing stamped
// after its last decoded event is released.
void Drainer::fill_filters(std::uint64_t watermark, bool final) {
  const auto info = [this](SiteId id) -> const SiteInfo& { return sites_.site(id); };
  const std::uint64_t watermark_ns = final ? ~std::uint64_t{0} : converter_.to_ns(watermark);
  std::uint64_t limit = watermark_ns;
  filter_scratch_.resize(RingCursor::kStageEvents);
  for (auto& cursor : cursors_) {
    RingCursor& c = *cursor;
    DecodeStop why = DecodeStop::end;
    bool capped = false;
    while (c.read_pos < c.end) {
      if (!final && c.filtered.held() >= filter_held_cap_ && c.filtered.undecided_since() == ~std::uint64_t{0}) {
        capped = true;
        break;
      }
      std::size_t m = 0;
      why = decode_ring(c, filter_scratch_.data(), m, RingCursor::kStageEvents, watermark);
      c.filtered.add(filter_scratch_.data(), m, filter_, info);
      if (m == 0) break;
    }
    if (final) {
      c.filtered.prove(~std::uint64_t{0});  // it publishes nothing more: what is open is closed at the stop
    } else if (c.published_ns != 0 && !capped) {
      // Every record it stamped up to published_ns was read; decoded up to where the
      // decoder stopped: all of them (the end of what was read), or those up to the
      // watermark (the next is stamped after it, and so are the ones after that).
      if (c.read_pos >= c.end)
        c.filtered.prove(c.published_ns);
      else if (why == DecodeStop::held)
        c.filtered.prove(std::min(c.published_ns, watermark_ns));
    }
    const std::uint64_t since = c.filtered.undecided_since();
    if (since != ~std::uint64_t{0}) limit = std::min(limit, since > 0 ? since - 1 : 0);
    if (capped) limit = std::min(limit, c.state.last_ns);
  }
  filter_limit_ = limit;
}

// What the kernel tells of c's thread, for its oldest undecided call, once that call is
// older than the shortest kept: the time up to which the thread has published every
// record it stamped (thread_probe.hpp), or 0.
std::uint64_t Drainer::look_at_thread(RingCursor& c) {
  if (c.retired) return ~std::uint64_t{0};  // exited: every record it wrote is in its ring
  const std::uint64_t since = c.filtered.undecided_since();
  const std::uint64_t now_ns = converter_.to_ns(read_ticks(use_tsc_));
  if (since == ~std::uint64_t{0} || now_ns < since || now_ns - since < filter_.min_ns()) {
    c.probe.forget();
    return 0;
  }
  return c.probe.look(static_cast<pid_t>(c.buffer->os_tid), now_ns);
}

DecodeStop Drainer::decode_ring(RingCursor& c, Event* out, std::size_t& n, std::size_t capacity,
                                std::uint64_t watermark) {
  // Contiguous through the ring's second mapping (or its copy), at most a ring's worth.
  std::span<const std::uint8_t> records(c.records_at(c.read_pos), c.end - c.read_pos);
  LiveSites sites{sites_, *this};
  LiveTexts texts{texts_};
  const SegmentClock clock = converter_.segments();  // a copy: its fields stay in registers
  RingDecoder<LiveSites, LiveTexts, SegmentClock> decoder(sites, texts, clock, boundary_gap_, counts_);
  const std::uint64_t before = c.state.recorded;
  const DecodeStop why = decoder.decode(c.state, records, out, n, capacity, {watermark, ~std::uint64_t{0}}, true);
  c.read_pos = c.end - records.size();
  rows_.add_recorded(*c.row, c.state.recorded - before);
  if (!c.first_known && c.state.started) {
    c.first_known = true;
    c.first_ticks = c.state.first_ticks;
    unsorted_threads_ = true;
  }
  if (why == DecodeStop::unknown || why == DecodeStop::no_site) {
    // Cannot happen: this process wrote the records. Never read past one that cannot be
    // read: the thread's later records are left out. The raw sinks get the whole records
    // before it and nothing from it on, as the events: they would read its size (and
    // those of the records after it) from bytes that are not a record's.
    ++unreadable_;
    if (exporters_.has_raw() && c.raw_pos < c.read_pos) hand_raw(c);
    c.read_pos = c.end;
    c.raw_pos = c.end;
  }
  return why;
}

// Refills c's staging array (it must be empty). False when c has nothing left at or
// below the watermark.
bool Drainer::refill(RingCursor& c, std::uint64_t watermark) {
  if (c.stage == nullptr) c.stage = static_cast<Event*>(runtime_alloc(RingCursor::kStageEvents * sizeof(Event), 64));
  std::size_t n = 0;
  decode(c, c.stage, n, RingCursor::kStageEvents, watermark);
  c.run = MergeRun{c.stage, c.stage + n, c.thread};
  return n != 0;
}

// Every thread's events up to the watermark, merged by time into the batch by the
// pipeline (pipeline.hpp). Each thread decodes a chunk of its records into its own staging
// array (sequential work whose branches are predictable per thread), and the merge only
// compares times and copies; one thread with records decodes straight into the batch. A
// thread's context switches up to the same time (`switches_until_ns`) are a run of their
// own (merge.hpp's lane 1). A run's owner in the pipeline: its cursor's index, times two,
// plus one for switches.
void Drainer::merge(std::uint64_t watermark, std::uint64_t switches_until_ns) {
  pipeline_.clear_runs();
  if (test_stage_failures_ != 0) {  // as refill's first allocation fails when memory is short
    --test_stage_failures_;
    throw std::bad_alloc();
  }
  for (std::size_t i = 0; i < cursors_.size(); ++i) {
    RingCursor& c = *cursors_[i];
    if ((c.read_pos < c.end || !c.filtered.empty()) && refill(c, watermark)) pipeline_.add_run(c.run, i << 1);
    if (c.switches) {
      ThreadSwitches& s = *c.switches;
      s.run = s.pending.run_until(switches_until_ns, c.thread);
      if (!s.run.empty()) pipeline_.add_run(s.run, i << 1 | 1);
    }
  }
  // A thread's records that run out are refilled from its ring; its switches were all taken.
  const auto refill_records = [&](std::size_t owner) {
    return (owner & 1) == 0 && refill(*cursors_[owner >> 1], watermark);
  };
  while (pipeline_.runs() >= 2) {
    if (batch_size_ == batch_capacity_) deliver();
    batch_size_ += pipeline_.merge(batch_ + batch_size_, batch_capacity_ - batch_size_, refill_records);
  }
  if (pipeline_.runs() == 1) {
    // The last one: what it has staged, then (a thread's records) straight to the batch.
    const std::size_t owner = pipeline_.only_owner();
    MergeRun& run = pipeline_.only_run();
    while (!run.empty()) {
      if (batch_size_ == batch_capacity_) deliver();
      const auto k = std::min(batch_capacity_ - batch_size_, static_cast<std::size_t>(run.end - run.next));
      std::memcpy(batch_ + batch_size_, run.next, k * sizeof(Event));
      run.next += k;
      batch_size_ += k;
    }
    if ((owner & 1) == 0) {
      RingCursor& c = *cursors_[owner >> 1];
      while (decode(c, batch_, batch_size_, batch_capacity_, watermark) == DecodeStop::room) deliver();
    }
  }
  pipeline_.clear_runs();
  // The switches merged: counted, handed to the raw sinks, let go of.
  for (auto& c : cursors_) {
    if (c->switches) deliver_switches(*c, c->switches->pending.delivered(c->switches->run).size());
  }
}

// Nothing to decode or merge: every published record goes to the raw sinks as it is
// (the reader of their file merges, and applies the stop time).
void Drainer::hand_over_raw(std::uint64_t switches_until_ns) {
  for (auto& c : cursors_) {
    // A detached cursor (its thread exited, its switches still awaited) handed every
    // record over when it let go of its ring.
    c->read_pos = c->buffer != nullptr ? c->written_end() : c->end;
    self_drained_ += c->own_events;
    rows_.add_recorded(*c->row, hand_raw(*c) + std::exchange(c->own_events, 0));
    if (c->switches) {
      ThreadSwitches& sw = *c->switches;
      sw.run = sw.pending.run_until(switches_until_ns, c->thread);
      sw.run.next = sw.run.end;
      deliver_switches(*c, sw.pending.delivered(sw.run).size());
    }
  }
  if (unsorted_threads_) assign_sort_indices();
}

// Threads that are gone and emptied, or every thread at the end: close what they left
// open, report unreported drops, let go of the ring. A thread that exited with zones open
// (a RINGTRACE_ZONE_BEGIN never ended) lets go of its ring but keeps its cursor until the
// stop, where its zones are closed at the stop time like every other thread's: the time
// does not depend on whether a pass saw the thread gone first, and is the one the binary
// file's reader gives them (it cannot know when a thread exited).
void Drainer::retire_threads(bool final) {
  for (std::size_t i = 0; i < cursors_.size();) {
    RingCursor& c = *cursors_[i];
    if (final || (c.retired && c.read_pos >= c.end && c.filtered.empty() && switches_done(c) && c.state.depth == 0)) {
      if (exporters_.raw_only()) {
        rows_.set_dropped(*c.row, c.drops());  // the file's footer carries it
      } else {
        close_thread(c, final ? stop_ticks_.load(std::memory_order_relaxed) : c.state.last_ticks,
                     EventFlags::closed_at_stop);
      }
      deliver();
      // Rings in a file: the released ring may be bound to another thread at once, so
      // its records must be in the trace file first.
      if (rings_in_file_) persist();
      if (c.buffer != nullptr) let_go(*c.buffer);
      // Every event of the thread is delivered: a thread past the first
      // max_thread_rows gives its row up (its counts stay in the folded totals).
      if (!final && !rows_.kept_until_stop(c.thread)) rows_.fold(*c.row);
      cursors_[i] = std::move(cursors_.back());
      cursors_.pop_back();
    } else {
      if (c.retired && c.buffer != nullptr) detach(c);
      rows_.set_dropped(*c.row, c.drops());
      ++i;
    }
  }
}

// The step open at the stop: closed there, as every thread's zones are.
void Drainer::close_step_at_stop() {
  const std::uint64_t queued = batch_size_ != 0 ? batch_[batch_size_ - 1].time_ns : 0;
  const std::uint64_t ns = std::max({converter_.to_ns(stop_ticks_.load(std::memory_order_relaxed)),
                                     pipeline_.delivered_ns(), queued, counts_.steps.last_ns});
  Event& e = next_event();
  e = Event{ns, sites_.step_site(), steps_thread(), EventKind::zone_end, EventFlags::closed_at_stop, 0, 0, {}};
  e.value.u = counts_.steps.number;
  counts_.steps.open = false;
  ++closed_at_stop_;
}

Event& Drainer::next_event() {
  if (batch_size_ == batch_capacity_) [[unlikely]]
    deliver();
  return batch_[batch_size_++];
}

void Drainer::deliver() {
  if (batch_size_ == 0) return;
  if (test_deliver_failures_ != 0) {  // as an allocation of the heap's accounting fails when memory is short
    --test_deliver_failures_;
    throw std::bad_alloc();
  }
  if (unsorted_threads_) [[unlikely]]
    assign_sort_indices();
  // The pipeline's raise and account (pipeline.hpp): events published later than the
  // grace allows raised, flagged, counted; allocations and frees given their sizes, read
  // from the pass's arena.
  pipeline_.prepare(batch_, batch_ + batch_size_, [this](const Event& e) -> std::string_view {
    if (e.value.u + e.text_size > texts_.size()) return {};
    return std::string_view(texts_).substr(e.value.u, e.text_size);
  });
  delivered_in_pass_ = true;
  const std::span<const Event> events(batch_, batch_size_);
  exporters_.each("on_events", [&](Exporter& x) { x.on_events(events, *this); });
  if (taps_.any()) taps_.deliver(events, *this);
  batch_size_ = 0;
  persist();
}

void Drainer::persist() {
  if (exporters_.has_raw()) {
    for (auto& c : cursors_) {
      if (c->raw_pos < c->read_pos) hand_raw(*c);  // before the slots can be reused
    }
    if (rings_in_file_) persist_raw();
  }
  for (auto& c : cursors_) c->release_read();
}

void Drainer::persist_raw() {
  exporters_.each_raw("on_raw_persist", [](RawSink& r) { r.on_raw_persist(); });
}

void Drainer::complete(bool final, std::uint64_t watermark, std::uint64_t requested) {
  if (exporters_.has_raw() && delivered_in_pass_) {
    exporters_.each_raw("on_raw_pass", [&](RawSink& r) { r.on_raw_pass(watermark); });
  }
  if (delivered_in_pass_ && !final) {
    exporters_.each("on_flush", [&](Exporter& x) { x.on_flush(*this); });
  }
  if (!final && taps_.any()) taps_.flush(*this);
  delivered_in_pass_ = false;
  converted_until_ = read_ticks(use_tsc_);  // after every record of the pass was read
  if (final) {
    // The stop time on the events' own timeline, so that every delivered event is at or
    // before it.
    clock_info_.stop_ns = converter_.to_ns(stop_ticks_.load(std::memory_order_relaxed));
    if (exporters_.has_raw()) {
      exporters_.each_raw("on_raw_stop",
                          [&](RawSink& r) { r.on_raw_stop(stop_ticks_.load(std::memory_order_relaxed)); });
    }
  }
  // The per-function lists cost more than the rest of the stats (every address named, the
  // names summed and sorted: under g++'s db_bench, a quarter of the drainer's time when
  // made at every pass, while rings waited): made at the stop, for a pass asked for
  // (run_drainer_pass), and otherwise at most every kListsPeriodNs.
  const std::uint64_t now_ns = converter_.to_ns(read_ticks(use_tsc_));
  const bool lists = final || requested != registry_.passes_served() || now_ns - last_lists_ns_ >= kListsPeriodNs;
  if (lists) last_lists_ns_ = now_ns;
  update_stats(lists);
  registry_.pass_completed();
  registry_.passes_served(requested);
  if (final && config_.memory) name_leaks();
  if (final) {
    SessionStats final_stats = stats();
    exporters_.each("on_finish", [&](Exporter& x) { x.on_finish(*this, final_stats); });
    taps_.finish(*this, final_stats);
    update_stats();
  }
}

// ---------------------------------------------------------------------------------------
// Threads and their rings.

ThreadId Drainer::steps_thread() {
  if (steps_thread_ == kNoThread) {
    steps_thread_ = next_thread_++;
    rows_.add_track(steps_thread_, kStepsThreadName);
  }
  return steps_thread_;
}

// A cursor's ring handed back to the registry: what its block counted is kept first (the
// thread writes no more to it: it exited, or the session ends).
void Drainer::let_go(ThreadBuffer& b) {
  inlined_let_go_ += b.writer->inlined.load(std::memory_order_relaxed);
  inlined_let_go_by_function_.add(*b.inlined_calls);
  registry_.release(&b);
}

// A thread that has exited leaves records the watermark holds back (a short thread's
// are all younger than merge_grace when it exits). They would keep its ring (and ring
// file slot) from the pool for another pass or two, while new threads take new ones:
// with threads started one after another the pool would grow with the threads started
// per pass. So they are handed to the raw sinks (and, with rings in a file, persisted:
// a record is always in the trace file or in a ring) and copied out, the ring's bytes
// zeroed and its read index published as for a ring read to its end, and the ring let
// go of; the cursor decodes the copy in later passes.
void Drainer::detach(RingCursor& c) {
  const std::uint64_t end = c.written_end();  // the thread has exited: no record is being written
  const std::uint64_t bytes = end - c.read_pos;
  std::uint8_t* tail = nullptr;
  try {
    tail = static_cast<std::uint8_t*>(runtime_alloc(bytes, 8));
  } catch (const std::bad_alloc&) {
    return;  // no memory: the ring stays until it is read
  }
  copy_slots(tail, c.records_at(c.read_pos), bytes);
  if (exporters_.has_raw()) {
    hand_raw(c, end);
    if (rings_in_file_) persist_raw();
  }
  ThreadBuffer& b = *c.buffer;
  zero_slots(b.ring.base + (c.zeroed_pos & (b.ring.capacity - 1)), end - c.zeroed_pos);
  c.zeroed_pos = end;
  b.read_index.store(end, std::memory_order_release);
  c.detached_drops = b.total_dropped();
  rows_.set_dropped(*c.row, c.detached_drops);
  c.tail = tail;
  c.tail_from = c.read_pos;
  c.end = end;
  c.buffer = nullptr;
  let_go(b);
}

void Drainer::close_thread(RingCursor& c, std::uint64_t at_ticks, std::uint8_t flags) {
  if (!c.first_known) {  // registered but never recorded: after the others, when it goes
    c.first_known = true;
    c.first_ticks = ~std::uint64_t{0};
  }
  assign_sort_indices();
  // Not before anything the thread or the stream has delivered, or is about to.
  const std::uint64_t queued = batch_size_ != 0 ? batch_[batch_size_ - 1].time_ns : 0;
  const std::uint64_t ns = std::max({converter_.to_ns(at_ticks), c.state.last_ns, pipeline_.delivered_ns(), queued});
  if (filter_.active()) {
    // What the filter still holds, then the ends made up here, through it.
    std::vector<Event>& ends = filter_scratch_;
    ends.clear();
    closed_at_stop_ += close_zones(c.state, ns, flags, [&]() -> Event& { return ends.emplace_back(); });
    c.filtered.add(ends.data(), ends.size(), filter_, [this](SiteId id) -> const SiteInfo& { return sites_.site(id); });
    while (!c.filtered.empty()) {
      if (batch_size_ == batch_capacity_) deliver();
      batch_size_ += c.filtered.release(~std::uint64_t{0}, batch_ + batch_size_, batch_capacity_ - batch_size_);
    }
  } else {
    closed_at_stop_ += close_zones(c.state, ns, flags, [&]() -> Event& { return next_event(); });
  }
  const std::uint64_t dropped = c.drops();
  rows_.set_dropped(*c.row, dropped);
  if (dropped > c.state.reported_drops) {
    Event& e = next_event();
    e = Event{ns, sites_.id_of(&kDroppedSite), c.thread, EventKind::dropped, 0, 0, 0, {}};
    e.value.u = dropped - c.state.reported_drops;
    c.state.reported_drops = dropped;
  }
}

void Drainer::update_names(RingCursor& c) {
  const std::uint32_t version = c.buffer->name_version.load(std::memory_order_acquire);
  if (version == c.name_version) return;
  c.name_version = version;
  c.row->info.name = c.buffer->read_name();
  rows_.renamed(*c.row);
  raw_thread(c);
}

void Drainer::assign_sort_indices() {
  unsorted_threads_ = false;
  std::vector<RingCursor*> fresh;
  for (auto& c : cursors_) {
    if (c->first_known && c->row->info.sort_index == kUnsorted) fresh.push_back(c.get());
  }
  std::sort(fresh.begin(), fresh.end(), [&](const RingCursor* a, const RingCursor* b) {
    const std::uint64_t ta = a->row->info.os_tid, tb = b->row->info.os_tid;
    return a->first_ticks != b->first_ticks ? a->first_ticks < b->first_ticks : ta < tb;
  });
  for (const RingCursor* c : fresh) rows_.place(*c->row);
}

void Drainer::note_first_records(RingCursor& c, const std::uint8_t* records) {
  if (c.first_known) return;
  c.first_known = true;
  c.first_ticks = record_ticks(load_header(records), records, 0);
  unsorted_threads_ = true;
}

// ---------------------------------------------------------------------------------------
// Raw sinks.

std::uint64_t Drainer::hand_raw(RingCursor& c, std::uint64_t to) {
  const std::uint64_t from = c.raw_pos;
  if (from >= to) return 0;
  c.raw_pos = to;
  // Contiguous through the ring's second mapping, even when it runs past the ring's end.
  const std::uint8_t* const records = c.records_at(from);
  note_first_records(c, records);
  delivered_in_pass_ = true;
  std::uint64_t events = 0;
  bool counted = false;
  exporters_.each_raw("on_raw_records", [&](RawSink& r) {
    const std::uint64_t e = r.on_raw_records(c.thread, std::span<const std::uint8_t>(records, to - from));
    if (!counted) events = e;
    counted = true;
  });
  return events;
}

void Drainer::raw_thread(const RingCursor& c) {
  if (!exporters_.has_raw()) return;
  const ThreadInfo& info = c.row->info;
  exporters_.each_raw("on_raw_thread", [&](RawSink& r) { r.on_raw_thread(c.thread, info.os_tid, info.name); });
}

void Drainer::raw_segment() {
  const ClockSegment s = converter_.newest();
  exporters_.each_raw("on_raw_segment", [&](RawSink& r) { r.on_raw_segment(s); });
}

// Config::self_drain: what a pass does for one ring of a raw-only session (its records
// to the sink, zeroed, the read index published), done by the ring's own thread with
// the drainer between passes. Only what the sink takes in the thread (no allocation, no
// system call) is handed over; its events are counted by the next pass.
OwnDrain Drainer::drain_own(RingCursor& c) noexcept {
  const auto& [index, sink] = exporters_.first_raw();
  if (c.buffer == nullptr || exporters_.failed(index)) return OwnDrain::none;
  // Everything reserved: the sink stops at a record not written yet (its header 0: the
  // caller's own reservation in zone_end_slow, or one its signal handler interrupted).
  const std::uint64_t end = c.reserved_end();
  if (end == c.read_pos) return OwnDrain::none;
  const std::uint8_t* const records = c.records_at(c.read_pos);
  const std::size_t took =
      sink->on_raw_records_in_thread(c.thread, std::span<const std::uint8_t>(records, end - c.read_pos), c.own_events);
  if (took == 0) return OwnDrain::some;  // the drainer must write the buffer out, or describe a site
  note_first_records(c, records);
  delivered_in_pass_ = true;  // the next pass ends with on_raw_pass and on_flush: the file gets the records
  c.read_pos += took;
  c.raw_pos = c.read_pos;
  c.release_read();
  return c.read_pos == end || load_header(c.records_at(c.read_pos)) == 0 ? OwnDrain::all : OwnDrain::some;
}

// ---------------------------------------------------------------------------------------
// The clock, the stats, the exporters' context.

void Drainer::fit_clock(bool final) {
  if (!use_tsc_) return;
  const std::uint64_t anchor = converter_.anchor_ticks();
  std::int64_t offset = 0;
  ClockSample sample{};
  if (!fitted_ || final) {
    // Records a thread packed into the file itself since the last pass come before this
    // segment in the file, converted by the segments before it: leave their times as they are.
    if (fitted_ && std::any_of(cursors_.begin(), cursors_.end(), [](const auto& c) { return c->own_events != 0; }))
      return;
    sample = sample_clock(true);
    if (!converter_.interpolate(sample, fitted_ ? converted_until_ : anchor, offset)) return;
  } else {
    // Forward, when the run has doubled since the last fit, and at least once a period.
    const std::uint64_t now = read_ticks(true);
    const std::uint64_t since = last_fit_ticks_ - anchor;
    if (now - last_fit_ticks_ < std::min(since, refit_period_ticks_)) return;
    sample = sample_clock(true);
    offset = converter_.refit(sample, std::min(sample.ticks - anchor, refit_period_ticks_));
  }
  fitted_ = true;
  last_fit_ticks_ = sample.ticks;
  clock_info_.recalibrations += 1;
  clock_info_.ticks_per_second = converter_.ticks_per_second();
  clock_info_.max_correction_ns = std::max(clock_info_.max_correction_ns, std::fabs(static_cast<double>(offset)));
  if (exporters_.has_raw()) raw_segment();
}

void Drainer::update_stats(bool lists) {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  rows_.fill(stats_);
  const std::uint64_t orphans = registry_.orphan_drops();
  stats_.dropped_without_ring = orphans;
  stats_.dropped += orphans;
  stats_.rings_unavailable = ring_failure_text(registry_.ring_failure(), config_.buffer_records);
  stats_.late_events = pipeline_.late();
  // Ends decoded with no zone open, and RINGTRACE_ZONE_ENDs with no RINGTRACE_ZONE_BEGIN
  // open on their thread (counted by the hot path's cold side, since this drainer began).
  stats_.unbalanced_ends =
      counts_.unbalanced_ends + (g_unbalanced_manual_ends.load(std::memory_order_relaxed) - manual_ends_base_);
  stats_.runtime_names = sites_.runtime_names().distinct();
  stats_.runtime_names_overflowed = sites_.runtime_names().overflowed();
  stats_.closed_at_stop = closed_at_stop_;
  const FunctionCounts functions = function_counts();
  stats_.functions.unwound = functions.unwound;
  stats_.functions.too_deep = functions.too_deep;
  stats_.functions.short_calls = filter_.short_calls();
  stats_.functions.excluded = filter_.excluded();
  // Calls of inlined functions left out at the hooks: counted in each ring's block.
  std::uint64_t inlined = inlined_let_go_;
  for (const auto& c : cursors_) {
    if (c->buffer != nullptr) inlined += c->buffer->writer->inlined.load(std::memory_order_relaxed);
  }
  stats_.functions.inlined = inlined;
  if (inlined != 0 && lists) {
    InlinedTally by_function = inlined_let_go_by_function_;
    for (const auto& c : cursors_) {
      if (c->buffer != nullptr) by_function.add(*c->buffer->inlined_calls);
    }
    stats_.functions.inlined_by_function = by_function.by_function();
  }
  if (filter_.short_calls() != 0 && lists) {
    stats_.functions.short_by_function =
        filter_.short_by_function([this](SiteId id) -> const SiteInfo& { return sites_.site(id); });
  }
  stats_.drain_passes = passes_;
  stats_.drainer_out_of_memory = out_of_memory_;
  stats_.drainer_events_lost = events_lost_;
  stats_.self_drained = self_drained_;
  stats_.clock = clock_info_;
  stats_.allocator = runtime_allocator_name();
  stats_.exporter_errors = exporters_.errors();
  stats_.context_switches_unavailable = switches_unavailable_;
  stats_.context_switches = switches_;
  stats_.context_switches_lost = switches_lost_;
  stats_.threads_without_switches = threads_without_switches_;
  if (config_.memory) {
    MemoryStats& m = stats_.memory;
    pipeline_.heap().fill_totals(m);
    m.known = !exporters_.raw_only();  // a session that only hands records over decodes nothing
    MemoryStats::LeftOut* const causes[kMemoryLeftOutCauses] = {&m.nested, &m.after_exit, &m.dropped};
    for (unsigned cause = 0; cause < kMemoryLeftOutCauses; ++cause) {
      const MemoryLeftOutCounts& c = g_memory_left_out[cause];
      const MemoryStats::LeftOut& base = memory_left_out_base_[cause];
      *causes[cause] = {c.allocations.load(std::memory_order_relaxed) - base.allocations,
                        c.frees.load(std::memory_order_relaxed) - base.frees,
                        c.bytes.load(std::memory_order_relaxed) - base.bytes};
    }
    m.unrecorded_nested = m.nested.events() + m.after_exit.events();
    m.stack_method = config_.memory_stack_bytes != 0 ? kStackMethod : "";
    m.leaks = named_memory_.leaks;
    m.sites = named_memory_.sites;
    m.stacks = named_memory_.stacks;
  }
}

// The blocks live at stop, by the zones that allocated them (names joined as folded
// stacks' frames are, "; " apart) and their sites; the sites and sampled stacks, named
// from the loaded modules' symbols (symbols::name_memory).
void Drainer::name_leaks() {
  named_memory_.sites.clear();
  named_memory_.stacks.clear();
  pipeline_.heap().fill_rows(named_memory_, [this](SiteId id) -> const SiteInfo& { return sites_.site(id); });
  if (!named_memory_.sites.empty()) {
    symbols::Symbolizer symbolizer(symbols::loaded_modules());
    symbols::name_memory(named_memory_, symbolizer);
  }
}

SessionStats Drainer::stats() const {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  return stats_;
}

std::uint32_t Drainer::process_id() const { return static_cast<std::uint32_t>(::getpid()); }

std::string_view Drainer::text(const Event& e) const {
  if ((e.flags & EventFlags::text) == 0 || e.value.u + e.text_size > texts_.size()) return {};
  if (e.kind != EventKind::arg && e.kind != EventKind::message) return {};
  return std::string_view(texts_).substr(e.value.u, e.text_size);
}

}  // namespace ringtrace::detail
