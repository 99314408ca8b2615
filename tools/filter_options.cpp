// The filters' and --split's options, as convert and report read them (commands.hpp).
#include <cstdint>
#include <cstdio>
#include <regex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"

namespace ringtrace::tool {

const char* const kFilterHelp =
    "filters (what every output leaves out; zones the time range cuts are closed or begun\n"
    "again at its edges and marked, and every output with room for it says what was left out):\n"
    "  --time-range A,B   only from A to B, both included: a time after the recording's\n"
    "                     start in the notation info prints (1.5s, 250 ms, 20us, 100ns) or,\n"
    "                     without a unit, an absolute time in ns as dump prints it; A or B\n"
    "                     may be left out (A, or ,B)\n"
    "  --min-duration D   leave out zones shorter than D (100ns, 2us, 1.5ms), as cut by\n"
    "                     the time range, with their values and flows\n"
    "  --max-depth N      only zones at most N deep in the output (1: top-level zones)\n"
    "  --thread T         only thread T: its OS tid, pid/tid (as info lists a merged file's)\n"
    "                     or name (repeatable)\n"
    "  --zone RE          only zones whose name the regular expression RE finds (ECMAScript,\n"
    "                     anywhere in the name: ^name$ for the name alone), with what they\n"
    "                     contain (repeatable)\n"
    "  --exclude RE       leave out zones whose name RE finds, with what they contain\n"
    "                     (their children too; repeatable)\n";

namespace {

struct Unit {
  std::string_view name;
  std::uint64_t scale;
};

// A decimal number (digits, then optionally '.' and digits), then optional spaces and a
// unit of `units` ("" when `bare` is allowed), exactly: the number times the unit's
// scale, fractions below 1 truncated. False for anything else or past 2^63.
bool quantity(std::string_view text, std::span<const Unit> units, bool bare, std::uint64_t& out) {
  std::size_t i = 0;
  unsigned __int128 whole = 0, fraction = 0, fraction_scale = 1;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9' && i < 19) whole = whole * 10 + (text[i++] - '0');
  if (i == 0) return false;
  if (i < text.size() && text[i] == '.') {
    const std::size_t start = ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && i - start < 18) {
      fraction = fraction * 10 + (text[i++] - '0');
      fraction_scale *= 10;
    }
    if (i == start) return false;
  }
  while (i < text.size() && text[i] == ' ') ++i;
  const std::string_view unit = text.substr(i);
  std::uint64_t scale = 0;
  if (unit.empty() && bare) scale = 1;
  for (const Unit& u : units) {
    if (!unit.empty() && unit == u.name) scale = u.scale;
  }
  if (scale == 0) return false;
  const unsigned __int128 value = whole * scale + fraction * scale / fraction_scale;
  if (value >= (static_cast<unsigned __int128>(1) << 63)) return false;
  out = static_cast<std::uint64_t>(value);
  return true;
}

constexpr Unit kTimeUnits[] = {{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}};
constexpr Unit kSizeUnits[] = {{"B", 1},
                               {"kB", 1000},
                               {"KB", 1000},
                               {"MB", 1000000},
                               {"GB", 1000000000},
                               {"K", 1024},
                               {"M", 1024 * 1024},
                               {"G", 1024 * 1024 * 1024},
                               {"KiB", 1024},
                               {"MiB", 1024 * 1024},
                               {"GiB", 1024 * 1024 * 1024}};

// One side of --time-range: with a unit, after the start; without, absolute.
bool time_bound(std::string_view text, TimeBound& out) {
  if (quantity(text, kTimeUnits, false, out.ns)) {
    out.from_start = true;
    return true;
  }
  out.from_start = false;
  return quantity(text, {}, true, out.ns);
}

void time_range(const std::string& text, FilterOptions& o) {
  const std::size_t comma = text.find(',');
  const std::string_view all(text);
  const std::string_view a = comma == std::string::npos ? all : all.substr(0, comma);
  const std::string_view b = comma == std::string::npos ? std::string_view() : all.substr(comma + 1);
  TimeBound from, to;
  if (comma == std::string::npos || (a.empty() && b.empty()) || (!a.empty() && !time_bound(a, from)) ||
      (!b.empty() && !time_bound(b, to))) {
    throw UsageError(
        "--time-range takes A,B, each a time after the start (1.5s, 250 ms, 20us) or absolute ns "
        "(as ringtrace dump prints), either left out (A, or ,B); not '" +
        text + "'");
  }
  if (!a.empty() && !b.empty() && from.from_start == to.from_start && from.ns > to.ns) {
    throw UsageError("--time-range " + text + ": its start is after its end");
  }
  if (!a.empty()) o.from = from;
  if (!b.empty()) o.to = to;
}

void pattern(std::string_view option, const std::string& text, std::vector<std::string>& into) {
  try {
    std::regex check(text, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw UsageError(std::string(option) + ": '" + text + "' is no regular expression: " + e.what());
  }
  into.push_back(text);
}

}  // namespace

bool filter_option(const std::vector<std::string>& args, std::size_t& i, FilterOptions& o) {
  const std::string& a = args[i];
  if (a == "--time-range") {
    if (o.from || o.to) throw UsageError("--time-range is given twice: one range");
    time_range(option_value(args, i), o);
  } else if (a == "--min-duration") {
    const std::string& text = option_value(args, i);
    if (!quantity(text, kTimeUnits, true, o.min_duration_ns) || o.min_duration_ns == 0) {
      throw UsageError("--min-duration takes a duration above 0 (100ns, 2us, 1.5ms), not '" + text + "'");
    }
  } else if (a == "--max-depth") {
    const std::string& text = option_value(args, i);
    const std::size_t n = parse_count(a, text);
    if (n < 1 || n > 65536) throw UsageError("--max-depth takes a count from 1 to 65536, not " + text);
    o.max_depth = static_cast<std::uint32_t>(n);
  } else if (a == "--thread") {
    const std::string& text = option_value(args, i);
    if (text.empty()) throw UsageError("--thread: an empty thread (a tid, pid/tid or name)");
    o.threads.push_back(text);
  } else if (a == "--zone") {
    pattern(a, option_value(args, i), o.zones);
  } else if (a == "--exclude") {
    pattern(a, option_value(args, i), o.excludes);
  } else {
    return false;
  }
  return true;
}

std::uint64_t split_size(const std::string& text) {
  std::uint64_t bytes = 0;
  if (!quantity(text, kSizeUnits, true, bytes) || bytes < 1000000) {
    throw UsageError("--split takes a size of at least 1 MB (200MB, 1GB, 500M), not '" + text + "'");
  }
  return bytes;
}

std::string piece_path(const std::string& output, std::size_t index) {
  const std::size_t slash = output.rfind('/');
  const std::size_t name = slash == std::string::npos ? 0 : slash + 1;
  std::size_t dot = output.rfind('.');
  if (dot != std::string::npos && dot > name && output.compare(dot, std::string::npos, ".gz") == 0) {
    const std::size_t inner = output.rfind('.', dot - 1);
    if (inner != std::string::npos && inner > name) dot = inner;
  }
  if (dot == std::string::npos || dot <= name) dot = output.size();  // no extension (or a hidden file's dot)
  char number[24];
  std::snprintf(number, sizeof number, ".%03zu", index);
  return output.substr(0, dot) + number + output.substr(dot);
}

std::string shell_words(std::string_view command, const std::vector<std::string>& args) {
  std::string out(command);
  for (const std::string& a : args) {
    const bool plain = !a.empty() && a.find_first_not_of(
                                         "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                         "0123456789_./,:=+-@%") == std::string::npos;
    out += ' ';
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (const char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace ringtrace::tool
