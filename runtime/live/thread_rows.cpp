#include "thread_rows.hpp"

#include <algorithm>
#include <utility>

namespace ringtrace::detail {

ThreadRows::ThreadRows(std::uint32_t max_thread_rows) : max_thread_rows_(max_thread_rows) {
  folded_info_.id = kFoldedThread;
  folded_info_.name = "(exited thread)";
  folded_info_.sort_index = kFoldedThread;
}

ThreadRow& ThreadRows::add_thread(ThreadId id, std::uint64_t os_tid, std::string name) {
  ThreadRow& row = id < max_thread_rows_ ? dense_.emplace_back() : sparse_[id];
  row.info.id = id;
  row.info.os_tid = os_tid;
  row.info.name = std::move(name);
  row.info.sort_index = kUnsorted;
  unplaced_.push_back(&row);
  return row;
}

ThreadRow& ThreadRows::add_track(ThreadId id, std::string_view name) {
  ThreadRow& row = id < max_thread_rows_ ? dense_.emplace_back() : sparse_[id];
  row.info.id = id;
  row.info.name = name;
  row.info.sort_index = next_sort_index_++;
  return row;
}

const ThreadInfo& ThreadRows::info(ThreadId id) const {
  if (id < dense_.size()) return dense_[id].info;
  const auto it = sparse_.find(id);
  return it != sparse_.end() ? it->second.info : folded_info_;
}

void ThreadRows::place(ThreadRow& row) {
  row.info.sort_index = next_sort_index_++;
  row.order = placed_.size();
  placed_.push_back(&row);
  unplaced_.erase(std::find(unplaced_.begin(), unplaced_.end(), &row));
}

void ThreadRows::renamed(const ThreadRow& row) {
  first_dirty_ = std::min(first_dirty_, row.order);  // no-op while unplaced (kNotPlaced)
}

void ThreadRows::add_recorded(ThreadRow& row, std::uint64_t events) {
  if (events == 0) return;
  row.recorded += events;
  recorded_ += events;
  touch(row);
}

void ThreadRows::set_dropped(ThreadRow& row, std::uint64_t dropped) {
  if (dropped == row.dropped) return;
  dropped_ += dropped - row.dropped;  // modulo 2^64: right whichever way it moved
  row.dropped = dropped;
  touch(row);
}

void ThreadRows::add_switches(ThreadRow& row, std::uint64_t switches) {
  row.switches += switches;
  touch(row);
}

void ThreadRows::touch(ThreadRow& row) {
  if (row.touched) return;
  row.touched = true;
  touched_.push_back(&row);
}

void ThreadRows::fold(ThreadRow& row) {
  const ThreadId id = row.info.id;
  folded_threads_ += 1;
  folded_recorded_ += row.recorded;
  folded_dropped_ += row.dropped;
  folded_switches_ += row.switches;
  forget(row);
  sparse_.erase(id);
}

void ThreadRows::forget(ThreadRow& row) {
  recorded_ -= row.recorded;  // now in the folded totals
  dropped_ -= row.dropped;
  if (row.touched) touched_.erase(std::find(touched_.begin(), touched_.end(), &row));
  if (row.order == ThreadRow::kNotPlaced) {
    unplaced_.erase(std::find(unplaced_.begin(), unplaced_.end(), &row));
    return;
  }
  // Usually one of the last placed (a thread past max_thread_rows, just exited).
  placed_.erase(placed_.begin() + static_cast<std::ptrdiff_t>(row.order));
  for (std::size_t k = row.order; k < placed_.size(); ++k) placed_[k]->order = k;
  first_dirty_ = std::min(first_dirty_, row.order);
}

void ThreadRows::fill(SessionStats& stats) {
  // Only rows new in their place are copied whole; the totals are kept as rows change.
  const std::size_t placed = placed_.size();
  stats.threads.resize(placed + unplaced_.size() + (folded_threads_ > 0 ? 1 : 0));
  const auto copy = [&](const ThreadRow& row, ThreadStats& out) {
    out.thread = row.info.id;
    out.os_tid = row.info.os_tid;
    out.name = row.info.name;
    out.recorded = row.recorded;
    out.dropped = row.dropped;
    out.switches = row.switches;
  };
  for (std::size_t k = first_dirty_; k < placed; ++k) copy(*placed_[k], stats.threads[k]);
  for (std::size_t k = 0; k < unplaced_.size(); ++k) copy(*unplaced_[k], stats.threads[placed + k]);
  for (ThreadRow* row : touched_) {
    row->touched = false;
    if (row->order != ThreadRow::kNotPlaced && row->order < first_dirty_) {
      stats.threads[row->order].recorded = row->recorded;
      stats.threads[row->order].dropped = row->dropped;
      stats.threads[row->order].switches = row->switches;
    }
  }
  touched_.clear();
  first_dirty_ = placed;
  stats.recorded = recorded_;
  stats.dropped = dropped_;
  if (folded_threads_ > 0) {
    ThreadStats& out = stats.threads.back();
    out.thread = kFoldedThread;
    out.os_tid = 0;
    out.name = "(exited threads)";
    out.recorded = folded_recorded_;
    out.dropped = folded_dropped_;
    out.switches = folded_switches_;
    stats.recorded += folded_recorded_;
    stats.dropped += folded_dropped_;
  }
  stats.folded_threads = folded_threads_;
}

}  // namespace ringtrace::detail
