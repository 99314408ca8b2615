#pragma once

#include <vector>

namespace instrumented {

int root(int value);

struct ExpectedCall {
  const char* name;
  int line;
};
using Expected = std::vector<ExpectedCall>;
// The calls root() makes, in the order their entry hooks run.
Expected expected();

}  // namespace instrumented
