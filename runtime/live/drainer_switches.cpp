// The drainer's context switches (Config::context_switches, docs/context-switches.md):
// one perf stream per thread it serves (runtime/switches), opened when the thread's ring
// is accepted, read every pass after the watermark is taken, merged as the thread's
// lane-1 run (merge.hpp), handed to the raw sinks, and closed once the thread has exited
// and its last switches are delivered. A refusal that concerns the process (the kernel's
// perf_event_paranoid, a seccomp filter, an old kernel) stops the attempts and is said
// once in the stats; the session runs on without switches.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "drainer.hpp"

namespace ringtrace::detail {

namespace {

// A retired thread's stream waits at most this many passes for the kernel to say its
// thread has exited (a few microseconds after the thread's last destructor, normally).
constexpr std::uint32_t kExitPasses = 64;

std::uint64_t monotonic_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

// The state letter of a thread of this process in /proc/self/task/<tid>/stat ('R'
// running or runnable, 'S' sleeping, 'D' waiting on I/O, ...), or 0 when unreadable.
char thread_state(std::uint64_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%llu/stat", static_cast<unsigned long long>(tid));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[512];
  ssize_t n;
  do {
    n = ::read(fd, text, sizeof text - 1);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  // "tid (name) S ...": the name may hold spaces and parentheses; the state follows the last ')'.
  const char* close = std::strrchr(text, ')');
  return close != nullptr && close[1] == ' ' ? close[2] : 0;
}

// Whether a failed open will fail the same way for every thread: the kernel or a filter
// refused perf_event_open itself. The locked-memory budget (mmap), descriptors and a
// thread that already exited concern one stream.
bool refused_for_process(const switches::SwitchStream& stream) {
  const int e = stream.error_number();
  if (e == ESRCH || e == EMFILE || e == ENFILE) return false;
  return stream.error().rfind("perf_event_open", 0) == 0;
}

}  // namespace

// A new thread's stream. The first switch event says the thread's state when it opened
// (SwitchBits::stream_start): its first record if one came already, else the thread's
// state in /proc (anything but running or runnable is off the CPU; a runnable thread is
// taken as on, and the wait until it runs is counted on-CPU: docs/context-switches.md).
void Drainer::open_switches(RingCursor& c) {
  if (!switches_wanted_) {
    c.buffer->forget_first_stream();  // opened by the thread before the refusal was known
    ++threads_without_switches_;
    return;
  }
  // Opened by the thread itself at its first event (Registry::bind): it was running then.
  // Else (a thread bound before the session asked, which cannot happen today) opened here,
  // and its state read from /proc.
  ThreadBuffer& b = *c.buffer;
  const bool by_thread = b.first_stream_tried;
  switches::SwitchStream stream =
      by_thread ? std::move(b.first_stream) : switches::SwitchStream::open(static_cast<pid_t>(b.os_tid));
  const std::uint64_t opened_ns = by_thread ? b.first_stream_ns : monotonic_now();
  b.first_stream_tried = false;
  if (!stream.ok()) {
    ++threads_without_switches_;
    // Unavailable is said of the session only when the kernel refuses the process; a
    // stream one thread could not have (it exited first, descriptors or locked memory ran
    // out) leaves that thread without switches, counted, and the others with theirs.
    if (refused_for_process(stream)) {
      if (switches_unavailable_.empty()) switches_unavailable_ = stream.error();
      switches_wanted_ = false;
      registry_.stop_switch_attempts();
    }
    return;
  }
  if (switch_out_site_ == switch_in_site_) {  // both 0: the sites are made at the first stream
    switch_out_site_ = sites_.id_of(&kSwitchOutSite);
    switch_in_site_ = sites_.id_of(&kSwitchInSite);
  }
  const char state = by_thread ? 'R' : thread_state(b.os_tid);
  c.switches = std::make_unique<ThreadSwitches>();
  ThreadSwitches& s = *c.switches;
  s.stream = std::move(stream);
  switch_scratch_.clear();
  s.stream.read(switch_scratch_);  // after the state: with no record since, the state held at the open
  bool off = state != 0 && state != 'R';
  std::uint64_t at = opened_ns;
  if (!switch_scratch_.empty()) {
    off = !switch_scratch_.front().out;  // the first record leaves the state the thread was in
    at = std::min(at, switch_scratch_.front().time_ns);
  }
  push_switch(c, at, off, SwitchBits::stream_start);
  for (const switches::Switch& w : switch_scratch_) {
    push_switch(c, w.time_ns, w.out,
                (w.preempted ? SwitchBits::preempted : 0) | (w.after_loss ? SwitchBits::after_loss : 0));
  }
}

void Drainer::push_switch(RingCursor& c, std::uint64_t time_ns, bool out, std::uint64_t bits) {
  c.switches->pending.push(switch_event(time_ns, out ? switch_out_site_ : switch_in_site_, c.thread, out, bits));
}

void Drainer::read_switches(RingCursor& c) {
  ThreadSwitches& s = *c.switches;
  // A retired thread: once the kernel says it has exited, this read gets its last records.
  if (c.retired && !s.exited) s.exited = s.stream.thread_exited();
  switch_scratch_.clear();
  if (s.stream.read(switch_scratch_) != 0) {
    for (const switches::Switch& w : switch_scratch_) {
      push_switch(c, w.time_ns, w.out,
                  (w.preempted ? SwitchBits::preempted : 0) | (w.after_loss ? SwitchBits::after_loss : 0));
    }
  }
  const std::uint64_t lost = s.stream.lost() + s.stream.malformed();
  if (lost != s.lost) {
    switches_lost_ += lost - s.lost;
    s.lost_unsent += lost - s.lost;
    s.lost = lost;
  }
}

// The first `n` pending switches of c were merged into the stream (or, raw sinks alone,
// are up to the watermark): counted, handed to the raw sinks, let go of.
void Drainer::deliver_switches(RingCursor& c, std::size_t n) {
  ThreadSwitches& s = *c.switches;
  if ((n != 0 || s.lost_unsent != 0) && exporters_.has_raw()) {
    const std::span<const Event> delivered = s.pending.delivered(s.run).first(n);
    exporters_.each_raw("on_raw_switches", [&](RawSink& r) { r.on_raw_switches(c.thread, delivered, s.lost_unsent); });
    s.lost_unsent = 0;
    delivered_in_pass_ = true;  // a pass frame follows them
  }
  rows_.add_switches(*c.row, n);
  switches_ += n;
  s.pending.consume(n);
  s.run = MergeRun{};
}

bool Drainer::switches_done(RingCursor& c) {
  if (!c.switches) return true;
  ThreadSwitches& s = *c.switches;
  if (s.exited && s.pending.empty()) return true;
  return ++s.exit_passes > kExitPasses;
}

void Drainer::release_switches_in_child() noexcept {
  for (auto& c : cursors_) {
    if (c->switches) c->switches->stream.release_in_child();
  }
}

}  // namespace ringtrace::detail
