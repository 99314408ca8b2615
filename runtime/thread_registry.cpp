#include "thread_registry.hpp"

#include <algorithm>
#include <cstring>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <new>
#include <thread>

#include "allocator.hpp"
#include "ringtrace/instrument.hpp"

#if RINGTRACE_HAVE_TSC
#include <immintrin.h>  // _mm_pause
#endif

namespace ringtrace::detail {
namespace {

constinit thread_local bool t_untraced = false;

// Owns the thread's buffer for thread-exit purposes and keeps the name set before the
// thread's first event. Constructed on first use from the slow path only.
struct ThreadHook {
  std::string name;
  ~ThreadHook();
};
thread_local ThreadHook t_hook;

ThreadHook::~ThreadHook() {
  t_untraced = true;  // events from later thread_local destructors are ignored
  ThreadWriter& t = t_writer;
  auto* buffer = static_cast<ThreadBuffer*>(t.buffer);
  t.epoch = 0;
  t.avail_end = 0;
  t.limit = 0;
  t.buffer = nullptr;
  if (buffer == nullptr) return;
  const std::uint32_t old = buffer->flags.fetch_or(kRetired, std::memory_order_acq_rel);
  if ((old & kRegistered) == 0) Registry::instance().recycle(buffer);
}

ThreadBuffer* buffer_of(ThreadWriter& t) { return static_cast<ThreadBuffer*>(t.buffer); }

void note_drop(ThreadWriter& t, ThreadBuffer& b) noexcept {
  if (b.pending_drops == 0) b.pending_first_ticks = read_ticks(t.use_tsc);
  ++b.pending_drops;
  b.dropped.store(b.dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

void write_drop_marker(ThreadWriter& t, ThreadBuffer& b) noexcept {
  const std::uint64_t pos = t.write_pos;
  t.slots[pos & t.mask] = Record{b.pending_first_ticks, record_word(nullptr, record_dropped)};
  t.slots[(pos + 1) & t.mask] = Record{b.pending_drops, 0};
  b.pending_drops = 0;
  publish(t, pos + 2);
}

// A thread's name in its ring file slot, for a reader recovering a killed process's
// rings: the size is cleared first and set last, so a torn name reads as none.
void write_slot_name(ring_file::SlotHeader& slot, std::string_view name) noexcept {
  const std::size_t bytes = std::min(name.size(), ring_file::kMaxName);
  slot.name_bytes.store(0, std::memory_order_release);
  std::memcpy(slot.name, name.data(), bytes);
  slot.name_bytes.store(static_cast<std::uint32_t>(bytes), std::memory_order_release);
}

void backoff(unsigned round) {
  if (round < 64) {
#if RINGTRACE_HAVE_TSC
    _mm_pause();
#endif
  } else if (round < 128) {
    std::this_thread::yield();
  } else {
    // One nanosleep, not sleep_for: sleep_for restarts after EINTR with the time left,
    // and a signal arriving more often than the sleep (a 20 us profiling timer) then
    // keeps the thread asleep forever. Woken early, the caller just checks again.
    const timespec pause{0, 20'000};
    ::nanosleep(&pause, nullptr);
  }
}

}  // namespace

Registry*& Registry::slot() {
  static Registry* registry = new Registry();  // leaked on purpose, see header
  return registry;
}

Registry& Registry::instance() { return *slot(); }

void Registry::reset_after_fork() { slot() = new Registry(); }

ThreadBuffer* Registry::take_registrations() {
  ThreadBuffer* newest_first = registrations_.exchange(nullptr, std::memory_order_acquire);
  ThreadBuffer* oldest_first = nullptr;
  while (newest_first != nullptr) {
    ThreadBuffer* next = newest_first->next_registration;
    newest_first->next_registration = oldest_first;
    oldest_first = newest_first;
    newest_first = next;
  }
  return oldest_first;
}

void Registry::release_pending_registrations() {
  for (ThreadBuffer* b = take_registrations(); b != nullptr;) {
    ThreadBuffer* next = b->next_registration;
    release(b);
    b = next;
  }
}

std::uint32_t Registry::publish_epoch(const ActiveParams& params) {
  std::lock_guard<std::mutex> lock(mutex_);
  params_ = params;
  grace_ns_.store(params.grace_ns, std::memory_order_relaxed);
  orphan_drops_.store(0, std::memory_order_relaxed);
  last_epoch_ = last_epoch_ >= 0x7FFFFFFFu ? 1 : last_epoch_ + 1;
  g_epoch.store(last_epoch_, std::memory_order_release);
  return last_epoch_;
}

void Registry::set_paused(bool paused) {
  std::lock_guard<std::mutex> lock(mutex_);
  g_epoch.store(paused ? 0 : last_epoch_, std::memory_order_release);
}

void Registry::retract_epoch() {
  std::lock_guard<std::mutex> lock(mutex_);
  g_epoch.store(0, std::memory_order_release);
}

void Registry::release(ThreadBuffer* buffer) {
  const std::uint32_t old = buffer->flags.fetch_and(~kRegistered, std::memory_order_acq_rel);
  if ((old & kRetired) != 0) recycle(buffer);
}

// Gives a buffer's ring back: to mimalloc, or its slot's mapping (the file's pages go
// when their last mapping does). Only the buffer's own thread, or nobody, writes into it.
static void free_ring(ThreadBuffer& b) noexcept {
  if (b.slot_map != nullptr) {
    unmap_ring_slot(b.slot_map, b.slot_map_bytes);
  } else {
    runtime_free(b.slots);
  }
  b.slots = nullptr;
  b.capacity = 0;
  b.slot = nullptr;
  b.slot_map = nullptr;
  b.slot_map_bytes = 0;
  b.slot_serial = 0;
  b.published = &b.write_index;
}

void Registry::recycle(ThreadBuffer* buffer) {
  buffer->flags.store(0, std::memory_order_relaxed);
  try {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    pool_.push_back(buffer);
  } catch (...) {  // no memory for the pool's array: give the buffer's memory back
    free_ring(*buffer);
    delete buffer;
  }
}

ThreadBuffer* Registry::acquire_buffer() {
  ThreadBuffer* buffer = nullptr;
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    if (!pool_.empty()) {
      buffer = pool_.back();
      pool_.pop_back();
      return buffer;
    }
  }
  // The control block (indices, name) comes from the ordinary heap: it holds a
  // std::string, and leak checkers cannot see pointers kept in mimalloc's memory.
  // The ring itself, the large allocation, comes from mimalloc (bind()).
  buffer = new ThreadBuffer();
  buffers_created_.fetch_add(1, std::memory_order_relaxed);
  return buffer;
}

bool Registry::wait_for_wake(std::chrono::microseconds timeout, const std::atomic<bool>& stop) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (wake_.load(std::memory_order_acquire) != 0 || stop.load(std::memory_order_acquire)) return true;
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return false;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    timespec relative{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    // Sleeps only while the word is still 0: a wake between the check and the call
    // returns at once (EAGAIN), so none is lost.
    ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&wake_), FUTEX_WAIT_PRIVATE, 0u, &relative, nullptr, 0);
  }
}

