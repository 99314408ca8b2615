// For the few tests whose timing the machine can spoil (a vCPU taken away by the
// hypervisor between two of the test's own clock reads): up to three runs of `once`; the
// failures of the first two are printed, not counted, and the third run's count. A defect
// fails every run, so it still fails the test.
#pragma once

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdio>

namespace ringtrace_test {

template <class Once>
void up_to_three_runs(Once&& once) {
  for (int attempt = 1; attempt < 3; ++attempt) {
    ::testing::TestPartResultArray failures;
    {
      ::testing::ScopedFakeTestPartResultReporter intercept(
          ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
      once();
    }
    if (failures.size() == 0) return;
    for (int i = 0; i < failures.size(); ++i) {
      std::printf("run %d of 3 (not counted): %s\n", attempt, failures.GetTestPartResult(i).message());
    }
  }
  once();
}

}  // namespace ringtrace_test
