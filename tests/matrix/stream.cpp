#include "stream.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "ringtrace/exporters/binary_trace.hpp"

extern char** environ;

namespace matrix {

const char* name_of(Kind kind) {
  static constexpr const char* kNames[] = {"zone_begin", "zone_end",   "instant",   "counter",     "dropped",
                                           "arg",        "flow_out",   "flow_in",   "async_begin", "async_end",
                                           "message",    "switch_out", "switch_in", "other"};
  return kNames[static_cast<int>(kind)];
}

namespace {

Kind kind_of(ringtrace::EventKind k) {
  using EK = ringtrace::EventKind;
  switch (k) {
    case EK::zone_begin:
      return Kind::zone_begin;
    case EK::zone_end:
      return Kind::zone_end;
    case EK::instant:
      return Kind::instant;
    case EK::counter:
      return Kind::counter;
    case EK::dropped:
      return Kind::dropped;
    case EK::arg:
      return Kind::arg;
    case EK::flow_out:
      return Kind::flow_out;
    case EK::flow_in:
      return Kind::flow_in;
    case EK::async_begin:
      return Kind::async_begin;
    case EK::async_end:
      return Kind::async_end;
    case EK::message:
      return Kind::message;
    case EK::switch_out:
      return Kind::switch_out;
    case EK::switch_in:
      return Kind::switch_in;
    case EK::alloc:  // the matrix's programs record no allocations (tests/memory does)
    case EK::free:
      return Kind::other;
  }
  return Kind::other;
}

// The collected file: a header line, then one record per event, then 'F' when the
// exporter was finished.
constexpr char kMagic[] = "RINGTRACE-MATRIX-STREAM-1\n";

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
void put_string(std::string& out, const std::string& s) {
  put<std::uint32_t>(out, static_cast<std::uint32_t>(s.size()));
  out += s;
}

std::uint8_t flag_bits(const StreamEvent& e) {
  return static_cast<std::uint8_t>((e.is_double ? 1 : 0) | (e.is_text ? 2 : 0) | (e.truncated ? 4 : 0) |
                                   (e.closed_at_stop ? 8 : 0) | (e.late ? 16 : 0) | (e.region ? 32 : 0));
}

}  // namespace

StreamEvent from_event(const ringtrace::Event& e, const ringtrace::TraceContext& context) {
  namespace F = ringtrace::EventFlags;
  StreamEvent s;
  s.time = e.time_ns;
  s.thread = e.thread;
  const ringtrace::ThreadInfo& info = context.thread(e.thread);
  s.os_tid = info.os_tid;
  s.thread_name = info.name;
  s.kind = kind_of(e.kind);
  s.is_double = (e.flags & F::value_double) != 0 &&
                (e.kind == ringtrace::EventKind::counter || e.kind == ringtrace::EventKind::arg);
  s.is_text = (e.flags & F::text) != 0;
  s.truncated = (e.flags & F::truncated) != 0;
  s.closed_at_stop = (e.flags & F::closed_at_stop) != 0;
  s.late = (e.flags & F::late) != 0;
  s.region = (e.flags & F::region) != 0;
  s.depth = e.depth;
  s.name = context.site(e.site).name;
  if (s.is_text) {
    s.text = std::string(context.text(e));
    s.value = 0;
  } else {
    s.value = e.value.u;
  }
  return s;
}

CollectingExporter::CollectingExporter(const std::filesystem::path& file) {
  file_ = std::fopen(file.c_str(), "wb");
  if (file_ == nullptr) throw std::runtime_error("cannot write " + file.string() + ": " + std::strerror(errno));
  std::fputs(kMagic, file_);
}

CollectingExporter::~CollectingExporter() {
  if (file_ != nullptr) std::fclose(file_);
}

void CollectingExporter::on_events(std::span<const ringtrace::Event> events, const ringtrace::TraceContext& context) {
  if (file_ == nullptr) {
    for (const ringtrace::Event& e : events) events_.push_back(from_event(e, context));
    return;
  }
  std::string out;
  for (const ringtrace::Event& e : events) {
    const StreamEvent s = from_event(e, context);
    out += 'E';
    put(out, s.time);
    put(out, s.thread);
    put(out, s.os_tid);
    put(out, static_cast<std::uint8_t>(s.kind));
    put(out, flag_bits(s));
    put(out, s.depth);
    put(out, s.value);
    put_string(out, s.name);
    put_string(out, s.text);
    put_string(out, s.thread_name);
  }
  if (std::fwrite(out.data(), 1, out.size(), file_) != out.size())
    throw std::runtime_error("collected stream: write failed");
}

void CollectingExporter::on_finish(const ringtrace::TraceContext&, const ringtrace::SessionStats&) {
  finished_ = true;
  if (file_ != nullptr) {
    std::fputc('F', file_);
    std::fflush(file_);
  }
}

Stream read_collected(const std::filesystem::path& file) {
  Stream stream;
  stream.source = "exporter";
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    stream.problems.push_back("the collecting exporter's stream " + file.string() + " is missing");
    return stream;
  }
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t magic = sizeof kMagic - 1;
  if (data.compare(0, magic, kMagic) != 0) {
    stream.problems.push_back("the collecting exporter's stream has no header");
    return stream;
  }
  std::size_t at = magic;
  bool finished = false;
  auto get = [&](auto& v) {
    if (at + sizeof v > data.size()) throw std::out_of_range("cut");
    std::memcpy(&v, data.data() + at, sizeof v);
    at += sizeof v;
  };
  auto get_string = [&](std::string& s) {
    std::uint32_t n = 0;
    get(n);
    if (at + n > data.size()) throw std::out_of_range("cut");
    s.assign(data, at, n);
    at += n;
  };
  try {
    while (at < data.size()) {
      const char tag = data[at++];
      if (tag == 'F') {
        finished = true;
        break;
      }
      if (tag != 'E') throw std::out_of_range("bad tag");
      StreamEvent e;
      std::uint8_t kind = 0, flags = 0;
      get(e.time);
      get(e.thread);
      get(e.os_tid);
      get(kind);
      get(flags);
      get(e.depth);
      get(e.value);
      get_string(e.name);
      get_string(e.text);
      get_string(e.thread_name);
      e.kind = static_cast<Kind>(kind);
      e.is_double = flags & 1;
      e.is_text = flags & 2;
      e.truncated = flags & 4;
      e.closed_at_stop = flags & 8;
      e.late = flags & 16;
      e.region = flags & 32;
      stream.events.push_back(std::move(e));
    }
  } catch (const std::out_of_range&) {
    stream.problems.push_back("the collecting exporter's stream is cut at byte " + std::to_string(at));
  }
  if (!finished) stream.problems.push_back("the collecting exporter was never finished (no on_finish)");
  return stream;
}

