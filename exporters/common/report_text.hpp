// Text helpers shared by the summary exporters (ops summary, key-averages table):
// integer time and percentage formatting, terminal-safe names, aligned text tables.
// Escaping for CSV and JSON is output.hpp's; this file only handles the text form.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ringtrace/exporter.hpp"  // TraceContext: a filter's metadata

namespace ringtrace::detail::report {

enum class Unit : std::uint8_t { automatic, s, ms, us, ns };

// Nanoseconds in `unit`, rounded to the nearest thousandth of the unit, with exactly
// three decimals and the unit's suffix: 1234567 ns -> "1.235ms" (ms), "1234.567us"
// (us), "1234567ns" (ns, no decimals). automatic picks s (>= 1 s), ms (>= 1 ms), us
// (>= 1 us) or ns, as PyTorch's table does (which stops at us).
void append_time(std::string& out, std::uint64_t ns, Unit unit);
std::string format_time(std::uint64_t ns, Unit unit);

// part / whole in hundredths of a percent, rounded half up, in integers; 0 when whole
// is 0 (never a division by zero).
std::uint64_t percent_hundredths(std::uint64_t part, std::uint64_t whole);
// "12.34%" from percent_hundredths.
void append_percent(std::string& out, std::uint64_t part, std::uint64_t whole);
// "12.34": the same number without the sign (CSV).
void append_percent_number(std::string& out, std::uint64_t part, std::uint64_t whole);
std::string format_percent(std::uint64_t part, std::uint64_t whole);
// part / whole as a double percentage (CSV, JSON, TableRow); 0 when whole is 0.
double percent(std::uint64_t part, std::uint64_t whole);
// A whole percent for the one-line form: rounded, but never 100 unless part == whole
// and never 0 unless part == 0, so "100%" always means everything; 0 when whole is 0.
std::uint64_t whole_percent(std::uint64_t part, std::uint64_t whole);

// Bytes as PyTorch's _format_memory writes them (the table's "CPU Mem"): from 1 KB up
// (1024 bytes) in KB, MB or GB with two decimals ("1.50 KB", "-2.00 MB"), else whole
// bytes ("512 B", "-8 B"); the unit by the magnitude, negative values included.
std::string format_memory(std::int64_t bytes);

// A name made safe for a terminal: invalid UTF-8 replaced (U+FFFD), control
// characters (including newlines and tabs) shown as '?'.
std::string terminal_text(std::string_view s);
// Width of valid UTF-8 text in code points (a terminal column per code point).
std::size_t display_width(std::string_view s);
// `s` (valid UTF-8) cut to at most `width` code points: when longer, its first
// width - 3 code points followed by "..." (width < 4: the first `width` code points).
std::string truncate_to_width(std::string_view s, std::size_t width);

// A text table: header row, a dashed rule under it and after the last row, columns
// separated by two spaces, each column as wide as its widest cell (cells must be
// terminal_text already). Left-aligned columns are padded on the right, others on
// the left. Lines carry no trailing spaces.
struct TextColumn {
  std::string header;
  bool left = false;
};
std::string render_table(const std::vector<TextColumn>& columns, const std::vector<std::vector<std::string>>& rows);

// What a filter in front of the exporter left out (ringtrace/stream_filter.hpp): the
// context's "filter" metadata, "filters (...): N of M zones left out ...", or "" without
// one. Read at on_finish, when it is complete.
std::string filter_line(const TraceContext& context);

}  // namespace ringtrace::detail::report
