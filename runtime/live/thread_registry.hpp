// Threads' rings and how they reach the drainer.
//
// A ThreadBuffer belongs to one thread at a time. On its first event in a session the
// thread (slow path, under Registry::mutex) resets its ring, marks it registered and
// hands it to the drainer through a lock-free list. A thread that exits only marks
// its buffer retired; whoever lets go of it last (the exiting thread if no session
// holds it, else the drainer once it has emptied it) puts it in the pool that new
// threads take their buffer from. So memory follows the number of live threads, not
// the number of threads ever started.
#pragma once

#include <linux/futex.h>  // start_own_thread's wait for its thread
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ring_file.hpp"
#include "ring_memory.hpp"
#include "ringtrace/config.hpp"
#include "ringtrace/detail/functions.hpp"  // InlinedCalls
#include "ringtrace/detail/writer.hpp"
#include "switch_stream.hpp"

namespace ringtrace::detail {

struct RingCursor;  // the drainer's (ring_cursor.hpp)

inline constexpr std::uint32_t kRegistered = 1;  // a session's drainer reads this ring
inline constexpr std::uint32_t kRetired = 2;     // the owning thread has exited

struct ThreadBuffer {
  // The hot path's block when the ring is on the heap (its ring file slot's otherwise).
  WriterBlock heap_writer;
  // Consumer side: bytes of the ring the drainer has read and zeroed (never wraps; the
  // byte at ring offset `read_index % capacity` is the next to read). Release by the
  // drainer, acquire by the thread's slow path before it writes over read bytes.
  alignas(128) std::atomic<std::uint64_t> read_index{0};
  // Producer side, cold: written by the owning thread's slow path.
  alignas(128) std::atomic<std::uint64_t> dropped{0};  // single writer (the thread, not nested); the drainer reads it
  // Drops of calls nested inside the thread's slow path (signal handlers, allocator
  // hooks): fetch_add, safe at any point of the interrupted call.
  std::atomic<std::uint64_t> nested_drops{0};
  std::uint64_t pending_drops = 0;        // not yet reported by a dropped marker
  std::uint64_t pending_first_ticks = 0;  // time of the first of those drops
  // Config::self_drain: packings of its own ring the thread still makes at the own-drain
  // mark since it last found its ring full (thread_registry.cpp, kOwnDrainRounds).
  std::uint32_t own_rounds = 0;
  // Calls of inlined functions the hooks left out, per function (FunctionOptions::inlined
  // false): counted by the owning thread, read by the drainer (let_go, stats), cleared at
  // bind. 8 KiB from ringtrace's own allocator (runtime_alloc), made with the buffer and
  // kept with it in the pool: never the program's heap.
  InlinedCalls* inlined_calls = nullptr;
  void clear_inlined_calls() noexcept {
    for (InlinedCalls::Slot& s : inlined_calls->slots) {
      s.fn.store(0, std::memory_order_relaxed);
      s.calls.store(0, std::memory_order_relaxed);
    }
    inlined_calls->others.store(0, std::memory_order_relaxed);
  }
  // Control, cold.
  alignas(128) std::atomic<std::uint32_t> flags{0};
  std::uint32_t epoch = 0;
  std::uint64_t os_tid = 0;
  std::uint64_t high_water = 0;        // bytes; past this the thread wakes the drainer
  bool block = false;                  // overflow policy of the session it is bound to
  bool use_tsc = false;                // the session's clock: else every event takes the slow path
  RingMemory ring;                     // `ring.capacity` bytes, mapped twice
  WriterBlock* writer = &heap_writer;  // where the hot path's block is
  // The ring's slot in a ring file (RingFile), or null when the ring is on the heap.
  RingFile::Slot slot;
  std::uint64_t slot_serial = 0;  // RingFile::serial() of the file it is in
  std::mutex name_mutex;
  std::string name;
  std::atomic<std::uint32_t> name_version{0};
  ThreadBuffer* next_registration = nullptr;  // link in Registry's registration list
  // The drainer's reading state for this ring (its RingCursor, ring_cursor.hpp) while a
  // session whose rings their threads may empty themselves (Config::self_drain) reads it;
  // else null. Set by the drainer when it accepts the ring and cleared when it lets go of
  // it (Registry::release), under its pass lock; read by the thread under the same lock
  // (drain_own_ring, drainer.hpp); atomic so that the thread may look before it tries it.
  std::atomic<RingCursor*> own_drain{nullptr};
  // Config::context_switches: the thread's switch stream, opened by the thread itself in
  // its first event of the session (Registry::bind), so that its switches are known from
  // its first record on; the drainer takes it when it accepts the ring. Written before the
  // ring is registered (release), read by the drainer after (acquire).
  switches::SwitchStream first_stream;
  std::uint64_t first_stream_ns = 0;  // CLOCK_MONOTONIC right after the open (or its failure)
  bool first_stream_tried = false;    // set by bind; cleared by the drainer when it takes it
  // A stream no drainer will take (the session stopped first, switches were refused): closed.
  void forget_first_stream() noexcept {
    first_stream.close();
    first_stream_tried = false;
  }