Stream read_with_replay_file(const std::filesystem::path& file) {
  Stream stream;
  stream.source = "replay_file(" + file.filename().string() + ")";
  CollectingExporter collector;
  try {
    const ringtrace::ReplayResult r = ringtrace::replay_file(file, collector);
    if (!r.complete)
      stream.problems.push_back("replay_file: the file is not complete: " + r.problem);
    else if (!r.problem.empty())
      stream.problems.push_back("replay_file: " + r.problem);
    if (r.recovered != 0)
      stream.problems.push_back("replay_file: " + std::to_string(r.recovered) +
                                " events recovered from a ring file of a stopped session");
  } catch (const std::exception& ex) {
    stream.problems.push_back(std::string("replay_file threw: ") + ex.what());
  }
  if (!collector.finished()) stream.problems.push_back("replay_file never finished the exporter");
  stream.events = std::move(collector.events());
  return stream;
}

namespace {

// Unquotes a string of `ringtrace dump`'s form at s[at] == '"'; leaves `at` after it.
bool unquote(const std::string& s, std::size_t& at, std::string& out) {
  if (at >= s.size() || s[at] != '"') return false;
  ++at;
  out.clear();
  while (at < s.size()) {
    const char c = s[at++];
    if (c == '"') return true;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (at >= s.size()) return false;
    const char n = s[at++];
    if (n == '"' || n == '\\') {
      out += n;
    } else if (n == 'x' && at + 2 <= s.size()) {
      out += static_cast<char>(std::stoi(s.substr(at, 2), nullptr, 16));
      at += 2;
    } else {
      return false;
    }
  }
  return false;
}

bool parse_line(const std::string& line, StreamEvent& e) {
  std::size_t at = 0;
  auto word = [&]() {
    const std::size_t start = at;
    while (at < line.size() && line[at] != ' ') ++at;
    std::string w = line.substr(start, at - start);
    if (at < line.size()) ++at;
    return w;
  };
  try {
    e.time = std::stoull(word());
    word();  // pid
    e.os_tid = std::stoull(word());
    e.thread = e.os_tid;
    const std::string kind = word();
    e.kind = Kind::other;
    for (int k = 0; k < static_cast<int>(Kind::other); ++k) {
      if (kind == name_of(static_cast<Kind>(k))) e.kind = static_cast<Kind>(k);
    }
    if (!unquote(line, at, e.name)) return false;
    while (at < line.size()) {
      if (line[at] == ' ') {
        ++at;
        continue;
      }
      const std::size_t eq = line.find('=', at);
      const std::size_t space = line.find(' ', at);
      if (eq == std::string::npos || (space != std::string::npos && space < eq)) {
        const std::string flag = word();
        if (flag == "late")
          e.late = true;
        else if (flag == "closed_at_stop")
          e.closed_at_stop = true;
        else if (flag == "truncated")
          e.truncated = true;
        else if (flag == "closed_at_window_end") {
        } else
          return false;
        continue;
      }
      const std::string key = line.substr(at, eq - at);
      at = eq + 1;
      if (key == "text") {
        if (!unquote(line, at, e.text)) return false;
        e.is_text = true;
        continue;
      }
      const std::string v = word();
      if (key == "i") {
        e.value = static_cast<std::uint64_t>(std::stoll(v));
      } else if (key == "d") {
        e.value = std::bit_cast<std::uint64_t>(std::strtod(v.c_str(), nullptr));
        e.is_double = true;
      } else if (key == "id") {
        e.value = std::stoull(v);
        if (e.kind == Kind::zone_begin || e.kind == Kind::zone_end) e.region = true;
      } else if (key == "step" || key == "count" || key == "bits") {
        e.value = std::stoull(v);
      } else {
        return false;
      }
    }
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

}  // namespace

Stream read_with_rtrace_py(const std::string& python, const std::string& script, const std::filesystem::path& file,
                           const std::filesystem::path& scratch) {
  Stream stream;
  stream.source = "rtrace.py(" + file.filename().string() + ")";
  const std::filesystem::path out = scratch / (file.filename().string() + ".rtrace-py.txt");
  const std::filesystem::path err = scratch / (file.filename().string() + ".rtrace-py.err");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> args = {python, script, file.string()};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    stream.problems.push_back("cannot run " + python + ": " + std::strerror(spawned));
    return stream;
  }
  // Bounded: a reader that never ends is a failure of its own, not a stuck test.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      stream.problems.push_back("rtrace.py did not finish within 180 s (killed)");
      return stream;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::ifstream errors(err);
  std::string error_text((std::istreambuf_iterator<char>(errors)), std::istreambuf_iterator<char>());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    stream.problems.push_back("rtrace.py exited with status " +
                              std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ": " +
                              error_text.substr(0, 400));
  }
  std::ifstream in(out);
  std::string line;
  std::uint64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    StreamEvent e;
    if (!parse_line(line, e)) {
      if (stream.problems.size() < 20)
        stream.problems.push_back("rtrace.py line " + std::to_string(number) +
                                  " not understood: " + line.substr(0, 200));
      continue;
    }
    stream.events.push_back(std::move(e));
  }
  return stream;
}

}  // namespace matrix
