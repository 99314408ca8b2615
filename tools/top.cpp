// ringtrace top PID: the key-averages table of a running process, refreshed every
// interval, through its control channel (docs/control.md).
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "commands.hpp"
#include "control_client.hpp"

namespace ringtrace::tool {

namespace {

constexpr const char* kHelp =
    "usage: ringtrace top PID [--interval D] [--count N] [--rows N] [--sort interval|total]\n"
    "                         [--context-switches] [--memory]\n"
    "\n"
    "The key-averages table of the running process PID (a program that links ringtrace),\n"
    "refreshed every interval, as perf top does: zones by name, sorted by their self time\n"
    "over the last interval (or in total, since top joined), with calls per second, p50\n"
    "and p99 of the interval, the totals, on-CPU columns when the session records context\n"
    "switches and memory columns when it records allocations, and the events the session\n"
    "dropped, in the interval and in all.\n"
    "\n"
    "A session running in the process is joined read-only (its own exporters get what they\n"
    "always get; one that writes only a binary trace file decodes nothing and cannot be\n"
    "joined). With none running, top starts one for the purpose (drop policy: the\n"
    "program's threads never wait), and it ends when top quits.\n"
    "\n"
    "On a terminal, the table is redrawn in place: q quits, t sorts by total self time, i by\n"
    "the interval's. Otherwise one table per interval is printed, for logs and scripts.\n"
    "\n"
    "options:\n"
    "  --interval D        the refresh (default 1s; 100ms to 1h)\n"
    "  --count N           quit after N tables (default: when q or Ctrl-C)\n"
    "  --rows N            rows per table (default: the terminal's height, else 30)\n"
    "  --sort interval|total\n"
    "  --context-switches  a session top starts records context switches (on-CPU times)\n"
    "  --memory            a session top starts records allocations (ringtrace::memory)\n";

struct Options {
  std::string target;
  std::chrono::milliseconds interval{1000};
  std::size_t count = 0;  // 0: until quit
  std::size_t rows = 0;   // 0: the terminal's height, else 30
  bool by_total = false;
  bool switches = false;
  bool memory = false;
};

Options parse(const std::vector<std::string>& args) {
  Options o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--interval") {
      o.interval = parse_wait(a, option_value(args, i));
      if (o.interval.count() < 100 || o.interval.count() > 3'600'000) throw UsageError("--interval: 100ms to 1h");
    } else if (a == "--count") {
      o.count = parse_count(a, option_value(args, i));
    } else if (a == "--rows") {
      o.rows = std::max<std::size_t>(1, parse_count(a, option_value(args, i)));
    } else if (a == "--sort") {
      const std::string& by = option_value(args, i);
      if (by != "interval" && by != "total") throw UsageError("--sort takes interval or total, not '" + by + "'");
      o.by_total = by == "total";
    } else if (a == "--context-switches") {
      o.switches = true;
    } else if (a == "--memory") {
      o.memory = true;
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("unknown option '" + a + "' (see ringtrace top --help)");
    } else if (o.target.empty()) {
      o.target = a;
    } else {
      throw UsageError("one process at a time: '" + o.target + "' and '" + a + "'");
    }
  }
  if (o.target.empty()) throw UsageError("which process? ringtrace top PID");
  return o;
}

// One row of a table reply, by the reply's column names (docs/control.md, "table").
struct Row {
  std::string name;
  std::map<std::string, std::int64_t, std::less<>> n;
  std::int64_t operator[](std::string_view column) const {
    const auto found = n.find(column);
    return found == n.end() ? 0 : found->second;
  }
};

