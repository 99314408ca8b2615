#include "control_protocol.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace ringtrace::control {

namespace {

void put16(std::string& out, std::uint16_t v) {
  out.push_back(static_cast<char>(v & 0xFF));
  out.push_back(static_cast<char>(v >> 8));
}
void put32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
std::uint16_t get16(const char* p) {
  return static_cast<std::uint16_t>(static_cast<unsigned char>(p[0]) | (static_cast<unsigned char>(p[1]) << 8));
}
std::uint32_t get32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

}  // namespace

bool is_request(std::uint16_t type) { return type >= 1 && type <= 6; }
bool is_reply(std::uint16_t type) { return type >= 100 && type <= 102; }

const std::string* Message::find(std::string_view key) const {
  for (const Field& f : fields) {
    if (f.key == key) return &f.value;
  }
  return nullptr;
}

std::vector<std::string_view> Message::all(std::string_view key) const {
  std::vector<std::string_view> out;
  for (const Field& f : fields) {
    if (f.key == key) out.emplace_back(f.value);
  }
  return out;
}

std::optional<std::uint64_t> Message::number(std::string_view key) const {
  const std::string* text = find(key);
  if (text == nullptr || text->empty() || text->size() > 19) return std::nullopt;
  std::uint64_t n = 0;
  for (const char c : *text) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return n;
}

bool valid_key(std::string_view key) {
  if (key.empty() || key.size() > kMaxKeyBytes) return false;
  for (const char c : key) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

std::string encode(const Message& message) {
  if (message.fields.size() > kMaxFields) throw std::length_error("ringtrace: control message: too many fields");
  std::size_t payload = 0;
  for (const Field& f : message.fields) {
    if (!valid_key(f.key)) throw std::invalid_argument("ringtrace: control message: bad key '" + f.key + "'");
    if (f.value.size() > kMaxReplyPayload) throw std::length_error("ringtrace: control message: value too long");
    payload += kFieldHeaderBytes + f.key.size() + f.value.size();
  }
  if (payload > kMaxReplyPayload) throw std::length_error("ringtrace: control message: payload too long");
  std::string out;
  out.reserve(kHeaderBytes + payload);
  out.append(kMagic, sizeof kMagic);
  put16(out, kVersion);
  put16(out, static_cast<std::uint16_t>(message.type));
  put32(out, static_cast<std::uint32_t>(payload));
  put32(out, 0);
  for (const Field& f : message.fields) {
    put16(out, static_cast<std::uint16_t>(f.key.size()));
    put32(out, static_cast<std::uint32_t>(f.value.size()));
    out.append(f.key);
    out.append(f.value);
  }
  return out;
}

bool decode_fields(std::string_view payload, std::vector<Field>& fields, std::string& error) {
  std::size_t at = 0;
  while (at < payload.size()) {
    if (fields.size() == kMaxFields) {
      error = "more than " + std::to_string(kMaxFields) + " fields";
      return false;
    }
    if (payload.size() - at < kFieldHeaderBytes) {
      error = "a field's header runs past the payload (offset " + std::to_string(at) + ")";
      return false;
    }
    const std::size_t key_bytes = get16(payload.data() + at);
    const std::size_t value_bytes = get32(payload.data() + at + 2);
    at += kFieldHeaderBytes;
    if (key_bytes > payload.size() - at || value_bytes > payload.size() - at - key_bytes) {
      error = "a field's key or value runs past the payload (offset " + std::to_string(at - kFieldHeaderBytes) + ")";
      return false;
    }
    const std::string_view key = payload.substr(at, key_bytes);
    if (!valid_key(key)) {
      error = "a field's key is not 1 to 64 bytes of [a-z0-9_] (offset " + std::to_string(at - kFieldHeaderBytes) + ")";
      return false;
    }
    fields.push_back(Field{std::string(key), std::string(payload.substr(at + key_bytes, value_bytes))});
    at += key_bytes + value_bytes;
  }
  return true;
}

bool FrameReader::feed(std::span<const char> bytes) {
  if (!error_.empty()) return false;
  if (start_ > 0 && start_ == buffer_.size()) {
    buffer_.clear();
    start_ = 0;
  }
  buffer_.append(bytes.data(), bytes.size());
  return check_header();
}

bool FrameReader::check_header() {
  if (!error_.empty()) return false;
  const std::size_t have = buffer_.size() - start_;
  const char* h = buffer_.data() + start_;
  // The magic is checked byte by byte as it arrives: a stream that is not ours is told
  // so at its first wrong byte.
  for (std::size_t i = 0; i < std::min(have, sizeof kMagic); ++i) {
    if (h[i] != kMagic[i]) {
      error_ = "not a ringtrace control frame (its first bytes are not \"RTCL\")";
      return false;
    }
  }
  if (have < kHeaderBytes) return true;
  const std::uint16_t version = get16(h + 4);
  const std::uint16_t type = get16(h + 6);
  const std::uint32_t length = get32(h + 8);
  const std::uint32_t reserved = get32(h + 12);
  if (version != kVersion) {
    error_ = "protocol version " + std::to_string(version) + " (this side speaks " + std::to_string(kVersion) + ")";
  } else if (reserved != 0) {
    error_ = "the header's reserved word is not 0";
  } else if (requests_ ? !is_request(type) : !is_reply(type)) {
    error_ = "unknown " + std::string(requests_ ? "request" : "reply") + " type " + std::to_string(type);
  } else if (length > max_payload_) {
    error_ = "a payload of " + std::to_string(length) + " bytes (at most " + std::to_string(max_payload_) + ")";
  }
  return error_.empty();
}

std::optional<Message> FrameReader::next() {
  if (!error_.empty()) return std::nullopt;
  const std::size_t have = buffer_.size() - start_;
  if (have < kHeaderBytes) return std::nullopt;
  const char* h = buffer_.data() + start_;
  const std::size_t length = get32(h + 8);
  if (have - kHeaderBytes < length) return std::nullopt;
  Message m;
  m.type = static_cast<Type>(get16(h + 6));
  if (!decode_fields(std::string_view(h + kHeaderBytes, length), m.fields, error_)) return std::nullopt;
  start_ += kHeaderBytes + length;
  // The bytes of the next frame, if any, are checked now; the buffer is compacted.
  if (start_ > 0) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  check_header();
  return m;
}

}  // namespace ringtrace::control
