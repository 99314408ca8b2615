// The clock offsets of several hosts measured from the messages they exchanged (flows
// whose send and receive are on different clocks): a receive is never before its send,
// so each message bounds the difference of two clocks' offsets from one side, and round
// trips bound it from both. The bounds of all clocks are a system of difference
// constraints, solved by shortest paths (Floyd-Warshall over the clocks); a negative
// cycle is a set of messages that no offsets satisfy. docs/file-format.md, "Merged files".
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace ringtrace::detail {

inline constexpr std::int64_t kNoLowerBound = std::numeric_limits<std::int64_t>::min();
inline constexpr std::int64_t kNoUpperBound = std::numeric_limits<std::int64_t>::max();

// One message: sent at `send_ns` on clock `from`, received at `receive_ns` on clock `to`
// (each clock's own nanoseconds, before any offset). from == to is allowed: such a
// message bounds nothing, but one received before its send contradicts every offset.
struct ClockMessage {
  std::size_t from = 0, to = 0;
  std::int64_t send_ns = 0, receive_ns = 0;
};

// What the messages say of one clock, its offset being what is added to its times to put
// them on the reference clock's timeline (the reference's offset is 0).
struct ClockPlacement {
  std::int64_t estimate_ns = 0;                                  // as given (CLOCK_REALTIME anchors)
  std::int64_t low_ns = kNoLowerBound, high_ns = kNoUpperBound;  // from the messages alone
  std::int64_t offset_ns = 0;                                    // the offset used
  std::uint64_t messages = 0;                                    // messages between this clock and another
  bool contradicted = false;                                     // on a cycle of messages that no offsets satisfy
  // The estimate lies within the bounds and was kept.
  bool agrees() const {
    return !contradicted && offset_ns == estimate_ns && estimate_ns >= low_ns && estimate_ns <= high_ns;
  }
  bool bounded() const { return low_ns != kNoLowerBound || high_ns != kNoUpperBound; }
};

struct ClockSolution {
  std::vector<ClockPlacement> clocks;       // by clock index
  bool contradicted = false;                // some messages admit no offsets: every estimate kept
  std::uint64_t receives_before_sends = 0;  // with the offsets used (0 unless contradicted)
};

// Places every clock inside its bounds: its estimate when the estimate lies within them;
// else the middle of the interval when it is bounded on both sides, else its one bound.
// Clocks are placed in index order, each choice narrowing the bounds of those after it,
// so that the offsets used satisfy every message together. `estimates[reference]` is
// taken as 0. When the messages contradict, every clock keeps its estimate.
ClockSolution solve_clock_offsets(std::size_t reference, const std::vector<std::int64_t>& estimates,
                                  const std::vector<ClockMessage>& messages);

}  // namespace ringtrace::detail
