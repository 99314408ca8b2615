// Per-thread context-switch records from perf_event_open (docs/context-switches.md).
//
// A self-contained module: the standard library and Linux headers only, nothing else from
// runtime/ or exporters/. One SwitchStream per traced thread, opened and read by one
// consumer thread (the drainer). The recorded thread runs no code of ours: the kernel
// writes a record into the stream's ring at each of its switches, which makes each of its
// switches longer (about 1.1 us per out-and-in on the machine measured there).
#pragma once

#include <sys/types.h>

#include <linux/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ringtrace::switches {

struct Switch {
  std::uint64_t time_ns = 0;  // CLOCK_MONOTONIC
  bool out = false;           // true: the thread left the CPU; false: it came back
  bool preempted = false;     // out only: involuntary (the kernel says PREEMPT); false for voluntary or unknown
  // Records were lost (ring full) just before this one: the interval from the previous
  // record to this one is unknown, and outs and ins need not alternate across it.
  bool after_loss = false;
};

// 8 data pages (32 KiB): 1365 records of 24 bytes, 6.8 ms of a thread switching out and in
// 100,000 times a second (docs/context-switches.md has the measurement).
inline constexpr std::size_t kDefaultRingPages = 8;

namespace detail {

// The reading half of a stream: a perf ring as mapped (the header page, then data pages),
// read by one thread. Separate from SwitchStream so that tests can feed it a ring they
// write themselves (wrapped, damaged and lost records).
class RingReader {
 public:
  RingReader() = default;
  // `base`: the mapping (a perf_event_mmap_page, then the data). The data's offset and
  // size come from the header page (data_offset, data_size), else `page_size` and
  // `data_pages * page_size`; the size must be a power of two. Records whose trailer names
  // another thread than `tid` are skipped.
  RingReader(void* base, std::size_t page_size, std::size_t data_pages, pid_t tid) noexcept;

  // Nothing new: one acquire load of data_head, compared with the tail kept here.
  std::size_t read(std::vector<Switch>& out) {
    if (head_ == nullptr) return 0;
    const __u64 head = __atomic_load_n(head_, __ATOMIC_ACQUIRE);
    if (head == tail_) return 0;
    return read_new(head, out);
  }
  std::uint64_t lost() const noexcept { return lost_; }
  std::uint64_t malformed() const noexcept { return malformed_; }
  std::size_t data_bytes() const noexcept { return static_cast<std::size_t>(mask_ + 1); }
  bool attached() const noexcept { return head_ != nullptr; }

 private:
  std::size_t read_new(__u64 head, std::vector<Switch>& out);
  void copy_out(void* to, __u64 position, std::size_t bytes) const noexcept;

  const __u64* head_ = nullptr;  // &perf_event_mmap_page::data_head
  __u64* tail_slot_ = nullptr;   // &perf_event_mmap_page::data_tail
  const unsigned char* data_ = nullptr;
  __u64 mask_ = 0;  // data size - 1
  __u64 tail_ = 0;  // what was consumed (the last value stored into data_tail)
  std::uint64_t lost_ = 0;
  std::uint64_t malformed_ = 0;
  pid_t tid_ = 0;
  bool loss_pending_ = false;  // a LOST record was the last one read: flag the next switch
};

}  // namespace detail

class SwitchStream {
 public:
  // Opens the stream of thread `tid` of this process, with a ring of `ring_pages` data
  // pages (a power of two, at most 65536). Never throws for what the kernel refuses: on failure the
  // object's ok() is false and error() says why, e.g. "perf_event_open: Permission denied
  // (perf_event_paranoid 3)"; error_number() is the errno.
  static SwitchStream open(pid_t tid, std::size_t ring_pages = kDefaultRingPages);

  SwitchStream() = default;  // not open: ok() is false, read() returns 0
  SwitchStream(SwitchStream&& other) noexcept;
  SwitchStream& operator=(SwitchStream&& other) noexcept;
  SwitchStream(const SwitchStream&) = delete;
  SwitchStream& operator=(const SwitchStream&) = delete;
  ~SwitchStream();  // close()

  bool ok() const noexcept { return fd_ >= 0; }
  const std::string& error() const noexcept { return error_; }
  int error_number() const noexcept { return error_number_; }  // 0 when open
  pid_t tid() const noexcept { return tid_; }
  int fd() const noexcept { return fd_; }  // for poll/epoll (POLLHUP once the thread has exited), -1 if not open

  // Appends every switch the kernel has written since the last call, in order, to `out`
  // and returns how many. Costs one acquire load and a compare when there is nothing new.
  // Only one thread may read a stream at a time.
  std::size_t read(std::vector<Switch>& out) { return reader_.read(out); }
  std::uint64_t lost() const noexcept { return reader_.lost(); }            // records the kernel dropped (ring full)
  std::uint64_t malformed() const noexcept { return reader_.malformed(); }  // records skipped as damaged (never seen)
  std::size_t ring_bytes() const noexcept { return reader_.attached() ? reader_.data_bytes() : 0; }

  // Whether the thread has exited (a poll() system call: not for every pass). Its stream
  // still holds what it recorded before: read it, then close.
  bool thread_exited() const noexcept;

  // Unmaps and closes; the object is then not open. Records not read are gone.
  void close() noexcept;

  // For a fork child (in a pthread_atfork child handler, before anything else touches the
  // stream): closes the child's copy of the descriptor, which keeps the parent's thread
  // traced as long as any copy is open, and forgets the ring without munmap (perf maps it
  // VM_DONTCOPY: it is not in the child, and the address may be reused there). Only
  // close(2): async-signal-safe. Afterwards ok() is false and the destructor does nothing.
  void release_in_child() noexcept;

 private:
  int fd_ = -1;
  void* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  pid_t tid_ = 0;
  int error_number_ = 0;
  std::string error_;
  detail::RingReader reader_;
};

// For tests and for simulating a refusal: while set, open() fails with this errno as if the
// kernel had said so (its message says it was injected). 0: off.
void inject_open_failure(int error_number) noexcept;

}  // namespace ringtrace::switches
