#include "control_requests.hpp"

#include <errno.h>  // program_invocation_short_name
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "environment_session.hpp"  // plan_from_environment, exporter_for
#include "live_table.hpp"
#include "outside.hpp"  // live: the running session, taps, outside snapshots
#include "ringtrace/exporter.hpp"

namespace ringtrace::detail {

namespace {

using control::Message;
using control::Type;
using namespace std::chrono_literals;

// How long a request waits for the drainer: a table's pass, a snapshot written.
constexpr auto kSampleWait = 1000ms;
constexpr auto kSnapshotWait = 10s;
constexpr std::uint64_t kMaxRows = 1000;

Message ok() { return Message{Type::ok, {}}; }

const char* origin_word(SessionOrigin origin) {
  switch (origin) {
    case SessionOrigin::program:
      return "program";
    case SessionOrigin::environment:
      return "environment";
    case SessionOrigin::outside:
      return "outside";
    case SessionOrigin::none:
      break;
  }
  return "none";
}

std::string running_text(const RunningSession& r) {
  switch (r.origin) {
    case SessionOrigin::program:
      return "the program's own session";
    case SessionOrigin::environment:
    case SessionOrigin::outside:
      return "a session recorded " + r.described;
    case SessionOrigin::none:
      break;
  }
  return "no session";
}

// A stopped session is deleted when the next one stops, not at once: a thread that
// found it running at exit (the runtime's atexit hook) may still be in its stop().
void retire(std::unique_ptr<Session> session) {
  static Session* retired = nullptr;
  delete retired;
  retired = session.release();
}

// The request's fields as the environment variables of plan_from_environment, so that
// one parser checks `record --pid` and RINGTRACE_OUTPUT alike.
struct RequestVariables {
  const Message& request;
  std::string outputs;  // RINGTRACE_OUTPUT: the "output" fields joined with ','
  const char* operator()(const char* name) const {
    static constexpr std::pair<const char*, const char*> kFields[] = {
        {"RINGTRACE_BUFFER", "buffer"},
        {"RINGTRACE_POLICY", "policy"},
        {"RINGTRACE_MIN_DURATION", "min_duration"},
        {"RINGTRACE_MAX_DEPTH", "max_depth"},
        {"RINGTRACE_INCLUDE", "include"},
        {"RINGTRACE_EXCLUDE", "exclude"},
        {"RINGTRACE_INLINED", "inlined"},
        {"RINGTRACE_CONTEXT_SWITCHES", "context_switches"},
        {"RINGTRACE_MEMORY", "memory"},
    };
    if (std::string_view(name) == "RINGTRACE_OUTPUT") return outputs.c_str();
    for (const auto& [variable, field] : kFields) {
      if (std::string_view(name) == variable) {
        const std::string* value = request.find(field);
        return value != nullptr ? value->c_str() : nullptr;
      }
    }
    return nullptr;
  }
};

// The outputs of a request ("output" fields, format:path as RINGTRACE_OUTPUT's items),
// checked by the environment's rule; absolute paths only (the process's working
// directory is not the tool's).
EnvironmentPlan plan_of(const Message& request, std::string& error) {
  // std::regex compiles a pattern recursively: on the channel's thread (8 MiB of stack),
  // patterns of 1 KiB at most; values of 4 KiB.
  for (const control::Field& f : request.fields) {
    const std::size_t most = f.key == "include" || f.key == "exclude" ? 1024 : 4096;
    if (f.value.size() > most) {
      error = f.key + ": " + std::to_string(f.value.size()) + " bytes (at most " + std::to_string(most) + ")";
      return {};
    }
  }
  RequestVariables variables{request, {}};
  for (const std::string_view out : request.all("output")) {
    if (out.find(',') != std::string_view::npos || out.find('\0') != std::string_view::npos) {
      error = "an output may not hold ',' or NUL: '" + std::string(out) + "'";
      return {};
    }
    const std::size_t colon = out.find(':');
    const std::string_view path = colon == std::string_view::npos ? out : out.substr(colon + 1);
    if (!path.starts_with('/')) {
      error = "an output's path must be absolute (the process's working directory is not yours): '" + std::string(out) +
              "'";
      return {};
    }
    if (!variables.outputs.empty()) variables.outputs += ',';
    variables.outputs += out;
  }
  EnvironmentPlan plan = plan_from_environment(std::cref(variables), ::getpid());
  if (!plan.error.empty()) error = plan.error;
  return plan;
}

// An outside snapshot's outcome, told by the flight recorder on the drainer's thread.
struct SnapshotOutcome {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::string error;
  std::vector<std::string> files;
  std::vector<std::string> exporter_errors;
};

// A snapshot's exporter made for the tool: whatever it throws is kept for the reply and
// it stops, so that the program's flight recorder never pays for the tool's file.
class IsolatedExporter final : public Exporter {
 public:
  IsolatedExporter(std::shared_ptr<Exporter> inner, std::shared_ptr<SnapshotOutcome> outcome)
      : inner_(std::move(inner)), outcome_(std::move(outcome)) {}
  void on_start(const TraceContext& c) override {
    guarded("on_start", [&] { inner_->on_start(c); });
  }
  void on_events(std::span<const Event> e, const TraceContext& c) override {
    guarded("on_events", [&] { inner_->on_events(e, c); });
  }
  void on_flush(const TraceContext& c) override {
    guarded("on_flush", [&] { inner_->on_flush(c); });
  }
  void on_finish(const TraceContext& c, const SessionStats& s) override {
    guarded("on_finish", [&] { inner_->on_finish(c, s); });
  }
  std::vector<std::filesystem::path> output_paths() const override { return inner_->output_paths(); }

