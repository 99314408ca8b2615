#include "zone_selection.hpp"

#include <charconv>
#include <stdexcept>

namespace ringtrace::detail {
namespace {

std::vector<std::regex> compile(const std::vector<std::string>& patterns) {
  std::vector<std::regex> out;
  for (const std::string& p : patterns) {
    try {
      out.emplace_back(p, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      throw std::invalid_argument("'" + p + "' is not a regular expression (" + e.what() + ")");
    }
  }
  return out;
}

// Digits only, as a number; false for anything else (or a number past 64 bits).
bool number(std::string_view text, std::uint64_t& value) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc{} && end == text.data() + text.size();
}

}  // namespace

ZoneSelection::ZoneSelection(const FilterOptions& options)
    : threads_(options.threads),
      zones_(compile(options.zones)),
      excludes_(compile(options.excludes)),
      max_depth_(options.max_depth) {}

// A thread is selected by its OS tid ("1234"), its process and tid ("pid/tid"), or its
// name, exactly.
bool ZoneSelection::matches(const ThreadInfo& info, const TraceContext& context) const {
  for (const std::string& spec : threads_) {
    if (spec == info.name) return true;
    std::uint64_t tid = 0, pid = 0;
    if (number(spec, tid) && tid == info.os_tid) return true;
    const std::size_t slash = spec.find('/');
    if (slash != std::string::npos && number(std::string_view(spec).substr(0, slash), pid) &&
        number(std::string_view(spec).substr(slash + 1), tid)) {
      const std::uint32_t own = info.pid != 0 ? info.pid : context.process_id();
      if (pid == own && tid == info.os_tid) return true;
    }
  }
  return false;
}

bool ZoneSelection::select_slow(ThreadId t, const TraceContext& context) {
  if (t >= verdicts_.size()) verdicts_.resize(t + 1);
  ThreadVerdict& v = verdicts_[t];
  const ThreadInfo& info = context.thread(t);
  if (v.state == kNo && info.name == v.name) return false;
  if (!matches(info, context)) {
    v.state = kNo;
    v.name = info.name;
    return false;
  }
  v.state = kYes;
  // Zones it opened before it was selected: left out (counted then), their ends paired.
  Thread& s = stack(t);
  for (; s.unselected_open > 0; --s.unselected_open) {
    if (s.entries.size() >= kMaxTrackedDepth) {
      ++s.past_bound;
      continue;
    }
    s.entries.push_back(Entry{LeftOut::thread, true, zones_.empty(), false, 0});
  }
  return true;
}

void ZoneSelection::unselected(const Event& e) {
  Thread& s = stack(e.thread);
  if (e.kind == EventKind::zone_begin) {
    ++s.unselected_open;
  } else if (e.kind == EventKind::zone_end && s.unselected_open > 0) {
    --s.unselected_open;
  }
}

bool ZoneSelection::match_site(std::vector<std::uint8_t>& cache, const std::vector<std::regex>& patterns, SiteId site,
                               const TraceContext& context) {
  if (site >= cache.size()) [[unlikely]]
    cache.resize(std::max<std::size_t>(site + 1, context.site_count()), 0);
  std::uint8_t& known = cache[site];
  if (known == 0) [[unlikely]] {
    known = 2;
    const char* name = context.site(site).name;
    for (const std::regex& re : patterns) {
      if (std::regex_search(name, re)) {
        known = 1;
        break;
      }
    }
  }
  return known == 1;
}

}  // namespace ringtrace::detail
