// The control channel's format (docs/control.md, "Wire format"): frames written and read
// back, and every length a peer sends checked before it is trusted. The expected bytes are
// written out by hand from the docs page.
#include <gtest/gtest.h>

#include <string>

#include "control_paths.hpp"
#include "control_protocol.hpp"

namespace {

using ringtrace::control::FrameReader;
using ringtrace::control::Message;
using ringtrace::control::Type;

std::string bytes(std::initializer_list<int> list) {
  std::string s;
  for (const int b : list) s.push_back(static_cast<char>(b));
  return s;
}

std::string header(int type, std::uint32_t length, int version = 1, std::uint32_t reserved = 0) {
  return "RTCL" + bytes({version, 0, type & 0xFF, type >> 8}) +
         bytes({static_cast<int>(length & 0xFF), static_cast<int>((length >> 8) & 0xFF),
                static_cast<int>((length >> 16) & 0xFF), static_cast<int>(length >> 24)}) +
         bytes({static_cast<int>(reserved & 0xFF), 0, 0, 0});
}

// Feeds `text` to a reader of requests; its first frame, or its error.
std::pair<std::optional<Message>, std::string> read_request(const std::string& text) {
  FrameReader reader(true, ringtrace::control::kMaxRequestPayload);
  reader.feed(std::span<const char>(text.data(), text.size()));
  std::optional<Message> m = reader.next();
  return {m, reader.error()};
}

TEST(ControlProtocol, AFrameIsItsHeaderThenItsFieldsAsThePageSays) {
  Message m{Type::record, {}};
  m.add("output", "rtrace:/tmp/a.rtrace");
  m.add("buffer", std::uint64_t{1024});
  const std::string expected = header(2, 6 + 6 + 20 + 6 + 6 + 4) + bytes({6, 0, 20, 0, 0, 0}) + "output" +
                               "rtrace:/tmp/a.rtrace" + bytes({6, 0, 4, 0, 0, 0}) + "buffer" + "1024";
  EXPECT_EQ(ringtrace::control::encode(m), expected);
  const auto [read, error] = read_request(expected);
  ASSERT_TRUE(read.has_value()) << error;
  EXPECT_EQ(read->type, Type::record);
  ASSERT_EQ(read->fields.size(), 2u);
  EXPECT_EQ(*read->find("output"), "rtrace:/tmp/a.rtrace");
  EXPECT_EQ(read->number("buffer"), 1024u);
}

TEST(ControlProtocol, FramesArriveInPiecesAndSeveralAtOnce) {
  Message status{Type::status, {}};
  Message sample{Type::sample, {}};
  sample.add("x", std::string("a\0b\tc", 5));  // a value holds any bytes
  const std::string both = ringtrace::control::encode(status) + ringtrace::control::encode(sample);
  FrameReader reader(true, ringtrace::control::kMaxRequestPayload);
  std::vector<Message> got;
  for (const char c : both) {  // one byte at a time
    ASSERT_TRUE(reader.feed(std::span<const char>(&c, 1))) << reader.error();
    while (std::optional<Message> m = reader.next()) got.push_back(*m);
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].type, Type::status);
  EXPECT_EQ(got[1].type, Type::sample);
  EXPECT_EQ(*got[1].find("x"), std::string("a\0b\tc", 5));
  EXPECT_EQ(reader.buffered(), 0u);
}

TEST(ControlProtocol, AHeaderIsRefusedBeforeItsPayloadArrives) {
  // Each of these is refused with its 16 bytes alone: the reader never waits for, nor
  // holds, a payload it would refuse.
  const std::pair<std::string, std::string> cases[] = {
      {header(1, 0, 2), "protocol version 2"},
      {header(1, 0, 1, 1), "reserved word"},
      {header(7, 0), "unknown request type 7"},
      {header(100, 0), "unknown request type 100"},  // a reply is not a request
      {header(1, 65537), "a payload of 65537 bytes"},
      {header(1, 0xFFFFFFFFu), "a payload of 4294967295 bytes"},
  };
  for (const auto& [text, said] : cases) {
    FrameReader reader(true, ringtrace::control::kMaxRequestPayload);
    EXPECT_FALSE(reader.feed(std::span<const char>(text.data(), text.size())));
    EXPECT_NE(reader.error().find(said), std::string::npos) << reader.error();
    EXPECT_FALSE(reader.next().has_value());
  }
  FrameReader reader(true, ringtrace::control::kMaxRequestPayload);
  const std::string wrong = "RTCX";
  EXPECT_FALSE(reader.feed(std::span<const char>(wrong.data(), wrong.size())));
  EXPECT_NE(reader.error().find("not a ringtrace control frame"), std::string::npos);
  FrameReader early(true, ringtrace::control::kMaxRequestPayload);
  EXPECT_FALSE(early.feed(std::span<const char>("X", 1)));  // at its first wrong byte
}