 private:
  template <typename F>
  void guarded(const char* callback, F&& call) {
    if (failed_) return;
    try {
      call();
    } catch (const std::exception& e) {
      fail(callback, e.what());
    } catch (...) {
      fail(callback, "threw something that is not a std::exception");
    }
  }
  void fail(const char* callback, const std::string& what) {
    failed_ = true;
    std::lock_guard<std::mutex> lock(outcome_->mutex);
    outcome_->exporter_errors.push_back(std::string(callback) + ": " + what);
  }
  std::shared_ptr<Exporter> inner_;
  std::shared_ptr<SnapshotOutcome> outcome_;
  bool failed_ = false;
};

// The columns of a table reply's rows: these numbers, tab-separated, then the name.
constexpr const char* kRowColumns =
    "calls self_ns total_ns avg_ns p50_ns p99_ns max_ns on_cpu_self_ns on_cpu_p50_ns on_cpu_p99_ns cpu_memory_bytes "
    "self_cpu_memory_bytes total_calls total_self_ns total_total_ns total_p50_ns total_p99_ns total_on_cpu_self_ns "
    "total_self_cpu_memory_bytes name";

std::string row_text(const TableRow& i, const TableRow& t) {
  std::string out;
  const auto number = [&](auto v) {
    out += std::to_string(v);
    out += '\t';
  };
  for (const std::uint64_t v : {i.calls, i.self_ns, i.total_ns, i.avg_ns, i.p50_ns, i.p99_ns, i.max_ns,
                                i.on_cpu_self_ns, i.on_cpu_p50_ns, i.on_cpu_p99_ns}) {
    number(v);
  }
  number(i.cpu_memory_usage);
  number(i.self_cpu_memory_usage);
  for (const std::uint64_t v : {t.calls, t.self_ns, t.total_ns, t.p50_ns, t.p99_ns, t.on_cpu_self_ns}) number(v);
  number(t.self_cpu_memory_usage);
  out += i.name.empty() ? t.name : i.name;
  return out;
}

// The rows a table reply carries: the first `rows` by self time over the interval, then
// those of the first `rows` by self time since joining that are not among them.
void add_rows(Message& reply, const LiveSample& s, std::uint64_t rows) {
  std::unordered_map<std::string_view, const TableRow*> total_of, interval_of;
  for (const TableRow& r : s.total.rows) total_of.emplace(r.name, &r);
  for (const TableRow& r : s.interval.rows) interval_of.emplace(r.name, &r);
  const TableRow none;
  const auto other = [&](const auto& map, const std::string& name) -> const TableRow& {
    const auto found = map.find(name);
    return found != map.end() ? *found->second : none;
  };
  for (std::size_t k = 0; k < s.interval.rows.size() && k < rows; ++k) {
    const TableRow& r = s.interval.rows[k];
    reply.add("row", row_text(r, other(total_of, r.name)));
  }
  for (std::size_t k = 0; k < s.total.rows.size() && k < rows; ++k) {
    const TableRow& t = s.total.rows[k];
    const auto i = interval_of.find(t.name);
    const bool sent = i != interval_of.end() && static_cast<std::size_t>(i->second - s.interval.rows.data()) < rows;
    if (!sent) reply.add("row", row_text(other(interval_of, t.name), t));
  }
}

}  // namespace

Message error_reply(const std::string& code, const std::string& message) {
  Message m{Type::error, {}};
  m.add("code", code);
  m.add("message", message);
  return m;
}

Message ControlWork::handle(const Message& request) {
  try {
    switch (request.type) {
      case Type::status:
        return status();
      case Type::record:
        return record(request);
      case Type::stop:
        return stop();
      case Type::snapshot:
        return snapshot(request);
      case Type::top:
        return top(request);
      case Type::sample:
        return sample();
      default:
        break;
    }
    return error_reply("malformed", "not a request");
  } catch (const std::exception& e) {  // the tool says it after its own "ringtrace <command>: "
    return error_reply("failed", std::string(without_ringtrace_prefix(e.what())));
  }
}

Message ControlWork::status() const {
  const RunningSession r = running_session();
  Message m = ok();
  m.add("pid", static_cast<std::uint64_t>(::getpid()));
  m.add("program", program_invocation_short_name);
  m.add("protocol", std::uint64_t{control::kVersion});
  m.add("session", origin_word(r.origin));
  if (!r.described.empty()) m.add("described", r.described);
  m.add("decodes", std::uint64_t{r.decodes});
  m.add("recorder_keep_ms", static_cast<std::uint64_t>(r.keep.count()));
  m.add("window_factories", static_cast<std::uint64_t>(r.window_factories));
  m.add("recorded", r.recorded);
  m.add("dropped", r.dropped);
  m.add("owned", recording_ ? "record" : table_ ? "top" : "");
  return m;
}

void ControlWork::start_session(const Config& config, const std::string& described) {
  auto session = std::make_unique<Session>(config);
  session->start();  // throws std::logic_error when another session runs
  if (!session->running()) throw std::logic_error("a session of the program's started meanwhile");
  mark_outside_session(*session, described);
  session_ = std::move(session);
}

Message ControlWork::record(const Message& request) {
  if (owns()) return error_reply("busy", "this connection already owns a session; stop it first");
  const RunningSession running = running_session();
  if (running.origin != SessionOrigin::none) {
    return error_reply("running", "the process runs " + running_text(running) +
                                      " already (one session at a time); ringtrace top joins it read-only");
  }
  std::string error;
  EnvironmentPlan plan = plan_of(request, error);
  if (!error.empty()) return error_reply("invalid", error);
  if (plan.outputs.empty()) return error_reply("invalid", "no output");
  if (const std::string* node = request.find("node_id")) plan.config.node_id = *node;
  auto session = std::make_unique<Session>(plan.config);
  std::string names;
  for (const EnvironmentOutput& out : plan.outputs) {
    session->add_exporter(exporter_for(out));  // creates the file now: throws naming it
    names += (names.empty() ? "" : ", ") + out.path;
  }
  session->start();
  if (!session->running()) return error_reply("running", "a session of the program's started meanwhile");
  mark_outside_session(*session, "ringtrace record --pid: " + names);
  session_ = std::move(session);
  recording_ = true;
  Message m = ok();
  for (const EnvironmentOutput& out : plan.outputs) m.add("output", out.path);
  m.add("start_ns", session_->stats().clock.start_ns);
  return m;
}

Message ControlWork::stop() {
  if (!owns()) return error_reply("nothing", "this connection started nothing to stop");
  if (!recording_) {
    release();
    return ok();
  }
  session_->stop();
  const SessionStats stats = session_->stats();
  Message m = ok();
  for (const auto& exporter_error : stats.exporter_errors) m.add("error", exporter_error);
  m.add("recorded", stats.recorded);
  m.add("dropped", stats.dropped);
  m.add("start_ns", stats.clock.start_ns);
  m.add("stop_ns", stats.clock.stop_ns);
  recording_ = false;
  retire(std::move(session_));
  return m;
}

Message ControlWork::snapshot(const Message& request) {
  std::vector<EnvironmentOutput> outputs;
  if (request.find("output") != nullptr) {
    std::string error;
    outputs = plan_of(request, error).outputs;
    if (!error.empty()) return error_reply("invalid", error);
  }
  auto outcome = std::make_shared<SnapshotOutcome>();
  OutsideSnapshot order;
  for (const EnvironmentOutput& out : outputs) {
    order.factories.push_back([out, outcome](const WindowInfo&) -> std::shared_ptr<Exporter> {
      return std::make_shared<IsolatedExporter>(exporter_for(out), outcome);
    });
  }
  order.done = [outcome](const std::string& error, const std::vector<std::filesystem::path>& files) {
    std::lock_guard<std::mutex> lock(outcome->mutex);
    outcome->done = true;
    outcome->error = error;
    for (const auto& f : files) outcome->files.push_back(f.string());
    outcome->cv.notify_all();
  };
  std::string why;
  if (!request_outside_snapshot(std::move(order), why)) return error_reply("no_recorder", why);
  std::unique_lock<std::mutex> lock(outcome->mutex);
  if (!outcome->cv.wait_for(lock, kSnapshotWait, [&] { return outcome->done; })) {
    return error_reply("timeout", "the snapshot was not written within 10 s (the session's drainer is behind)");
  }
  if (!outcome->error.empty()) return error_reply("refused", outcome->error);
  if (!outcome->exporter_errors.empty()) {
    Message m = error_reply("failed", "an output of the snapshot failed");
    for (const auto& e : outcome->exporter_errors) m.add("error", e);
    return m;
  }
  Message m = ok();
  for (const auto& f : outcome->files) m.add("output", f);
  return m;
}

Message ControlWork::top(const Message& request) {
  if (owns()) return error_reply("busy", "this connection already owns a session; stop it first");
  rows_ = std::clamp<std::uint64_t>(request.number("rows").value_or(50), 1, kMaxRows);
  RunningSession running = running_session();
  const auto grace_ns = [](std::chrono::microseconds grace) {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(grace).count());
  };
  std::string why;
  if (running.origin == SessionOrigin::none) {
    Config config;
    config.process_name = program_invocation_short_name;
    config.context_switches = request.number("context_switches").value_or(0) == 1;
    config.memory = request.number("memory").value_or(0) == 1;
    auto table = std::make_shared<LiveTable>(grace_ns(config.merge_grace));
    start_session(config, "ringtrace top");  // a session with no exporter: the table joins it
    table_ = table;
    if (!attach_tap(table_, why)) {
      release();
      return error_reply("failed", why);
    }
  } else {
    auto table = std::make_shared<LiveTable>(grace_ns(running.merge_grace));
    if (!attach_tap(table, why)) {
      return error_reply("cannot_join", "the process runs " + running_text(running) + ": " + why);
    }
    table_ = std::move(table);
  }
  running = running_session();
  dropped_at_sample_ = running.dropped;
  Message m = ok();
  m.add("session", session_ ? "started" : origin_word(running.origin));
  if (!session_ && !running.described.empty()) m.add("described", running.described);
  return m;
}

