// The exporter interface: what an output format implements. Exporters see only the
// ordered event stream and the context that resolves its ids; they never see rings,
// threads' buffers or the clock's raw ticks.
#pragma once

#include <cstdint>     // os thread ids
#include <filesystem>  // output paths
#include <span>        // batches of events
#include <string>      // thread names
#include <variant>     // trace metadata values
#include <vector>      // output paths

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_NO_INSTRUMENT
#include "ringtrace/event.hpp"            // Event, SiteId, ThreadId
#include "ringtrace/site.hpp"             // SiteInfo
#include "ringtrace/stats.hpp"            // SessionStats, ClockInfo

namespace ringtrace {

struct ThreadInfo {
  ThreadId id = 0;
  std::uint64_t os_tid = 0;
  std::string name;  // "" until set_thread_name; may change during a session
  // Place of the thread in every listing: by the time of its first event, ties by OS
  // thread id. Known when the thread's first event is delivered.
  std::uint32_t sort_index = 0;
  // The thread's process: 0 means the context's process_id(). Set in a stream of several
  // processes (a file written by `ringtrace merge`), where each keeps its own pid.
  std::uint32_t pid = 0;
};

// One fact about a whole trace (TraceContext::metadata): an integer or a text under a key.
struct TraceMetadata {
  std::string key;
  std::variant<std::int64_t, std::string> value;
};

// What TraceContext::thread() returns for a thread whose row was folded
// (Config::max_thread_rows): ThreadInfo::id is kFoldedThread, the name "(exited
// thread)". It is also the ThreadStats::thread of the stats' "(exited threads)" row.
inline constexpr ThreadId kFoldedThread = ~ThreadId{0};

// Resolves the ids in events. Valid for the duration of the call that received it.
// Site ids stay valid for the whole session. A thread id names one thread for the
// whole session and is never reused; its ThreadInfo resolves while the thread's events
// are delivered and, for the session's first Config::max_thread_rows threads, until
// the end. A later thread's row is folded once it has exited and its last event was
// delivered: thread(id) then returns the kFoldedThread placeholder, so an exporter that
// names threads after their events (at on_finish) keeps a copy from first sight.
// The special members a program's subclass uses are declared only to carry
// RINGTRACE_NO_INSTRUMENT (defaulted as the implicit ones were; copies as they were).
class TraceContext {
 public:
  RINGTRACE_NO_INSTRUMENT TraceContext() = default;
  RINGTRACE_NO_INSTRUMENT TraceContext(const TraceContext&) = default;
  RINGTRACE_NO_INSTRUMENT TraceContext& operator=(const TraceContext&) = default;
  RINGTRACE_NO_INSTRUMENT virtual ~TraceContext() = default;
  virtual const SiteInfo& site(SiteId id) const = 0;
  virtual std::uint32_t site_count() const = 0;
  virtual const ThreadInfo& thread(ThreadId id) const = 0;
  virtual std::uint32_t thread_count() const = 0;
  virtual const ClockInfo& clock() const = 0;
  virtual const std::string& process_name() const = 0;
  // The bytes of an arg event with EventFlags::text (any bytes; exporters escape or
  // repair them); empty for any other event. Valid until the call that received the
  // event returns: an exporter that keeps a text copies it.
  RINGTRACE_NO_INSTRUMENT virtual std::string_view text(const Event& /*event*/) const { return {}; }
  // The recorded process's id: getpid() of a live session, the recorded one when a file
  // is replayed (0: unknown, e.g. a hand-built stream).
  RINGTRACE_NO_INSTRUMENT virtual std::uint32_t process_id() const { return 0; }
  // The name of process `pid` (a ThreadInfo::pid) in a stream of several processes; the
  // context's own process_name() for any other.
  RINGTRACE_NO_INSTRUMENT virtual const std::string& process_name_of(std::uint32_t /*pid*/) const {
    return process_name();
  }
  // The node of process `pid` (a ThreadInfo::pid; 0: the context's own process): the
  // machine, or the rank, it ran on, as its session named it (Config::node_id,
  // RINGTRACE_NODE_ID, `ringtrace record --node-id`; by default "host:pid"). Valid as long
  // as the context. "" when unknown (a hand-built stream that names no node).
  RINGTRACE_NO_INSTRUMENT virtual std::string_view node_id_of(std::uint32_t /*pid*/) const { return {}; }
  // Facts about the whole trace added by whoever feeds the exporters (ringtrace::benchmark:
  // the trace's bound and what it left out), complete when on_finish is called. The
  // exporters with a place for them write them at the end, beside the session's counts:
  // the Chrome trace in its last event's args (`ringtrace_metadata`), the Perfetto trace
  // as trace metadata (`ringtrace_metadata.<key>`). A live session and replay() add none.
  RINGTRACE_NO_INSTRUMENT virtual std::span<const TraceMetadata> metadata() const { return {}; }
};

// Receives the merged stream. All calls come from one thread (the drainer, or the
// caller of replay()), in order: on_start, then on_events and on_flush any number of
// times, then on_finish. An exporter that throws anything (a std::exception or not) is
// disabled for the rest of the session and listed in SessionStats::exporter_errors.
class Exporter {
 public:
  RINGTRACE_NO_INSTRUMENT Exporter() = default;
  RINGTRACE_NO_INSTRUMENT Exporter(const Exporter&) = default;
  RINGTRACE_NO_INSTRUMENT Exporter& operator=(const Exporter&) = default;
  RINGTRACE_NO_INSTRUMENT virtual ~Exporter() = default;
  RINGTRACE_NO_INSTRUMENT virtual void on_start(const TraceContext& /*context*/) {}
  // Events are ordered by time_ns; per thread, zones nest properly.
  virtual void on_events(std::span<const Event> events, const TraceContext& context) = 0;
  // After each drainer pass that delivered events (so at most every drain_interval, and
  // never from replay()): an exporter that streams to a file hands what it has buffered
  // to the OS here, so a process killed now loses at most the last pass.
  RINGTRACE_NO_INSTRUMENT virtual void on_flush(const TraceContext& /*context*/) {}
  RINGTRACE_NO_INSTRUMENT virtual void on_finish(const TraceContext& /*context*/, const SessionStats& /*stats*/) {}
  // The files this exporter writes (none for a stream). Session::add_exporter refuses
  // a second exporter on a path that one of its exporters already writes.
  RINGTRACE_NO_INSTRUMENT virtual std::vector<std::filesystem::path> output_paths() const { return {}; }
  // Bytes of output this run has made so far, handed to its file or still buffered (0:
  // the exporter does not count them; the Chrome trace and Perfetto exporters do). What
  // a split output (split_output, <ringtrace/stream_filter.hpp>) cuts its pieces by.
  RINGTRACE_NO_INSTRUMENT virtual std::uint64_t output_bytes() const { return 0; }
};

}  // namespace ringtrace