std::vector<Row> rows_of(const control::Message& table) {
  std::vector<std::string> columns;
  if (const std::string* c = table.find("columns")) {
    for (std::size_t from = 0; from <= c->size();) {
      std::size_t end = c->find(' ', from);
      if (end == std::string::npos) end = c->size();
      if (end > from) columns.push_back(c->substr(from, end - from));
      from = end + 1;
    }
  }
  if (columns.empty() || columns.back() != "name") throw std::runtime_error("a table reply without its columns");
  std::vector<Row> rows;
  for (const std::string_view text : table.all("row")) {
    Row r;
    std::size_t at = 0;
    for (std::size_t k = 0; k + 1 < columns.size(); ++k) {
      const std::size_t tab = text.find('\t', at);
      if (tab == std::string_view::npos) throw std::runtime_error("a table row with fewer columns than named");
      r.n[columns[k]] = std::strtoll(std::string(text.substr(at, tab - at)).c_str(), nullptr, 10);
      at = tab + 1;
    }
    r.name = std::string(text.substr(at));
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string percent(std::int64_t part, std::uint64_t whole) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%",
                whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return text;
}

std::string memory_text(std::int64_t bytes) {
  const std::string size = byte_size(static_cast<std::uint64_t>(bytes < 0 ? -bytes : bytes));
  return bytes < 0 ? "-" + size : size;
}

// The table of one reply, as the terminal or a log gets it.
void print_table(std::FILE* out, const control::Message& t, const std::string& who, std::size_t index, bool by_total,
                 std::size_t limit) {
  const std::uint64_t begin = t.number("begin_ns").value_or(0), end = t.number("end_ns").value_or(0);
  const std::uint64_t joined = t.number("joined_ns").value_or(0);
  const double seconds = end > begin ? static_cast<double>(end - begin) / 1e9 : 0;
  const bool on_cpu = t.number("on_cpu").value_or(0) == 1, memory = t.number("memory").value_or(0) == 1;
  std::vector<Row> rows = rows_of(t);
  std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    const auto key = [&](const Row& r) {
      return by_total ? std::pair(r["total_self_ns"], r["self_ns"]) : std::pair(r["self_ns"], r["total_self_ns"]);
    };
    if (key(a) != key(b)) return key(a) > key(b);
    return a.name < b.name;
  });
  std::fprintf(out, "ringtrace top: %s, table %zu: %.3f s interval, %s since top joined; sorted by %s self time\n",
               who.c_str(), index, seconds, duration(end > joined ? end - joined : 0).c_str(),
               by_total ? "total" : "the interval's");
  std::fprintf(out, "Dropped events: %s in the interval, %s in the session (%s recorded)\n",
               thousands(t.number("dropped").value_or(0)).c_str(),
               thousands(t.number("dropped_session").value_or(0)).c_str(),
               thousands(t.number("recorded_session").value_or(0)).c_str());
  std::vector<Columns::Column> spec = {{Columns::Align::left, kNameCap}};
  std::vector<std::string> header = {"Name", "Self %", "Self", "Calls/s", "Calls", "p50", "p99"};
  if (on_cpu) header.insert(header.end(), {"On-CPU Self", "On-CPU p50", "On-CPU p99"});
  if (memory) header.insert(header.end(), {"Self CPU Mem"});
  header.insert(header.end(), {"Total Self", "Total Calls"});
  spec.resize(header.size(), Columns::Column{Columns::Align::right, 0});
  Columns columns(spec);
  columns.add(header);
  const std::uint64_t self_total = t.number("self_total_ns").value_or(0);
  for (std::size_t k = 0; k < rows.size() && k < limit; ++k) {
    const Row& r = rows[k];
    const auto ns = [&](std::string_view c) {
      return duration(static_cast<std::uint64_t>(std::max<std::int64_t>(0, r[c])));
    };
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.1f", seconds > 0 ? static_cast<double>(r["calls"]) / seconds : 0.0);
    std::vector<std::string> cells = {r.name,
                                      percent(r["self_ns"], self_total),
                                      ns("self_ns"),
                                      rate,
                                      thousands(static_cast<std::uint64_t>(r["calls"])),
                                      ns("p50_ns"),
                                      ns("p99_ns")};
    if (on_cpu) cells.insert(cells.end(), {ns("on_cpu_self_ns"), ns("on_cpu_p50_ns"), ns("on_cpu_p99_ns")});
    if (memory) cells.push_back(memory_text(r["self_cpu_memory_bytes"]));
    cells.insert(cells.end(), {ns("total_self_ns"), thousands(static_cast<std::uint64_t>(r["total_calls"]))});
    columns.add(std::move(cells));
  }
  columns.print(out, "");
  if (rows.size() > limit) std::fprintf(out, "(%zu more rows)\n", rows.size() - limit);
}

