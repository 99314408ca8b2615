#include "switch_stream.hpp"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <string_view>
#include <utility>

#ifndef PERF_RECORD_MISC_SWITCH_OUT_PREEMPT
#define PERF_RECORD_MISC_SWITCH_OUT_PREEMPT (1 << 14)  // Linux 4.17
#endif

namespace ringtrace::switches {

namespace {

std::atomic<int> g_injected_errno{0};

// The sample_id trailer of every record: sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME.
struct SampleId {
  __u32 pid;
  __u32 tid;
  __u64 time;
};
static_assert(sizeof(SampleId) == 16);

// What a LOST record carries before its trailer.
struct LostBody {
  __u64 id;
  __u64 lost;
};

// The first line of a small /proc or /sys file, or "" (never throws, no allocation beyond the string).
std::string read_small_file(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buffer[4096];
  std::size_t used = 0;
  while (used < sizeof buffer) {
    const ssize_t got = ::read(fd, buffer + used, sizeof buffer - used);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    used += static_cast<std::size_t>(got);
  }
  ::close(fd);
  return std::string(buffer, used);
}

std::string trimmed_first_line(const std::string& text) {
  const std::size_t end = text.find('\n');
  std::string line = text.substr(0, end);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.pop_back();
  return line;
}

// "2" from "Seccomp:\t2" in /proc/self/status, or "".
std::string seccomp_mode() {
  const std::string status = read_small_file("/proc/self/status");
  const std::size_t at = status.find("\nSeccomp:");
  if (at == std::string::npos) return {};
  std::size_t begin = at + 9;
  while (begin < status.size() && (status[begin] == ' ' || status[begin] == '\t')) ++begin;
  return trimmed_first_line(status.substr(begin));
}

std::string errno_text(int error_number) {
  char buffer[128];
  // GNU strerror_r: returns the message (maybe a static string, maybe `buffer`).
  return strerror_r(error_number, buffer, sizeof buffer);
}

std::string open_error(int error_number, pid_t tid, bool injected) {
  std::string text = "perf_event_open: " + errno_text(error_number);
  switch (error_number) {
    case EACCES:
    case EPERM: {
      const std::string paranoid = trimmed_first_line(read_small_file("/proc/sys/kernel/perf_event_paranoid"));
      text += " (perf_event_paranoid " + (paranoid.empty() ? std::string("unknown") : paranoid);
      const std::string seccomp = seccomp_mode();
      if (!seccomp.empty() && seccomp != "0") {
        text += "; this process runs under a seccomp filter (Seccomp: " + seccomp +
                " in /proc/self/status), which may be what refused";
      }
      text += ")";
      break;
    }
    case ENOSYS:
      text += " (no perf events in this kernel, or a seccomp filter refuses the call)";
      break;
    case ENOENT:
    case EINVAL:
    case EOPNOTSUPP:
      text += " (this kernel lacks the software dummy event or context-switch records: Linux 4.3 or later)";
      break;
    case ESRCH:
      text += " (thread " + std::to_string(tid) + " has exited)";
      break;
    case EMFILE:
    case ENFILE:
      text += " (one descriptor per traced thread: raise RLIMIT_NOFILE)";
      break;
    default:
      break;
  }
  if (injected) text += " [injected by inject_open_failure]";
  return text;
}

std::string mmap_error(int error_number, std::size_t ring_pages) {
  std::string text =
      "mmap of the perf ring (" + std::to_string(ring_pages) + " + 1 pages): " + errno_text(error_number);
  if (error_number == EPERM || error_number == ENOMEM) {
    rlimit limit{};
    getrlimit(RLIMIT_MEMLOCK, &limit);
    const std::string mlock_kb = trimmed_first_line(read_small_file("/proc/sys/kernel/perf_event_mlock_kb"));
    text +=
        " (the locked-memory budget is spent: perf_event_mlock_kb " + (mlock_kb.empty() ? std::string("?") : mlock_kb) +
        " per user and CPU, then RLIMIT_MEMLOCK " +
        (limit.rlim_cur == RLIM_INFINITY ? std::string("unlimited") : std::to_string(limit.rlim_cur / 1024) + " KiB") +
        "; use fewer or smaller rings)";
  }
  return text;
}

bool is_power_of_two(std::size_t n) { return n != 0 && (n & (n - 1)) == 0; }

constexpr std::size_t kMaxRingPages = 65536;  // 256 MiB of 4 KiB pages: far past any locked-memory budget

}  // namespace

void inject_open_failure(int error_number) noexcept { g_injected_errno.store(error_number, std::memory_order_relaxed); }

// ---------------------------------------------------------------------------------------
// RingReader

namespace detail {

RingReader::RingReader(void* base, std::size_t page_size, std::size_t data_pages, pid_t tid) noexcept : tid_(tid) {
  auto* page = static_cast<perf_event_mmap_page*>(base);
  // data_offset and data_size are filled in since Linux 4.1; before, the data follows the first page.
  const __u64 offset = page->data_offset != 0 ? page->data_offset : page_size;
  const __u64 size = page->data_size != 0 ? page->data_size : static_cast<__u64>(data_pages) * page_size;
  if (size == 0 || (size & (size - 1)) != 0) return;  // not a ring we can index with a mask: stay detached
  data_ = static_cast<const unsigned char*>(base) + offset;
  mask_ = size - 1;
  head_ = &page->data_head;
  tail_slot_ = &page->data_tail;
  tail_ = __atomic_load_n(tail_slot_, __ATOMIC_RELAXED);
}

void RingReader::copy_out(void* to, __u64 position, std::size_t bytes) const noexcept {
  const std::size_t offset = static_cast<std::size_t>(position & mask_);
  const std::size_t size = static_cast<std::size_t>(mask_ + 1);
  const std::size_t first = bytes <= size - offset ? bytes : size - offset;
  std::memcpy(to, data_ + offset, first);
  if (first < bytes) std::memcpy(static_cast<unsigned char*>(to) + first, data_, bytes - first);  // wrapped
}

std::size_t RingReader::read_new(__u64 head, std::vector<Switch>& out) {
  const __u64 size = mask_ + 1;
  __u64 position = tail_;
  std::size_t appended = 0;
  // In a ring mapped writable the kernel never overwrites what is not consumed, so head
  // is at most one ring ahead; more (or head behind tail) means the header page is not
  // what we think: drop everything rather than read garbage.
  if (head - position > size) {
    ++malformed_;
    loss_pending_ = true;
    position = head;
  }
  while (position != head) {
    const __u64 available = head - position;
    perf_event_header header;
    if (available < sizeof header) {
      ++malformed_;
      loss_pending_ = true;
      position = head;
      break;
    }
    copy_out(&header, position, sizeof header);
    // A size of 0 would loop forever and one past head would read what is not written:
    // the rest of what is there cannot be framed, so skip to head.
    if (header.size < sizeof header || header.size > available) {
      ++malformed_;
      loss_pending_ = true;
      position = head;
      break;
    }
    if (header.type == PERF_RECORD_SWITCH) {
      if (header.size >= sizeof header + sizeof(SampleId)) {
        SampleId id;
        copy_out(&id, position + header.size - sizeof id, sizeof id);  // the trailer is the record's end
        if (static_cast<pid_t>(id.tid) == tid_) {
          Switch s;
          s.time_ns = id.time;
          s.out = (header.misc & PERF_RECORD_MISC_SWITCH_OUT) != 0;
          s.preempted = s.out && (header.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
          s.after_loss = loss_pending_;
          loss_pending_ = false;
          out.push_back(s);
          ++appended;
        }
      } else {
        ++malformed_;
        loss_pending_ = true;
      }
    } else if (header.type == PERF_RECORD_LOST) {
      if (header.size >= sizeof header + sizeof(LostBody)) {
        LostBody body;
        copy_out(&body, position + sizeof header, sizeof body);
        lost_ += body.lost;
      } else {
        ++malformed_;
      }
      loss_pending_ = true;
    }
    // Any other type (none is asked for) is skipped by its size.
    position += header.size;
  }
  tail_ = position;
  // Release: every read of the records above happens before the kernel may reuse their space.
  __atomic_store_n(tail_slot_, position, __ATOMIC_RELEASE);
  return appended;
}

}  // namespace detail

// ---------------------------------------------------------------------------------------
// SwitchStream

SwitchStream SwitchStream::open(pid_t tid, std::size_t ring_pages) {
  SwitchStream stream;
  stream.tid_ = tid;
  auto fail = [&stream](int error_number, std::string text) {
    stream.error_number_ = error_number;
    stream.error_ = std::move(text);
    return std::move(stream);
  };
  if (!is_power_of_two(ring_pages) || ring_pages > kMaxRingPages) {
    return fail(EINVAL, "ring_pages must be a power of two up to " + std::to_string(kMaxRingPages) + ", not " +
                            std::to_string(ring_pages));
  }
  if (tid <= 0 || syscall(SYS_tgkill, getpid(), tid, 0) != 0) {
    return fail(ESRCH, "thread " + std::to_string(tid) + " is not a thread of this process (or has exited)");
  }
  if (const int injected = g_injected_errno.load(std::memory_order_relaxed); injected != 0) {
    return fail(injected, open_error(injected, tid, true));
  }

  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_DUMMY;  // counts nothing, samples nothing: only the side-band records
  attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
  attr.sample_id_all = 1;  // the trailer above on every record
  attr.context_switch = 1;
  attr.use_clockid = 1;
  attr.clockid = CLOCK_MONOTONIC;
  // Needed without privilege at perf_event_paranoid 2; the switch records are not kernel samples.
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  // Nobody polls for data: wake (an irq_work in the recorded thread's switch) once per
  // ring's worth of bytes instead of the default half ring.
  const long page_size = sysconf(_SC_PAGESIZE);
  attr.watermark = 1;
  attr.wakeup_watermark = static_cast<__u32>(ring_pages * static_cast<std::size_t>(page_size));

  const long fd = syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) {
    const int error_number = errno;
    return fail(error_number, open_error(error_number, tid, false));
  }
  const std::size_t bytes = (ring_pages + 1) * static_cast<std::size_t>(page_size);
  // Writable: the kernel then respects data_tail and counts what does not fit as LOST
  // instead of overwriting what is not read yet.
  void* map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, static_cast<int>(fd), 0);
  if (map == MAP_FAILED) {
    const int error_number = errno;
    ::close(static_cast<int>(fd));
    return fail(error_number, mmap_error(error_number, ring_pages));
  }
  stream.fd_ = static_cast<int>(fd);
  stream.map_ = map;
  stream.map_bytes_ = bytes;
  stream.reader_ = detail::RingReader(map, static_cast<std::size_t>(page_size), ring_pages, tid);
  if (!stream.reader_.attached()) {
    stream.close();
    return fail(EINVAL, "perf ring of unexpected layout (data size not a power of two)");
  }
  return stream;
}

