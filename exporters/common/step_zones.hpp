// Session::step()'s zones as exporters see them: one call site named "step" (kind zone,
// SiteOptions::step; ringtrace::is_step_site) on the session's "steps" track, each zone's
// value the step number N. Exporters that show zones one by one name each "step #N";
// nothing is kept per step, so a million steps cost no memory (runtime/core/steps.hpp
// says how they are recorded).
#pragma once

#include <cstdint>
#include <string>

#include "ringtrace/site.hpp"

namespace ringtrace::detail {

// "step #N".
inline std::string step_zone_label(std::uint64_t step) { return "step #" + std::to_string(step); }

}  // namespace ringtrace::detail