void Registry::wake_drainer() {
  if (wake_.exchange(1, std::memory_order_acq_rel) == 0) {
    ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&wake_), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  }
}

bool Registry::bind(ThreadWriter& t, std::uint32_t epoch) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (g_epoch.load(std::memory_order_relaxed) != epoch) return false;  // stop() got here first
  ThreadHook& hook = t_hook;
  ThreadBuffer* b = buffer_of(t);
  if (b == nullptr) {
    b = acquire_buffer();
    t.buffer = b;
  }
  const std::uint64_t serial = params_.ring_file != nullptr ? params_.ring_file->serial() : 0;
  if (b->capacity != params_.capacity || b->slot_serial != serial) {
    free_ring(*b);
    if (params_.ring_file != nullptr) {
      const RingFile::Slot slot = params_.ring_file->map_slot();  // throws: counted as a ring not allocated
      b->slots = slot.ring;
      b->slot = slot.header;
      b->slot_map = slot.map;
      b->slot_map_bytes = slot.bytes;
      b->slot_serial = serial;
      b->published = &slot.header->write_index;
    } else {
      b->slots = static_cast<Record*>(runtime_alloc(params_.capacity * sizeof(Record), 64));
    }
    b->capacity = params_.capacity;
  }
  if (b->slot != nullptr) {
    // Rebinding: a reader of the file ignores the slot until it is bound again, so that
    // the previous thread's records (all in the trace file by now) are never taken for
    // this one's.
    b->slot->state.store(0, std::memory_order_release);
    b->slot->write_index.store(0, std::memory_order_relaxed);
    b->slot->thread.store(ring_file::kUnknownThread, std::memory_order_relaxed);
  }
  b->write_index.store(0, std::memory_order_relaxed);
  b->read_index.store(0, std::memory_order_relaxed);
  b->dropped.store(0, std::memory_order_relaxed);
  b->nested_drops.store(0, std::memory_order_relaxed);
  b->pending_drops = 0;
  b->high_water = params_.high_water;
  b->block = params_.overflow == OverflowPolicy::block;
  std::atomic_signal_fence(std::memory_order_seq_cst);  // a nested drop counts here once reset
  b->epoch = epoch;
  b->os_tid = static_cast<std::uint64_t>(::syscall(SYS_gettid));
  {
    std::lock_guard<std::mutex> name_lock(b->name_mutex);
    b->name = hook.name;
  }
  b->name_version.fetch_add(1, std::memory_order_release);
  if (b->slot != nullptr) {
    b->slot->os_tid = b->os_tid;
    write_slot_name(*b->slot, hook.name);
    b->slot->state.store(ring_file::kSlotBound, std::memory_order_release);
  }
  b->flags.store(kRegistered, std::memory_order_release);
  ThreadBuffer* head = registrations_.load(std::memory_order_relaxed);
  do {
    b->next_registration = head;
  } while (!registrations_.compare_exchange_weak(head, b, std::memory_order_release, std::memory_order_relaxed));
  t.slots = b->slots;
  t.mask = b->capacity - 1;
  t.write_pos = 0;
  t.limit = b->high_water;
  t.avail_end = t.limit;
  t.published = b->published;
  t.use_tsc = params_.use_tsc;
  return true;  // the caller (the slow path, busy) binds t.epoch when it leaves
}

