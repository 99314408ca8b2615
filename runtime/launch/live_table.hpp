// The live key-averages table of `ringtrace top` (docs/control.md): an exporter that
// joins the running session as a tap (runtime/live/taps.hpp) or is the one exporter of a
// session started for it, and keeps two tables of the table exporter's own aggregation
// (exporters/table.cpp, table_so_far): one since the last sample, one since it joined.
// The control channel's thread asks for a sample; the drainer cuts it at its next pass.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "ringtrace/exporter.hpp"
#include "ringtrace/exporters/table.hpp"

namespace ringtrace::detail {

struct LiveSample {
  KeyAverages interval;        // zones closed since the last sample
  KeyAverages total;           // zones closed since the table joined
  std::uint64_t begin_ns = 0;  // the interval, on the stream's clock (CLOCK_MONOTONIC)
  std::uint64_t end_ns = 0;
  std::uint64_t joined_ns = 0;
};

class LiveTable final : public Exporter {
 public:
  // `grace_ns`: the session's merge grace; an interval ends where the drainer's pass has
  // delivered every event (the pass's time less the grace).
  explicit LiveTable(std::uint64_t grace_ns);

  // Drainer thread.
  void on_start(const TraceContext& context) override;
  void on_events(std::span<const Event> events, const TraceContext& context) override;
  void on_flush(const TraceContext& context) override;
  void on_finish(const TraceContext& context, const SessionStats& stats) override;

  // The control channel's thread: the tables as of the drainer's next pass. nullopt when
  // the session ended (ended() is then true) or no pass came within `wait`.
  std::optional<LiveSample> sample(std::chrono::milliseconds wait);
  bool ended() const;

 private:
  void cut(const TraceContext& context, std::uint64_t end_ns);

  const std::uint64_t grace_ns_;
  // Drainer thread only.
  std::unique_ptr<TableExporter> interval_;
  std::unique_ptr<TableExporter> total_;
  std::uint64_t last_cut_ns_ = 0;
  std::uint64_t joined_ns_ = 0;
  bool failed_ = false;  // the aggregation threw: it answers no more (ended)
  // Shared with the channel's thread.
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool wanted_ = false;
  bool ended_ = false;
  std::optional<LiveSample> ready_;
};

}  // namespace ringtrace::detail
