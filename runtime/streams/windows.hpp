// Steps and windows (Config::schedule, Session::step, Session::add_window_exporter): the
// schedule's phases, and the exporter that routes the merged stream into one fresh set of
// exporters per window.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ringtrace/config.hpp"
#include "ringtrace/exporter.hpp"
#include "ringtrace/session.hpp"

namespace ringtrace::detail {

enum class StepPhase : std::uint8_t { skip, wait, warmup, active, done };

struct StepPlan {
  StepPhase phase = StepPhase::active;
  std::uint64_t window = 0;           // active: which window
  std::uint64_t first = 0, last = 0;  // active: the window's first and last step
  // The first step after this one's run of steps of the same phase (and window): until
  // then Session::step() needs no plan (no division) and switches nothing.
  std::uint64_t until = ~std::uint64_t{0};
};

// The phase of step `step`; without a schedule every step is active and there is one
// window that never ends.
StepPlan plan_step(const std::optional<Schedule>& schedule, std::uint64_t step);

// Whether a step of this phase records events.
inline bool records(StepPhase p) { return p == StepPhase::warmup || p == StepPhase::active; }

// Routes the stream to the window factories' exporters (see Session::add_window_exporter).
// `session_outputs`: the files the session's own exporters write. A window whose
// exporters write one of them, or one file twice, is refused: the router throws
// std::invalid_argument naming the file from the callback that opened the window, so the
// session disables it (windows off for the run, the error in stats().exporter_errors) and
// its own exporters keep every event.
std::shared_ptr<Exporter> make_window_router(std::optional<Schedule> schedule,
                                             std::vector<WindowExporterFactory> factories,
                                             std::vector<std::filesystem::path> session_outputs = {});

// The exporters a window (or a snapshot) gets from `factories`, not yet started; throws
// as described above, before any of them has written anything.
std::vector<std::shared_ptr<Exporter>> make_window_exporters(const std::vector<WindowExporterFactory>& factories,
                                                             const WindowInfo& info,
                                                             const std::vector<std::filesystem::path>& session_outputs);

}  // namespace ringtrace::detail
