#include "inlined_tally.hpp"

#include <algorithm>
#include <atomic>

#include "function_names.hpp"  // symbols: the names of functions by address

namespace ringtrace::detail {

void InlinedTally::add(const InlinedCalls& calls) {
  for (const InlinedCalls::Slot& s : calls.slots) {
    const std::uintptr_t fn = s.fn.load(std::memory_order_acquire);
    if (fn == 0) continue;
    const std::uint64_t n = s.calls.load(std::memory_order_relaxed);
    if (n != 0) calls_[fn] += n;
  }
  others_ += calls.others.load(std::memory_order_relaxed);
}

std::vector<std::pair<std::string, std::uint64_t>> InlinedTally::by_function() const {
  // Two addresses may be one function's (its name is what a user reads): summed by name.
  std::unordered_map<std::string, std::uint64_t> named;
  for (const auto& [fn, n] : calls_) {
    const symbols::LiveFunction f = symbols::LiveFunctions::instance().resolve(fn);
    named[f.symbol != nullptr ? f.symbol->function : std::string("?")] += n;
  }
  std::vector<std::pair<std::string, std::uint64_t>> out(named.begin(), named.end());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (others_ != 0) out.emplace_back(kOtherInlinedFunctions, others_);
  return out;
}

}  // namespace ringtrace::detail
