#include "environment_session.hpp"

#include <errno.h>  // program_invocation_short_name
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <regex>
#include <utility>

#include "control_channel.hpp"          // start_control_channel
#include "environment.hpp"              // live: mark_environment_session
#include "ringtrace/detail/memory.hpp"  // g_memory_on
#include "ringtrace/detail/writer.hpp"  // ringtrace_environment_session, which programs name
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/exporters/ops_summary.hpp"
#include "ringtrace/exporters/perfetto.hpp"
#include "ringtrace/exporters/pstats.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/session.hpp"

namespace ringtrace::detail {

namespace {

constexpr const char* kFormats[] = {"rtrace", "chrome", "perfetto", "pstats", "folded", "table", "summary"};

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
                    "' names no format: end it in .rtrace, .json, .json.gz, .perfetto-trace, .prof or .folded, "
                    "or write format:path (rtrace, chrome, perfetto, pstats, folded, table, summary)");
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
  return ops_summary_exporter(path);
}

namespace {

// The session from the environment: stopped at exit, never destroyed (threads of the
// program may record until the very end). Held here, a constant-initialized global, so that
// leak checkers see it reachable at exit.
Session* g_environment_session = nullptr;

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

void start_session(bool& memory) {
  EnvironmentPlan plan = plan_from_environment([](const char* name) { return std::getenv(name); }, ::getpid());
  if (!plan.wanted) return;
  ::unsetenv("RINGTRACE_OUTPUT");  // not for the programs this one starts
  if (!plan.error.empty()) {
    std::fprintf(stderr, "ringtrace: %s; this run is not recorded\n", plan.error.c_str());
    return;
  }
  std::string described;
  try {
    g_environment_session = new Session(plan.config);
    Session* session = g_environment_session;
    for (const EnvironmentOutput& out : plan.outputs) {
      session->add_exporter(exporter_for(out));
      described += (described.empty() ? "" : ", ") + out.path;
    }
    session->start();
    memory = plan.config.memory;
    g_memory_on.store(0, std::memory_order_relaxed);  // on again when this is done (above)
    mark_environment_session(*session, "RINGTRACE_OUTPUT=" + described);
    flush_on_signals({SIGINT, SIGTERM});  // the files complete when the run is interrupted
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringtrace: RINGTRACE_OUTPUT: %s; this run is not recorded\n", e.what());
  }
}

}  // namespace

}  // namespace ringtrace::detail

// Named by every object that includes the hot path (detail/writer.hpp), so that a program
// that records anything gets this file, and the constructor above, from the static
// library however it is linked. Nothing in the library names it: live never reaches up.
extern "C" RINGTRACE_API void ringtrace_environment_session() noexcept {}