TEST(ControlProtocol, AFieldThatRunsPastItsPayloadIsRefused) {
  const std::pair<std::string, std::string> payloads[] = {
      {bytes({6, 0, 0}), "header runs past"},                                   // 3 bytes of a 6-byte header
      {bytes({3, 0, 1, 0, 0, 0}) + "ab", "runs past the payload"},              // key longer than what is left
      {bytes({1, 0, 9, 0, 0, 0}) + "a" + "12345678", "runs past the payload"},  // value 9, 8 left
      {bytes({1, 0, 0xFF, 0xFF, 0xFF, 0xFF}) + "a", "runs past the payload"},   // value 2^32-1
      {bytes({0, 0, 0, 0, 0, 0}), "not 1 to 64 bytes"},                         // empty key
      {bytes({3, 0, 0, 0, 0, 0}) + "Bad", "not 1 to 64 bytes of [a-z0-9_]"},
      {bytes({65, 0, 0, 0, 0, 0}) + std::string(65, 'a'), "not 1 to 64 bytes"},
  };
  for (const auto& [payload, said] : payloads) {
    const auto [m, error] = read_request(header(1, static_cast<std::uint32_t>(payload.size())) + payload);
    EXPECT_FALSE(m.has_value());
    EXPECT_NE(error.find(said), std::string::npos) << error;
  }
}

TEST(ControlProtocol, AtMost4096FieldsAndTheEncoderKeepsTheLimits) {
  std::string payload;
  for (int i = 0; i < 4097; ++i) payload += bytes({1, 0, 0, 0, 0, 0}) + "a";
  const auto [m, error] = read_request(header(1, static_cast<std::uint32_t>(payload.size())) + payload);
  EXPECT_FALSE(m.has_value());
  EXPECT_NE(error.find("more than 4096 fields"), std::string::npos) << error;
  Message bad{Type::status, {}};
  bad.add("Not-A-Key", "x");
  EXPECT_THROW(ringtrace::control::encode(bad), std::invalid_argument);
  Message huge{Type::ok, {}};
  huge.add("a", std::string(ringtrace::control::kMaxReplyPayload, 'x'));
  EXPECT_THROW(ringtrace::control::encode(huge), std::length_error);
}

TEST(ControlProtocol, NumbersAreDecimalTextOnly) {
  Message m{Type::ok, {}};
  m.add("a", "12");
  m.add("b", "-1");
  m.add("c", "1x");
  m.add("d", "");
  m.add("e", "99999999999999999999");  // past 64 bits
  EXPECT_EQ(m.number("a"), 12u);
  for (const char* k : {"b", "c", "d", "e", "f"}) EXPECT_FALSE(m.number(k).has_value()) << k;
}

TEST(ControlPaths, TheVariablesAndTheDefaultDirectory) {
  using ringtrace::control::settings_from_environment;
  EXPECT_TRUE(settings_from_environment(nullptr, nullptr).enabled);
  EXPECT_TRUE(settings_from_environment("on", nullptr).enabled);
  EXPECT_FALSE(settings_from_environment("off", nullptr).enabled);
  EXPECT_FALSE(settings_from_environment("0", nullptr).enabled);
  EXPECT_EQ(settings_from_environment("/run/x/%p.sock", nullptr).path, "/run/x/%p.sock");
  EXPECT_FALSE(settings_from_environment("relative.sock", nullptr).error.empty());
  EXPECT_TRUE(settings_from_environment(nullptr, "1").allow_root);
  EXPECT_FALSE(settings_from_environment(nullptr, "yes").error.empty());
  EXPECT_EQ(ringtrace::control::with_pid("/a/%p-%p.sock", 42), "/a/42-42.sock");
  // XDG_RUNTIME_DIR only when it is the user's and no one else may write it.
  EXPECT_EQ(ringtrace::control::default_directory(nullptr, 1234), "/tmp/ringtrace-1234");
  EXPECT_EQ(ringtrace::control::default_directory("relative", 0), "/tmp/ringtrace-0");
  EXPECT_EQ(ringtrace::control::default_directory("/tmp", ::geteuid()),
            "/tmp/ringtrace-" + std::to_string(::geteuid()));
}

}  // namespace
