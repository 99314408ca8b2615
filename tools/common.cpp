// Helpers every subcommand of the `ringtrace` tool shares (commands.hpp): errors, usage,
// inputs, the units of summary lines, aligned columns and the progress bar.
#include <unistd.h>  // isatty

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "ringtrace/exporters/binary_trace.hpp"  // ReplayProcess
#include "ringtrace/files.hpp"

namespace ringtrace::tool {

std::string_view without_prefix(std::string_view message) {
  constexpr std::string_view library = "ringtrace: ";
  while (message.starts_with(library)) message.remove_prefix(library.size());
  return message;
}

int error(std::string_view command, std::string_view message, int status) {
  message = without_prefix(message);
  std::fprintf(stderr, "ringtrace %.*s: %.*s\n", static_cast<int>(command.size()), command.data(),
               static_cast<int>(message.size()), message.data());
  return status;
}

const std::string& option_value(const std::vector<std::string>& args, std::size_t& i) {
  if (i + 1 >= args.size()) throw UsageError(args[i] + " needs a value");
  return args[++i];
}

std::size_t parse_count(std::string_view option, const std::string& text) {
  const bool digits = !text.empty() && text.size() <= 18 && text.find_first_not_of("0123456789") == std::string::npos;
  if (!digits) throw UsageError(std::string(option) + " takes a count, not '" + text + "'");
  return static_cast<std::size_t>(std::stoull(text));
}

namespace {

// Each key and the column it sorts by, in the text table's column order.
struct SortKey {
  std::string_view key;
  TableOptions::SortBy by;
};
constexpr SortKey kSortKeys[] = {
    {"name", TableOptions::SortBy::name},
    {"self-percent", TableOptions::SortBy::self_percent},
    {"self", TableOptions::SortBy::self},
    {"total-percent", TableOptions::SortBy::total_percent},
    {"total", TableOptions::SortBy::total},
    {"avg", TableOptions::SortBy::avg},
    {"min", TableOptions::SortBy::min},
    {"max", TableOptions::SortBy::max},
    {"p50", TableOptions::SortBy::p50},
    {"p99", TableOptions::SortBy::p99},
    {"calls", TableOptions::SortBy::calls},
    {"on-cpu-self", TableOptions::SortBy::on_cpu_self},
    {"on-cpu-total", TableOptions::SortBy::on_cpu_total},
    {"on-cpu-avg", TableOptions::SortBy::on_cpu_avg},
    {"on-cpu-p50", TableOptions::SortBy::on_cpu_p50},
    {"on-cpu-p99", TableOptions::SortBy::on_cpu_p99},
    {"cpu-mem", TableOptions::SortBy::cpu_memory},
    {"self-cpu-mem", TableOptions::SortBy::self_cpu_memory},
    {"flops", TableOptions::SortBy::flops},
    {"first-seen", TableOptions::SortBy::first_seen},
};

}  // namespace

std::string sort_keys() {
  std::string keys;
  for (const SortKey& k : kSortKeys) {
    if (!keys.empty()) keys += ", ";
    keys += k.key;
  }
  return keys;
}

TableOptions::SortBy parse_sort_key(std::string_view option, const std::string& text) {
  std::string key = text;
  std::replace(key.begin(), key.end(), '_', '-');
  for (const SortKey& k : kSortKeys) {
    if (k.key == key) return k.by;
  }
  throw UsageError(std::string(option) + ": unknown key '" + text + "'; the keys are " + sort_keys());
}

std::string_view sort_key_name(TableOptions::SortBy key) {
  for (const SortKey& k : kSortKeys) {
    if (k.by == key) return k.key;
  }
  return "?";
}

bool on_cpu_key(TableOptions::SortBy key) {
  using S = TableOptions::SortBy;
  return key == S::on_cpu_self || key == S::on_cpu_total || key == S::on_cpu_avg || key == S::on_cpu_p50 ||
         key == S::on_cpu_p99;
}

bool memory_key(TableOptions::SortBy key) {
  return key == TableOptions::SortBy::cpu_memory || key == TableOptions::SortBy::self_cpu_memory;
}

bool wants_help(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

int usage(const std::vector<std::string>& args, const char* text) {
  const bool help = wants_help(args);
  std::fputs(text, help ? stdout : stderr);
  return help ? 0 : 2;
}

void check_input(const std::string& path, bool with_rings) {
  if (path == "-") throw std::runtime_error("'-': reads a file, not standard input (the reader seeks through it)");
  ringtrace::check_input_file(path);
  if (!with_rings) return;
  const std::filesystem::path rings = ring_file_of(path);
  std::error_code ec;
  if (std::filesystem::symlink_status(rings, ec).type() != std::filesystem::file_type::not_found && !ec) {
    ringtrace::check_input_file(rings);
  }
}

std::filesystem::path ring_file_of(const std::string& input) {
  const std::filesystem::path output = ringtrace::output_of_partial(input);
  if (!output.empty()) return output.string() + ".rings";
  std::string base = input;
  constexpr std::string_view partial = ".partial";  // the temporary's name before the random suffix
  if (base.size() > partial.size() && base.ends_with(partial)) base.resize(base.size() - partial.size());
  return base + ".rings";
}

std::string duration(std::uint64_t ns) {
  char text[64];
  if (ns >= 1000000000u) {
    std::snprintf(text, sizeof text, "%.3f s", static_cast<double>(ns) / 1e9);
  } else if (ns >= 1000000u) {
    std::snprintf(text, sizeof text, "%.3f ms", static_cast<double>(ns) / 1e6);
  } else if (ns >= 1000u) {
    std::snprintf(text, sizeof text, "%.3f us", static_cast<double>(ns) / 1e3);
  } else {
    std::snprintf(text, sizeof text, "%llu ns", static_cast<unsigned long long>(ns));
  }
  return text;
}

std::string elapsed(std::chrono::steady_clock::duration time) {
  const double seconds = std::chrono::duration<double>(time).count();
  char text[32];
  if (seconds < 0.01) {
    std::snprintf(text, sizeof text, "%.1f ms", seconds * 1e3);
  } else if (seconds < 1) {
    std::snprintf(text, sizeof text, "%.0f ms", seconds * 1e3);
  } else {
    std::snprintf(text, sizeof text, seconds < 10 ? "%.2f s" : "%.1f s", seconds);
  }
  return text;
}

std::string byte_size(std::uint64_t bytes) {
  if (bytes < 1000) return std::to_string(bytes) + " bytes";
  constexpr const char* kUnits[] = {"kB", "MB", "GB", "TB", "PB", "EB"};
  double value = static_cast<double>(bytes) / 1000;
  std::size_t unit = 0;
  // Past 999.5 the value would print as 1000 of its unit: the next unit's 1.00 instead.
  while (value >= 999.5 && unit + 1 < std::size(kUnits)) {
    value /= 1000;
    ++unit;
  }
  const int decimals = value < 9.995 ? 2 : value < 99.95 ? 1 : 0;  // three significant digits once rounded
  char text[32];
  std::snprintf(text, sizeof text, "%.*f %s", decimals, value, kUnits[unit]);
  return text;
}

std::string thousands(std::uint64_t n) {
  std::string digits = std::to_string(n);
  for (std::size_t at = digits.size(); at > 3; at -= 3) digits.insert(at - 3, 1, ',');
  return digits;
}

std::string pid_note(const std::vector<ReplayProcess>& processes, std::size_t i) {
  for (std::size_t j = 0; j < i; ++j) {
    if (processes[j].pid == processes[i].pid) return "; its pid is an earlier one's: read under a new pid";
  }
  return {};
}

namespace {

// Code points, not bytes, so that a name in UTF-8 takes the room it shows in.
std::size_t width(std::string_view text) {
  std::size_t n = 0;
  for (const char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// `text` with control characters as '?', cut to `cap` code points (ending in "...").
std::string cell(std::string text, std::size_t cap) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '?';
  }
  if (cap == 0 || width(text) <= cap) return text;
  std::size_t kept = 0, at = 0;
  for (; at < text.size(); ++at) {
    const bool starts_code_point = (static_cast<unsigned char>(text[at]) & 0xC0) != 0x80;
    if (starts_code_point && kept++ == cap - 3) break;
  }
  text.resize(at);
  return text + "...";
}

}  // namespace

void Columns::add(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  for (std::size_t c = 0; c < cells.size(); ++c) cells[c] = cell(std::move(cells[c]), columns_[c].cap);
  rows_.push_back(std::move(cells));
}

std::string Columns::text(std::string_view indent) const {
  std::vector<std::size_t> widths(columns_.size(), 0);
  for (const auto& row : rows_) {
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], width(row[c]));
  }
  std::string out;
  for (const auto& row : rows_) {
    std::string line(indent);
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::string pad(widths[c] - width(row[c]), ' ');
      if (c > 0) line += "  ";
      line += columns_[c].align == Align::right ? pad + row[c] : row[c] + pad;
    }
    line.erase(line.find_last_not_of(' ') + 1);  // the last column is not padded
    out += line + "\n";
  }
  return out;
}

