// Steps and windows (Config::schedule, Session::step, Session::add_window_exporter): the
// schedule's phases, and the exporter that routes the merged stream into one fresh set of
// exporters per window.
#pragma once

#include <cstdint>
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
  std::uint64_t window = 0;                  // active: which window
  std::uint64_t first = 0, last = 0;         // active: the window's first and last step
  // The first step after this one's run of steps of the same phase (and window): until
  // then Session::step() needs no plan (no division) and switches nothing.
  std::uint64_t until = ~std::uint64_t{0};
};

// The phase of step `step`; without a schedule every step is active and there is one
// window that never ends.
StepPlan plan_step(const std::optional<Schedule>& schedule, std::uint64_t step);

// Whether a step of this phase records events.
inline bool records(StepPhase p) { return p == StepPhase::warmup || p == StepPhase::active; }

// The one call site of every step's zone: a region-kind site named "step" with
// SiteOptions::step, recorded as a region begin whose value is the step number. The
// drainer (and the binary file's reader) turn each into a zone of its own site "step #N"
// (SiteOptions::step), so recording a step interns nothing.
const SiteInfo* step_marker_site();

// Whether `site` is the step marker (by its description: a file's reader has a copy).
inline bool is_step_marker(const SiteInfo& site) {
  return site.kind == SiteKind::region && (site.options & SiteOptions::step) != 0;
}

// The name of step N's zone: "step #N".
std::string step_zone_name(std::uint64_t step);

// Routes the stream to the window factories' exporters (see Session::add_window_exporter).
std::shared_ptr<Exporter> make_window_router(std::optional<Schedule> schedule,
                                             std::vector<WindowExporterFactory> factories);

}  // namespace ringtrace::detail
