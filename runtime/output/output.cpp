#include "output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>  // rename
#include <cstring>
#include <ostream>
#include <stdexcept>

#include "file_paths.hpp"  // temporaries, output path checks

namespace ringtrace::detail {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Classifies a lead byte: the sequence length it announces and the range allowed for
// the byte after it (which rules out overlong forms, surrogates and > U+10FFFF).
// Returns false for bytes that cannot start a sequence of two or more bytes.
bool lead_byte(unsigned char b0, std::size_t& length, unsigned char& lo, unsigned char& hi) {
  lo = 0x80;
  hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return false;
  }
  return true;
}

// Bytes of s from i that form a valid sequence, or a prefix of one: the whole sequence
// when valid, else the maximal invalid subpart (at least one byte).
std::size_t sequence_prefix(std::string_view s, std::size_t i, std::size_t& length) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  length = 1;
  if (b0 < 0x80) return 1;
  unsigned char lo = 0, hi = 0;
  if (!lead_byte(b0, length, lo, hi)) {
    length = 0;
    return 1;
  }
  std::size_t k = i + 1;
  while (k < s.size() && k < i + length) {
    const auto b = static_cast<unsigned char>(s[k]);
    const bool ok = k == i + 1 ? (b >= lo && b <= hi) : (b & 0xC0) == 0x80;
    if (!ok) break;
    ++k;
  }
  if (k - i != length) length = 0;  // truncated or broken: invalid
  return k - i;
}

template <typename OnValid>
void for_each_utf8(std::string& out, std::string_view s, OnValid&& on_valid) {
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t length = 0;
    const std::size_t consumed = sequence_prefix(s, i, length);
    if (length == 0) {
      out.append(kReplacement);
    } else {
      on_valid(s.substr(i, length));
    }
    i += consumed;
  }
}

[[noreturn]] void throw_os_error(const std::string& what, const std::string& name, int error) {
  throw std::runtime_error("ringtrace: cannot " + what + " '" + name + "': " + std::strerror(error));
}

// Writes a temporary beside `path` (<ringtrace/files.hpp> has the naming rule) and
// renames it to `path` at close(), so that a run that never finishes (a crash, SIGKILL,
// an exit that skips stop()) leaves the previous run's file intact and its own partial
// output beside it, and two runs on one path never write into one file. The temporary
// is created exclusively, with a name no other process can guess, at the first write:
// an exporter that is made and then refused (its path already in use) or never run
// leaves nothing; the constructor still creates one and removes it, so a bad path fails
// at once. Only the process that opened the sink touches the file: a fork child's copy
// writes, flushes and renames nothing.
class FileSink final : public OutputSink {
 public:
  explicit FileSink(const std::string& path) : OutputSink(path), owner_(::getpid()) {
    check_output_path(path);
    check_temporary(path);
    buffer_.reserve(kBufferSize);
  }
  ~FileSink() override { abandon(); }
  void write(std::string_view text) override {
    if (closed_) throw std::runtime_error("ringtrace: write to closed output '" + name() + "'");
    if (buffer_.size() + text.size() > kBufferSize) flush();
    if (text.size() >= kBufferSize) {
      write_all(text);
    } else {
      buffer_.append(text);
    }
  }
  void flush() override {
    if (closed_ || !owned() || (buffer_.empty() && fd_ >= 0)) return;
    write_all(buffer_);
    buffer_.clear();
  }
  void close() override {
    if (closed_) return;
    if (!owned()) {
      abandon();
      return;
    }
    try {
      flush();
      if (fd_ < 0) open_now();  // an empty output is still a file
    } catch (...) {
      abandon();
      throw;
    }
    closed_ = true;
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) throw_os_error("close", partial_, errno);
    // Something that is neither a file nor a link may have taken the path meanwhile (a
    // FIFO, a device node): leave it, the output stays in the temporary.
    struct stat st {};
    if (::lstat(name().c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
      throw std::runtime_error("ringtrace: cannot replace '" + name() +
                               "': it is no longer a regular file; the output is in " + partial_);
    }
    // rename() replaces the path itself: a symbolic link there is replaced, its target
    // left alone.
    if (::rename(partial_.c_str(), name().c_str()) != 0) throw_os_error("rename " + partial_ + " to", name(), errno);
  }
  // Ends without replacing the final file: what was written stays in the temporary. In
  // a fork child, only the descriptor is closed.
  void abandon() noexcept {
    if (closed_) return;
    closed_ = true;
    if (owned() && !buffer_.empty()) {
      try {
        write_all(buffer_);
      } catch (...) {}
    }
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  static constexpr std::size_t kBufferSize = std::size_t{1} << 18;
  bool owned() const { return ::getpid() == owner_; }
  void open_now() {
    TemporaryFile file = create_temporary(name(), O_WRONLY);
    fd_ = file.fd;
    partial_ = std::move(file.path);
  }
  void write_all(std::string_view text) {
    if (fd_ < 0) open_now();
    while (!text.empty()) {
      const ssize_t n = ::write(fd_, text.data(), text.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        throw_os_error("write", partial_, errno);
      }
      text.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  std::string partial_;
  pid_t owner_;
  bool closed_ = false;
  int fd_ = -1;
  std::string buffer_;
};

class GzipSink final : public OutputSink {
 public:
  explicit GzipSink(const std::string& path) : OutputSink(path), file_(path), owner_(::getpid()) {
    std::memset(&stream_, 0, sizeof(stream_));
    // windowBits 15 + 16: a gzip header and trailer, as gzip(1) writes.
    if (deflateInit2(&stream_, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      throw std::runtime_error("ringtrace: cannot start gzip compression for '" + path + "'");
    }
    open_ = true;
  }
  ~GzipSink() override {
    // Unfinished: what was compressed so far reaches the temporary as a sync point (it
    // decompresses up to there), with no trailer; a fork child adds nothing.
    if (!finished_ && open_ && ::getpid() == owner_) {
      try {
        flush();
      } catch (...) {}
    }
    if (open_) deflateEnd(&stream_);
  }
  void write(std::string_view text) override {
    if (finished_) throw std::runtime_error("ringtrace: write to closed output '" + name() + "'");
    deflate_chunk(text, Z_NO_FLUSH);
  }
  void flush() override {
    if (finished_ || ::getpid() != owner_) return;
    deflate_chunk({}, Z_SYNC_FLUSH);
    file_.flush();
  }
  void close() override {
    if (finished_) return;
    finished_ = true;
    if (::getpid() != owner_) {
      file_.abandon();
      return;
    }
    deflate_chunk({}, Z_FINISH);
    deflateEnd(&stream_);
    open_ = false;
    file_.close();
  }

 private:
  void deflate_chunk(std::string_view text, int flush) {
    stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    stream_.avail_in = static_cast<uInt>(text.size());
    char out[1 << 16];
    int status = Z_OK;
    do {
      stream_.next_out = reinterpret_cast<Bytef*>(out);
      stream_.avail_out = sizeof(out);
      status = deflate(&stream_, flush);
      if (status == Z_STREAM_ERROR) throw std::runtime_error("ringtrace: gzip compression failed for '" + name() + "'");
      file_.write(std::string_view(out, sizeof(out) - stream_.avail_out));
    } while (stream_.avail_out == 0 || (flush == Z_FINISH && status != Z_STREAM_END));
  }
  FileSink file_;
  pid_t owner_;
  z_stream stream_;
  bool open_ = false;
  bool finished_ = false;
};

class StreamSink final : public OutputSink {
 public:
  StreamSink(std::ostream& stream, std::string name) : OutputSink(std::move(name)), stream_(stream) {}
  void write(std::string_view text) override {
    stream_.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!stream_) throw std::runtime_error("ringtrace: cannot write to " + name());
  }
  void flush() override {
    stream_.flush();
    if (!stream_) throw std::runtime_error("ringtrace: cannot flush " + name());
  }
  void close() override { flush(); }

 private:
  std::ostream& stream_;
};

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

void append_valid_utf8(std::string& out, std::string_view s) {
  for_each_utf8(out, s, [&](std::string_view valid) { out.append(valid); });
}

void append_json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  for_each_utf8(out, s, [&](std::string_view valid) {
    if (valid.size() > 1) {
      out.append(valid);
      return;
    }
    const char c = valid[0];
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      case '\b':
        out.append("\\b");
        break;
      case '\f':
        out.append("\\f");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out.append("\\u00");
          out.push_back(kHex[(c >> 4) & 0xF]);
          out.push_back(kHex[c & 0xF]);
        } else {
          out.push_back(c);
        }
    }
  });
  out.push_back('"');
}