void Columns::print(std::FILE* out, std::string_view indent) const { std::fputs(text(indent).c_str(), out); }

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)), terminal_(::isatty(2) == 1), start_(std::chrono::steady_clock::now()) {}

void ProgressBar::operator()(std::uint64_t done, std::uint64_t total) {
  if (!terminal_) return;
  if (done >= total) {
    erase();
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (now - start_ < std::chrono::seconds(1) || (shown_ && now - drawn_ < std::chrono::milliseconds(100))) return;
  drawn_ = now;
  constexpr int kWidth = 30;
  const double part = total == 0 ? 0 : static_cast<double>(done) / static_cast<double>(total);
  const int filled = static_cast<int>(part * kWidth);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(kWidth - filled), '.');
  std::fprintf(stderr, "\r%s [%s] %3d%%  %.1f / %.1f MB", label_.c_str(), bar.c_str(), static_cast<int>(part * 100),
               static_cast<double>(done) / 1e6, static_cast<double>(total) / 1e6);
  std::fflush(stderr);
  shown_ = true;
}

void ProgressBar::erase() {
  if (!shown_) return;
  std::fprintf(stderr, "\r%*s\r", static_cast<int>(label_.size()) + 64, "");
  std::fflush(stderr);
  shown_ = false;
}

std::string functions_left_out(const FunctionStats& f, std::size_t rows) {
  std::string out;
  const auto add = [&](std::uint64_t n, const char* what) {
    if (n == 0) return;
    out += (out.empty() ? "" : ", ") + thousands(n) + " " + what;
  };
  add(f.inlined, "of functions g++ inlined (record --inlined keeps them)");
  add(f.short_calls, "shorter than the minimum duration");
  add(f.excluded, "of functions the filters exclude");
  add(f.too_deep, "deeper than the maximum depth");
  if (!out.empty()) out = "Calls left out: " + out + "\n";
  if (f.unwound != 0)
    out += "Calls closed as unwound (an exception or a longjmp left them): " + thousands(f.unwound) + "\n";
  const auto list = [&](const std::vector<std::pair<std::string, std::uint64_t>>& entries, const char* title) {
    if (rows == 0 || entries.empty()) return;
    out += title;
    std::size_t shown = 0;
    for (const auto& [name, n] : entries) {
      if (shown++ == rows) {
        out += "  ... " + std::to_string(entries.size() - rows) + " more\n";
        break;
      }
      std::string count = thousands(n);
      if (count.size() < 14) count.insert(0, 14 - count.size(), ' ');
      out += count + "  " + name + "\n";
    }
  };
  list(f.inlined_by_function,
       "Inlined calls left out, by function (calls; their time is the function's they were inlined into):\n");
  list(f.short_by_function, "Short calls left out, by function (calls):\n");
  return out;
}

}  // namespace ringtrace::tool
