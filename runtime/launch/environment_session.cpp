#include "environment_session.hpp"

#include <errno.h>  // program_invocation_short_name
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <regex>
#include <string_view>
#include <utility>

#include "control_channel.hpp"  // start_control_channel
#include "environment.hpp"      // live: mark_environment_session
#include "record_report.hpp"
#include "ringtrace/detail/memory.hpp"  // g_memory_on
#include "ringtrace/detail/writer.hpp"  // ringtrace_environment_session, which programs name
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/call_graph.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/flame_graph.hpp"
#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/exporters/ops_summary.hpp"
#include "ringtrace/exporters/perfetto.hpp"
#include "ringtrace/exporters/pstats.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/session.hpp"

namespace ringtrace::detail {

namespace {

constexpr const char* kFormats[] = {"rtrace", "chrome",  "perfetto",  "pstats",    "folded",
                                    "table",  "summary", "callgraph", "flamegraph"};

bool known_format(const std::string& name) {
  for (const char* f : kFormats) {
    if (name == f) return true;
  }
  return false;
}

std::string format_of_path(const std::string& path) {
  const auto ends = [&](const char* suffix) { return path.ends_with(suffix); };
  if (ends(".rtrace")) return "rtrace";
  if (ends(".json") || ends(".json.gz")) return "chrome";
  if (ends(".perfetto-trace") || ends(".pftrace")) return "perfetto";
  if (ends(".prof") || ends(".pstats")) return "pstats";
  if (ends(".folded")) return "folded";
  if (ends(".dot")) return "callgraph";
  return {};
}

std::string with_pid(std::string path, long pid) {
  for (std::size_t at = path.find("%p"); at != std::string::npos; at = path.find("%p", at)) {
    const std::string id = std::to_string(pid);
    path.replace(at, 2, id);
    at += id.size();
  }
  return path;
}

bool parse_count(const char* text, std::uint64_t& out) {
  if (text == nullptr || *text == '\0') return false;
  std::uint64_t n = 0;
  for (const char* p = text; *p != '\0'; ++p) {
    if (*p < '0' || *p > '9' || n > (~std::uint64_t{0} - 9) / 10) return false;
    n = n * 10 + static_cast<std::uint64_t>(*p - '0');
  }
  out = n;
  return true;
}

}  // namespace

std::string_view without_ringtrace_prefix(std::string_view text) {
  while (text.starts_with("ringtrace: ")) text.remove_prefix(11);
  return text;
}

bool parse_duration(const std::string& text, std::chrono::nanoseconds& out) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  const std::string unit = text.substr(used);
  double scale = 0;
  if (unit.empty() || unit == "ns") {
    scale = 1;
  } else if (unit == "us") {
    scale = 1e3;
  } else if (unit == "ms") {
    scale = 1e6;
  } else if (unit == "s") {
    scale = 1e9;
  } else {
    return false;
  }
  const double ns = value * scale;
  if (!(ns >= 0) || ns > 1e18) return false;
  out = std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(ns)));
  return true;
}

