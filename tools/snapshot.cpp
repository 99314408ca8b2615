// ringtrace snapshot PID: the flight recorder of a running process written now, through
// its control channel (docs/control.md).
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.hpp"
#include "control_client.hpp"

namespace ringtrace::tool {

namespace {

constexpr const char* kHelp =
    "usage: ringtrace snapshot PID [outputs]\n"
    "\n"
    "The flight recorder of the running process PID (a program that links ringtrace and\n"
    "runs a session with Config::flight_recorder) writes what it holds now, its last\n"
    "`keep` of events, as a snapshot whose WindowInfo::reason is \"external\": each file\n"
    "opens on its own (the zones open where the recorder's window begins come first, with\n"
    "their real begin times; zones open at its end are closed there), however long the\n"
    "recorder's ring has wrapped. Waits until the files are written.\n"
    "\n"
    "outputs (any subset), as ringtrace record takes them: -o, --output OUT (binary trace\n"
    "  file), --chrome OUT, --perfetto OUT, --pstats OUT, --folded OUT, --table OUT,\n"
    "  --summary OUT, --callgraph OUT (\"%p\": the process's id). Written by the process\n"
    "  (its permissions), at these paths made absolute. None: the program's own window\n"
    "  exporters write it, the files its session.snapshot() writes.\n"
    "\n"
    "Not held to the recorder's min_interval (the program's own requests still are); refused\n"
    "while a snapshot is still taking its `after`. An error, said, when the process runs no\n"
    "flight recorder. PID may also be a control socket's path.\n";

}  // namespace

int snapshot(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  std::string target;
  std::vector<std::string> outputs;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (output_option(args, i, outputs)) continue;
    if (!args[i].empty() && args[i][0] == '-')
      throw UsageError("unknown option '" + args[i] + "' (see ringtrace snapshot --help)");
    if (!target.empty()) throw UsageError("one process at a time: '" + target + "' and '" + args[i] + "'");
    target = args[i];
  }
  if (target.empty()) return usage(args, kHelp);
  ControlClient client = ControlClient::connect(target);
  const control::Message status = client.expect(control::Message{control::Type::status, {}}, std::chrono::seconds(5));
  client.set_identity(static_cast<pid_t>(status.number("pid").value_or(0)),
                      status.find("program") != nullptr ? *status.find("program") : "");
  control::Message request{control::Type::snapshot, {}};
  for (std::string& o : outputs) request.add("output", std::move(o));
  const auto start = std::chrono::steady_clock::now();
  const control::Message done = client.request(request, std::chrono::seconds(30));
  if (done.type == control::Type::error) return error("snapshot", client.described() + ": " + error_text(done));
  std::vector<std::string> files;
  for (const std::string_view f : done.all("output")) files.emplace_back(f);
  std::fprintf(stderr, "ringtrace snapshot: wrote %s in %s from %s's flight recorder\n",
               files.empty() ? "the program's window exporters' files" : files_with_sizes(files).c_str(),
               elapsed(std::chrono::steady_clock::now() - start).c_str(), client.described().c_str());
  return 0;
}

}  // namespace ringtrace::tool