  std::string read_name() {
    std::lock_guard<std::mutex> lock(name_mutex);
    return name;
  }
  std::uint64_t total_dropped() const {
    return dropped.load(std::memory_order_acquire) + nested_drops.load(std::memory_order_acquire);
  }
  // The ring offset of the writer's next record (written or not).
  std::uint64_t next_offset() const {
    const std::uintptr_t next = writer->next.load(std::memory_order_acquire);
    return (next - reinterpret_cast<std::uintptr_t>(ring.base)) & (ring.capacity - 1);
  }
};

// Parameters of the active session that the threads' slow path needs.
struct ActiveParams {
  std::uint64_t ring_bytes = 0;  // a power of two, at least kMinRingBytes
  std::uint64_t high_water = 0;  // bytes
  OverflowPolicy overflow = OverflowPolicy::drop;
  bool use_tsc = false;
  std::uint64_t grace_ns = 0;     // the drainer holds back records younger than this
  RingFile* ring_file = nullptr;  // rings in this file mapping (BinaryTraceOptions::rings_in_file), else the heap
  bool yield_to_drainer = true;   // Config::yield_to_drainer
  bool context_switches = false;  // Config::context_switches: threads open their streams at their first event
  std::uint64_t memory_stack_bytes = 0;  // Config::memory_stack_bytes: mean bytes between sampled stacks (0: none)
};

// The bytes of ring that Config::buffer_records asks for (16 per record, as the rings
// of earlier versions held): a power of two, at least kMinRingBytes.
std::uint64_t ring_bytes_for(std::size_t buffer_records);

class Registry {
 public:
  static Registry& instance();  // never destroyed: threads may exit after main returns
  // In a fork child: a fresh registry (the parent's is left as it was, possibly with its
  // locks held by threads that do not exist here).
  static void reset_after_fork();

  // Session side. publish_epoch / retract_epoch hold `mutex` so that a registration
  // is either complete before stop's epoch change or sees epoch 0 and gives up.
  std::uint32_t publish_epoch(const ActiveParams& params);
  void retract_epoch();
  // Steps of a schedule that record nothing: the epoch reads 0 (as with no session, so
  // a zone costs one compare) until resumed. Only between publish and retract.
  void set_paused(bool paused);

  // Drainer side.
  // Every registration since the last call, oldest first (a list linked through
  // ThreadBuffer::next_registration), or null.
  ThreadBuffer* take_registrations();
  // After a failed start (epoch retracted, no drainer): lets go of every registration.
  void release_pending_registrations();
  // Drops the drainer's hold; recycles the buffer if its thread has exited.
  void release(ThreadBuffer* buffer);
  bool wait_for_wake(std::chrono::microseconds timeout, const std::atomic<bool>& stop);
  void clear_wake() { wake_.store(0, std::memory_order_relaxed); }
  // Producer slow path and stop(): an atomic exchange and, at most once per drainer
  // pass, a futex wake (and, if it woke the drainer and `yield` is set, sched_yield: see
  // Config::yield_to_drainer). No lock, so a signal handler may call it at any point.
  void wake_drainer(bool yield = false);
  bool yield_to_drainer() const { return yield_.load(std::memory_order_relaxed); }
  // The drainer's last pass failed for want of memory: a full ring drops, whatever the
  // policy, rather than wait for a drainer that may not make room.
  void set_drainer_short(bool s) { drainer_short_.store(s, std::memory_order_relaxed); }
  bool drainer_short() const { return drainer_short_.load(std::memory_order_relaxed); }