void mark_thread_untraced() noexcept {
  t_untraced = true;
  t_writer.epoch = 0;
}

namespace {

// A drop seen by a call nested inside another recording call on the same thread (or
// while the thread has no ring): counted with atomics only, nothing else touched.
void count_nested_drop(ThreadWriter& t) noexcept {
  auto* b = static_cast<ThreadBuffer*>(t.buffer);
  if (b != nullptr && b->epoch == g_epoch.load(std::memory_order_relaxed)) {
    b->nested_drops.fetch_add(1, std::memory_order_relaxed);
  } else {
    Registry::instance().count_orphan_drop();
  }
}

}  // namespace

Reserve reserve_slow(std::uint64_t need, std::uint32_t bound, std::uint32_t epoch) noexcept {
  ThreadWriter& t = t_writer;
  if (bound == kBusy) {  // interrupted a recording call of this thread: its epoch stays kBusy
    if (!t_untraced && g_epoch.load(std::memory_order_relaxed) != 0) count_nested_drop(t);
    return Reserve::dropped;
  }
  if (bound == kSampledOut) {  // inside a sampled-out zone: left out with it, not counted
    leave(t, bound);
    return Reserve::inactive;
  }
  // t.epoch is kBusy from here: every way out but `ok` restores it.
  const auto out = [&](Reserve why) {
    leave(t, bound);
    return why;
  };
  if (t_untraced) return out(Reserve::inactive);
  // A session that ended since the caller's load: not recorded. Binding to a newer one
  // here would leave the thread's epoch naming the old one, and the next event would
  // register the same ring twice.
  if (g_epoch.load(std::memory_order_acquire) != epoch) return out(Reserve::inactive);
  Registry& registry = Registry::instance();
  if (bound != epoch) {
    bool bound_now = false;
    try {
      bound_now = registry.bind(t, epoch);
    } catch (...) {  // no memory for the ring or its control block
      bound_now = false;
    }
    if (!bound_now) {
      // stop() got in first (nothing to count), or no ring: this event is lost, counted.
      if (g_epoch.load(std::memory_order_acquire) != epoch) return out(Reserve::inactive);
      registry.count_orphan_drop();
      return out(Reserve::dropped);
    }
    bound = epoch;
  }
  ThreadBuffer& b = *buffer_of(t);
  for (unsigned round = 0;; ++round) {
    const std::uint64_t read = b.read_index.load(std::memory_order_acquire);
    const std::uint64_t reserved = t.limit - t.avail_end;  // slots held for open zones' ends
    const std::uint64_t marker = b.pending_drops != 0 ? 2 : 0;
    std::uint64_t limit = read + b.high_water;
    if (t.write_pos + need + marker + reserved > limit) {
      registry.wake_drainer();
      limit = read + b.capacity;
    }
    if (t.write_pos + need + reserved <= limit) {
      t.limit = limit;
      t.avail_end = limit - reserved;
      if (marker != 0 && t.write_pos + need + marker <= t.avail_end) write_drop_marker(t, b);
      return Reserve::ok;  // the caller publishes, then leaves (restores the epoch)
    }
    // Under the block policy, wait only for room the drainer can make: zones nested so
    // deep that their reserved ends fill the ring would wait forever.
    if (!b.block || need + reserved + marker > b.capacity) {
      note_drop(t, b);
      return out(Reserve::dropped);
    }
    if (g_epoch.load(std::memory_order_acquire) != epoch) return out(Reserve::inactive);
    backoff(round);
  }
}

