#include "thread_registry.hpp"

#include <sys/syscall.h>
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

void backoff(unsigned round) {
  if (round < 64) {
#if RINGTRACE_HAVE_TSC
    _mm_pause();
#endif
  } else if (round < 128) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace

Registry& Registry::instance() {
  static Registry* registry = new Registry();  // leaked on purpose, see header
  return *registry;
}

std::uint32_t Registry::publish_epoch(const ActiveParams& params) {
  std::lock_guard<std::mutex> lock(mutex_);
  params_ = params;
  last_epoch_ = last_epoch_ >= 0x7FFFFFFFu ? 1 : last_epoch_ + 1;
  g_epoch.store(last_epoch_, std::memory_order_release);
  return last_epoch_;
}

void Registry::retract_epoch() {
  std::lock_guard<std::mutex> lock(mutex_);
  g_epoch.store(0, std::memory_order_release);
}

void Registry::release(ThreadBuffer* buffer) {
  const std::uint32_t old = buffer->flags.fetch_and(~kRegistered, std::memory_order_acq_rel);
  if ((old & kRetired) != 0) recycle(buffer);
}

void Registry::recycle(ThreadBuffer* buffer) {
  buffer->flags.store(0, std::memory_order_relaxed);
  if (!pool_.enqueue(buffer)) {  // out of memory for the queue: give the memory back
    runtime_free(buffer->slots);
    delete buffer;
  }
}

ThreadBuffer* Registry::acquire_buffer() {
  ThreadBuffer* buffer = nullptr;
  if (pool_.try_dequeue(buffer)) return buffer;
  // The control block (indices, name) comes from the ordinary heap: it holds a
  // std::string, and leak checkers cannot see pointers kept in mimalloc's memory.
  // The ring itself, the large allocation, comes from mimalloc (bind()).
  buffer = new ThreadBuffer();
  buffers_created_.fetch_add(1, std::memory_order_relaxed);
  return buffer;
}

bool Registry::wait_for_wake(std::chrono::microseconds timeout, const std::atomic<bool>& stop) {
  std::unique_lock<std::mutex> lock(wake_mutex_);
  return wake_cv_.wait_for(lock, timeout, [&] {
    return wake_.load(std::memory_order_acquire) || stop.load(std::memory_order_acquire);
  });
}

void Registry::wake_drainer() {
  if (!wake_.exchange(true, std::memory_order_acq_rel)) {
    std::lock_guard<std::mutex> lock(wake_mutex_);  // no lost wake-up between check and wait
    wake_cv_.notify_one();
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
  if (b->capacity != params_.capacity) {
    runtime_free(b->slots);
    b->slots = nullptr;
    b->capacity = 0;
    b->slots = static_cast<Record*>(runtime_alloc(params_.capacity * sizeof(Record), 64));
    b->capacity = params_.capacity;
  }
  b->write_index.store(0, std::memory_order_relaxed);
  b->read_index.store(0, std::memory_order_relaxed);
  b->dropped.store(0, std::memory_order_relaxed);
  b->pending_drops = 0;
  b->high_water = params_.high_water;
  b->block = params_.overflow == OverflowPolicy::block;
  b->epoch = epoch;
  b->os_tid = static_cast<std::uint64_t>(::syscall(SYS_gettid));
  {
    std::lock_guard<std::mutex> name_lock(b->name_mutex);
    b->name = hook.name;
  }
  b->name_version.fetch_add(1, std::memory_order_release);
  b->flags.store(kRegistered, std::memory_order_release);
  if (!registrations_.enqueue(b)) {
    b->flags.store(0, std::memory_order_relaxed);
    return false;
  }
  t.slots = b->slots;
  t.mask = b->capacity - 1;
  t.write_pos = 0;
  t.limit = b->high_water;
  t.avail_end = t.limit;
  t.published = &b->write_index;
  t.use_tsc = params_.use_tsc;
  t.epoch = epoch;
  return true;
}

void mark_thread_untraced() noexcept {
  t_untraced = true;
  t_writer.epoch = 0;
}

Reserve reserve_slow(std::uint64_t need) noexcept {
  if (t_untraced) return Reserve::inactive;
  ThreadWriter& t = t_writer;
  const std::uint32_t epoch = g_epoch.load(std::memory_order_acquire);
  if (epoch == 0) return Reserve::inactive;
  Registry& registry = Registry::instance();
  if (t.epoch != epoch) {
    bool bound = false;
    try {
      bound = registry.bind(t, epoch);
    } catch (...) {  // no memory for the ring: this thread records nothing this session
      bound = false;
    }
    if (!bound) return Reserve::inactive;
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
      return Reserve::ok;
    }
    if (!b.block) {
      note_drop(t, b);
      return Reserve::dropped;
    }
    if (g_epoch.load(std::memory_order_acquire) != epoch) return Reserve::inactive;
    backoff(round);
  }
}

void count_dropped_end() noexcept {
  if (t_untraced) return;
  ThreadWriter& t = t_writer;
  if (t.buffer == nullptr || t.epoch != g_epoch.load(std::memory_order_relaxed)) return;
  note_drop(t, *buffer_of(t));
}

}  // namespace ringtrace::detail

namespace ringtrace {

void set_thread_name(std::string_view name) {
  if (detail::t_untraced) return;
  detail::t_hook.name.assign(name);
  auto* buffer = static_cast<detail::ThreadBuffer*>(detail::t_writer.buffer);
  if (buffer == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(buffer->name_mutex);
    buffer->name.assign(name);
  }
  buffer->name_version.fetch_add(1, std::memory_order_release);
}

}  // namespace ringtrace
