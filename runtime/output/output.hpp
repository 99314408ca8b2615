// Text building and file output shared by the exporters: escaping (JSON, CSV),
// UTF-8 repair, integer time formatting, and buffered sinks (file, gzip file, stream)
// that report every failure as an exception naming the path.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>

namespace ringtrace::detail {

// `s` with every invalid UTF-8 sequence (bad lead or continuation bytes, overlong
// forms, surrogates, code points above U+10FFFF, truncated sequences) replaced by
// U+FFFD, one replacement per maximal invalid subpart.
void append_valid_utf8(std::string& out, std::string_view s);

// A quoted JSON string: `"`, `\` and control characters escaped, invalid UTF-8 replaced.
void append_json_string(std::string& out, std::string_view s);

// One CSV field (RFC 4180): quoted when it holds a comma, quote, CR, LF or leading or
// trailing space, quotes doubled; invalid UTF-8 replaced.
void append_csv_field(std::string& out, std::string_view s);

void append_uint(std::string& out, std::uint64_t value);
void append_int(std::string& out, std::int64_t value);
// Shortest text that reads back as the same double; `null` for NaN and infinities so
// that the result is always a valid JSON value.
void append_double(std::string& out, double value);
// A count of thousandths as a decimal with exactly three decimals: 1234567 -> "1234.567".
void append_thousandths(std::string& out, std::uint64_t thousandths);
// Nanoseconds as microseconds with exactly three decimals: 1234567 -> "1234.567".
inline void append_us(std::string& out, std::uint64_t ns) { append_thousandths(out, ns); }

// Buffered output. Every failure throws std::runtime_error that names the target and
// the operating system's reason.
class OutputSink {
 public:
  virtual ~OutputSink() = default;
  // Writes a temporary `path`.partial.XXXXXXXX (<ringtrace/files.hpp>), created
  // exclusively at the first write, and renames it to `path` at close(); gzip-compressed
  // when the path ends in ".gz". Throws now, naming `path`, when it is a directory or
  // exists and is no regular file (a FIFO, a device: following links), or when no file
  // can be created beside it (one is created and removed to know). A sink destroyed
  // without close() leaves `path` as it was: the temporary keeps what was written (none
  // exists if nothing was). In another process than the one that opened it (a fork
  // child), the sink never writes, flushes or renames anything.
  static std::unique_ptr<OutputSink> open_file(const std::string& path);
  // Writes to a stream the caller keeps alive; close() flushes it.
  static std::unique_ptr<OutputSink> to_stream(std::ostream& stream, std::string name = "stream");

  virtual void write(std::string_view text) = 0;
  // Hands what is buffered to the OS (gzip: up to a sync point that decompresses), so
  // that a process killed afterwards keeps it in the temporary.
  virtual void flush() = 0;
  // Flushes and finishes the output (gzip trailer, file close, rename). Idempotent.
  virtual void close() = 0;
  const std::string& name() const { return name_; }

 protected:
  explicit OutputSink(std::string name) : name_(std::move(name)) {}

 private:
  std::string name_;
};

// A report exporter's destination across runs: a file (created at once, so that a bad
// path fails at the factory call, and created again for each later run) or a stream the
// caller keeps alive. Each run writes its whole output at its end.
class ReportOutput {
 public:
  explicit ReportOutput(std::string path);
  ReportOutput(std::ostream& stream, std::string name);
  void start_run();                                  // reopens the file if an earlier run closed it
  void write_run(std::string_view text);             // writes, then closes the file or flushes the stream
  const std::string& path() const { return path_; }  // empty for a stream

 private:
  std::string path_;
  std::ostream* stream_ = nullptr;
  std::string name_;
  std::unique_ptr<OutputSink> sink_;
};

}  // namespace ringtrace::detail
