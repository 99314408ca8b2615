#include "steps.hpp"

namespace ringtrace::detail {

const SiteInfo* step_marker_site() {
  static const SiteInfo site{kStepSiteName, "", "", 0, SiteKind::region, SiteOptions::step, ""};
  return &site;
}

}  // namespace ringtrace::detail
