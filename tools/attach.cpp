// ringtrace record --pid PID: a session in a running process, through its control
// channel (docs/control.md), for a while; the process goes on as before.
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "control_client.hpp"

namespace ringtrace::tool {

namespace {

constexpr const char* kHelp =
    "usage: ringtrace record --pid PID [outputs] [options] [--for DURATION]\n"
    "\n"
    "Starts a session in the running process PID, a program that links ringtrace, through\n"
    "its control channel (no code, no variable set in advance), and stops it after DURATION\n"
    "or when this tool is interrupted (Ctrl-C, SIGTERM, SIGHUP) or killed; the process goes\n"
    "on as before. The files are written by the process (with its permissions, as its file\n"
    "system has them) at the paths given here, made absolute. PID may also be the path of\n"
    "a control socket (a process started with RINGTRACE_CONTROL=/its/path).\n"
    "\n"
    "Refused, and said why, when the process runs a session already (its own, one from\n"
    "RINGTRACE_OUTPUT, another record --pid or top: one session at a time; ringtrace top\n"
    "joins a running one read-only), when it does not link ringtrace or its channel is off,\n"
    "or when it belongs to another user.\n"
    "\n"
    "outputs (any subset; none: -o run.rtrace), as ringtrace record takes them:\n"
    "  -o, --output OUT, --chrome OUT, --perfetto OUT, --pstats OUT, --folded OUT,\n"
    "  --table OUT, --summary OUT, --callgraph OUT  (\"%p\" in OUT becomes the process's id)\n"
    "options:\n"
    "  --for D           stop after D (500ms, 10s, 2m); default: when interrupted\n"
    "  --policy P        drop (default: the program's threads never wait; what a full\n"
    "                    ring cannot take is counted) or block (nothing lost; a thread\n"
    "                    waits for room)\n"
    "  --buffer N, --context-switches, --memory, --min-duration D, --max-depth N,\n"
    "  --include RE, --exclude RE, --inlined, --node-id ID: as ringtrace record takes them\n"
    "  (checked by the process, with the rule of its RINGTRACE_* variables)\n"
    "\n"
    "Prints one line when the session has started and one when it has stopped, naming the\n"
    "files, the events recorded and dropped. Exits 0, or 1 when the session did not start\n"
    "or an output failed.\n";

struct Plan {
  control::Message request{control::Type::record, {}};
  std::optional<std::chrono::milliseconds> duration;
  std::string target;
};

Plan parse(const std::vector<std::string>& args) {
  Plan plan;
  std::vector<std::string> outputs;
  // Options passed through as fields: the process checks them as it checks its variables.
  static constexpr std::pair<std::string_view, const char*> kValues[] = {
      {"--buffer", "buffer"},   {"--min-duration", "min_duration"}, {"--max-depth", "max_depth"},
      {"--include", "include"}, {"--exclude", "exclude"},           {"--node-id", "node_id"},
  };
  static constexpr std::pair<std::string_view, const char*> kFlags[] = {
      {"--context-switches", "context_switches"}, {"--memory", "memory"}, {"--inlined", "inlined"}};
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--pid") {
      plan.target = option_value(args, i);
      continue;
    }
    if (a == "--for") {
      plan.duration = parse_wait(a, option_value(args, i));
      continue;
    }
    if (output_option(args, i, outputs)) continue;
    if (a == "--policy") {  // refused here as record refuses it (the rest the process checks)
      const std::string& policy = option_value(args, i);
      if (policy != "drop" && policy != "block") throw UsageError("--policy takes drop or block, not '" + policy + "'");
      plan.request.add("policy", policy);
      continue;
    }
    bool known = false;
    for (const auto& [option, field] : kValues) {
      if (a == option) {
        plan.request.add(field, option_value(args, i));
        known = true;
      }
    }
    for (const auto& [option, field] : kFlags) {
      if (a == option) {
        plan.request.add(field, "1");
        known = true;
      }
    }
    if (!known) throw UsageError("unknown option '" + a + "' (see ringtrace record --pid --help)");
  }
  if (plan.target.empty()) throw UsageError("--pid needs a process id");
  if (outputs.empty()) outputs.push_back("rtrace:" + std::filesystem::absolute("run.rtrace").string());
  for (std::string& o : outputs) plan.request.add("output", std::move(o));
  return plan;
}

// Waits for the duration, an interruption, or the process's end (its connection closes).
// Returns false when the process has gone.
bool wait_for_end(const ControlClient& client, const Interruption& interruption,
                  std::optional<std::chrono::milliseconds> duration) {
  const auto until = std::chrono::steady_clock::now() + duration.value_or(std::chrono::milliseconds(0));
  for (;;) {
    int timeout = -1;
    if (duration) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0) return true;
      timeout = static_cast<int>(std::min<std::int64_t>(left.count() + 1, 1 << 30));
    }
    pollfd fds[2] = {{interruption.fd(), POLLIN, 0}, {client.fd(), POLLIN, 0}};
    if (::poll(fds, 2, timeout) < 0) continue;  // EINTR: the pipe says if it was ours
    if (fds[0].revents != 0 || interruption.happened()) return true;
    if (fds[1].revents != 0) return false;  // nothing is sent unasked: the process has gone
  }
}

}  // namespace

int record_pid(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  Plan plan = parse(args);
  ControlClient client = ControlClient::connect(plan.target);
  const control::Message status = client.expect(control::Message{control::Type::status, {}}, std::chrono::seconds(5));
  client.set_identity(static_cast<pid_t>(status.number("pid").value_or(0)),
                      status.find("program") != nullptr ? *status.find("program") : "");
  Interruption interruption;  // from here, Ctrl-C stops the session rather than the tool
  const control::Message started = client.expect(plan.request, std::chrono::seconds(30));
  std::vector<std::string> files;
  for (const std::string_view f : started.all("output")) files.emplace_back(f);
  std::string names;
  for (const std::string& f : files) names += (names.empty() ? "" : ", ") + f;
  std::fprintf(stderr, "ringtrace record: recording %s into %s %s\n", client.described().c_str(), names.c_str(),
               plan.duration ? ("for " + elapsed(*plan.duration)).c_str() : "until interrupted (Ctrl-C)");
  std::fflush(stderr);
  const auto start = std::chrono::steady_clock::now();
  if (!wait_for_end(client, interruption, plan.duration)) {
    return error("record", client.described() +
                               " ended during the recording; at a normal exit its session stopped "
                               "and finished its files: " +
                               files_with_sizes(files));
  }
  const control::Message stopped = client.request(control::Message{control::Type::stop, {}}, std::chrono::minutes(10));
  if (stopped.type == control::Type::error) return error("record", client.described() + ": " + error_text(stopped));
  const auto took = std::chrono::steady_clock::now() - start;
  std::fprintf(stderr, "ringtrace record: wrote %s in %s from %s: %s events, %s dropped\n",
               files_with_sizes(files).c_str(), elapsed(took).c_str(), client.described().c_str(),
               thousands(stopped.number("recorded").value_or(0)).c_str(),
               thousands(stopped.number("dropped").value_or(0)).c_str());
  const std::vector<std::string_view> failures = stopped.all("error");
  for (const std::string_view f : failures) error("record", std::string("an output failed: ") + std::string(f));
  return failures.empty() ? 0 : 1;
}

}  // namespace ringtrace::tool
