#include "record_report.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace ringtrace::detail {

namespace {

constexpr std::string_view kFirstLine = "ringtrace-report 1";

constexpr std::string_view kKinds[] = {"start", "end", "exec", "refused"};

void add_field(std::string& out, std::string_view key, std::string_view value) {
  out.append(key);
  out.push_back(' ');
  for (const char c : value) {
    if (c == '\\') {
      out.append("\\\\");
    } else if (c == '\n') {
      out.append("\\n");
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\n');
}

std::optional<std::string> unescaped(std::string_view value) {
  std::string out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (value[i] != '\\') {
      out.push_back(value[i]);
      continue;
    }
    if (++i == value.size()) return std::nullopt;
    if (value[i] == '\\') {
      out.push_back('\\');
    } else if (value[i] == 'n') {
      out.push_back('\n');
    } else {
      return std::nullopt;
    }
  }
  return out;
}

bool number(std::string_view text, std::uint64_t& out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

}  // namespace

std::string encode_record_report(const RecordReport& report) {
  std::string out(kFirstLine);
  out.push_back('\n');
  add_field(out, "kind", kKinds[static_cast<std::size_t>(report.kind)]);
  add_field(out, "pid", std::to_string(report.pid));
  add_field(out, "program", report.program);
  for (const std::string& o : report.outputs) add_field(out, "output", o);
  for (const std::string& e : report.errors) add_field(out, "error", e);
  if (!report.exec_target.empty()) add_field(out, "exec", report.exec_target);
  add_field(out, "recorded", std::to_string(report.recorded));
  add_field(out, "dropped", std::to_string(report.dropped));
  if (out.size() > kMaxRecordReportBytes) {  // whole fields only: the longest texts shortened
    RecordReport shorter = report;
    for (std::string& e : shorter.errors) e.resize(std::min<std::size_t>(e.size(), 512));
    for (std::string& o : shorter.outputs) o.resize(std::min<std::size_t>(o.size(), 1024));
    shorter.program.resize(std::min<std::size_t>(shorter.program.size(), 1024));
    shorter.exec_target.resize(std::min<std::size_t>(shorter.exec_target.size(), 1024));
    if (shorter.outputs.size() > 8) shorter.outputs.resize(8);
    if (shorter.errors.size() > 8) shorter.errors.resize(8);
    return encode_record_report(shorter);
  }
  return out;
}

std::optional<RecordReport> decode_record_report(std::string_view datagram) {
  if (datagram.size() > kMaxRecordReportBytes || !datagram.starts_with(kFirstLine) ||
      datagram.size() <= kFirstLine.size() || datagram[kFirstLine.size()] != '\n' || !datagram.ends_with('\n')) {
    return std::nullopt;
  }
  RecordReport report;
  bool kind = false, pid = false;
  std::string_view rest = datagram.substr(kFirstLine.size() + 1);
  while (!rest.empty()) {
    const std::size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end + 1);
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    const std::string_view key = line.substr(0, space);
    const std::optional<std::string> value = unescaped(line.substr(space + 1));
    if (!value) return std::nullopt;
    std::uint64_t n = 0;
    if (key == "kind") {
      const auto* k = std::find(std::begin(kKinds), std::end(kKinds), *value);
      if (k == std::end(kKinds)) return std::nullopt;
      report.kind = static_cast<RecordReport::Kind>(k - std::begin(kKinds));
      kind = true;
    } else if (key == "pid") {
      if (!number(*value, n) || n == 0 || n > 0xFFFFFFFFu) return std::nullopt;
      report.pid = static_cast<std::uint32_t>(n);
      pid = true;
    } else if (key == "program") {
      report.program = *value;
    } else if (key == "output") {
      report.outputs.push_back(*value);
    } else if (key == "error") {
      report.errors.push_back(*value);
    } else if (key == "exec") {
      report.exec_target = *value;
    } else if (key == "recorded" || key == "dropped") {
      if (!number(*value, n)) return std::nullopt;
      (key == "recorded" ? report.recorded : report.dropped) = n;
    }  // a key of a later version: skipped
  }
  if (!kind || !pid) return std::nullopt;
  return report;
}

void send_record_report(const char* socket_path, const RecordReport& report) noexcept {
  try {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::size_t length = std::strlen(socket_path);
    if (length == 0 || length >= sizeof address.sun_path) return;
    std::memcpy(address.sun_path, socket_path, length);
    const std::string datagram = encode_record_report(report);
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    [[maybe_unused]] const ssize_t sent = ::sendto(fd, datagram.data(), datagram.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
                                                   reinterpret_cast<const sockaddr*>(&address), sizeof address);
    ::close(fd);
  } catch (...) {  // an allocation that failed: the tool falls back to the files
  }
}

}  // namespace ringtrace::detail