EnvironmentPlan plan_from_environment(const std::function<const char*(const char*)>& get, long pid) {
  EnvironmentPlan plan;
  const char* output = get("RINGTRACE_OUTPUT");
  if (output == nullptr || *output == '\0') return plan;
  plan.wanted = true;
  const auto fail = [&](std::string what) {
    plan.error = std::move(what);
    return plan;
  };
  const std::string list = output;
  for (std::size_t from = 0; from <= list.size();) {
    std::size_t to = list.find(',', from);
    if (to == std::string::npos) to = list.size();
    std::string item = list.substr(from, to - from);
    from = to + 1;
    if (item.empty()) continue;
    EnvironmentOutput out;
    const std::size_t colon = item.find(':');
    if (colon != std::string::npos && known_format(item.substr(0, colon))) {
      out.format = item.substr(0, colon);
      out.path = item.substr(colon + 1);
    } else {
      out.format = format_of_path(item);
      out.path = item;
      if (out.format.empty()) {
        return fail("RINGTRACE_OUTPUT: '" + item +
                    "' names no format: end it in .rtrace, .json, .json.gz, .perfetto-trace, .prof, .folded or .dot, "
                    "or write format:path (rtrace, chrome, perfetto, pstats, folded, table, summary, callgraph, "
                    "flamegraph)");
      }
    }
    if (out.path.empty()) return fail("RINGTRACE_OUTPUT: '" + item + "' has no path");
    out.path = with_pid(out.path, pid);
    plan.outputs.push_back(std::move(out));
  }
  if (plan.outputs.empty()) return fail("RINGTRACE_OUTPUT names no output");
  Config& config = plan.config;
  config.process_name = program_invocation_short_name;
  config.buffer_records = kEnvironmentBufferRecords;
  std::uint64_t n = 0;
  if (const char* buffer = get("RINGTRACE_BUFFER")) {
    if (!parse_count(buffer, n) || n == 0)
      return fail(std::string("RINGTRACE_BUFFER: '") + buffer + "' is no count of records");
    config.buffer_records = static_cast<std::size_t>(n);
  }
  if (const char* policy = get("RINGTRACE_POLICY")) {
    const std::string p = policy;
    if (p == "drop") {
      config.overflow = OverflowPolicy::drop;
    } else if (p == "block") {
      config.overflow = OverflowPolicy::block;
    } else {
      return fail("RINGTRACE_POLICY: '" + p + "' is neither drop nor block");
    }
  }
  if (const char* stacks = get("RINGTRACE_MEMORY_STACKS")) {
    if (!parse_count(stacks, n))
      return fail(std::string("RINGTRACE_MEMORY_STACKS: '") + stacks + "' is no count of bytes (0: no stacks)");
    config.memory_stack_bytes = n;
  }
  if (const char* min = get("RINGTRACE_MIN_DURATION")) {
    if (!parse_duration(min, config.functions.min_duration)) {
      return fail(std::string("RINGTRACE_MIN_DURATION: '") + min + "' is no duration (100ns, 2us, 1ms)");
    }
  }
  if (const char* depth = get("RINGTRACE_MAX_DEPTH")) {
    if (!parse_count(depth, n) || n == 0 || n > (1u << 20)) {
      return fail(std::string("RINGTRACE_MAX_DEPTH: '") + depth + "' is no depth from 1 to 1048576");
    }
    config.functions.max_depth = static_cast<std::uint32_t>(n);
  }
  const std::pair<const char*, bool*> flags[] = {{"RINGTRACE_INLINED", &config.functions.inlined},
                                                 {"RINGTRACE_CONTEXT_SWITCHES", &config.context_switches},
                                                 {"RINGTRACE_MEMORY", &config.memory}};
  for (const auto& [name, flag] : flags) {
    const char* value = get(name);
    if (value == nullptr) continue;
    const std::string on = value;
    if (on != "0" && on != "1") return fail(std::string(name) + ": '" + on + "' is neither 1 nor 0");
    *flag = on == "1";
  }
  const std::pair<const char*, std::vector<std::string>*> filters[] = {
      {"RINGTRACE_INCLUDE", &config.functions.include}, {"RINGTRACE_EXCLUDE", &config.functions.exclude}};
  for (const auto& [name, patterns] : filters) {
    const char* pattern = get(name);
    if (pattern == nullptr || *pattern == '\0') continue;
    try {
      std::regex check(pattern);
    } catch (const std::regex_error& e) {
      return fail(std::string(name) + ": '" + pattern + "' is no regular expression: " + e.what());
    }
    patterns->emplace_back(pattern);
  }
  return plan;
}

std::shared_ptr<Exporter> exporter_for(const EnvironmentOutput& out) {
  const std::filesystem::path path = out.path;
  if (out.format == "rtrace") return binary_trace_exporter(path);
  if (out.format == "chrome") return chrome_trace_exporter(path);
  if (out.format == "perfetto") return perfetto_exporter(path);
  if (out.format == "pstats") return pstats_exporter(path);
  if (out.format == "folded") return folded_stacks_exporter(path);
  if (out.format == "table") return table_exporter(path);
  if (out.format == "flamegraph") return flame_graph_exporter(path);
  if (out.format == "callgraph") {
    // Said as the program starts, not found missing at its end: the DOT text is written.
    if (out.path.ends_with(".svg") && !graphviz_dot_found()) {
      std::fprintf(stderr,
                   "ringtrace: RINGTRACE_OUTPUT callgraph:%s: Graphviz's dot is not on PATH (Debian: apt install "
                   "graphviz); only the .dot beside it will be written\n",
                   out.path.c_str());
    }
    return call_graph_exporter(path);
  }
  return ops_summary_exporter(path);
}

namespace {

// The session from the environment: stopped at exit (or before an exec), never
// destroyed (threads of the program may record until the very end). Held in the process's
// one EnvironmentRun, reachable from leak checkers at exit.
void start_session(bool& memory);

// At the program's start: the session RINGTRACE_OUTPUT asks for, or one line on standard
// error saying why there is none (the program runs on either way).
__attribute__((constructor)) void start_environment_session() {
  // Config::memory: what this function allocates and frees around the session's start is
  // ringtrace's own, not the program's: allocations are recorded from its end on.
  bool memory = false;
  start_session(memory);
  start_control_channel();  // RINGTRACE_CONTROL: reachable from outside (docs/control.md)
  if (memory) g_memory_on.store(1, std::memory_order_relaxed);
}

std::string this_program() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(program_invocation_name) : exe.string();
}

RecordReport report_of(const EnvironmentRun& run, RecordReport::Kind kind) {
  RecordReport report;
  report.kind = kind;
  report.pid = static_cast<std::uint32_t>(run.pid);
  report.program = this_program();
  report.outputs = run.outputs;
  return report;
}