  // Events lost by threads that have no ring in the active session (the ring could not
  // be allocated, or a nested call arrived while the thread was binding).
  void count_orphan_drop() { orphan_drops_.fetch_add(1, std::memory_order_relaxed); }
  void uncount_orphan_drop() { orphan_drops_.fetch_sub(1, std::memory_order_relaxed); }
  std::uint64_t orphan_drops() const { return orphan_drops_.load(std::memory_order_acquire); }
  // Why the session's first thread without a ring has none: the error number of the
  // ring's mapping (memfd_create, ftruncate, mmap: an RLIMIT_FSIZE, RLIMIT_AS, a full
  // ring file), or kRingNoMemory when its control block could not be allocated; 0 while
  // every thread got one. The first one is kept (no allocation: a signal handler may be
  // binding).
  static constexpr int kRingNoMemory = -1;
  void note_ring_failure(int error) {
    int none = 0;
    ring_failure_.compare_exchange_strong(none, error, std::memory_order_relaxed);
  }
  int ring_failure() const { return ring_failure_.load(std::memory_order_relaxed); }

  // The drainer counts its passes; an object being unloaded waits for one that saw
  // everything recorded before (drain_before_unload).
  void pass_completed() { passes_.fetch_add(1, std::memory_order_release); }
  std::uint64_t passes() const { return passes_.load(std::memory_order_acquire); }
  std::uint64_t grace_ns() const { return grace_ns_.load(std::memory_order_relaxed); }
  // Tests: a pass on demand (run_drainer_pass below). A request is served by the first
  // pass that starts after it, which takes everything published before it (no grace).
  std::uint64_t request_pass() { return pass_requests_.fetch_add(1, std::memory_order_acq_rel) + 1; }
  std::uint64_t pass_requests() const { return pass_requests_.load(std::memory_order_acquire); }
  void passes_served(std::uint64_t request) { passes_served_.store(request, std::memory_order_release); }
  std::uint64_t passes_served() const { return passes_served_.load(std::memory_order_acquire); }

  // Thread side (slow path).
  bool bind(ThreadWriter& writer, std::uint32_t epoch);
  void recycle(ThreadBuffer* buffer);
  // A thread exited while a session's drainer holds its buffer: wakes the drainer, which
  // gives the buffer back to the pool (see thread_registry.cpp).
  void retired_while_registered();
  std::uint64_t buffers_created() const { return buffers_created_.load(std::memory_order_relaxed); }
  // The active session's mean gap between sampled allocation stacks (0: none).
  // Read outside the registry's lock (a thread's first allocation, before its ring).
  std::uint64_t memory_stack_bytes() const { return memory_stack_bytes_.load(std::memory_order_relaxed); }
  // The kernel refused switch streams to the process: threads stop trying (drainer).
  void stop_switch_attempts() { switches_refused_.store(true, std::memory_order_relaxed); }

 private:
  Registry() = default;
  static Registry*& slot();
  ThreadBuffer* acquire_buffer();

  std::mutex mutex_;
  std::uint32_t last_epoch_ = 0;
  ActiveParams params_;
  std::atomic<std::uint64_t> memory_stack_bytes_{0};
  std::atomic<bool> drainer_short_{false};  // params_.memory_stack_bytes, for memory_stack_bytes()
  // Threads push their buffer (compare-exchange), the drainer takes the whole list at
  // once (exchange): no per-thread state, unlike a queue with a producer per thread,
  // whose memory grew with every thread ever started.
  std::atomic<ThreadBuffer*> registrations_{nullptr};
  std::mutex pool_mutex_;
  std::vector<ThreadBuffer*> pool_;  // buffers of exited threads, guarded by pool_mutex_
  std::atomic<std::uint64_t> buffers_created_{0};
  std::atomic<std::uint32_t> wake_{0};          // futex word: 1 once woken in this pass
  std::atomic<std::uint64_t> orphan_drops_{0};  // reset when a session's epoch is published
  std::atomic<int> ring_failure_{0};            // likewise
  std::atomic<std::uint64_t> passes_{0};
  std::atomic<std::uint64_t> pass_requests_{0};
  std::atomic<std::uint64_t> passes_served_{0};
  std::atomic<std::uint64_t> grace_ns_{0};
  std::atomic<bool> yield_{true};              // Config::yield_to_drainer of the active session
  std::atomic<bool> switches_refused_{false};  // reset when a session's epoch is published
};
static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "the wake word is used as a futex");

