// Clock offsets from messages: a system of difference constraints x_from - x_to <=
// receive - send (x: a clock's offset), solved as shortest paths. docs/file-format.md,
// "Merged files".
#include "clock_bounds.hpp"

#include <algorithm>

namespace ringtrace::detail {
namespace {

constexpr std::int64_t kInfinite = kNoUpperBound;  // no path

std::int64_t add(std::int64_t a, std::int64_t b) {
  if (a == kInfinite || b == kInfinite) return kInfinite;
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return a > 0 ? kInfinite : kNoLowerBound / 2;
  return sum;
}

// d[u][v]: the least upper bound of x_v - x_u that the constraints imply.
using Distances = std::vector<std::vector<std::int64_t>>;

void close_paths(Distances& d) {
  const std::size_t n = d.size();
  for (std::size_t k = 0; k < n; ++k) {
    for (std::size_t i = 0; i < n; ++i) {
      if (d[i][k] == kInfinite) continue;
      for (std::size_t j = 0; j < n; ++j) d[i][j] = std::min(d[i][j], add(d[i][k], d[k][j]));
    }
  }
}

// Adds the constraint x_v - x_u <= w to closed distances, keeping them closed.
void add_edge(Distances& d, std::size_t u, std::size_t v, std::int64_t w) {
  const std::size_t n = d.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (d[i][u] == kInfinite) continue;
    const std::int64_t to_v = add(d[i][u], w);
    for (std::size_t j = 0; j < n; ++j) d[i][j] = std::min(d[i][j], add(to_v, d[v][j]));
  }
}

std::int64_t lower(const Distances& d, std::size_t reference, std::size_t v) {
  return d[v][reference] == kInfinite ? kNoLowerBound : -d[v][reference];
}

}  // namespace

ClockSolution solve_clock_offsets(std::size_t reference, const std::vector<std::int64_t>& estimates,
                                  const std::vector<ClockMessage>& messages) {
  const std::size_t n = estimates.size();
  ClockSolution out;
  out.clocks.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    out.clocks[i].estimate_ns = i == reference ? 0 : estimates[i];
    out.clocks[i].offset_ns = out.clocks[i].estimate_ns;
  }
  if (n == 0 || reference >= n) return out;
  Distances d(n, std::vector<std::int64_t>(n, kInfinite));
  for (std::size_t i = 0; i < n; ++i) d[i][i] = 0;
  for (const ClockMessage& m : messages) {
    if (m.from >= n || m.to >= n) continue;
    std::int64_t w = 0;  // receive - send, saturated
    if (__builtin_sub_overflow(m.receive_ns, m.send_ns, &w))
      w = m.receive_ns > m.send_ns ? kInfinite - 1 : kNoLowerBound / 2;
    d[m.to][m.from] = std::min(d[m.to][m.from], w);
    if (m.from != m.to) {
      ++out.clocks[m.from].messages;
      ++out.clocks[m.to].messages;
    }
  }
  close_paths(d);
  for (std::size_t i = 0; i < n; ++i) {
    if (d[i][i] < 0) {
      out.clocks[i].contradicted = true;
      out.contradicted = true;
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    ClockPlacement& c = out.clocks[i];
    if (i == reference) {
      c.low_ns = c.high_ns = 0;
      continue;
    }
    if (out.contradicted) continue;  // bounds meaningless: the estimates stay
    c.low_ns = lower(d, reference, i);
    c.high_ns = d[reference][i];
  }
  if (!out.contradicted) {
    // Each choice narrows the later clocks' bounds (a message between two non-reference
    // clocks ties their offsets), so that the offsets used satisfy every message.
    for (std::size_t i = 0; i < n; ++i) {
      if (i == reference) continue;
      ClockPlacement& c = out.clocks[i];
      const std::int64_t lo = lower(d, reference, i), hi = d[reference][i];
      std::int64_t x = c.estimate_ns;
      if (x < lo || x > hi) {
        if (lo != kNoLowerBound && hi != kNoUpperBound) {
          x = lo + (hi - lo) / 2;
        } else {
          x = x < lo ? lo : hi;
        }
      }
      c.offset_ns = x;
      add_edge(d, reference, i, x);   // x_i - x_ref <= x
      add_edge(d, i, reference, -x);  // x_ref - x_i <= -x
    }
  }
  for (const ClockMessage& m : messages) {
    if (m.from >= n || m.to >= n) continue;
    const std::int64_t send = add(m.send_ns, out.clocks[m.from].offset_ns);
    const std::int64_t receive = add(m.receive_ns, out.clocks[m.to].offset_ns);
    if (receive < send) ++out.receives_before_sends;
  }
  return out;
}

}  // namespace ringtrace::detail