// An exporter's error as the output it concerns: SessionStats::exporter_errors says
// "exporter <i> <callback>: <what>", and the session's exporters are the outputs in order.
std::string output_error(const EnvironmentRun& run, const std::string& error) {
  std::size_t index = 0, used = 0;
  const std::string_view prefix = "exporter ";
  if (error.starts_with(prefix)) {
    try {
      index = std::stoul(error.substr(prefix.size()), &used);
    } catch (const std::exception&) {
      return error;
    }
    const std::size_t colon = error.find(": ", prefix.size() + used);
    if (colon != std::string::npos && index < run.outputs.size()) {
      return run.outputs[index] + ": " + std::string(without_ringtrace_prefix(error.substr(colon + 2)));
    }
  }
  return error;
}

// The end of the session's run: what it wrote, or why not, to `ringtrace record`.
void report_end(EnvironmentRun& run, RecordReport::Kind kind, std::string exec_target) noexcept {
  try {
    if (run.report_socket.empty() || run.session == nullptr) return;
    RecordReport report = report_of(run, kind);
    report.exec_target = std::move(exec_target);
    const SessionStats stats = run.session->stats();
    for (const std::string& e : stats.exporter_errors) report.errors.push_back(output_error(run, e));
    if (!stats.rings_unavailable.empty()) {
      report.errors.push_back(std::to_string(stats.dropped_without_ring) + " events lost: " + stats.rings_unavailable);
    }
    report.recorded = stats.recorded;
    report.dropped = stats.dropped;
    send_record_report(run.report_socket.c_str(), report);
  } catch (...) {  // at exit, with nothing to tell it to: the tool falls back to the files
  }
}

void report_end_at_exit() {
  EnvironmentRun& run = environment_run();
  if (run.pid != ::getpid()) return;  // a fork child's copy of the parent's run
  report_end(run, RecordReport::Kind::end, {});
}

void start_session(bool& memory) {
  EnvironmentRun& run = environment_run();
  // One per process: a program that links ringtrace and runs preloaded (record --memory)
  // carries the runtime twice, and the first copy's constructor started it.
  if (run.session != nullptr && run.pid == ::getpid()) return;
  // RINGTRACE_OUTPUT stays in the environment: every process this one starts (or becomes
  // with exec) is recorded too, into its own file when the path has "%p".
  EnvironmentPlan plan = plan_from_environment([](const char* name) { return std::getenv(name); }, ::getpid());
  if (!plan.wanted) return;
  const char* socket = std::getenv(kRecordReportVariable);
  run.report_socket = socket != nullptr ? socket : "";
  run.pid = ::getpid();
  for (const EnvironmentOutput& out : plan.outputs) run.outputs.push_back(out.path);
  const auto refuse = [&](const std::string& why) {
    std::fprintf(stderr, "ringtrace: %s; this run is not recorded\n", why.c_str());
    RecordReport report = report_of(run, RecordReport::Kind::refused);
    report.errors.push_back(why);
    if (!run.report_socket.empty()) send_record_report(run.report_socket.c_str(), report);
  };
  if (!plan.error.empty()) return refuse(plan.error);
  std::string described;
  try {
    auto session = std::make_unique<Session>(plan.config);
    for (const EnvironmentOutput& out : plan.outputs) {
      session->add_exporter(exporter_for(out));
      described += (described.empty() ? "" : ", ") + out.path;
    }
    session->start();
    run.session = session.release();
    memory = plan.config.memory;
    g_memory_on.store(0, std::memory_order_relaxed);  // on again when this is done (above)
    mark_environment_session(*run.session, "RINGTRACE_OUTPUT=" + described, report_end_at_exit);
    flush_on_signals({SIGINT, SIGTERM});  // the files complete when the run is interrupted
    if (!run.report_socket.empty())
      send_record_report(run.report_socket.c_str(), report_of(run, RecordReport::Kind::start));
  } catch (const std::exception& e) {
    refuse("RINGTRACE_OUTPUT: " + std::string(without_ringtrace_prefix(e.what())));
  }
}

}  // namespace

EnvironmentRun& environment_run() {
  // Never destroyed: the exit and exec wrappers may run after static destructors (an
  // atexit handler's _exit), and a destructor running before the session stops would
  // free ringtrace's own memory through the program's free while it is recorded.
  static EnvironmentRun* const run = new EnvironmentRun();
  return *run;
}

void stop_environment_session_for_exec(const char* target) noexcept {
  EnvironmentRun& run = environment_run();
  // Not this process's run: a fork child's copy, or the parent's memory seen from a
  // vfork child (whose exec must leave the parent's session alone).
  if (run.session == nullptr || run.pid != ::getpid()) return;
  try {
    run.session->stop();
  } catch (...) {  // the files are as complete as they got; the report says so
  }
  report_end(run, RecordReport::Kind::exec, target != nullptr ? target : "");
  run.session = nullptr;  // the new image starts its own (RINGTRACE_OUTPUT is still set)
}

}  // namespace ringtrace::detail

// Named by every object that includes the hot path (detail/writer.hpp), so that a program
// that records anything gets this file, and the constructor above, from the static
// library however it is linked. Nothing in the library names it: live never reaches up.
extern "C" RINGTRACE_API void ringtrace_environment_session() noexcept {}
