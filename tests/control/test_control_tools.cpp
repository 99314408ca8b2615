// `ringtrace record --pid`, `snapshot` and `top` against a running program that links
// ringtrace and started no session (control_target), from another process: what they
// write and show is compared with what the program counted itself.
#include <grp.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "processes.hpp"
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/recorded_trace.hpp"

namespace {

using ringtrace::test::Process;
using ringtrace::test::words;
using namespace std::chrono_literals;

const std::string kTool = RINGTRACE_TOOL;
const std::string kTarget = CONTROL_TARGET;

std::filesystem::path work_dir(const std::string& test) {
  const std::filesystem::path dir = std::filesystem::path(CONTROL_WORK_DIR) / test;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The program reached: started, and its "ready" line read.
struct Target {
  Process process;
  std::string pid;
  std::string socket;

  static Target start(const std::vector<std::string>& mode, const std::vector<std::string>& environment = {},
                      const std::function<void()>& in_child = {}) {
    std::vector<std::string> argv{kTarget};
    argv.insert(argv.end(), mode.begin(), mode.end());
    Target t{Process::start(argv, environment, in_child), {}, {}};
    const std::optional<std::string> ready = t.process.line();
    if (!ready) throw std::runtime_error("control_target said nothing: " + t.process.rest().second);
    const std::vector<std::string> w = words(*ready);
    if (w.size() != 3 || w[0] != "ready") throw std::runtime_error("control_target said: " + *ready);
    t.pid = w[1];
    t.socket = w[2];
    return t;
  }
  // Its reply to `command` (one line).
  std::string ask(const std::string& command) {
    process.send(command);
    return process.line().value_or("(nothing)");
  }
  // The pacer's zones finished so far, and when (CLOCK_MONOTONIC ns).
  std::pair<std::uint64_t, std::uint64_t> count() {
    const std::vector<std::string> w = words(ask("count"));
    if (w.size() != 3 || w[0] != "count") throw std::runtime_error("count: unexpected answer");
    return {std::stoull(w[1]), std::stoull(w[2])};
  }
  // The ticks (first, last seq; -1, -1 for none) the program itself says began at or
  // after a and had begun by b ("within"), or ran at some point between a and b
  // ("overlapping"), by its own clock reads around each zone (control_target.cpp).
  std::pair<std::int64_t, std::int64_t> ticks(const std::string& which, std::uint64_t a, std::uint64_t b) {
    const std::vector<std::string> w = words(ask(which + " " + std::to_string(a) + " " + std::to_string(b)));
    if (w.size() != 3 || w[0] != which) throw std::runtime_error(which + ": unexpected answer");
    if (w[1] == "-") return {-1, -1};
    return {std::stoll(w[1]), std::stoll(w[2])};
  }
  int quit() {
    process.send("quit");
    return process.exit_code();
  }
};

struct ToolResult {
  int code;
  std::string out;
  std::string err;
};

ToolResult run_tool(const std::vector<std::string>& args, const std::function<void()>& in_child = {}) {
  std::vector<std::string> argv{kTool};
  argv.insert(argv.end(), args.begin(), args.end());
  Process p = Process::start(argv, {}, in_child);
  auto [out, err] = p.rest();
  return {p.exit_code(), out, err};
}

// The zones of one name in a binary file, with the "seq" each carried.
struct Zones {
  std::vector<std::int64_t> seqs;
  std::uint64_t begins = 0;
  std::set<std::string> thread_names;
  ringtrace::ReplayResult read;
  ringtrace::RecordedTrace trace;
};

Zones read_zones(const std::filesystem::path& file, const std::string& name) {
  Zones z;
  ringtrace::MemoryExporter memory;
  z.read = ringtrace::replay_file(file, memory);
  z.trace = memory.trace();
  std::vector<bool> after_begin(z.trace.threads.size() + 1, false);
  for (const ringtrace::Event& e : z.trace.events) {
    const std::string& site = z.trace.sites.at(e.site).name;
    if (e.thread >= after_begin.size()) after_begin.resize(e.thread + 1, false);
    if (e.kind == ringtrace::EventKind::zone_begin) {
      after_begin[e.thread] = site == name;
      if (site == name) ++z.begins;
    } else if (e.kind == ringtrace::EventKind::arg && site == "seq" && after_begin[e.thread]) {
      z.seqs.push_back(e.value.i);
      after_begin[e.thread] = false;
    }
  }
  for (const ringtrace::ThreadInfo& t : z.trace.threads) z.thread_names.insert(t.name);
  return z;
}

// The seqs are one run of consecutive numbers, each once.
void expect_contiguous(std::vector<std::int64_t> seqs) {
  ASSERT_FALSE(seqs.empty());
  std::sort(seqs.begin(), seqs.end());
  EXPECT_EQ(std::adjacent_find(seqs.begin(), seqs.end()), seqs.end()) << "a zone twice";
  EXPECT_EQ(seqs.back() - seqs.front() + 1, static_cast<std::int64_t>(seqs.size())) << "zones missing in the run";
}

// Waits (polling the program's count, with a deadline) until the pacer has run `n` zones.
void wait_for_ticks(Target& t, std::uint64_t n) {
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (t.count().first < n) {
    ASSERT_LT(std::chrono::steady_clock::now(), until) << "the pacer did not reach " << n;
    std::this_thread::sleep_for(20ms);
  }
}

TEST(RecordPid, HoldsExactlyTheZonesRecordedBetweenItsStartAndItsInterruption) {
  const auto dir = work_dir("record_exact");
  Target t = Target::start({"idle"});
  ASSERT_EQ(t.ask("run 100"), "ran 100");  // before: not in the file
  Process tool = Process::start({kTool, "record", "--pid", t.pid, "-o", (dir / "window.rtrace").string()});
  const std::optional<std::string> started = tool.error_line();
  ASSERT_TRUE(started.has_value());
  EXPECT_NE(started->find("ringtrace record: recording process " + t.pid + " (control_target)"), std::string::npos)
      << *started;
  ASSERT_EQ(t.ask("run 5000"), "ran 5100");
  ::kill(tool.pid, SIGINT);  // as Ctrl-C
  const auto [out, err] = tool.rest();
  ASSERT_EQ(tool.exit_code(), 0) << err;
  EXPECT_NE(err.find("ringtrace record: wrote " + (dir / "window.rtrace").string()), std::string::npos) << err;
  ASSERT_EQ(t.ask("run 100"), "ran 5200");  // after: the process goes on, not recorded
  const Zones z = read_zones(dir / "window.rtrace", "work");
  EXPECT_TRUE(z.read.complete) << z.read.problem;
  EXPECT_EQ(z.begins, 5000u);
  ASSERT_EQ(z.seqs.size(), 5000u);
  EXPECT_EQ(*std::min_element(z.seqs.begin(), z.seqs.end()), 100);
  expect_contiguous(z.seqs);
  EXPECT_EQ(t.quit(), 0);
}

TEST(RecordPid, AToolKilledMidwayStopsTheSessionWhichFinishesItsFile) {
  const auto dir = work_dir("record_killed");
  const std::filesystem::path file = dir / "killed.rtrace";
  Target t = Target::start({"idle"});
  Process tool = Process::start({kTool, "record", "--pid", t.pid, "-o", file.string()});
  ASSERT_TRUE(tool.error_line().has_value());
  ASSERT_EQ(t.ask("run 1000"), "ran 1000");
  ::kill(tool.pid, SIGKILL);  // no stop request: the connection closes
  EXPECT_EQ(tool.exit_code(), 128 + SIGKILL);
  // The process stops the session when the connection closes; the file appears, whole,
  // when the binary exporter renames it into place at its end.
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (!std::filesystem::exists(file) && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(20ms);
  const Zones z = read_zones(file, "work");
  EXPECT_TRUE(z.read.complete) << z.read.problem;
  EXPECT_EQ(z.begins, 1000u);
  expect_contiguous(z.seqs);
  EXPECT_EQ(t.quit(), 0);
}

std::uint64_t monotonic_now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// The zones of the recorded second are those the program began in it, by its own clock:
// every tick it began after the tool said the session had started and whose zone had begun
// one second after the session's start (the tool asks for the stop at least a second after
// the start's reply) is in the file, and no tick that ended before the session's start or
// began after its stop (the session's own CLOCK_MONOTONIC times) is.
TEST(RecordPid, ForOneSecondHoldsEveryZoneOfThatSecondAndTheProgramGoesOn) {
  const auto dir = work_dir("record_for");
  Target t = Target::start({"paced", "2000"});
  const auto before = t.count();
  Process tool = Process::start({kTool, "record", "--pid", t.pid, "--for", "1s", "-o", (dir / "second.rtrace").string(),
                                 "--chrome", (dir / "second.json").string()});
  const std::optional<std::string> started = tool.error_line();
  const std::uint64_t started_seen_ns = monotonic_now_ns();  // the session records by now
  ASSERT_TRUE(started.has_value());
  const auto [out, err] = tool.rest();
  ASSERT_EQ(tool.exit_code(), 0) << err;
  const auto after = t.count();
  const Zones z = read_zones(dir / "second.rtrace", "tick");
  EXPECT_TRUE(z.read.complete) << z.read.problem;
  expect_contiguous(z.seqs);
  EXPECT_EQ(z.begins, z.seqs.size());
  EXPECT_TRUE(z.thread_names.contains("pacer"));
  const std::uint64_t start_ns = z.trace.clock.start_ns, stop_ns = z.trace.clock.stop_ns;
  EXPECT_GE(stop_ns - start_ns, 1'000'000'000u);
  const auto [first, last] = std::minmax_element(z.seqs.begin(), z.seqs.end());
  const auto surely = t.ticks("within", started_seen_ns, start_ns + 1'000'000'000);
  const auto maybe = t.ticks("overlapping", start_ns, stop_ns);
  ASSERT_GE(surely.first, 0);
  EXPECT_LE(*first, surely.first) << "a tick the program began while the session recorded is missing";
  EXPECT_GE(*last, surely.second) << "a tick the program began while the session recorded is missing";
  EXPECT_GE(*first, maybe.first) << "a tick the program ended before the session's start is in the file";
  EXPECT_LE(*last, maybe.second) << "a tick the program began after the session's stop is in the file";
  EXPECT_GE(*first, static_cast<std::int64_t>(before.first));
  EXPECT_LE(*last, static_cast<std::int64_t>(after.first));
  EXPECT_TRUE(std::filesystem::file_size(dir / "second.json") > 0);
  // The program goes on.
  wait_for_ticks(t, after.first + 200);
  EXPECT_EQ(t.quit(), 0);
}

TEST(RecordPid, IsRefusedWhileTheProgramRunsItsOwnSession) {
  const auto dir = work_dir("record_refused");
  Target t = Target::start({"recorder", "200", "2000", dir.string()});
  const ToolResult r = run_tool({"record", "--pid", t.pid, "--for", "100ms", "-o", (dir / "no.rtrace").string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("the program's own session already"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "no.rtrace"));
  EXPECT_EQ(t.quit(), 0);
}

TEST(RecordPid, RefusesAnOverlongFilterAndCompilesADeepOneOnItsThread) {
  const auto dir = work_dir("record_regex");
  Target t = Target::start({"idle"});
  const std::string overlong = std::string(1000, '(') + "a" + std::string(1000, ')');
  const ToolResult refused =
      run_tool({"record", "--pid", t.pid, "--for", "100ms", "--include", overlong, "-o", (dir / "no.rtrace").string()});
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.err.find("include: 2001 bytes (at most 1024)"), std::string::npos) << refused.err;
  // 511 nested groups: compiled by std::regex, recursively, on the channel's thread.
  const std::string deep = std::string(511, '(') + "a" + std::string(511, ')');
  const ToolResult deep_run =
      run_tool({"record", "--pid", t.pid, "--for", "100ms", "--include", deep, "-o", (dir / "deep.rtrace").string()});
  EXPECT_EQ(deep_run.code, 0) << deep_run.err;
  EXPECT_EQ(t.quit(), 0);
}

TEST(RecordPid, SaysSoForAProcessWithNoChannel) {
  Process sleeper = Process::start({"/bin/sleep", "600"});
  const ToolResult r = run_tool({"record", "--pid", std::to_string(sleeper.pid), "--for", "100ms"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("has no control channel"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("does not link ringtrace"), std::string::npos) << r.err;
  const ToolResult none = run_tool({"top", "999999999"});
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("no process 999999999"), std::string::npos) << none.err;
}

TEST(Snapshot, WritesTheLastKeepOfAWrappedRecorderInFilesThatOpenAlone) {
  const auto dir = work_dir("snapshot");
  // 500 ms kept; the pacer runs five times that first, so the recorder has evicted most.
  Target t = Target::start({"recorder", "500", "2000", dir.string()});
  wait_for_ticks(t, 5000);
  const auto before = t.count();
  const ToolResult r = run_tool(
      {"snapshot", t.pid, "-o", (dir / "snap.rtrace").string(), "--perfetto", (dir / "snap.perfetto-trace").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto after = t.count();
  const Zones z = read_zones(dir / "snap.rtrace", "tick");
  EXPECT_TRUE(z.read.complete) << z.read.problem;
  expect_contiguous(z.seqs);
  EXPECT_EQ(z.begins, z.seqs.size());
  EXPECT_TRUE(z.thread_names.contains("pacer"));
  const auto [first, last] = std::minmax_element(z.seqs.begin(), z.seqs.end());
  // Every zone the program had finished before it was asked, none after it answered...
  EXPECT_GE(*last + 1, static_cast<std::int64_t>(before.first));
  EXPECT_LE(*last, static_cast<std::int64_t>(after.first));
  // ... and only those of the last 500 ms, by the program's own clock: the recorder's cut
  // is taken between the request (before) and the reply (after), and it keeps the zones
  // that ran in the 500 ms up to it. 1 ms either side for the session's timestamps, which
  // the TSC gives and the program's clock reads do not (their conversion's error).
  constexpr std::uint64_t keep_ns = 500'000'000, slack_ns = 1'000'000;
  const auto surely = t.ticks("within", after.second - keep_ns + slack_ns, before.second - slack_ns);
  const auto maybe = t.ticks("overlapping", before.second - keep_ns - slack_ns, after.second + slack_ns);
  ASSERT_GE(surely.first, 0);
  EXPECT_LE(*first, surely.first) << "a tick of the last 500 ms is missing";
  EXPECT_GE(*last, surely.second);
  EXPECT_GE(*first, maybe.first) << "a tick older than the last 500 ms is in the snapshot";
  EXPECT_LE(*last, maybe.second);
  EXPECT_GT(std::filesystem::file_size(dir / "snap.perfetto-trace"), 0u);
  // Without outputs: the program's own window exporter writes it, its reason "external".
  const ToolResult own = run_tool({"snapshot", t.pid});
  ASSERT_EQ(own.code, 0) << own.err;
  const std::filesystem::path own_file = dir / "own-1-external.rtrace";
  ASSERT_TRUE(std::filesystem::exists(own_file)) << own.err;
  EXPECT_NE(own.err.find(own_file.string()), std::string::npos) << own.err;
  const Zones o = read_zones(own_file, "tick");
  EXPECT_TRUE(o.read.complete);
  expect_contiguous(o.seqs);
  EXPECT_EQ(t.quit(), 0);
}

TEST(Snapshot, IsAnErrorWithNoFlightRecorder) {
  const auto dir = work_dir("snapshot_none");
  Target t = Target::start({"idle"});
  const ToolResult r = run_tool({"snapshot", t.pid, "-o", (dir / "none.rtrace").string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no flight recorder"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "none.rtrace"));
  EXPECT_EQ(t.quit(), 0);
}

// The Calls/s of row `name` in each table `top` printed.
std::vector<double> rates_of(const std::string& out, const std::string& name) {
  std::vector<double> rates;
  const std::regex row("^" + name + " +[0-9.]+% +[0-9.]+ [a-z]+ +([0-9.]+) ");
  std::size_t from = 0;
  while (from < out.size()) {
    std::size_t end = out.find('\n', from);
    if (end == std::string::npos) end = out.size();
    std::smatch m;
    const std::string line = out.substr(from, end - from);
    if (std::regex_search(line, m, row)) rates.push_back(std::stod(m[1]));
    from = end + 1;
  }
  return rates;
}

TEST(Top, ThreeIntervalsShowTheProgramsOwnRate) {
  Target t = Target::start({"paced", "2000"});
  const auto before = t.count();
  const ToolResult r = run_tool({"top", t.pid, "--count", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto after = t.count();
  const double rate =
      static_cast<double>(after.first - before.first) / (static_cast<double>(after.second - before.second) / 1e9);
  EXPECT_NE(r.out.find("a session top started"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("table 3:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Dropped events: 0 in the interval"), std::string::npos) << r.out;
  const std::vector<double> rates = rates_of(r.out, "tick");
  ASSERT_EQ(rates.size(), 3u) << r.out;
  for (const double shown : rates) EXPECT_NEAR(shown, rate, rate * 0.05) << r.out;
  // The session top started ended with it: a recording may start.
  const ToolResult next =
      run_tool({"record", "--pid", t.pid, "--for", "100ms", "-o", (work_dir("top_after") / "after.rtrace").string()});
  EXPECT_EQ(next.code, 0) << next.err;
  EXPECT_EQ(t.quit(), 0);
}

// At a terminal: the table redrawn in place, q quits, and the session top started ends.
TEST(Top, AtATerminalQQuitsAndItsSessionEnds) {
  Target t = Target::start({"paced", "2000"});
  int terminal = -1;
  const pid_t top = ::forkpty(&terminal, nullptr, nullptr, nullptr);
  ASSERT_GE(top, 0);
  if (top == 0) {
    ::execl(kTool.c_str(), kTool.c_str(), "top", t.pid.c_str(), "--interval", "200ms", static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  std::string screen;
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (screen.find("table 2:") == std::string::npos && std::chrono::steady_clock::now() < until) {
    pollfd p{terminal, POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::read(terminal, buffer, sizeof buffer);
    if (n <= 0) break;
    screen.append(buffer, static_cast<std::size_t>(n));
  }
  ASSERT_NE(screen.find("table 2:"), std::string::npos) << screen;
  EXPECT_NE(screen.find("\x1b[H\x1b[2J"), std::string::npos);  // redrawn in place
  EXPECT_NE(screen.find("tick"), std::string::npos) << screen;
  ASSERT_EQ(::write(terminal, "q", 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(top, &status, 0), top);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ::close(terminal);
  // Its session ended with it: a recording may start.
  const ToolResult next = run_tool(
      {"record", "--pid", t.pid, "--for", "100ms", "-o", (work_dir("top_terminal") / "after.rtrace").string()});
  EXPECT_EQ(next.code, 0) << next.err;
  EXPECT_EQ(t.quit(), 0);
}

TEST(Top, JoinsTheProgramsRunningSessionReadOnly) {
  const auto dir = work_dir("top_join");
  Target t = Target::start({"recorder", "200", "2000", dir.string()});
  const auto before = t.count();
  const ToolResult r = run_tool({"top", t.pid, "--count", "2", "--interval", "500ms"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto after = t.count();
  const double rate =
      static_cast<double>(after.first - before.first) / (static_cast<double>(after.second - before.second) / 1e9);
  EXPECT_NE(r.out.find("its running session (joined read-only)"), std::string::npos) << r.out;
  const std::vector<double> rates = rates_of(r.out, "tick");
  ASSERT_EQ(rates.size(), 2u) << r.out;
  for (const double shown : rates) EXPECT_NEAR(shown, rate, rate * 0.05) << r.out;
  // Its session still runs: its flight recorder answers.
  EXPECT_EQ(run_tool({"snapshot", t.pid, "-o", (dir / "still.rtrace").string()}).code, 0);
  EXPECT_EQ(t.quit(), 0);
}

TEST(Top, SaysWhyASessionWritingOnlyABinaryFileCannotBeJoined) {
  const auto dir = work_dir("top_binary");
  Target t = Target::start({"binary", "2000", (dir / "own.rtrace").string()});
  const ToolResult r = run_tool({"top", t.pid, "--count", "1"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("only writes a binary trace file"), std::string::npos) << r.err;
  EXPECT_EQ(t.quit(), 0);
  EXPECT_TRUE(read_zones(dir / "own.rtrace", "tick").read.complete);
}

// In a child before exec: the uid and gid of nobody, no supplementary groups.
void become_nobody() {
  if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) std::_Exit(126);
}

TEST(OtherUser, IsRefusedEachCommand) {
  if (::geteuid() != 0) GTEST_SKIP() << "acting as another uid (setuid to 65534 in a child) needs root";
  const auto dir = work_dir("other_user");
  std::filesystem::permissions(dir, std::filesystem::perms::all);  // nobody may write there: not the point
  Target t = Target::start({"recorder", "200", "2000", (dir).string()});
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"record", "--pid", t.pid, "--for", "100ms", "-o", (dir / "r.rtrace").string()},
        std::vector<std::string>{"snapshot", t.pid, "-o", (dir / "s.rtrace").string()},
        std::vector<std::string>{"top", t.pid, "--count", "1"}}) {
    const ToolResult r = run_tool(args, become_nobody);
    EXPECT_EQ(r.code, 1) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("belongs to uid 0, not to you (uid 65534)"), std::string::npos) << args[0] << ": " << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "r.rtrace"));
  EXPECT_FALSE(std::filesystem::exists(dir / "s.rtrace"));
  EXPECT_EQ(t.quit(), 0);
}

TEST(OtherUser, RootIsRefusedByAUsersProcessUnlessItAllowsRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "acting as another uid (setuid to 65534 in a child) needs root";
  for (const bool allowed : {false, true}) {
    std::vector<std::string> environment;
    if (allowed) environment.push_back("RINGTRACE_CONTROL_ROOT=1");
    Target t = Target::start({"idle"}, environment, become_nobody);
    const ToolResult r = run_tool({"snapshot", t.pid});
    EXPECT_EQ(r.code, 1);
    if (allowed) {
      EXPECT_NE(r.err.find("no flight recorder"), std::string::npos) << r.err;  // it answered
    } else {
      EXPECT_NE(r.err.find("uid 0 may not use the control channel of process " + t.pid + " (uid 65534)"),
                std::string::npos)
          << r.err;
      EXPECT_NE(r.err.find("RINGTRACE_CONTROL_ROOT=1"), std::string::npos) << r.err;
    }
    EXPECT_EQ(t.quit(), 0);
  }
}

}  // namespace
