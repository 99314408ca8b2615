// The control channel's wire format (docs/control.md): frames of named fields, every
// length checked. The one encoder and decoder of it, used by the process's side
// (runtime/launch/control_channel.cpp) and by the `ringtrace` tool's client
// (tools/control_client.cpp); tests/control/control_client.py is a second, independent
// implementation written from the docs page alone.
//
// A frame: a 16-byte header (magic "RTCL", version, type, payload length, reserved 0),
// then the payload: fields, each a 2-byte key length, a 4-byte value length, the key
// (1 to 64 bytes of [a-z0-9_]) and the value (any bytes). Little-endian throughout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringtrace::control {

inline constexpr char kMagic[4] = {'R', 'T', 'C', 'L'};
inline constexpr std::uint16_t kVersion = 1;
inline constexpr std::size_t kHeaderBytes = 16;
inline constexpr std::size_t kFieldHeaderBytes = 6;
// Limits a reader holds the peer to.
inline constexpr std::size_t kMaxRequestPayload = std::size_t{64} << 10;  // what the process reads
inline constexpr std::size_t kMaxReplyPayload = std::size_t{16} << 20;    // what a client reads
inline constexpr std::size_t kMaxKeyBytes = 64;
inline constexpr std::size_t kMaxFields = 4096;

// Message types: requests below 100, replies from 100.
enum class Type : std::uint16_t {
  status = 1,    // what the process runs: its session, its flight recorder
  record = 2,    // start a session with the given outputs, owned by this connection
  stop = 3,      // stop the session this connection started (record or top)
  snapshot = 4,  // the flight recorder's snapshot now
  top = 5,       // a live key-averages table: join the running session or start one
  sample = 6,    // the table since the last sample (after top)
  ok = 100,
  error = 101,
  table = 102,
};
bool is_request(std::uint16_t type);
bool is_reply(std::uint16_t type);

struct Field {
  std::string key;
  std::string value;
};

struct Message {
  Type type = Type::status;
  std::vector<Field> fields;

  void add(std::string key, std::string value) { fields.push_back(Field{std::move(key), std::move(value)}); }
  void add(std::string key, std::uint64_t value) { add(std::move(key), std::to_string(value)); }
  // The first field of that key, if any.
  const std::string* find(std::string_view key) const;
  // Every field of that key, in order.
  std::vector<std::string_view> all(std::string_view key) const;
  // The first field of that key as a decimal number; nullopt if absent or not one.
  std::optional<std::uint64_t> number(std::string_view key) const;
};

// A key is 1 to kMaxKeyBytes of lowercase ASCII letters, digits and '_'.
bool valid_key(std::string_view key);

// The frame of `message` (header and fields). Throws std::length_error when a field or
// the whole would pass the format's limits (a key that is not valid_key: invalid_argument).
std::string encode(const Message& message);

// Frames read from a byte stream as it arrives, each checked as soon as its bytes are
// there: the header before its payload arrives (a length past `max_payload`, an unknown
// version or type, a reserved word not 0 is an error at once, so a peer never makes the
// reader wait for or hold more than that), the fields when the payload is whole.
class FrameReader {
 public:
  // `requests`: the types a reader accepts are requests (the process) or replies (a client).
  FrameReader(bool requests, std::size_t max_payload) : requests_(requests), max_payload_(max_payload) {}

  // Appends bytes received. Returns false once an error was found (error() says what);
  // then nothing more is read.
  bool feed(std::span<const char> bytes);
  // The next whole frame, if one has arrived.
  std::optional<Message> next();
  const std::string& error() const { return error_; }
  // Bytes held: a frame's beginning (at most kHeaderBytes + max_payload).
  std::size_t buffered() const { return buffer_.size() - start_; }

 private:
  bool check_header();
  bool requests_;
  std::size_t max_payload_;
  std::string buffer_;
  std::size_t start_ = 0;  // where the next frame begins in buffer_
  std::string error_;
};

// Decodes one payload's fields (used by FrameReader); false with `error` set when a
// length runs past the payload, a key is not valid_key, or there are over kMaxFields.
bool decode_fields(std::string_view payload, std::vector<Field>& fields, std::string& error);

}  // namespace ringtrace::control