// For tests, not for users: makes the running session's drainer run a pass now, one that
// takes every record published before the call (it does not hold back the newest, as a
// periodic pass does), and returns once that pass has delivered them and completed.
// False if no session records (none runs, or a schedule paused it) or the pass did not
// come within `timeout`. Not from an exporter (the drainer would wait for itself).
RINGTRACE_API bool run_drainer_pass(std::chrono::milliseconds timeout = std::chrono::milliseconds(10000));

// The end of a zone that was not in the ring (hidden_zone_begin's `unit`): the thread's
// state of hidden zones popped; the fast path opens again when none is left (not when
// nested in the thread's slow path: that one reopens it on its way out).
void hidden_zone_end(ThreadWriter& t, std::uint64_t unit) noexcept;

// Session::step()'s marker (steps.hpp): a region begin of the marker `site` with `value`,
// written by the calling thread under the session's steps lock, stamped no earlier than
// `min_ticks` (the previous marker's time and a gap: markers are in the order of their
// numbers whatever core each thread reads its clock on). Returns the time written, or 0
// when not recorded; a marker dropped for room counts `events` events as dropped (the
// step zone it begins: its begin and the end it will never have; 0 for a marker that only
// ends a step, whose end a later marker writes; Session::step() counts the end of a step
// it lost when the next step() makes that end), as any lost marker does (count_lost_steps).
std::uint64_t write_step_marker(const SiteInfo* site, std::uint64_t value, std::uint64_t min_ticks,
                                unsigned events) noexcept;
// A step marker that could not be written at all (a step() that would have waited for
// itself): its `events` counted as dropped. Async-signal-safe.
void count_lost_steps(unsigned events) noexcept;

// Marks the calling thread as never traced: one of ringtrace's own threads (the drainer,
// the signal watcher). What it records is not the program's: left out, uncounted.
void mark_thread_untraced() noexcept;
// Allocations and frees of the program's that were not recorded, since the process
// started, by cause (memory_slow); a session counts its own from its start's values.
enum MemoryLeftOut : unsigned {
  left_out_nested,      // in a signal handler that interrupted its thread inside ringtrace's slow path
  left_out_after_exit,  // by a thread whose ring ringtrace had let go at its end
  left_out_dropped,     // its ring was full under the drop policy (a drop, counted with the others)
  kMemoryLeftOutCauses
};
struct MemoryLeftOutCounts {
  std::atomic<std::uint64_t> allocations{0}, frees{0}, bytes{0};  // bytes: of the allocations
};
inline constinit MemoryLeftOutCounts g_memory_left_out[kMemoryLeftOutCauses]{};
bool thread_untraced() noexcept;
// Starts one of ringtrace's own threads with every signal blocked (a new thread inherits
// its creator's mask), so that the kernel delivers the program's signals to the
// program's threads: a handler that records, run on the drainer, would find no ring; one
// that calls step() could wait for the drainer itself. Signals the kernel forces (a fault
// of the thread's own) still arrive, and what their handlers record is counted.
// Returns once the new thread has marked itself untraced: what ran on it before (a
// sanitizer's thread start allocates through the program's malloc) has happened by
// then, so that Session::start, which switches allocations on after starting the
// drainer, never records the drainer's own.
template <typename F>
std::thread start_own_thread(F&& body) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  struct Restore {
    sigset_t mask;
    ~Restore() { pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
  } restore{old};
  std::atomic<std::uint32_t> marked{0};
  std::thread thread([&marked, body = std::forward<F>(body)]() mutable {
    mark_thread_untraced();
    marked.store(1, std::memory_order_release);
    // The creator may be gone from here on: the wake only names the address (a stray wake
    // of a later futex there is one its waiter already expects).
    ::syscall(SYS_futex, &marked, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
    body();
  });
  while (marked.load(std::memory_order_acquire) == 0) {
    ::syscall(SYS_futex, &marked, FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
  }
  return thread;
}

// In a fork child, on the forking thread: no ring (the parent's are not mapped here).
void unbind_thread_after_fork() noexcept;

}  // namespace ringtrace::detail
