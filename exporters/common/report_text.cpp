#include "report_text.hpp"

#include <algorithm>
#include <cstdio>
#include <variant>

#include "output.hpp"

namespace ringtrace::detail::report {
namespace {

// ns in units of `ns_per_thousandth` / 1000, rounded half up, with three decimals.
void append_rounded(std::string& out, std::uint64_t ns, std::uint64_t ns_per_thousandth, const char* suffix) {
  const std::uint64_t q = ns / ns_per_thousandth + (ns % ns_per_thousandth >= (ns_per_thousandth + 1) / 2 ? 1 : 0);
  detail::append_thousandths(out, q);
  out.append(suffix);
}

}  // namespace

void append_time(std::string& out, std::uint64_t ns, Unit unit) {
  if (unit == Unit::automatic) {
    unit = ns >= 1'000'000'000 ? Unit::s : ns >= 1'000'000 ? Unit::ms : ns >= 1'000 ? Unit::us : Unit::ns;
  }
  switch (unit) {
    case Unit::s:
      append_rounded(out, ns, 1'000'000, "s");
      break;
    case Unit::ms:
      append_rounded(out, ns, 1'000, "ms");
      break;
    case Unit::us:
      append_rounded(out, ns, 1, "us");
      break;
    case Unit::ns:
    case Unit::automatic:
      append_uint(out, ns);
      out.append("ns");
      break;
  }
}

std::string format_time(std::uint64_t ns, Unit unit) {
  std::string s;
  append_time(s, ns, unit);
  return s;
}

std::uint64_t percent_hundredths(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return 0;
  const unsigned __int128 scaled = static_cast<unsigned __int128>(part) * 10000u + whole / 2;
  return static_cast<std::uint64_t>(scaled / whole);
}

void append_percent_number(std::string& out, std::uint64_t part, std::uint64_t whole) {
  const std::uint64_t h = percent_hundredths(part, whole);
  append_uint(out, h / 100);
  out.push_back('.');
  out.push_back(static_cast<char>('0' + h / 10 % 10));
  out.push_back(static_cast<char>('0' + h % 10));
}

void append_percent(std::string& out, std::uint64_t part, std::uint64_t whole) {
  append_percent_number(out, part, whole);
  out.push_back('%');
}

std::string format_percent(std::uint64_t part, std::uint64_t whole) {
  std::string s;
  append_percent(s, part, whole);
  return s;
}

double percent(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return 0.0;
  return 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

std::uint64_t whole_percent(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0 || part == 0) return 0;
  if (part >= whole) return part == whole ? 100 : (percent_hundredths(part, whole) + 50) / 100;
  const std::uint64_t p = (percent_hundredths(part, whole) + 50) / 100;
  return std::clamp<std::uint64_t>(p, 1, 99);
}

std::string format_memory(std::int64_t bytes) {
  constexpr std::uint64_t kKB = 1024, kMB = 1024 * kKB, kGB = 1024 * kMB;
  const std::uint64_t magnitude =
      bytes < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(bytes) : static_cast<std::uint64_t>(bytes);
  const std::uint64_t unit = magnitude >= kGB ? kGB : magnitude >= kMB ? kMB : magnitude >= kKB ? kKB : 1;
  if (unit == 1) return std::to_string(bytes) + " B";
  // "%.2f" of the same double Python formats (nbytes * 1.0 / unit): both round it exactly.
  char text[48];
  std::snprintf(text, sizeof text, "%.2f %s", static_cast<double>(bytes) / static_cast<double>(unit),
                unit == kGB   ? "GB"
                : unit == kMB ? "MB"
                              : "KB");
  return text;
}

std::string terminal_text(std::string_view s) {
  std::string valid;
  append_valid_utf8(valid, s);
  for (char& c : valid) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) c = '?';
  }
  return valid;
}

std::size_t display_width(std::string_view s) {
  std::size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

std::string truncate_to_width(std::string_view s, std::size_t width) {
  if (display_width(s) <= width) return std::string(s);
  const std::size_t keep = width >= 4 ? width - 3 : width;
  std::size_t points = 0;
  std::size_t i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (points == keep) break;
      ++points;
    }
  }
  std::string out(s.substr(0, i));
  if (width >= 4) out.append("...");
  return out;
}

std::string render_table(const std::vector<TextColumn>& columns, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths(columns.size());
  for (std::size_t c = 0; c < columns.size(); ++c) widths[c] = display_width(columns[c].header);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < columns.size() && c < row.size(); ++c) {
      widths[c] = std::max(widths[c], display_width(row[c]));
    }
  }
  std::size_t line_width = 0;
  for (std::size_t c = 0; c < columns.size(); ++c) line_width += widths[c] + (c > 0 ? 2 : 0);
  const std::string rule(line_width, '-');

  std::string out;
  auto emit = [&](auto cell_of) {
    std::string line;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const std::string_view cell = cell_of(c);
      const std::size_t pad = widths[c] - std::min(widths[c], display_width(cell));
      if (c > 0) line.append(2, ' ');
      if (!columns[c].left) line.append(pad, ' ');
      line.append(cell);
      if (columns[c].left) line.append(pad, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out.append(line);
    out.push_back('\n');
  };
  emit([&](std::size_t c) -> std::string_view { return columns[c].header; });
  out.append(rule).push_back('\n');
  for (const auto& row : rows) {
    emit([&](std::size_t c) -> std::string_view {
      return c < row.size() ? std::string_view(row[c]) : std::string_view();
    });
  }
  out.append(rule).push_back('\n');
  return out;
}

std::string filter_line(const TraceContext& context) {
  for (const TraceMetadata& m : context.metadata()) {
    if (m.key == "filter" && std::holds_alternative<std::string>(m.value)) return std::get<std::string>(m.value);
  }
  return {};
}

}  // namespace ringtrace::detail::report
