// The matrix's own form of an event stream, whatever read it: the in-process exporter
// (live, in the workload), the public reader replay_file() (the binary files), or
// tools/python/rtrace.py's text (the binary files, read by a program that shares no code
// with the runtime). The checker sees only this.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "ringtrace/exporter.hpp"

namespace matrix {

enum class Kind : std::uint8_t {
  zone_begin,
  zone_end,
  instant,
  counter,
  dropped,
  arg,
  flow_out,
  flow_in,
  async_begin,
  async_end,
  message,
  switch_out,
  switch_in,
  other,
};
const char* name_of(Kind kind);

struct StreamEvent {
  std::uint64_t time = 0;
  std::uint64_t thread = 0;  // the reader's thread key: a ThreadId, or an OS thread id (rtrace.py)
  std::uint64_t os_tid = 0;
  Kind kind = Kind::other;
  bool is_double = false;
  bool is_text = false;
  bool truncated = false;
  bool closed_at_stop = false;
  bool late = false;
  bool region = false;
  std::int64_t depth = -1;  // zones open outside it on its thread; -1: the reader does not say
  std::uint64_t value = 0;  // the 64 bits: integer, double's bits, id, count, step number
  std::string name;
  std::string text;
  std::string thread_name;  // "" when the reader does not say
};

struct Stream {
  std::string source;  // "exporter", "replay_file(trace.rtrace)", "rtrace.py(trace.rtrace)"
  std::vector<StreamEvent> events;
  std::vector<std::string> problems;  // the reader's own complaints (a file not complete, a line unparsed)
};

// A ringtrace::Event as the matrix sees it (used live and for replay_file()).
StreamEvent from_event(const ringtrace::Event& e, const ringtrace::TraceContext& context);

// Collects a stream: into memory, or (live, in the workload) into a file that
// read_collected() reads back.
class CollectingExporter final : public ringtrace::Exporter {
 public:
  CollectingExporter() = default;                                  // into memory: events()
  explicit CollectingExporter(const std::filesystem::path& file);  // into a file
  ~CollectingExporter() override;
  void on_events(std::span<const ringtrace::Event> events, const ringtrace::TraceContext& context) override;
  void on_finish(const ringtrace::TraceContext& context, const ringtrace::SessionStats& stats) override;
  std::vector<StreamEvent>& events() { return events_; }
  bool finished() const { return finished_; }

 private:
  std::FILE* file_ = nullptr;
  std::vector<StreamEvent> events_;
  bool finished_ = false;
};

Stream read_collected(const std::filesystem::path& file);
Stream read_with_replay_file(const std::filesystem::path& file);
// Runs `python3 rtrace.py file` and parses its lines.
Stream read_with_rtrace_py(const std::string& python, const std::string& script, const std::filesystem::path& file,
                           const std::filesystem::path& scratch);

}  // namespace matrix
