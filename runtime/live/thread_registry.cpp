#include "thread_registry.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include <dlfcn.h>   // dladdr: which object a copy of the runtime is in
#include <limits.h>  // PTHREAD_DESTRUCTOR_ITERATIONS
#include <pthread.h>
#include <sched.h>

#include <linux/futex.h>
#include <sys/mman.h>   // a buffer's pages
#include <sys/prctl.h>  // PR_GET_NAME: the kernel's name of an unnamed thread
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <memory>  // the buffer, until it is whole
#include <new>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "allocator.hpp"  // runtime_alloc: a thread's name
#include "drainer.hpp"    // drain_own_ring (Config::self_drain)
#include "function_stack.hpp"
#include "memory_stacks.hpp"            // sample_stack, OwnMemory
#include "ring_records.hpp"             // the records' sizes
#include "ringtrace/detail/memory.hpp"  // memory_slow
#include "ringtrace/instrument.hpp"
#include "slow_scope.hpp"

#if RINGTRACE_HAVE_TSC
#include <immintrin.h>  // _mm_pause
#endif

namespace ringtrace::detail {
namespace {

constinit thread_local bool t_untraced = false;
// The thread is exiting and its ring is let go (release_ring_at_exit): what it still
// allocates or frees is not recorded, and counted (memory_slow).
constinit thread_local bool t_exiting = false;

// The name set_thread_name gave the thread, kept for its rings to come. Trivially
// destructible, its text in ringtrace's own memory (runtime_alloc, never the program's
// malloc): a thread_local with a destructor would make the C library allocate its
// destructor's entry, and free it at the thread's end, through the program's malloc, one
// block the program never asked for (and its free recorded as the program's).
struct ThreadName {
  char* text = nullptr;
  std::size_t size = 0;
  std::string_view view() const { return {text, size}; }
  void assign(std::string_view name) {
    char* copy = name.empty() ? nullptr : static_cast<char*>(runtime_alloc(name.size(), 1));
    if (copy != nullptr) std::memcpy(copy, name.data(), name.size());
    runtime_free(text);
    text = copy;
    size = name.size();
  }
};
constinit thread_local ThreadName t_name{};
constinit thread_local std::uint8_t t_exit_rounds = 0;

// A thread's end, in order (glibc's start_thread): the program's thread_local destructors,
// then up to PTHREAD_DESTRUCTOR_ITERATIONS rounds of pthread key destructors, where C
// libraries free their thread state (glibc's own, OpenSSL's, ICU's: pthread_key_create(&k,
// free)). Both free the program's memory, so the ring stays until the last round: this
// key's destructor sets its value again each round (so another round comes) and lets the
// ring go in the last one, after every key destructor that ran once. (A thread whose
// first event comes in a key destructor's second round or later is armed too late for
// its last round: its ring is then kept until the process ends, docs/memory.md.)
constinit pthread_key_t g_exit_key{};
constinit std::atomic<bool> g_exit_key_made{false};
constinit char g_armed = 1;

void release_ring_at_exit() noexcept {
  t_untraced = true;  // events from what runs after this are ignored
  t_exiting = true;
  function_stack_forget();
  ThreadWriter& t = t_writer;
  auto* buffer = static_cast<ThreadBuffer*>(t.buffer);
  t.epoch = 0;
  t.block = nullptr;
  t.inlined_calls = nullptr;
  t.buffer = nullptr;
  t_name.assign({});
  if (buffer == nullptr) return;
  const std::uint32_t old = buffer->flags.fetch_or(kRetired, std::memory_order_acq_rel);
  if ((old & kRegistered) == 0) {
    Registry::instance().recycle(buffer);
  } else {
    Registry::instance().retired_while_registered();
  }
}

#if defined(__SANITIZE_THREAD__)
#define RINGTRACE_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RINGTRACE_UNDER_TSAN 1
#endif
#endif
#ifndef RINGTRACE_UNDER_TSAN
#define RINGTRACE_UNDER_TSAN 0
#endif
// The round of key destructors the ring is let go in: the last. ThreadSanitizer finishes
// a thread in that round too, with a key of its own re-armed as this one is and made
// before it (so run first): under it, the ring goes one round earlier, while the thread
// is still known to it.
constexpr unsigned kExitRound = PTHREAD_DESTRUCTOR_ITERATIONS - (RINGTRACE_UNDER_TSAN ? 1 : 0);

void on_exit_round(void*) noexcept {
  if (++t_exit_rounds < kExitRound) {
    ::pthread_setspecific(g_exit_key, &g_armed);
    return;
  }
  release_ring_at_exit();
}

// At the thread's first bind: its key's value set, so that on_exit_round runs at its end.
void arm_thread_exit() noexcept {
  if (!g_exit_key_made.load(std::memory_order_acquire)) return;  // no session started yet: nothing bound
  if (::pthread_getspecific(g_exit_key) != nullptr) return;
  ::pthread_setspecific(g_exit_key, &g_armed);
}

ThreadBuffer* buffer_of(ThreadWriter& t) { return static_cast<ThreadBuffer*>(t.buffer); }

// Ring space the thread keeps free beyond what a record needs (ring_bytes_for() makes
// rings of at least kMinRingBytes, so both are positive):
// - for zone ends: a quarter of the ring. Other records stop short of it, so a zone whose
//   begin was recorded finds room for its end unless a quarter of the ring is nothing
//   but ends of open zones (then the end waits for the drainer; see zone_end_slow).
// - for signal handlers: a handler that records between the fast path's test of the
//   limit and its reservation takes space the test did not count. 64 nested records of
//   at most 32 bytes (a step's switch). A record that starts below the limit may end up
//   to 80 bytes past it (a zone with four arguments: the fast path tests only where it
//   starts), inside this slack and the end reserve; a run-time name's record, longer,
//   is tested whole.
std::uint64_t end_reserve(std::uint64_t capacity) { return capacity / 4; }
std::uint64_t nested_slack(std::uint64_t capacity) { return std::min<std::uint64_t>(2048, capacity / 8); }

// Brings the writer's next pointer back into the ring's first mapping (once per lap)
// and returns how many bytes of the ring are free: neither read nor written.
std::uint64_t free_bytes(ThreadBuffer& b) noexcept {
  WriterBlock& w = *b.writer;
  const auto base = reinterpret_cast<std::uintptr_t>(b.ring.base);
  const std::uint64_t capacity = b.ring.capacity;
  std::uintptr_t next = w.next.load(std::memory_order_relaxed);
  if (next >= base + capacity) {
    // The lap's base first: a process killed between the two stores leaves a ring file
    // whose slot claims a lap too many, which its reader takes as overwritten (never as
    // records that are not there). Nothing else moves `next` meanwhile (a nested call
    // reaches the slow path and drops); the loop is insurance.
    w.lap_base.store(w.lap_base.load(std::memory_order_relaxed) + capacity, std::memory_order_release);
    while (!w.next.compare_exchange_weak(next, next - capacity, std::memory_order_release)) {}
  }
  next = w.next.load(std::memory_order_relaxed);
  const std::uint64_t read = b.read_index.load(std::memory_order_acquire);
  const std::uint64_t used = (next - base - read) & (capacity - 1);
  return capacity - used;
}

// Config::self_drain. A thread packs its own ring when it finds it full: the drainer is
// not keeping up (with a core to spare it would have). From then on, for its next
// kOwnDrainRounds packings, it packs at the own-drain mark, well before the high-water
// mark, so that what it packs is still in its core's cache and a drainer pass finds
// little to do; a try that found the drainer's lock busy costs only a retry a quarter
// mark later. Then it goes back to leaving the rings to the drainer until a ring fills
// again: a thread whose drainer keeps up (a free core) never pays for the packing.
inline constexpr std::uint64_t kOwnDrainBytes = std::uint64_t{128} << 10;
inline constexpr std::uint32_t kOwnDrainRounds = 1024;  // 128 MiB of ring at the mark
std::uint64_t own_drain_mark(const ThreadBuffer& b) noexcept { return std::min(b.high_water, kOwnDrainBytes); }

// The fast path's limits from the free space: records other than zone ends leave the
// end reserve and the nested slack free (and, below the high-water mark, stop there so
// that the thread wakes the drainer on its way past it); zone ends the slack only. No
// record starts past the ring's first mapping, so the slow path sees every lap's end.
// 0 keeps a kind of record on the slow path: a session without a TSC, a drop marker to
// write.
void set_limits(ThreadBuffer& b, std::uint64_t free, bool past_high_water) noexcept {
  WriterBlock& w = *b.writer;
  // A session without a TSC, or a zone of the thread's hidden (ThreadWriter::open_hidden).
  if (!b.use_tsc || t_writer.hidden != 0) {
    w.limit = 0;
    w.end_limit = 0;
    return;
  }
  const std::uint64_t capacity = b.ring.capacity;
  const auto base = reinterpret_cast<std::uintptr_t>(b.ring.base);
  const std::uintptr_t next = w.next.load(std::memory_order_relaxed);
  const std::uint64_t keep = end_reserve(capacity) + nested_slack(capacity);
  std::uint64_t room = free > keep ? free - keep : 0;
  const std::uint64_t used = capacity - free;
  if (!past_high_water) room = std::min(room, b.high_water > used ? b.high_water - used : 0);
  // A ring its thread empties itself (Config::self_drain): back to the slow path at the
  // own-drain mark, and, if the drainer's lock was busy there, every quarter of it after.
  if (b.own_rounds != 0 && b.own_drain.load(std::memory_order_relaxed) != nullptr) {
    const std::uint64_t mark = own_drain_mark(b);
    room = std::min(room, used < mark ? mark - used : mark / 4);
  }
  const std::uint64_t end_room = free > nested_slack(capacity) ? free - nested_slack(capacity) : 0;
  w.limit = b.pending_drops != 0 ? 0 : std::min<std::uintptr_t>(next + room, base + capacity);
  w.end_limit = std::min<std::uintptr_t>(next + end_room, base + capacity);
}

void note_drop(ThreadBuffer& b) noexcept {
  if (b.pending_drops == 0) b.pending_first_ticks = read_ticks(b.use_tsc);
  ++b.pending_drops;
  b.dropped.store(b.dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// The slow path's records of a fixed size (no text): a TimedRecord, a TimedValueRecord or
// an ArgRecord (record.hpp).
std::uint64_t record_bytes(RecordKind kind) noexcept { return fixed_record_bytes(kind); }
bool has_time(RecordKind kind) noexcept { return kind_has_time(kind); }

// Writes a record of a fixed-size kind at the ring's next byte (the caller made room).
void write_record(ThreadBuffer& b, std::uint64_t header, RecordKind kind, std::uint64_t ticks,
                  std::uint64_t payload) noexcept {
  const std::uint64_t bytes = record_bytes(kind);
  const std::uintptr_t at = reserve(*b.writer, bytes);
  if (has_time(kind)) {
    put(at + offsetof(TimedRecord, ticks), ticks);  // where a TimedValueRecord's are too
    if (bytes == sizeof(TimedValueRecord)) put(at + offsetof(TimedValueRecord, value), payload);
  } else {
    put(at + offsetof(ArgRecord, value), payload);
  }
  publish(at, header);
}

void write_drop_marker(ThreadBuffer& b) noexcept {
  write_record(b, std::uint64_t{record_dropped} << kRecordKindShift, record_dropped, b.pending_first_ticks,
               b.pending_drops);
  b.pending_drops = 0;
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

// A thread's name in its ring file slot, for a reader recovering a killed process's
// rings: the size is cleared first and set last, so a torn name reads as none.
void write_slot_name(ring_file::SlotHeader& slot, std::string_view name) noexcept {
  const std::size_t bytes = std::min(name.size(), ring_file::kMaxName);
  slot.name_bytes.store(0, std::memory_order_release);
  std::memcpy(slot.name, name.data(), bytes);
  slot.name_bytes.store(static_cast<std::uint32_t>(bytes), std::memory_order_release);
}

// The calling thread's name as the kernel has it (`comm`, 15 bytes at most: what
// pthread_setname_np or prctl(PR_SET_NAME) gave it, else the name of the thread that
// created it, the program's for the main thread); "" if the kernel does not say.
std::string kernel_thread_name() {
  char name[16] = {};
  if (::prctl(PR_GET_NAME, name, 0, 0, 0) != 0) return {};
  return std::string(name, ::strnlen(name, sizeof name - 1));
}

// A recorded zone begins, or a zone ends, inside a hidden one (ThreadWriter::open_hidden).
void recorded_zone_begin(ThreadWriter& t) noexcept {
  t.open_hidden <<= 1;
  t.open_dropped <<= 1;
  t.open_levels += 1;
}
void open_zone_end(ThreadWriter& t) noexcept {
  if (t.open_levels == 0) return;
  if (t.open_levels > 64) t.open_overflowed = 1;
  t.open_hidden >>= 1;
  t.open_dropped >>= 1;
  t.open_levels -= 1;
}

// A drop seen by a call nested inside the thread's slow path (or while the thread has no
// ring): counted with atomics only, nothing else touched.
void count_nested_drop(ThreadWriter& t) noexcept {
  if (t_untraced || g_epoch.load(std::memory_order_relaxed) == 0) return;
  auto* b = static_cast<ThreadBuffer*>(t.buffer);
  if (b != nullptr && b->epoch == g_epoch.load(std::memory_order_relaxed) && t.epoch == b->epoch) {
    b->nested_drops.fetch_add(1, std::memory_order_relaxed);
  } else {
    Registry::instance().count_orphan_drop();
  }
}

enum class Room : std::uint8_t { ok, dropped, inactive };

// In the slow path (SlowScope held): binds the thread to `epoch` if it is not yet, then
// makes `bytes` of room for a record other than a zone end (writing a pending drop
// marker first), waking the drainer past the high-water mark and waiting for it under
// the block policy. On `dropped` the event is counted.
Room make_room(ThreadWriter& t, std::uint32_t epoch, std::uint64_t bytes) noexcept {
  // A session that ended since the caller's load: not recorded. Binding to a newer one
  // here would leave the thread's epoch naming the old one.
  if (g_epoch.load(std::memory_order_acquire) != epoch) return Room::inactive;
  Registry& registry = Registry::instance();
  // ringtrace's own threads (the drainer and the exporters it calls, the signal watcher)
  // are never traced: what their work records (an exporter's callback, an allocator hook
  // called by the drainer) is not the program's, and is left out uncounted. They block
  // every signal (start_own_thread), so no handler of the program's runs there.
  if (t_untraced) return Room::inactive;
  if (t.epoch != epoch) {
    bool bound = false;
    try {
      bound = registry.bind(t, epoch);
    } catch (...) {  // no memory for the ring or its control block (a ring's own error is noted first)
      registry.note_ring_failure(Registry::kRingNoMemory);
      bound = false;
    }
    if (!bound) {
      // stop() got in first (nothing to count), or no ring: this event is lost, counted.
      if (g_epoch.load(std::memory_order_acquire) != epoch) return Room::inactive;
      registry.count_orphan_drop();
      return Room::dropped;
    }
  }
  ThreadBuffer& b = *buffer_of(t);
  const std::uint64_t capacity = b.ring.capacity;
  const std::uint64_t keep = end_reserve(capacity) + nested_slack(capacity);
  for (unsigned round = 0;; ++round) {
    std::uint64_t free = free_bytes(b);
    const std::uint64_t marker = b.pending_drops != 0 ? record_bytes(record_dropped) : 0;
    // A thread that packs its own ring (Config::self_drain, see kOwnDrainRounds) does it
    // past the own-drain mark, if the drainer is between passes; past the high-water mark
    // with records left, it wakes the drainer.
    if (b.own_rounds != 0 && capacity - free + bytes + marker > own_drain_mark(b)) {
      const OwnDrain own = drain_own_ring(b);
      if (own != OwnDrain::none) {
        b.own_rounds -= 1;
        free = free_bytes(b);
      }
      if (own == OwnDrain::some) registry.wake_drainer();
    }
    if (capacity - free + bytes + marker > b.high_water) {
      registry.wake_drainer(registry.yield_to_drainer());
      free = free_bytes(b);
    }
    if (free >= keep + bytes + marker) {
      if (marker != 0) write_drop_marker(b);
      return Room::ok;
    }
    // Full: the drainer is not keeping up. Before it drops or waits, a thread whose
    // session lets it packs its ring itself, and keeps doing so for a while.
    if (drain_own_ring(b) != OwnDrain::none) {
      b.own_rounds = kOwnDrainRounds;
      if (free_bytes(b) > free) continue;  // room made: check again
    }
    // The drainer must know, whatever the high-water mark (at 1.0 the ring is full, its
    // end reserve aside, before the mark is passed) and before the thread's ring is known
    // to it (a ring it has not taken yet cannot be packed by its thread).
    registry.wake_drainer();
    // Under the block policy, wait only for room the drainer can make: a record larger
    // than what the ring can ever free for it would wait forever.
    if (!b.block || keep + bytes + marker > capacity || registry.drainer_short()) {
      // A full ring under the drop policy: its thread gives up the CPU at the first drop
      // and every 16th after it while the ring stays full (Config::yield_to_drainer).
      // With every core busy the drainer, runnable but not running, then empties the
      // ring within a yield instead of a time slice later; with a core free the call
      // returns at once. The thread never waits: it drops and goes on.
      if ((b.pending_drops & 15) == 0 && registry.yield_to_drainer()) ::sched_yield();
      note_drop(b);
      return Room::dropped;
    }
    if (g_epoch.load(std::memory_order_acquire) != epoch) return Room::inactive;
    backoff(round);
  }
}

// On the way out of the slow path of a bound thread: the fast path's limits from the
// ring's free space now.
void reopen_fast_path(ThreadWriter& t, std::uint32_t epoch) noexcept {
  if (t.epoch != epoch || t.block == nullptr) return;
  ThreadBuffer& b = *buffer_of(t);
  const std::uint64_t free = free_bytes(b);
  set_limits(b, free, b.ring.capacity - free >= b.high_water);
}

}  // namespace

std::uint64_t ring_bytes_for(std::size_t buffer_records) {
  const std::uint64_t bytes = std::clamp<std::uint64_t>(buffer_records, 64, std::uint64_t{1} << 30) * 16;
  return std::max<std::uint64_t>(std::bit_ceil(bytes), kMinRingBytes);
}

Registry*& Registry::slot() {
  static Registry* registry = new Registry();  // leaked on purpose, see header
  return registry;
}

Registry& Registry::instance() { return *slot(); }

void Registry::reset_after_fork() {
  // The switch streams of registrations no drainer took are the parent's threads': the
  // child closes its copies (the kernel traces a thread while any copy is open) and
  // leaves their mappings (not in the child). One thread here: the list is still.
  for (ThreadBuffer* b = slot()->registrations_.load(std::memory_order_relaxed); b != nullptr;
       b = b->next_registration) {
    b->first_stream.release_in_child();
  }
  slot() = new Registry();
}

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
  if (!g_exit_key_made.load(std::memory_order_relaxed)) {  // once per process (a fork child keeps it)
    if (::pthread_key_create(&g_exit_key, on_exit_round) != 0) {
      throw std::runtime_error("ringtrace: pthread_key_create: no key left for a thread's end");
    }
    g_exit_key_made.store(true, std::memory_order_release);
  }
  params_ = params;
  memory_stack_bytes_.store(params.memory_stack_bytes, std::memory_order_relaxed);
  drainer_short_.store(false, std::memory_order_relaxed);
  grace_ns_.store(params.grace_ns, std::memory_order_relaxed);
  yield_.store(params.yield_to_drainer, std::memory_order_relaxed);
  orphan_drops_.store(0, std::memory_order_relaxed);
  ring_failure_.store(0, std::memory_order_relaxed);
  switches_refused_.store(false, std::memory_order_relaxed);
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
  buffer->own_drain.store(nullptr, std::memory_order_relaxed);  // the cursor goes with the drainer's hold
  buffer->forget_first_stream();                                // a registration the stop let go of unread
  const std::uint32_t old = buffer->flags.fetch_and(~kRegistered, std::memory_order_acq_rel);
  if ((old & kRetired) != 0) recycle(buffer);
}

// Gives a buffer's ring back (its mappings; a ring file's pages go when their last
// mapping does). Only the buffer's own thread, or nobody, writes into it.
static void free_ring(ThreadBuffer& b) noexcept {
  if (b.slot.header != nullptr) {
    unmap_ring_slot(b.slot);
    b.ring = RingMemory{};
  } else {
    unmap_ring(b.ring);
  }
  b.slot_serial = 0;
  b.writer = &b.heap_writer;
}

void Registry::retired_while_registered() {
  // The buffer reaches the pool once the drainer has emptied it (it copies out what it
  // still holds back): wake it now rather than at its next interval, so that threads
  // started one after another reuse one another's rings (and ring file slots) instead
  // of adding one each per drain interval (5,000 short threads left 70 to 110 rings
  // behind). At most one futex wake per drainer pass, no yield: the drainer takes the
  // next core while the program goes on.
  wake_drainer();
}

// LeakSanitizer's root regions (defined when the program runs under it, else null): a
// ThreadBuffer lives in ringtrace's own memory, which LeakSanitizer does not scan, and
// holds heap blocks of its own (its thread's name).
extern "C" void __lsan_register_root_region(const void* p, std::size_t size) __attribute__((weak));
extern "C" void __lsan_unregister_root_region(const void* p, std::size_t size) __attribute__((weak));

// A ThreadBuffer and its InlinedCalls, in pages mapped for the two: ringtrace's own
// memory, as the ring is, never the program's heap (its allocator and whatever counts it
// would see ringtrace's blocks as the program's), and not the runtime allocator's either,
// whose first use loads mimalloc (about 0.25 ms) on the thread that records its first
// event (issue 44: the drainer's thread loads it). mmap is safe in a signal handler.
constexpr std::size_t kCallsAt =
    (sizeof(ThreadBuffer) + alignof(InlinedCalls) - 1) / alignof(InlinedCalls) * alignof(InlinedCalls);
constexpr std::size_t kBufferBytes = kCallsAt + sizeof(InlinedCalls);
static_assert(alignof(ThreadBuffer) <= 4096 && alignof(InlinedCalls) <= 4096);

void* map_buffer_memory() {
  void* p = ::mmap(nullptr, kBufferBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

void Registry::recycle(ThreadBuffer* buffer) {
  buffer->flags.store(0, std::memory_order_relaxed);
  buffer->forget_first_stream();  // a stream no drainer took (the session stopped first)
  try {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    pool_.push_back(buffer);
  } catch (...) {  // no memory for the pool's array: give the buffer's memory back
    free_ring(*buffer);
    buffer->inlined_calls->~InlinedCalls();
    if (__lsan_unregister_root_region != nullptr) __lsan_unregister_root_region(buffer, sizeof(ThreadBuffer));
    buffer->~ThreadBuffer();
    ::munmap(buffer, kBufferBytes);
  }
}

ThreadBuffer* Registry::acquire_buffer() {
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    if (!pool_.empty()) {
      ThreadBuffer* buffer = pool_.back();
      pool_.pop_back();
      return buffer;
    }
  }
  void* memory = map_buffer_memory();  // throws bad_alloc
  ThreadBuffer* buffer = new (memory) ThreadBuffer();
  if (__lsan_register_root_region != nullptr) __lsan_register_root_region(memory, sizeof(ThreadBuffer));
  buffer->inlined_calls = new (static_cast<std::uint8_t*>(memory) + kCallsAt) InlinedCalls();
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

void Registry::wake_drainer(bool yield) {
  if (wake_.exchange(1, std::memory_order_acq_rel) == 0) {
    const long woken =
        ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&wake_), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
    // The drainer was asleep: on a busy machine it would wait for this thread's time
    // slice to end while the rings fill; give it the CPU now (async-signal-safe).
    if (yield && woken > 0) ::sched_yield();
  }
}

bool Registry::bind(ThreadWriter& t, std::uint32_t epoch) {
  OwnMemory own;  // what binding allocates on the program's thread is ringtrace's
  std::lock_guard<std::mutex> lock(mutex_);
  if (g_epoch.load(std::memory_order_relaxed) != epoch) return false;  // stop() got here first
  ThreadBuffer* b = buffer_of(t);
  if (b == nullptr) {
    b = acquire_buffer();
    t.buffer = b;
  }
  t.block = nullptr;  // until the ring is ready (SlowScope touches the block it sees)
  t.inlined_calls = nullptr;
  const std::uint64_t serial = params_.ring_file != nullptr ? params_.ring_file->serial() : 0;
  if (b->ring.capacity != params_.ring_bytes || b->slot_serial != serial || !b->ring.ok()) {
    free_ring(*b);
    if (params_.ring_file != nullptr) {
      try {
        b->slot = params_.ring_file->map_slot();  // zero pages, touched; throws: counted as a ring not allocated
      } catch (const std::system_error& e) {
        note_ring_failure(e.code().value());
        throw;
      }
      b->ring = b->slot.ring;
      b->slot_serial = serial;
      b->writer = &b->slot.header->writer;
    } else {
      int error = 0;
      b->ring = map_heap_ring(params_.ring_bytes, error);  // zero pages
      if (!b->ring.ok()) {
        note_ring_failure(error != 0 ? error : kRingNoMemory);
        throw std::bad_alloc();
      }
    }
  } else {
    // A ring bound before: the drainer zeroed what it read (it stops at the first header
    // that is 0); what it did not read, from its position to the writer's, is zeroed now.
    const std::uint64_t mask = b->ring.capacity - 1;
    const std::uint64_t read = b->read_index.load(std::memory_order_acquire) & mask;
    const std::uint64_t unread = (b->next_offset() - read) & mask;
    std::memset(b->ring.base + read, 0, unread);  // contiguous through the second mapping
  }
  if (b->slot.header != nullptr) {
    // Rebinding: a reader of the file ignores the slot until it is bound again, so that
    // the previous thread's records (all in the trace file by now) are never taken for
    // this one's.
    b->slot.header->state.store(0, std::memory_order_release);
    b->slot.header->thread.store(ring_file::kUnknownThread, std::memory_order_relaxed);
    // A process killed from here on leaves the slot unbound until the store of
    // kSlotBound below: the resets of its write position and lap that follow must not be
    // moved before these stores (a release store orders only what comes before it).
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  WriterBlock& w = *b->writer;
  w.next.store(reinterpret_cast<std::uintptr_t>(b->ring.base), std::memory_order_relaxed);
  w.lap_base.store(0, std::memory_order_relaxed);
  w.inlined.store(0, std::memory_order_relaxed);
  b->clear_inlined_calls();
  w.limit = 0;
  w.end_limit = 0;
  b->read_index.store(0, std::memory_order_relaxed);
  b->dropped.store(0, std::memory_order_relaxed);
  b->nested_drops.store(0, std::memory_order_relaxed);
  b->pending_drops = 0;
  b->own_rounds = 0;
  b->high_water = std::min(params_.high_water, params_.ring_bytes);
  b->block = params_.overflow == OverflowPolicy::block;
  b->use_tsc = params_.use_tsc;
  std::atomic_signal_fence(std::memory_order_seq_cst);  // a nested drop counts here once reset
  b->epoch = epoch;
  b->os_tid = static_cast<std::uint64_t>(::syscall(SYS_gettid));
  // The thread's switch stream, from here (before its first record is written): the time
  // before it opened is not counted on the CPU for any zone (issue 31 point 6). A stream an
  // earlier session's drainer never took is closed first.
  b->forget_first_stream();
  if (params_.context_switches && !switches_refused_.load(std::memory_order_relaxed)) {
    b->first_stream = switches::SwitchStream::open(static_cast<pid_t>(b->os_tid));
    b->first_stream_ns = monotonic_ns();
    b->first_stream_tried = true;
  }
  // Its name: set_thread_name's, else the kernel's, read by the thread itself here (its
  // first event's slow path: nothing on the hot path, and a thread that exits at once
  // still has it). The kernel's is read again at each bind, never kept in the hook.
  const std::string name = t_name.size == 0 ? kernel_thread_name() : std::string(t_name.view());
  {
    std::lock_guard<std::mutex> name_lock(b->name_mutex);
    b->name = name;
  }
  b->name_version.fetch_add(1, std::memory_order_release);
  if (b->slot.header != nullptr) {
    b->slot.header->os_tid = b->os_tid;
    write_slot_name(*b->slot.header, name);
    b->slot.header->ring_address.store(reinterpret_cast<std::uintptr_t>(b->ring.base), std::memory_order_relaxed);
    b->slot.header->state.store(ring_file::kSlotBound, std::memory_order_release);
  }
  b->flags.store(kRegistered, std::memory_order_release);
  ThreadBuffer* head = registrations_.load(std::memory_order_relaxed);
  do {
    b->next_registration = head;
  } while (!registrations_.compare_exchange_weak(head, b, std::memory_order_release, std::memory_order_relaxed));
  t.block = &w;
  t.inlined_calls = b->inlined_calls;
  t.epoch = epoch;
  function_stack_bound(epoch);  // frames of an earlier session are not this ring's
  arm_thread_exit();            // the ring is let go at the thread's very end
  if (!stack_sampling_started(epoch)) start_stack_sampling(params_.memory_stack_bytes, epoch);
  return true;  // the fast path opens when the slow path leaves (reopen_fast_path)
}

bool thread_untraced() noexcept { return t_untraced; }

void mark_thread_untraced() noexcept {
  t_untraced = true;
  function_stack_forget();
  t_writer.epoch = 0;
  t_writer.block = nullptr;
  t_writer.inlined_calls = nullptr;
}

void unbind_thread_after_fork() noexcept {
  function_stack_forget();
  t_writer = ThreadWriter{};
}

std::uint32_t zone_open_slow(const SiteInfo* site, RecordKind kind, std::uint64_t region_id,
                             std::uint32_t epoch) noexcept {
  ThreadWriter& t = t_writer;
  if (t.epoch == kSampledOut) return kNotRecorded;  // inside a sampled-out zone: left out with it
  if (t.in_slow != 0) {                             // nested in this thread's slow path: dropped whole, counted
    count_nested_drop(t);
    hidden_zone_begin(t, kHiddenDropped);
    return kDroppedZone;
  }
  std::uint32_t token = epoch;
  {
    SlowScope scope(t);
    switch (make_room(t, epoch, record_bytes(kind))) {
      case Room::ok: {
        ThreadBuffer& b = *buffer_of(t);
        write_record(b, record_header(site, kind), kind, read_ticks(b.use_tsc), region_id);
        if (t.hidden != 0) recorded_zone_begin(t);
        break;
      }
      case Room::dropped:
        token = kDroppedZone;
        break;
      case Room::inactive:
        token = kNotRecorded;
        break;
    }
    reopen_fast_path(t, epoch);
  }
  if (token == kDroppedZone) hidden_zone_begin(t, kHiddenDropped);  // undone by the end
  return token;
}

void zone_end_slow(std::uintptr_t at, std::uint64_t ticks) noexcept {
  ThreadWriter& t = t_writer;
  ThreadBuffer& b = *buffer_of(t);
  const std::uint32_t epoch = t.epoch;
  // The fast path read the TSC. A session without one (ClockSource::monotonic, or no
  // invariant TSC) sends every end here (its end limit is 0): its time is the session's
  // clock, as every other record's. A TSC time among CLOCK_MONOTONIC ones would be far in
  // the future: the drainer would hold the thread's records back for ever.
  if (!b.use_tsc) ticks = read_ticks(false);
  if (t.hidden != 0) open_zone_end(t);  // a recorded zone inside a hidden one ends
  // Never while another slow path of this thread runs (its nested calls' zones are
  // dropped whole); if it were, the end is written only if it fits at once.
  const bool nested = t.in_slow != 0;
  SlowScope scope(t);
  const auto base = reinterpret_cast<std::uintptr_t>(b.ring.base);
  const std::uint64_t capacity = b.ring.capacity;
  for (unsigned round = 0;; ++round) {
    // A ring is never full, reservations included: the distance from the drainer's
    // position to the writer's next byte, taken modulo the capacity, must be the distance
    // (full would read as empty). An end's fast path reserves before it tests (as may a
    // handler's nested in it), so the nested slack stays free after a record the slow
    // path writes. The reservation is less than a lap ahead of the drainer (which stops
    // at it: its header is 0).
    const std::uint64_t read = b.read_index.load(std::memory_order_acquire);
    if (((at - base - read) & (capacity - 1)) + 8 + nested_slack(capacity) <= capacity) {
      // Through the ring's second mapping if `at` is past the first.
      publish(at, end_slot(ticks));
      break;
    }
    // The ring is full to the last bytes with what the drainer has not read (a quarter
    // of it ends of open zones): wait for it, whatever the policy, so that the zone is
    // recorded whole. A session that has ended reads nothing more.
    if (nested || g_epoch.load(std::memory_order_acquire) != epoch) break;
    const OwnDrain own = drain_own_ring(b);  // Config::self_drain, as in make_room
    if (own != OwnDrain::none) b.own_rounds = kOwnDrainRounds;
    if (own == OwnDrain::all) continue;
    Registry::instance().wake_drainer();
    backoff(round);
  }
  if (!nested) reopen_fast_path(t, epoch);
}

namespace {
// An event lost because the zone it belongs to was dropped (the end of a dropped begin,
// a value attached to it): counted as dropped, as its zone was.
void count_lost_with_zone(ThreadWriter& t) noexcept {
  if (t_untraced) return;
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (epoch == 0) return;
  if (t.in_slow != 0 || t.buffer == nullptr || t.epoch != epoch) {  // the begin was lost without a ring
    count_nested_drop(t);
    return;
  }
  SlowScope scope(t);
  note_drop(*buffer_of(t));
  reopen_fast_path(t, epoch);
}
}  // namespace

void zone_close_other(std::uint32_t token) noexcept {
  ThreadWriter& t = t_writer;
  if (token == kDroppedZone) {
    hidden_zone_end(t, kHiddenDropped);
    count_lost_with_zone(t);
  } else if (token == kSkippedZone) {
    hidden_zone_end(t, kHiddenSkipped);
  }
}

void hidden_zone_end(ThreadWriter& t, std::uint64_t unit) noexcept {
  t.hidden -= unit;
  open_zone_end(t);
  if (t.hidden != 0) return;
  t.open_hidden = 0;
  t.open_dropped = 0;
  t.open_levels = 0;
  t.open_overflowed = 0;
  if (t.in_slow != 0 || t_untraced || t.block == nullptr) return;  // the slow path reopens on its way out
  // Nothing written since the outermost hidden zone began (a zone switched off, alone):
  // the limits it found are still right; else they are made anew.
  WriterBlock& w = *t.block;
  auto* b = static_cast<ThreadBuffer*>(t.buffer);
  if (w.next.load(std::memory_order_relaxed) == t.saved_next && b != nullptr && b->pending_drops == 0 &&
      &w == b->writer) {
    w.limit = t.saved_limit;
    w.end_limit = t.saved_end_limit;
    return;
  }
  SlowScope scope(t);
  reopen_fast_path(t, t.epoch);
}

namespace {
// A value or text attached to the innermost open zone while a zone is hidden (t.hidden
// != 0): whether it is written (its zone, the innermost, was recorded inside the hidden
// one), lost with its zone and counted (it was dropped; or past 64 levels, not known), or
// left out with it (its category is off, a call past the functions' depth).
bool innermost_recorded(ThreadWriter& t) noexcept {
  if (t.open_levels == 0 || t.open_levels > 64 || t.open_overflowed != 0) {
    count_lost_with_zone(t);
    return false;
  }
  if ((t.open_hidden & 1) == 0) return true;
  if ((t.open_dropped & 1) != 0) count_lost_with_zone(t);
  return false;
}
}  // namespace

// Records of the fixed-size kinds only (record_bytes()); a text is write_text's.
void record_slow(const SiteInfo* site, RecordKind kind, std::uint64_t payload, std::uint32_t epoch) noexcept {
  ThreadWriter& t = t_writer;
  if (t.epoch == kSampledOut) return;
  if (t.hidden != 0 && !has_time(kind) && !innermost_recorded(t)) return;
  if (t.in_slow != 0) {
    count_nested_drop(t);
    return;
  }
  SlowScope scope(t);
  if (make_room(t, epoch, record_bytes(kind)) == Room::ok) {
    ThreadBuffer& b = *buffer_of(t);
    write_record(b, record_header(site, kind), kind, has_time(kind) ? read_ticks(b.use_tsc) : 0, payload);
  }
  reopen_fast_path(t, epoch);
}

namespace {
// A record of `head` bytes (its header, its time when `timed`, and the text's size word
// last) and then the text, cut to what the ring can hold: room for the head is made
// first, since the cut depends on the ring's size, then for the whole record. The time is
// read after the text is copied, the header stored last.
void write_with_text(ThreadWriter& t, std::uint32_t epoch, const SiteInfo* site, RecordKind kind, bool timed,
                     const char* text, std::size_t size) noexcept {
  if (text == nullptr) size = 0;
  const std::uint64_t head = fixed_record_bytes(kind);  // a TextRecord or a TimedTextRecord
  SlowScope scope(t);
  if (make_room(t, epoch, head) == Room::ok) {
    ThreadBuffer& b = *buffer_of(t);
    const std::size_t bytes = std::min<std::size_t>(size, std::min<std::uint64_t>(kMaxText, b.ring.capacity / 4));
    const std::uint64_t need = text_record_slots(head / 8, bytes) * 8;
    if (need == head || make_room(t, epoch, need) == Room::ok) {
      const std::uintptr_t at = reserve(*b.writer, need);
      put(at + text_size_offset(kind), bytes | (bytes < size ? kTextTruncated : 0));
      if (bytes != 0) std::memcpy(reinterpret_cast<void*>(at + head), text, bytes);
      if (timed) put(at + offsetof(TimedTextRecord, ticks), read_ticks(b.use_tsc));
      publish(at, record_header(site, kind));
    }
  }
  reopen_fast_path(t, epoch);
}
}  // namespace

void write_text(const SiteInfo* site, const char* text, std::size_t size, std::uint32_t epoch) noexcept {
  ThreadWriter& t = t_writer;
  if (t.epoch == kSampledOut) return;
  // Not through record_slow: it writes fixed-size records, and took a text (which has no
  // time) for a timed one of 24 bytes, whose size slot then held a time: a record the
  // drainer could not read, after which it left the thread's records out.
  if (t.hidden != 0 && !innermost_recorded(t)) return;
  if (t.in_slow != 0) {
    count_nested_drop(t);
    return;
  }
  write_with_text(t, epoch, site, record_arg_text, false, text, size);
}

// An allocation or a free (ringtrace::memory). Recorded inside hidden zones and zones
// sampling left out too (the heap's accounting needs every block; it belongs to the
// innermost recorded zone, a sampled-out one's marked so), but not by ringtrace's own
// threads (the drainer, its exporters: not the program's heap use), nor nested in this
// thread's slow path (ringtrace's own allocation, or a signal handler's that interrupted
// it: that one counted), nor after the thread's ring was let go at its end (counted).
void count_left_out(MemoryLeftOut cause, ExtendedKind subtype, std::uint64_t size) noexcept {
  MemoryLeftOutCounts& c = g_memory_left_out[cause];
  if (subtype == extended_free) {
    c.frees.fetch_add(1, std::memory_order_relaxed);
  } else {
    c.allocations.fetch_add(1, std::memory_order_relaxed);
    c.bytes.fetch_add(size, std::memory_order_relaxed);
  }
}

void memory_slow(ExtendedKind subtype, std::uint64_t address, std::uint64_t size, std::uint64_t caller,
                 std::uint32_t epoch) noexcept {
  ThreadWriter& t = t_writer;
  if (t_untraced) {  // ringtrace's own threads: not the program's; an exiting thread's: counted
    if (t_exiting) count_left_out(left_out_after_exit, subtype, size);
    return;
  }
  if (t.in_slow != 0) {
    if (t_own_memory == 0) count_left_out(left_out_nested, subtype, size);
    return;
  }
  const bool sampled_out = t.epoch == kSampledOut;
  SlowScope scope(t);
  if (sampled_out) t.epoch = epoch;  // the zone sampling left out hid this ring's epoch
  if (subtype == extended_alloc_at && !stack_sampling_started(epoch)) {
    // The thread's first allocation of the session, before its ring: its gap is drawn now
    // and this allocation counts toward it (else a thread's first block is never sampled).
    start_stack_sampling(Registry::instance().memory_stack_bytes(), epoch);
    t_bytes_to_stack -= static_cast<std::int64_t>(size);
  }
  std::uint64_t stack[kMaxAllocFrames];
  std::size_t frames = 0;
  const bool sampled = subtype == extended_alloc_at && t_bytes_to_stack < 0;
  if (sampled) frames = sample_stack(caller, stack);
  const std::uint64_t bytes = subtype == extended_free ? sizeof(MemoryRecord) : sizeof(AllocRecord) + 8 * frames;
  switch (make_room(t, epoch, bytes)) {
    case Room::ok: {
      ThreadBuffer& b = *buffer_of(t);
      const std::uintptr_t at = reserve(*b.writer, bytes);
      put(at + offsetof(MemoryRecord, address), address);
      put(at + offsetof(MemoryRecord, size), size);
      std::uint64_t header = subtype == extended_free ? kMemoryHeader<extended_free> : alloc_header(frames);
      if (subtype != extended_free) {
        put(at + offsetof(AllocRecord, caller), caller);
        for (std::size_t f = 0; f < frames; ++f) put(at + sizeof(AllocRecord) + 8 * f, stack[f]);
        if (subtype == extended_alloc) header |= kMemoryRestore;  // memory_restored()
        if (sampled) header |= kMemoryStackSampled;
      }
      if (sampled_out) header |= kMemorySampledOut;
      put(at + offsetof(MemoryRecord, ticks), read_ticks(b.use_tsc));
      publish(at, header);
      break;
    }
    case Room::dropped:
      count_left_out(left_out_dropped, subtype, size);
      break;
    case Room::inactive:
      break;
  }
  if (sampled_out) {
    t.epoch = kSampledOut;
  } else {
    reopen_fast_path(t, epoch);
  }
}

void memory_restored(const void* address) noexcept {
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (epoch == 0 || g_memory_on.load(std::memory_order_relaxed) == 0) return;
  // extended_alloc stands for "restore" here: memory_slow writes an extended_alloc_at
  // record marked kMemoryRestore, of no size and no caller.
  const std::int64_t left = t_bytes_to_stack;
  t_bytes_to_stack = INT64_MAX;  // no stack for it
  memory_slow(extended_alloc, reinterpret_cast<std::uintptr_t>(address), 0, 0, epoch);
  t_bytes_to_stack = left;
}

// A message has a time of its own and belongs to no zone: recorded inside a dropped zone
// too, as an instant is (a text, untimed, is lost with its zone).
void write_message(const SiteInfo* site, const char* text, std::size_t size, std::uint32_t epoch) noexcept {
  ThreadWriter& t = t_writer;
  if (t.epoch == kSampledOut) return;  // inside a sampled-out zone: left out with it
  if (t.in_slow != 0) {
    count_nested_drop(t);
    return;
  }
  write_with_text(t, epoch, site, record_message, true, text, size);
}

std::uint32_t zone_open_named_slow(const SiteInfo* site, const char* name, std::size_t size,
                                   std::uint32_t epoch) noexcept {
  ThreadWriter& t = t_writer;
  if (t.epoch == kSampledOut) return kNotRecorded;  // inside a sampled-out zone: left out with it
  if (t.in_slow != 0) {                             // nested in this thread's slow path: dropped whole, counted
    count_nested_drop(t);
    hidden_zone_begin(t, kHiddenDropped);
    return kDroppedZone;
  }
  if (name == nullptr) size = 0;
  const std::size_t bytes = std::min(size, kMaxRuntimeName);
  const std::uint64_t need = text_record_slots(sizeof(TimedTextRecord) / 8, bytes) * 8;
  std::uint32_t token = epoch;
  {
    SlowScope scope(t);
    switch (make_room(t, epoch, need)) {
      case Room::ok: {
        ThreadBuffer& b = *buffer_of(t);
        const std::uintptr_t at = reserve(*b.writer, need);
        if (bytes != 0) std::memcpy(reinterpret_cast<void*>(at + sizeof(TimedTextRecord)), name, bytes);
        put(at + offsetof(TimedTextRecord, size), bytes | (bytes < size ? kTextTruncated : 0));
        put(at + offsetof(TimedTextRecord, ticks), read_ticks(b.use_tsc));
        publish(at, record_header(site, record_zone_begin_named));
        if (t.hidden != 0) recorded_zone_begin(t);
        break;
      }
      case Room::dropped:
        token = kDroppedZone;
        break;
      case Room::inactive:
        token = kNotRecorded;
        break;
    }
    reopen_fast_path(t, epoch);
  }
  if (token == kDroppedZone) hidden_zone_begin(t, kHiddenDropped);  // undone by the end
  return token;
}

std::uint64_t write_step_marker(const SiteInfo* site, std::uint64_t value, std::uint64_t min_ticks,
                                unsigned events) noexcept {
  const std::uint32_t epoch = g_epoch.load(std::memory_order_acquire);
  if (epoch == 0) return 0;
  ThreadWriter& t = t_writer;
  // Nested in this thread's slow path, or inside a zone left out by sampling (the thread's
  // epoch is not its session's there, and a step belongs to the session, not to the zone):
  // lost, each event of the marker counted.
  if (t.in_slow != 0 || t.epoch == kSampledOut) {
    count_lost_steps(events);
    return 0;
  }
  std::uint64_t written = 0;
  {
    SlowScope scope(t);
    const Room room = make_room(t, epoch, record_bytes(record_region_begin));
    if (room == Room::ok) {
      ThreadBuffer& b = *buffer_of(t);
      written = std::max(read_ticks(b.use_tsc), min_ticks);
      write_record(b, record_header(site, record_region_begin), record_region_begin, written, value);
    } else if (room == Room::dropped) {
      // make_room counted one event; the marker stands for `events` lost (0: an end that a
      // later marker writes).
      const bool bound = t.epoch == epoch && t.buffer != nullptr;
      Registry& registry = Registry::instance();
      if (events == 0) {
        if (bound) {
          ThreadBuffer& b = *buffer_of(t);
          b.pending_drops -= 1;
          b.dropped.store(b.dropped.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
        } else {
          registry.uncount_orphan_drop();
        }
      }
      for (unsigned k = 1; k < events; ++k) {
        if (bound) {
          note_drop(*buffer_of(t));
        } else {
          registry.count_orphan_drop();
        }
      }
    }
    reopen_fast_path(t, epoch);
  }
  return written;
}

void count_lost_steps(unsigned events) noexcept {
  ThreadWriter& t = t_writer;
  for (unsigned k = 0; k < events; ++k) count_nested_drop(t);
}

void manual_end_unbalanced() noexcept {
  if (g_epoch.load(std::memory_order_relaxed) == 0 || t_untraced) return;
  g_unbalanced_manual_ends.fetch_add(1, std::memory_order_relaxed);
}

bool bind_thread(std::uint32_t epoch) noexcept {
  ThreadWriter& t = t_writer;
  if (t.in_slow != 0) return false;
  SlowScope scope(t);
  const bool bound = make_room(t, epoch, 0) == Room::ok;
  reopen_fast_path(t, epoch);
  return bound;
}

bool run_drainer_pass(std::chrono::milliseconds timeout) {
  Registry& registry = Registry::instance();
  if (g_epoch.load(std::memory_order_acquire) == 0) return false;
  const std::uint64_t request = registry.request_pass();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (registry.passes_served() < request) {
    if (g_epoch.load(std::memory_order_acquire) == 0 || std::chrono::steady_clock::now() > deadline) return false;
    registry.wake_drainer();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
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
// The process-wide runtime's own object needs no wait: it is unloaded at exit, where
// nothing is unmapped before its session's stop (whose last pass reads every record; the
// stop of a session started in a constructor, a preload's, runs after the objects'
// destructors), or by a dlclose, whose atexit handlers (__cxa_finalize) stopped the
// session first. Waiting there cost every preloaded recording the grace and two passes
// (1.3 ms at exit). A fully static program (no dladdr) waits as before.
bool is_process_wide_runtime() noexcept {
  Dl_info mine{}, process_wide{};
  return dladdr(reinterpret_cast<void*>(&is_process_wide_runtime), &mine) != 0 &&
         dladdr(reinterpret_cast<void*>(&drain_before_unload), &process_wide) != 0 &&
         mine.dli_fbase == process_wide.dli_fbase;
}
__attribute__((destructor)) void before_unload() {
  if (!is_process_wide_runtime()) drain_before_unload();
}
}  // namespace

}  // namespace ringtrace::detail

namespace ringtrace {

void set_thread_name(std::string_view name) {
  if (detail::t_untraced) return;
  detail::ThreadWriter& t = detail::t_writer;
  if (t.in_slow != 0) return;  // called from inside the recording path (a hook)
  // In the slow path while the name lock is held: a signal handler that records meanwhile
  // drops its events (counted) instead of waiting, in block mode, on a drainer that
  // waits for the lock.
  const std::uint32_t epoch = t.epoch;
  detail::SlowScope scope(t);
  try {
    detail::t_name.assign(name);
    if (auto* buffer = static_cast<detail::ThreadBuffer*>(t.buffer)) {
      {
        std::lock_guard<std::mutex> lock(buffer->name_mutex);
        buffer->name.assign(name);
        if (buffer->slot.header != nullptr) detail::write_slot_name(*buffer->slot.header, name);
      }
      buffer->name_version.fetch_add(1, std::memory_order_release);
    }
  } catch (...) {
    detail::reopen_fast_path(t, epoch);
    throw;
  }
  detail::reopen_fast_path(t, epoch);
}

}  // namespace ringtrace
