#include <cstdlib>

#include "support/validating_exporter.hpp"

namespace ringtrace::testing {

double test_scale() {
  const char* text = std::getenv("RINGTRACE_TEST_SCALE");
  if (text == nullptr) return 1.0;
  const double scale = std::atof(text);
  return scale > 0 ? scale : 1.0;
}

}  // namespace ringtrace::testing