void count_dropped_end() noexcept {
  if (t_untraced) return;
  ThreadWriter& t = t_writer;
  const std::uint32_t bound = t.epoch;
  if (bound == kBusy) {
    if (g_epoch.load(std::memory_order_relaxed) != 0) count_nested_drop(t);
    return;
  }
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (epoch == 0) return;
  if (t.buffer == nullptr || bound != epoch) {  // the begin was lost without a ring
    Registry::instance().count_orphan_drop();
    return;
  }
  mark_busy(t);
  note_drop(t, *buffer_of(t));
  leave(t, bound);
}

void hidden_attachment() noexcept {
  if ((t_writer.hidden & (kHiddenSkipped - 1)) != 0) count_dropped_end();  // inside a dropped zone: lost
}

void write_text(const SiteInfo* site, const char* text, std::size_t size, std::uint32_t epoch) noexcept {
  ThreadWriter& t = t_writer;
  if (t.hidden != 0) {
    hidden_attachment();
    return;
  }
  if (text == nullptr) size = 0;
  const std::uint32_t bound = mark_busy(t);
  // Bound first (the cut depends on the ring's size); the slow path leaves the thread
  // busy on `ok` and restores its epoch otherwise.
  if (bound != epoch && reserve_slow(2, bound, epoch) != Reserve::ok) return;
  const std::uint64_t capacity = t.mask + 1;
  const std::size_t bytes = std::min<std::size_t>(size, std::min<std::uint64_t>(kMaxText, capacity / 4 * sizeof(Record)));
  const std::uint64_t need = 2 + (bytes + sizeof(Record) - 1) / sizeof(Record);
  if (t.write_pos + need > t.avail_end && reserve_slow(need, epoch, epoch) != Reserve::ok) return;
  const std::uint64_t pos = t.write_pos;
  t.slots[pos & t.mask] = Record{0, record_word(site, record_text)};
  t.slots[(pos + 1) & t.mask] = Record{bytes | (bytes < size ? std::uint64_t{1} << 63 : 0), size};
  // The text's slots may wrap around the ring's end: copied in two pieces.
  const std::uint64_t first_slot = (pos + 2) & t.mask;
  const std::size_t until_end = (capacity - first_slot) * sizeof(Record);
  const std::size_t head = std::min(bytes, until_end);
  auto* const ring = reinterpret_cast<char*>(t.slots);
  if (head != 0) std::memcpy(ring + first_slot * sizeof(Record), text, head);
  if (bytes > head) std::memcpy(ring, text + head, bytes - head);
  publish(t, pos + need);
  leave(t, epoch);
}

void drain_before_unload() noexcept {
  if (g_epoch.load(std::memory_order_acquire) == 0 || t_untraced) return;
  Registry& registry = Registry::instance();
  const auto now = [] { return std::chrono::steady_clock::now(); };
  // Records younger than the grace are held back by a pass: let them age, then wait for
  // a pass that starts after that (two completions), at most a bounded time.
  std::this_thread::sleep_for(std::chrono::nanoseconds(registry.grace_ns()));
  const std::uint64_t seen = registry.passes();
  const auto deadline = now() + std::chrono::milliseconds(200);
  while (registry.passes() < seen + 2 && g_epoch.load(std::memory_order_acquire) != 0 && now() < deadline) {
    registry.wake_drainer();
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

namespace {
// Runs when the shared object that contains this copy of the runtime is unloaded
// (dlclose), and at exit. Its call sites are read by the drainer until they have been
// decoded (the drainer then keeps copies): make sure that has happened. The call goes
// to the process-wide runtime (default visibility), not to this object's own copy.
__attribute__((destructor)) void before_unload() { drain_before_unload(); }
}  // namespace

}  // namespace ringtrace::detail

namespace ringtrace {

void set_thread_name(std::string_view name) {
  if (detail::t_untraced) return;
  // Busy while the name lock is held: a signal handler that records meanwhile drops its
  // events (counted) instead of waiting, in block mode, on a drainer that waits for the lock.
  detail::ThreadWriter& t = detail::t_writer;
  if (t.epoch == detail::kBusy) return;  // called from inside the recording path (a hook)
  const std::uint32_t bound = detail::mark_busy(t);
  try {
    detail::t_hook.name.assign(name);
    if (auto* buffer = static_cast<detail::ThreadBuffer*>(t.buffer)) {
      {
        std::lock_guard<std::mutex> lock(buffer->name_mutex);
        buffer->name.assign(name);
        if (buffer->slot != nullptr) detail::write_slot_name(*buffer->slot, name);
      }
      buffer->name_version.fetch_add(1, std::memory_order_release);
    }
  } catch (...) {
    detail::leave(t, bound);
    throw;
  }
  detail::leave(t, bound);
}

}  // namespace ringtrace
