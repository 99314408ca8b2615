// Taps: exporters that join a running session (`ringtrace top` through the control
// channel, runtime/launch/) and leave it before it ends, read-only: they get the merged
// stream from the drainer's next pass on, after the session's own exporters, and never
// change what those get. A zone that began before a tap joined reaches it as an end
// without a begin (the zone trackers ignore those). Each tap's calls are isolated as the
// exporters' are: one that throws is dropped (its owner finds it silent: a tap that must
// answer catches its own errors).
//
// attach() and detach() from any thread; the rest on the drainer's thread. Nothing is
// taken per pass while no tap is attached but one relaxed load.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "ringtrace/exporter.hpp"

namespace ringtrace::detail {

class Taps {
 public:
  void attach(std::shared_ptr<Exporter> tap);
  // The tap gets nothing more from the drainer's next pass on (no on_finish).
  void detach(const Exporter* tap);
  bool any() const { return any_.load(std::memory_order_acquire); }

  // Drainer thread: taps attached since the last call get on_start; detached ones go.
  void update(const TraceContext& context);
  void deliver(std::span<const Event> events, const TraceContext& context);
  // After every pass (with or without events), so that a tap can answer on time.
  void flush(const TraceContext& context);
  // The session ends: every tap (also one attached meanwhile) gets on_finish.
  void finish(const TraceContext& context, const SessionStats& stats);

 private:
  template <typename Call>
  void each(Call&& call);

  std::atomic<bool> any_{false};
  std::mutex mutex_;  // guards pending_ and leaving_
  std::vector<std::shared_ptr<Exporter>> pending_;
  std::vector<const Exporter*> leaving_;
  std::vector<std::shared_ptr<Exporter>> active_;  // drainer thread only
};

}  // namespace ringtrace::detail
