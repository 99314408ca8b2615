// The clock offsets merge measures from flows (runtime/file/clock_bounds.hpp), on
// messages built by hand: one-way and round-trip bounds, the estimate kept inside them,
// the middle or the one bound taken outside, several clocks placed together, and
// messages that contradict every offset.
#include "clock_bounds.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace ringtrace::detail {
namespace {

// Messages between clocks whose true offsets (added to each clock's own times) are
// `truth`: sent at `at` on the reference timeline, received `latency` later.
ClockMessage message(const std::vector<std::int64_t>& truth, std::size_t from, std::size_t to, std::int64_t at,
                     std::int64_t latency) {
  return {from, to, at - truth[from], at + latency - truth[to]};
}

TEST(ClockBounds, ARoundTripBoundsFromBothSidesAndAnEstimateOutsideMovesToTheMiddle) {
  const std::vector<std::int64_t> truth{0, 5'000'000'000};
  // Latencies 30 us (0 to 1) and 50 us (1 to 0): the offset lies in [truth - 30 us,
  // truth + 50 us].
  const std::vector<ClockMessage> messages{message(truth, 0, 1, 1'000'000, 30'000),
                                           message(truth, 1, 0, 2'000'000, 50'000)};
  const ClockSolution s = solve_clock_offsets(0, {0, truth[1] + 250'000'000}, messages);
  ASSERT_FALSE(s.contradicted);
  const ClockPlacement& c = s.clocks[1];
  EXPECT_EQ(c.low_ns, truth[1] - 30'000);
  EXPECT_EQ(c.high_ns, truth[1] + 50'000);
  EXPECT_FALSE(c.agrees());
  EXPECT_EQ(c.offset_ns, truth[1] + 10'000);  // the middle
  EXPECT_EQ(c.messages, 2u);
  EXPECT_EQ(s.receives_before_sends, 0u);
  EXPECT_EQ(s.clocks[0].offset_ns, 0);
}

TEST(ClockBounds, AnEstimateInsideTheBoundsIsKept) {
  const std::vector<std::int64_t> truth{0, -7'000};
  const std::vector<ClockMessage> messages{message(truth, 0, 1, 500, 40'000), message(truth, 1, 0, 90'000, 40'000)};
  const ClockSolution s = solve_clock_offsets(0, {0, truth[1] + 1'000}, messages);
  EXPECT_TRUE(s.clocks[1].agrees());
  EXPECT_EQ(s.clocks[1].offset_ns, truth[1] + 1'000);
}

TEST(ClockBounds, OneWayMessagesBoundOneSideAndTheEstimateMovesToThatBound) {
  const std::vector<std::int64_t> truth{0, 1'000'000};
  const std::vector<ClockMessage> messages{message(truth, 0, 1, 10, 20'000), message(truth, 0, 1, 900, 5'000)};
  // Receives would come 100 us before their sends with this estimate.
  const ClockSolution s = solve_clock_offsets(0, {0, truth[1] - 100'000}, messages);
  const ClockPlacement& c = s.clocks[1];
  EXPECT_EQ(c.low_ns, truth[1] - 5'000);
  EXPECT_EQ(c.high_ns, kNoUpperBound);
  EXPECT_EQ(c.offset_ns, c.low_ns);
  EXPECT_EQ(s.receives_before_sends, 0u);
  // An estimate above the lower bound is kept.
  EXPECT_EQ(solve_clock_offsets(0, {0, truth[1] + 3'000'000}, messages).clocks[1].offset_ns, truth[1] + 3'000'000);
}

TEST(ClockBounds, ClocksLinkedThroughAnotherArePlacedTogether) {
  // 0 - 1 and 1 - 2 exchange round trips; 0 and 2 never talk.
  const std::vector<std::int64_t> truth{0, 2'000'000, -3'000'000};
  std::vector<ClockMessage> messages;
  for (int i = 0; i < 3; ++i) {
    messages.push_back(message(truth, 0, 1, 100'000 * i, 10'000 + i));
    messages.push_back(message(truth, 1, 0, 100'000 * i + 50'000, 12'000));
    messages.push_back(message(truth, 1, 2, 100'000 * i + 20'000, 8'000));
    messages.push_back(message(truth, 2, 1, 100'000 * i + 70'000, 9'000));
  }
  const ClockSolution s = solve_clock_offsets(0, {0, truth[1] + 1'000'000, truth[2] - 1'000'000}, messages);
  ASSERT_FALSE(s.contradicted);
  for (std::size_t i = 1; i < 3; ++i) {
    EXPECT_LE(s.clocks[i].low_ns, truth[i]) << i;
    EXPECT_GE(s.clocks[i].high_ns, truth[i]) << i;
    EXPECT_GE(s.clocks[i].offset_ns, s.clocks[i].low_ns) << i;
    EXPECT_LE(s.clocks[i].offset_ns, s.clocks[i].high_ns) << i;
  }
  // Clock 2's bounds come through clock 1: both latencies' sums wide.
  EXPECT_EQ(s.clocks[2].high_ns - s.clocks[2].low_ns, (10'000 + 12'000) + (8'000 + 9'000));
  EXPECT_EQ(s.receives_before_sends, 0u);
}

TEST(ClockBounds, MessagesThatContradictEveryOffsetAreReportedAndTheEstimatesKept) {
  const std::vector<std::int64_t> truth{0, 4'000};
  // The request's receive stamped 2 ms before its send, the reply 30 us after its send.
  const std::vector<ClockMessage> messages{message(truth, 0, 1, 5'000'000, -2'000'000),
                                           message(truth, 1, 0, 5'100'000, 30'000)};
  const ClockSolution s = solve_clock_offsets(0, {0, truth[1]}, messages);
  EXPECT_TRUE(s.contradicted);
  EXPECT_TRUE(s.clocks[1].contradicted);
  EXPECT_FALSE(s.clocks[1].agrees());
  EXPECT_EQ(s.clocks[1].offset_ns, truth[1]);
  EXPECT_EQ(s.receives_before_sends, 1u);
}

TEST(ClockBounds, NoMessagesBoundNothing) {
  const ClockSolution s = solve_clock_offsets(1, {42, 0, -5}, {});
  EXPECT_FALSE(s.contradicted);
  EXPECT_EQ(s.clocks[0].offset_ns, 42);
  EXPECT_EQ(s.clocks[2].offset_ns, -5);
  EXPECT_FALSE(s.clocks[0].bounded());
  EXPECT_EQ(s.clocks[0].messages, 0u);
}

}  // namespace
}  // namespace ringtrace::detail