SwitchStream::SwitchStream(SwitchStream&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      map_(std::exchange(other.map_, nullptr)),
      map_bytes_(std::exchange(other.map_bytes_, 0)),
      tid_(other.tid_),
      error_number_(other.error_number_),
      error_(std::move(other.error_)),
      reader_(std::exchange(other.reader_, detail::RingReader())) {}

SwitchStream& SwitchStream::operator=(SwitchStream&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    map_ = std::exchange(other.map_, nullptr);
    map_bytes_ = std::exchange(other.map_bytes_, 0);
    tid_ = other.tid_;
    error_number_ = other.error_number_;
    error_ = std::move(other.error_);
    reader_ = std::exchange(other.reader_, detail::RingReader());
  }
  return *this;
}

SwitchStream::~SwitchStream() { close(); }

void SwitchStream::close() noexcept {
  reader_ = detail::RingReader();
  if (map_ != nullptr) munmap(map_, map_bytes_);
  map_ = nullptr;
  map_bytes_ = 0;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void SwitchStream::release_in_child() noexcept {
  reader_ = detail::RingReader();
  map_ = nullptr;  // not mapped in the child (VM_DONTCOPY): never munmap the address
  map_bytes_ = 0;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool SwitchStream::thread_exited() const noexcept {
  if (fd_ < 0) return false;
  pollfd p{fd_, 0, 0};
  while (poll(&p, 1, 0) < 0) {
    if (errno != EINTR) return false;
  }
  return (p.revents & POLLHUP) != 0;
}

}  // namespace ringtrace::switches
