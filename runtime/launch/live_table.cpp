#include "live_table.hpp"

#include <time.h>

#include <algorithm>

#include "numbers_only.hpp"  // exporters: table_numbers, table_so_far

namespace ringtrace::detail {

namespace {

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

TableOptions live_options() {
  TableOptions options;
  options.row_limit = 0;      // every row: the channel picks those it sends
  options.fold_steps = true;  // Session::step()'s zones in one row, not one per step
  return options;
}

}  // namespace

LiveTable::LiveTable(std::uint64_t grace_ns) : grace_ns_(grace_ns) {}

void LiveTable::on_start(const TraceContext& context) {
  interval_ = table_numbers(live_options());
  total_ = table_numbers(live_options());
  interval_->on_start(context);
  total_->on_start(context);
  // A session started for the table begins at its start; one joined, now (what the
  // drainer delivers from here on).
  const std::uint64_t now = now_ns();
  joined_ns_ = std::max(context.clock().start_ns, now > grace_ns_ ? now - grace_ns_ : 0);
  last_cut_ns_ = joined_ns_;
}

void LiveTable::on_events(std::span<const Event> events, const TraceContext& context) {
  if (failed_) return;
  try {
    interval_->on_events(events, context);
    total_->on_events(events, context);
  } catch (...) {  // no memory: the table ends, the session goes on
    failed_ = true;
    std::lock_guard<std::mutex> lock(mutex_);
    ended_ = true;
    cv_.notify_all();
  }
}

void LiveTable::on_flush(const TraceContext& context) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!wanted_ || failed_) return;
  }
  const std::uint64_t now = now_ns();
  cut(context, std::max(last_cut_ns_, now > grace_ns_ ? now - grace_ns_ : 0));
}

void LiveTable::cut(const TraceContext& context, std::uint64_t end_ns) {
  LiveSample s;
  try {
    s.interval = table_so_far(*interval_, context, true);
    s.total = table_so_far(*total_, context, false);
  } catch (...) {
    failed_ = true;
    std::lock_guard<std::mutex> lock(mutex_);
    ended_ = true;
    cv_.notify_all();
    return;
  }
  s.begin_ns = last_cut_ns_;
  s.end_ns = end_ns;
  s.joined_ns = joined_ns_;
  last_cut_ns_ = end_ns;
  std::lock_guard<std::mutex> lock(mutex_);
  ready_ = std::move(s);
  wanted_ = false;
  cv_.notify_all();
}

void LiveTable::on_finish(const TraceContext&, const SessionStats&) {
  std::lock_guard<std::mutex> lock(mutex_);
  ended_ = true;
  cv_.notify_all();
}

std::optional<LiveSample> LiveTable::sample(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (ended_) return std::nullopt;
  ready_.reset();
  wanted_ = true;
  cv_.wait_for(lock, wait, [&] { return ready_.has_value() || ended_; });
  wanted_ = false;
  std::optional<LiveSample> out = std::move(ready_);
  ready_.reset();
  return out;
}

bool LiveTable::ended() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ended_;
}

}  // namespace ringtrace::detail
