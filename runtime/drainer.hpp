// The drainer: one background thread per running session. Each pass it takes new
// threads' rings from the registration queue, merges every ring's published records
// into one stream ordered by time (holding back the newest `merge_grace`), converts
// ticks to nanoseconds and hands the stream to the exporters in batches.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "clock_calibration.hpp"
#include "ringtrace/detail/raw_sink.hpp"
#include "ringtrace/config.hpp"
#include "ringtrace/exporter.hpp"
#include "site_table.hpp"
#include "thread_registry.hpp"

namespace ringtrace::detail {

// True on a drainer's own thread: inside an exporter's callback.
bool on_drainer_thread() noexcept;

// fork() while a drainer works: the prepare handler waits (at most 100 ms) until the
// drainer is between passes, so that the child's copy of every lock the drainer takes
// in a pass (the allocator's, an exporter's) is free: a pass holds a global lock that
// fork's prepare handler takes and its parent and child handlers give back. Skipped on
// the drainer thread itself (an exporter that forks).
void drainer_fork_prepare() noexcept;
void drainer_fork_parent() noexcept;
void drainer_fork_child() noexcept;

class Drainer final : public TraceContext {
 public:
  Drainer(const Config& config, std::vector<std::shared_ptr<Exporter>> exporters, TickConverter clock,
          ClockInfo clock_info, bool use_tsc, std::uint32_t epoch);
  ~Drainer() override;

  // The session's epoch, published after construction (construction can fail).
  void set_epoch(std::uint32_t epoch) { epoch_ = epoch; }
  // Before start(): the session maps the rings from a RawSink's ring file.
  void set_rings_in_file(bool rings_in_file) { rings_in_file_ = rings_in_file; }
  void start();
  // The epoch is already retracted: drain everything, close open zones at
  // `stop_ticks`, finish the exporters, let go of every ring, join the thread.
  void finish(std::uint64_t stop_ticks);
  SessionStats stats() const;

  // TraceContext
  const SiteInfo& site(SiteId id) const override { return sites_.site(id); }
  std::uint32_t site_count() const override { return sites_.size(); }
  const ThreadInfo& thread(ThreadId id) const override;
  std::uint32_t thread_count() const override { return next_thread_; }
  const ClockInfo& clock() const override { return clock_info_; }
  const std::string& process_name() const override { return process_name_; }
  std::string_view text(const Event& e) const override;
  std::uint32_t process_id() const override;

 private:
  static EventKind value_event_kind(SiteKind kind);
  // Two full words, written and read whole: a stack entry popped right after it was
  // pushed then comes from store forwarding instead of stalling on partial stores.
  struct Open {
    std::uint64_t site_and_flags;  // site | flags << 32
    std::uint64_t value;
    SiteId site() const { return static_cast<SiteId>(site_and_flags); }
    std::uint8_t flags() const { return static_cast<std::uint8_t>(site_and_flags >> 32); }
  };
  static Open make_open(SiteId site, std::uint8_t flags, std::uint64_t value) {
    return Open{site | (static_cast<std::uint64_t>(flags) << 32), value};
  }
  struct ThreadRow {
    ThreadInfo info;
    std::uint64_t recorded = 0;
    std::uint64_t dropped = 0;
  };
  struct Cursor {
    ThreadBuffer* buffer = nullptr;
    ThreadId thread = 0;
    ThreadRow* row = nullptr;  // in dense_rows_ or sparse_rows_: both keep addresses
    std::uint64_t read_pos = 0;
    std::uint64_t end = 0;
    std::uint64_t last_ticks = 0;
    std::uint64_t reported_drops = 0;  // sum of dropped markers delivered
    std::uint32_t name_version = 0;
    bool retired = false;
    bool first_known = false;      // first_ticks holds the thread's first decoded record
    std::uint64_t first_ticks = 0;
    std::uint64_t raw_pos = 0;  // records before this were handed to the raw sinks
    std::vector<Open> open;
    // Decoded events waiting for the merge of several threads: stage[stage_begin,
    // stage_end), kStageEvents of them from the runtime allocator, allocated the first
    // time the thread is merged with another.
    Event* stage = nullptr;
    std::uint32_t stage_begin = 0;
    std::uint32_t stage_end = 0;