void append_csv_field(std::string& out, std::string_view s) {
  const bool quote =
      s.find_first_of(",\"\r\n") != std::string_view::npos || (!s.empty() && (s.front() == ' ' || s.back() == ' '));
  if (!quote) {
    append_valid_utf8(out, s);
    return;
  }
  out.push_back('"');
  for_each_utf8(out, s, [&](std::string_view valid) {
    if (valid.size() == 1 && valid[0] == '"') {
      out.append("\"\"");
    } else {
      out.append(valid);
    }
  });
  out.push_back('"');
}

void append_uint(std::string& out, std::uint64_t value) {
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out.append(buffer, result.ptr);
}

void append_int(std::string& out, std::int64_t value) {
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out.append(buffer, result.ptr);
}

void append_double(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out.append("null");
    return;
  }
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out.append(buffer, result.ptr);
}

void append_thousandths(std::string& out, std::uint64_t thousandths) {
  append_uint(out, thousandths / 1000);
  const unsigned frac = static_cast<unsigned>(thousandths % 1000);
  out.push_back('.');
  out.push_back(static_cast<char>('0' + frac / 100));
  out.push_back(static_cast<char>('0' + frac / 10 % 10));
  out.push_back(static_cast<char>('0' + frac % 10));
}

ReportOutput::ReportOutput(std::string path) : path_(std::move(path)), sink_(OutputSink::open_file(path_)) {}

ReportOutput::ReportOutput(std::ostream& stream, std::string name) : stream_(&stream), name_(std::move(name)) {}

void ReportOutput::start_run() {
  if (!sink_ && !path_.empty()) sink_ = OutputSink::open_file(path_);
}

void ReportOutput::write_run(std::string_view text) {
  start_run();  // a run that had no on_start still writes its file
  if (!sink_ && stream_ != nullptr) sink_ = OutputSink::to_stream(*stream_, name_);
  const std::unique_ptr<OutputSink> sink = std::move(sink_);
  sink->write(text);
  sink->close();
}

std::unique_ptr<OutputSink> OutputSink::open_file(const std::string& path) {
  if (path.empty()) throw std::runtime_error("ringtrace: empty output path");
  if (ends_with(path, ".gz")) return std::make_unique<GzipSink>(path);
  return std::make_unique<FileSink>(path);
}

std::unique_ptr<OutputSink> OutputSink::to_stream(std::ostream& stream, std::string name) {
  return std::make_unique<StreamSink>(stream, std::move(name));
}

}  // namespace ringtrace::detail