Message ControlWork::sample() {
  if (!table_) return error_reply("nothing", "no live table: send top first");
  const std::optional<LiveSample> s = table_->sample(kSampleWait);
  if (!s) {
    if (!table_->ended()) return error_reply("timeout", "the session's drainer made no pass within 1 s");
    release();
    return error_reply("ended", "the session ended");
  }
  const RunningSession running = running_session();
  Message m{Type::table, {}};
  m.add("begin_ns", s->begin_ns);
  m.add("end_ns", s->end_ns);
  m.add("joined_ns", s->joined_ns);
  m.add("self_total_ns", s->interval.self_total_ns);
  m.add("total_self_total_ns", s->total.self_total_ns);
  m.add("groups", static_cast<std::uint64_t>(s->interval.groups));
  m.add("total_groups", static_cast<std::uint64_t>(s->total.groups));
  m.add("on_cpu", std::uint64_t{s->interval.on_cpu || s->total.on_cpu});
  m.add("memory", std::uint64_t{s->interval.memory || s->total.memory});
  m.add("dropped", running.dropped >= dropped_at_sample_ ? running.dropped - dropped_at_sample_ : 0);
  m.add("dropped_session", running.dropped);
  m.add("recorded_session", running.recorded);
  dropped_at_sample_ = running.dropped;
  m.add("columns", kRowColumns);
  add_rows(m, *s, rows_);
  return m;
}

void ControlWork::release() noexcept {
  try {
    if (table_) {
      detach_tap(table_.get());
      table_.reset();
    }
    if (session_) {
      session_->stop();
      retire(std::move(session_));
    }
  } catch (...) {  // stop() from the drainer's thread cannot happen here; nothing else throws
  }
  recording_ = false;
}

}  // namespace ringtrace::detail