// The terminal in raw mode while top runs (keys without Enter, not echoed), restored after.
class Keyboard {
 public:
  Keyboard() {
    if (!::isatty(0) || ::tcgetattr(0, &saved_) != 0) return;
    termios raw = saved_;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    active_ = ::tcsetattr(0, TCSANOW, &raw) == 0;
  }
  ~Keyboard() {
    if (active_) ::tcsetattr(0, TCSANOW, &saved_);
  }
  Keyboard(const Keyboard&) = delete;
  Keyboard& operator=(const Keyboard&) = delete;
  bool active() const { return active_; }
  int key() {
    char c = 0;
    return ::read(0, &c, 1) == 1 ? c : -1;
  }

 private:
  termios saved_{};
  bool active_ = false;
};

std::size_t terminal_rows() {
  winsize size{};
  if (::ioctl(1, TIOCGWINSZ, &size) == 0 && size.ws_row > 8) return size.ws_row - 6u;
  return 30;
}

}  // namespace

int top(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  Options o = parse(args);
  ControlClient client = ControlClient::connect(o.target);
  const control::Message status = client.expect(control::Message{control::Type::status, {}}, std::chrono::seconds(5));
  client.set_identity(static_cast<pid_t>(status.number("pid").value_or(0)),
                      status.find("program") != nullptr ? *status.find("program") : "");
  control::Message ask{control::Type::top, {}};
  ask.add("rows", std::uint64_t{o.rows == 0 ? 200 : o.rows});
  if (o.switches) ask.add("context_switches", "1");
  if (o.memory) ask.add("memory", "1");
  Interruption interruption;
  const control::Message joined = client.expect(ask, std::chrono::seconds(30));
  const std::string* session = joined.find("session");
  const std::string who =
      client.described() + (session != nullptr && *session == "started" ? ", a session top started"
                                                                        : ", its running session (joined read-only)");
  const bool terminal = ::isatty(1) != 0;
  Keyboard keyboard;
  const auto start = std::chrono::steady_clock::now();
  int status_code = 0;
  for (std::size_t index = 1; o.count == 0 || index <= o.count; ++index) {
    const auto due = start + o.interval * static_cast<std::int64_t>(index);
    bool quit = false;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(due - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd fds[2] = {{interruption.fd(), POLLIN, 0}, {keyboard.active() ? 0 : -1, POLLIN, 0}};
      ::poll(fds, 2, static_cast<int>(left.count()) + 1);
      if (interruption.happened()) quit = true;
      for (int key = keyboard.active() ? keyboard.key() : -1; key >= 0; key = keyboard.key()) {
        if (key == 'q') quit = true;
        if (key == 't' || key == 'i') o.by_total = key == 't';
      }
      if (quit) break;
    }
    if (quit) break;
    const control::Message table =
        client.request(control::Message{control::Type::sample, {}}, std::chrono::seconds(10));
    if (table.type == control::Type::error) {
      const std::string* code = table.find("code");
      if (code != nullptr && *code == "ended") {
        std::fprintf(stderr, "ringtrace top: %s: the session ended\n", client.described().c_str());
        return 0;
      }
      status_code = error("top", client.described() + ": " + error_text(table));
      break;
    }
    if (terminal) std::fputs("\x1b[H\x1b[2J", stdout);
    print_table(stdout, table, who, index, o.by_total, o.rows != 0 ? o.rows : terminal ? terminal_rows() : 30);
    if (!terminal) std::fputc('\n', stdout);
    std::fflush(stdout);
  }
  // Leaves the session (a session top started stops).
  client.request(control::Message{control::Type::stop, {}}, std::chrono::seconds(60));
  return status_code;
}

}  // namespace ringtrace::tool
