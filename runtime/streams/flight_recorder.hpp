// The flight recorder (Config::flight_recorder, Config::trigger, Session::snapshot): an
// exporter the session adds to the drainer's. It keeps the newest `keep` of the merged
// stream (at most `max_bytes`) and, on a request or when the trigger's zone runs long,
// writes it through the window factories as one consistent stream: the zones open at
// the start of what it holds come first (their begins are kept while they stay open),
// every zone still open when the snapshot ends is closed there and flagged
// EventFlags::closed_at_window_end.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ringtrace/config.hpp"
#include "ringtrace/exporter.hpp"
#include "ringtrace/session.hpp"

namespace ringtrace::detail {

class FlightRecorderExporter;

// A snapshot asked for from outside the program (`ringtrace snapshot`, through the
// control channel, runtime/launch/): written through `factories` (empty: the session's
// window factories), not held to min_interval (the program's own requests still are,
// from their own last snapshot), and `done` is called once on the drainer's thread (or
// the caller's, for a request that cannot wait) with "" and the files its exporters
// wrote (their output_paths()) when they have finished, or with why nothing was written.
// A factory of these that throws never disables the program's recorder: `done` says it.
struct OutsideSnapshot {
  std::vector<WindowExporterFactory> factories;
  std::function<void(const std::string& error, const std::vector<std::filesystem::path>& files)> done;
};

struct FlightRecorderHandle {
  std::shared_ptr<FlightRecorderExporter> exporter;
  // Queues a snapshot request (any thread). False when none can be queued.
  bool request(std::string reason, OutsideSnapshot outside = {});
  std::uint64_t snapshots() const;
  std::uint64_t suppressed() const;
  std::size_t waiting() const;  // requests waiting for the stream to reach their time
  // A request waits for an event at or after its time; in a quiet program none may come.
  // This exporter, joined to the session as a tap (runtime/live/taps.hpp) while an outside
  // request waits, serves at the end of every drainer pass the requests made more than
  // `grace` and 2 ms before it: every event up to their time has been delivered by then.
  std::shared_ptr<Exporter> quiet_passes(std::chrono::nanoseconds grace) const;
};

// The recorder for `config` (keep > 0), writing through `factories`. `session_outputs`:
// the files the session's own exporters write, which a snapshot's exporters must not
// (make_window_router() has the rule).
FlightRecorderHandle make_flight_recorder(const Config& config, std::vector<WindowExporterFactory> factories,
                                          std::vector<std::filesystem::path> session_outputs = {});
std::shared_ptr<Exporter> as_exporter(const FlightRecorderHandle& handle);

}  // namespace ringtrace::detail
