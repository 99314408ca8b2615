// The mark of a thread inside its recording slow path (ThreadWriter::in_slow), for the
// slow paths and for the other calls that take a lock on an instrumented thread (the
// category table, the thread's name): a signal handler that records meanwhile drops its
// event instead of taking the lock again or waiting.
#pragma once

#include <atomic>
#include <cerrno>

#include "ringtrace/detail/writer.hpp"

namespace ringtrace::detail {

// Marks the thread as inside the slow path (a call nested here drops its event and
// waits for nothing), closes the fast path while it runs (so that a nested call reaches
// the slow path and sees the mark), and gives errno back on the way out: a signal
// handler that records must return with the interrupted code's errno.
class SlowScope {
 public:
  explicit SlowScope(ThreadWriter& t) noexcept : t_(t), errno_(errno), was_(t.in_slow) {
    t_.in_slow = 1;
    if (t_.block != nullptr) {
      t_.block->limit = 0;
      t_.block->end_limit = 0;
    }
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  ~SlowScope() {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    t_.in_slow = was_;
    errno = errno_;
  }
  SlowScope(const SlowScope&) = delete;
  SlowScope& operator=(const SlowScope&) = delete;

 private:
  ThreadWriter& t_;
  int errno_;
  std::uint8_t was_;
};

}  // namespace ringtrace::detail