    Cursor() = default;
    Cursor(const Cursor&) = delete;
    Cursor& operator=(const Cursor&) = delete;
    ~Cursor();
  };
  void run();
  void pass(bool final);
  void persist_raw();  // rings in a file: every raw sink hands what it holds to the OS
  void accept_registrations();
  void merge(std::uint64_t watermark);
  void merge_staged(std::uint64_t watermark);
  template <bool kStaged>
  void decode(Cursor& c, std::uint64_t limit, std::uint64_t late_floor);
  bool refill(Cursor& c, std::uint64_t watermark, std::uint64_t late_floor);
  static constexpr std::uint32_t kStageEvents = 512;  // 16 KB per thread
  std::uint64_t head_ticks(const Cursor& c) const;
  Event& next_event();
  void flush();
  void publish_read_positions();
  // Raw sinks: hands c's records [raw_pos, read_pos) over; returns the events they hold.
  std::uint64_t hand_raw(Cursor& c);
  void raw_segment();
  void raw_thread(const Cursor& c);
  void close_thread(Cursor& c, std::uint64_t at_ticks, std::uint8_t flags);
  void update_names(Cursor& c);
  // Gives threads whose first event is now known their place in ThreadInfo::sort_index:
  // by the time of that event, ties by OS thread id. Runs before every delivery, so an
  // exporter sees a thread's index with its first event.
  void assign_sort_indices();
  void maybe_refit();
  void update_stats();
  void deliver(std::span<const Event> events);
  // Calls `call(exporter)` on every exporter not yet disabled; one that throws anything
  // is disabled and listed in the stats as "exporter <i> <callback>: <what>".
  template <typename Call>
  void for_each_exporter(const char* callback, Call&& call);
  template <typename Call>
  void for_each_raw(const char* callback, Call&& call);

  Config config_;
  std::string process_name_;
  std::vector<std::shared_ptr<Exporter>> exporters_;
  std::vector<bool> exporter_failed_;
  std::vector<std::pair<std::size_t, RawSink*>> raw_sinks_;  // exporter index, its raw side
  bool raw_only_ = false;  // every exporter is a raw sink that wants no events: no decoding
  // The rings are in a file mapping (RawSink::rings_path): read positions are published
  // only once the raw sinks hold the records in the OS (persist_raw), and a ring slot's
  // header names the thread as the trace file does.
  bool rings_in_file_ = false;
  TickConverter converter_;
  ClockInfo clock_info_;
  bool use_tsc_;
  std::uint32_t epoch_;
  std::uint64_t grace_ticks_;
  std::uint64_t boundary_gap_ = 1;  // boundary_gap_ticks(): zone boundaries of a thread this far apart
  // Record kinds that are zone boundaries (zone begin, zone end, region begin), as bits.
  static constexpr std::uint64_t kBoundaryKinds =
      (std::uint64_t{1} << record_zone_begin) | (std::uint64_t{1} << record_zone_end) |
      (std::uint64_t{1} << record_region_begin);
  std::uint64_t refit_period_ticks_;
  std::uint64_t last_refit_ticks_ = 0;

  Registry& registry_;
  SiteTable sites_;
  const SiteInfo* step_marker_;  // Session::step()'s one site (windows.hpp)
  std::vector<std::unique_ptr<Cursor>> cursors_;
  std::vector<Cursor*> active_;  // scratch for merge: cursors with records to merge
  // Rows of the first max_thread_rows threads (ids below it), kept until stop(), and of
  // later threads while they live; exited later threads are folded into the folded_*
  // counts (Config::max_thread_rows).
  std::deque<ThreadRow> dense_rows_;
  std::unordered_map<ThreadId, ThreadRow> sparse_rows_;
  ThreadId next_thread_ = 0;
  std::uint64_t folded_threads_ = 0;
  std::uint64_t folded_recorded_ = 0;
  std::uint64_t folded_dropped_ = 0;
  ThreadInfo folded_info_;
  std::vector<const ThreadRow*> stats_order_;  // scratch for update_stats
  // Texts of the arg events decoded in this pass (Event::value.u is an offset here):
  // kept until the pass has delivered them, at most what the rings held.
  std::string texts_;

  Event* batch_ = nullptr;
  std::size_t batch_capacity_ = 0;
  std::size_t batch_size_ = 0;
  std::uint64_t last_emitted_ticks_ = 0;

  std::uint64_t late_ = 0;
  std::uint64_t unbalanced_ = 0;
  std::uint64_t closed_at_stop_ = 0;
  std::uint64_t passes_ = 0;
  std::uint32_t next_sort_index_ = 0;
  bool unsorted_threads_ = false;  // a thread's first event is known, its index not yet
  bool delivered_in_pass_ = false;  // on_flush is called after passes that delivered events
  std::vector<std::string> errors_;

  mutable std::mutex stats_mutex_;
  SessionStats stats_;

  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> stop_ticks_{0};  // set by finish() before stop_
  std::thread thread_;
};

}  // namespace ringtrace::detail
