// What a process recorded from the environment tells `ringtrace record` about its run
// (RINGTRACE_REPORT): that it started recording, where its files went or why they did
// not, and that it replaced itself with exec. The tool then says what happened to each
// process instead of guessing it from the files it finds (docs/guide.md, "The tool's
// messages").
//
// The channel: `record` binds a datagram Unix socket in a directory of its own (mode
// 0700) and names it in RINGTRACE_REPORT; each process sends one datagram per report,
// never waiting (a full queue loses the report, and the tool falls back to the files).
// A report is text, one field a line, "key value", the value escaped (`\\` and `\n`),
// after the line "ringtrace-report 1". The tool reads each as untrusted: anything
// malformed is ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ringtrace::detail {

inline constexpr const char* kRecordReportVariable = "RINGTRACE_REPORT";
inline constexpr std::size_t kMaxRecordReportBytes = 16384;

struct RecordReport {
  enum class Kind : std::uint8_t {
    start,    // the session started: it writes `outputs`
    end,      // the session stopped (exit, a signal it stops for): `errors` empty, every output written
    exec,     // the process is replacing itself with `exec_target`: the session stopped first
    refused,  // no session: `errors` says why (a variable, an output refused)
  };
  Kind kind = Kind::start;
  std::uint32_t pid = 0;
  std::string program;               // the recorded program (its executable's path)
  std::vector<std::string> outputs;  // the files it writes ("%p" replaced)
  std::vector<std::string> errors;   // what failed (an exporter's error, a refusal)
  std::string exec_target;           // exec: the program it becomes
  std::uint64_t recorded = 0;        // end, exec: the session's counts
  std::uint64_t dropped = 0;
};

std::string encode_record_report(const RecordReport& report);
// nullopt for anything that is not a whole, well-formed report of this version.
std::optional<RecordReport> decode_record_report(std::string_view datagram);

// Sends `report` to the socket at `socket_path` (RINGTRACE_REPORT's value): one datagram,
// never blocking, errors ignored (the tool falls back to the files it finds).
void send_record_report(const char* socket_path, const RecordReport& report) noexcept;

}  // namespace ringtrace::detail
