// Thread identities kept by an exporter that names threads after their events were
// delivered (at on_finish): the session folds the rows of exited threads past
// Config::max_thread_rows, and TraceContext::thread() then returns a placeholder. The
// book copies each thread's ThreadInfo at its first event and prefers the context's
// live one (which carries later renames) while it resolves.
#pragma once

#include <vector>

#include "ringtrace/exporter.hpp"

namespace ringtrace::detail {

class ThreadBook {
 public:
  // Call for every delivered event's thread (cheap when already seen).
  void see(ThreadId thread, const TraceContext& context) {
    if (thread < infos_.size() && infos_[thread].id == thread) [[likely]]
      return;
    capture(thread, context);
  }

  // The thread's identity: the context's while it resolves, else the copy taken at its
  // first event, else the context's placeholder.
  const ThreadInfo& info(ThreadId thread, const TraceContext& context) const {
    const ThreadInfo& live = context.thread(thread);
    if (live.id != kFoldedThread || thread >= infos_.size() || infos_[thread].id != thread) return live;
    return infos_[thread];
  }

 private:
  void capture(ThreadId thread, const TraceContext& context) {
    const ThreadInfo& live = context.thread(thread);
    if (live.id == kFoldedThread) return;  // nothing left to copy
    if (thread >= infos_.size()) {
      // Unseen slots hold an id that is not theirs.
      const std::size_t from = infos_.size();
      infos_.resize(thread + 1);
      for (std::size_t i = from; i < infos_.size(); ++i) infos_[i].id = kFoldedThread;
    }
    infos_[thread] = live;
  }

  std::vector<ThreadInfo> infos_;
};

}  // namespace ringtrace::detail
