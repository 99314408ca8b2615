// The exporters' shared text and file layer: escaping, UTF-8 repair, time format, sinks.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/output.hpp"

namespace {

using namespace ringtrace::detail;

std::string json(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}
std::string utf8(std::string_view s) {
  std::string out;
  append_valid_utf8(out, s);
  return out;
}
std::string csv(std::string_view s) {
  std::string out;
  append_csv_field(out, s);
  return out;
}
const std::string kFFFD = "\xEF\xBF\xBD";

TEST(Output, JsonEscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(json("plain"), "\"plain\"");
  EXPECT_EQ(json("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(json("line\nnext\ttab\r\b\f"), "\"line\\nnext\\ttab\\r\\b\\f\"");
  EXPECT_EQ(json(std::string_view("\x01\x1f\0", 3)), "\"\\u0001\\u001f\\u0000\"");
  EXPECT_EQ(json("emoji \xF0\x9F\x94\xA5 ok"), "\"emoji \xF0\x9F\x94\xA5 ok\"");
}

TEST(Output, InvalidUtf8IsReplacedNeverPassedThrough) {
  EXPECT_EQ(utf8("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(utf8("a\xFF" "b"), "a" + kFFFD + "b");
  EXPECT_EQ(utf8("\xC0\xAF"), kFFFD + kFFFD);                 // overlong '/'
  EXPECT_EQ(utf8("\xED\xA0\x80"), kFFFD + kFFFD + kFFFD);     // surrogate U+D800
  EXPECT_EQ(utf8("\xF4\x90\x80\x80"), kFFFD + kFFFD + kFFFD + kFFFD);  // above U+10FFFF
  EXPECT_EQ(utf8("\xE2\x82"), kFFFD);                         // truncated: one subpart
  EXPECT_EQ(utf8("\xE2\x82x"), kFFFD + "x");
  EXPECT_EQ(utf8("\xF0\x9F\x94"), kFFFD);
  EXPECT_EQ(utf8("\x80\x80"), kFFFD + kFFFD);                 // stray continuations
  EXPECT_EQ(json("bad \xFE"), "\"bad " + kFFFD + "\"");
}

TEST(Output, CsvQuotesOnlyWhenNeeded) {
  EXPECT_EQ(csv("matmul"), "matmul");
  EXPECT_EQ(csv("a,b"), "\"a,b\"");
  EXPECT_EQ(csv("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv(" padded"), "\" padded\"");
  EXPECT_EQ(csv("x\xFF"), "x" + kFFFD);
}

TEST(Output, NumbersAndMicroseconds) {
  std::string out;
  append_us(out, 1234567);
  out.push_back(' ');
  append_us(out, 5);
  out.push_back(' ');
  append_us(out, 18446744073709551615ull);
  out.push_back(' ');
  append_int(out, -42);
  out.push_back(' ');
  append_double(out, 0.1);
  out.push_back(' ');
  append_double(out, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(out, "1234.567 0.005 18446744073709551.615 -42 0.1 null");
}

TEST(Output, FileAndGzipSinksWriteWhatWasGiven) {
  const auto dir = std::filesystem::temp_directory_path() / ("ringtrace_output_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string big;
  for (int i = 0; i < 200000; ++i) big += "line " + std::to_string(i) + "\n";
  {
    auto sink = OutputSink::open_file((dir / "plain.txt").string());
    sink->write(big);
    sink->write("end");
    sink->close();
    sink->close();  // idempotent
  }
  std::ifstream plain(dir / "plain.txt", std::ios::binary);
  std::stringstream plain_text;
  plain_text << plain.rdbuf();
  EXPECT_EQ(plain_text.str(), big + "end");
  {
    auto sink = OutputSink::open_file((dir / "packed.txt.gz").string());
    sink->write(big);
    sink->close();
  }
  gzFile gz = gzopen((dir / "packed.txt.gz").c_str(), "rb");
  ASSERT_NE(gz, nullptr);
  std::string unpacked;
  char buffer[65536];
  int n = 0;
  while ((n = gzread(gz, buffer, sizeof(buffer))) > 0) unpacked.append(buffer, static_cast<std::size_t>(n));
  gzclose(gz);
  EXPECT_EQ(unpacked, big);
  EXPECT_LT(std::filesystem::file_size(dir / "packed.txt.gz"), big.size() / 3);
  std::filesystem::remove_all(dir);
}

TEST(Output, UnwritablePathsFailWithAClearMessage) {
  try {
    OutputSink::open_file("/nonexistent-dir/trace.json");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("/nonexistent-dir/trace.json"), std::string::npos) << what;
    EXPECT_NE(what.find("No such file or directory"), std::string::npos) << what;
  }
  EXPECT_THROW(OutputSink::open_file(""), std::runtime_error);
  std::ostringstream stream;
  auto sink = OutputSink::to_stream(stream);
  sink->write("abc");
  sink->close();
  EXPECT_EQ(stream.str(), "abc");
}

}  // namespace
