// Session::step()'s zones as exporters see them: one call site named "step" (kind zone,
// SiteOptions::step; ringtrace::is_step_site) on the session's "steps" track, each zone's
// value the step number N. Exporters that show zones one by one name each "step #N";
// nothing is kept per step, so a million steps cost no memory (runtime/core/steps.hpp
// says how they are recorded).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_NOINLINE
#include "ringtrace/exporter.hpp"         // TraceContext
#include "ringtrace/site.hpp"

namespace ringtrace::detail {

// "step #N".
inline std::string step_zone_label(std::uint64_t step) { return "step #" + std::to_string(step); }

// Which sites of a run are Session::step()'s (ringtrace::is_step_site), asked of the
// context once per site: the one cache of that answer (the exporters, the file writer).
// Site ids are a run's own, so the cache is too: it lives in a run's state and a new run
// starts with a new one.
class StepSites {
 public:
  bool is_step(SiteId site, const TraceContext& context) {
    if (site >= step_.size()) [[unlikely]]
      learn(site, context);
    return step_[site] != 0;
  }

 private:
  // The sites up to `site` and every site the context has now.
  RINGTRACE_NOINLINE void learn(SiteId site, const TraceContext& context) {
    const std::size_t from = step_.size();
    const std::size_t known = context.site_count();
    step_.resize(std::max<std::size_t>(std::size_t{site} + 1, known), 0);
    for (std::size_t id = from; id < known; ++id) {
      step_[id] = is_step_site(context.site(static_cast<SiteId>(id))) ? 1 : 0;
    }
  }

  std::vector<char> step_;  // by SiteId
};

}  // namespace ringtrace::detail
