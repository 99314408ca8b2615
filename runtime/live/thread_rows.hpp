// The drainer's row of each thread: what TraceContext::thread() names and what
// SessionStats::threads counts.
//
// Rows of the first max_thread_rows threads (ids below it) are kept until stop(); those of
// later threads while they live: once every event of such a thread is delivered its row
// is folded into the "(exited threads)" totals (Config::max_thread_rows).
//
// The rows are kept in the order of stats().threads as rows come, are placed and go, so
// that a pass costs what changed, not the threads seen so far (sorting and copying 4,096
// rows took nine tenths of a pass when short threads exit one after another): placed_ by
// sort index (given in increasing order), then unplaced_ (threads whose first event is
// not known yet) by id. Counts: rows whose counts changed since the last fill() are in
// touched_, and the totals of the rows are kept as they change.
//
// Drainer thread only, under its pass lock; fill() runs under the drainer's stats lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ringtrace/exporter.hpp"
#include "ringtrace/stats.hpp"

namespace ringtrace::detail {

inline constexpr std::uint32_t kUnsorted = ~std::uint32_t{0};  // ThreadInfo::sort_index not given yet

struct ThreadRow {
  static constexpr std::size_t kNotPlaced = ~std::size_t{0};
  ThreadInfo info;
  std::uint64_t recorded = 0;
  std::uint64_t dropped = 0;
  std::uint64_t switches = 0;
  std::size_t order = kNotPlaced;  // its index in placed_ (and in stats().threads)
  bool touched = false;            // in touched_
};

class ThreadRows {
 public:
  explicit ThreadRows(std::uint32_t max_thread_rows);

  // A thread with a ring: listed in stats().threads (unplaced until place()). Ids are
  // given in increasing order; the row's address never changes.
  ThreadRow& add_thread(ThreadId id, std::uint64_t os_tid, std::string name);
  // A track with no ring (the steps track): its sort index now, not listed in the stats.
  ThreadRow& add_track(ThreadId id, std::string_view name);
  const ThreadInfo& info(ThreadId id) const;

  // Gives the row the next sort index: its place in stats().threads.
  void place(ThreadRow& row);
  void renamed(const ThreadRow& row);  // its name is copied again by the next fill()
  void add_recorded(ThreadRow& row, std::uint64_t events);
  void set_dropped(ThreadRow& row, std::uint64_t dropped);
  void add_switches(ThreadRow& row, std::uint64_t switches);
  // A row past the first max_thread_rows whose thread is delivered: into the folded
  // totals, and erased (`row` is invalid after).
  void fold(ThreadRow& row);
  bool kept_until_stop(ThreadId id) const { return id < max_thread_rows_; }

  // SessionStats::threads (in the order of each thread's first event, threads not yet
  // placed last, by id, then the folded threads' row), recorded, dropped and
  // folded_threads from the rows.
  void fill(SessionStats& stats);

 private:
  void touch(ThreadRow& row);
  void forget(ThreadRow& row);  // before a folded row is erased

  std::uint32_t max_thread_rows_;
  std::deque<ThreadRow> dense_;                     // ids below max_thread_rows_
  std::unordered_map<ThreadId, ThreadRow> sparse_;  // later threads, while they live
  std::vector<ThreadRow*> placed_;
  std::vector<ThreadRow*> unplaced_;
  std::size_t first_dirty_ = 0;  // stats.threads[0, first_dirty_) already names placed_'s rows
  std::vector<ThreadRow*> touched_;
  std::uint32_t next_sort_index_ = 0;
  std::uint64_t recorded_ = 0;  // the totals of the rows
  std::uint64_t dropped_ = 0;
  std::uint64_t folded_threads_ = 0;
  std::uint64_t folded_recorded_ = 0;
  std::uint64_t folded_dropped_ = 0;
  std::uint64_t folded_switches_ = 0;
  ThreadInfo folded_info_;
};

}  // namespace ringtrace::detail
