// The exporters' shared text and file layer: escaping, UTF-8 repair, time format, sinks.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>

#include "file_paths.hpp"
#include "output.hpp"
#include "owned_file.hpp"
#include "ringtrace/files.hpp"

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
  EXPECT_EQ(utf8("a\xFF"
                 "b"),
            "a" + kFFFD + "b");
  EXPECT_EQ(utf8("\xC0\xAF"), kFFFD + kFFFD);                          // overlong '/'
  EXPECT_EQ(utf8("\xED\xA0\x80"), kFFFD + kFFFD + kFFFD);              // surrogate U+D800
  EXPECT_EQ(utf8("\xF4\x90\x80\x80"), kFFFD + kFFFD + kFFFD + kFFFD);  // above U+10FFFF
  EXPECT_EQ(utf8("\xE2\x82"), kFFFD);                                  // truncated: one subpart
  EXPECT_EQ(utf8("\xE2\x82x"), kFFFD + "x");
  EXPECT_EQ(utf8("\xF0\x9F\x94"), kFFFD);
  EXPECT_EQ(utf8("\x80\x80"), kFFFD + kFFFD);  // stray continuations
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

// ---------------------------------------------------------------------------------------
// Files: temporaries, links, FIFOs and devices, checks that create instead of asking.

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ringtrace_output_" + std::to_string(getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string gunzip(const fs::path& path) {
  gzFile gz = gzopen(path.c_str(), "rb");
  if (gz == nullptr) return "(cannot open)";
  std::string out;
  char buffer[4096];
  int n = 0;
  while ((n = gzread(gz, buffer, sizeof(buffer))) > 0) out.append(buffer, static_cast<std::size_t>(n));
  gzclose(gz);
  return out;
}

// Runs `body` in a child that SIGALRM ends after 10 s: a call that blocks (opening a FIFO
// nobody reads) fails the test instead of hanging it. The child's status: 0 when `body`
// returned true.
void within_seconds(const std::function<bool()>& body, const std::string& what) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(10);
    _exit(body() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_FALSE(WIFSIGNALED(status)) << what << ": blocked (killed by signal " << WTERMSIG(status) << ")";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << what << ": see the child's output above";
}

// Whether `call` throws std::runtime_error whose text holds every one of `words`.
bool throws_naming(const std::function<void()>& call, std::initializer_list<std::string> words) {
  try {
    call();
  } catch (const std::runtime_error& e) {
    for (const std::string& w : words) {
      if (std::string(e.what()).find(w) == std::string::npos) {
        std::fprintf(stderr, "message lacks '%s': %s\n", w.c_str(), e.what());
        return false;
      }
    }
    return true;
  }
  std::fprintf(stderr, "no exception\n");
  return false;
}

mode_t current_umask() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return mask;
}

TEST(OutputFiles, ARunWritesATemporaryNamedByTheRuleAndRenamesItAtClose) {
  const fs::path dir = fresh_dir("rule");
  const fs::path out = dir / "trace.json";
  std::ofstream(out) << "previous run";
  auto sink = OutputSink::open_file(out.string());
  EXPECT_TRUE(ringtrace::partial_files(out).empty()) << "the factory's check leaves nothing behind";
  sink->write("this run");
  sink->flush();
  const std::vector<fs::path> partials = ringtrace::partial_files(out);
  ASSERT_EQ(partials.size(), 1u);
  const std::string name = partials[0].filename().string();
  ASSERT_EQ(name.size(), std::string("trace.json.partial.").size() + 8) << name;
  EXPECT_EQ(name.rfind("trace.json.partial.", 0), 0u) << name;
  EXPECT_EQ(ringtrace::output_of_partial(partials[0]), out);
  EXPECT_EQ(read_file(partials[0]), "this run");
  EXPECT_EQ(read_file(out), "previous run");
  struct stat st {};
  ASSERT_EQ(::stat(partials[0].c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u & ~current_umask()) << "the mode an exporter's file always had";
  sink->close();
  EXPECT_EQ(read_file(out), "this run");
  EXPECT_TRUE(ringtrace::partial_files(out).empty());

  // A sink that never closes (the run was killed, the exporter disabled) leaves `out`
  // alone and its output in the temporary.
  auto unfinished = OutputSink::open_file(out.string());
  unfinished->write("cut short");
  unfinished.reset();
  EXPECT_EQ(read_file(out), "this run");
  ASSERT_EQ(ringtrace::partial_files(out).size(), 1u);
  EXPECT_EQ(read_file(ringtrace::partial_files(out)[0]), "cut short");
}

TEST(OutputFiles, TheRuleIsRecognisedExactly) {
  EXPECT_EQ(ringtrace::output_of_partial("d/run.rtrace.partial.Ab3dE6fG"), fs::path("d/run.rtrace"));
  EXPECT_EQ(ringtrace::output_of_partial("run.rtrace.partial.00000000"), fs::path("run.rtrace"));
  EXPECT_EQ(ringtrace::output_of_partial("a.partial.b.partial.zzzzzzzz"), fs::path("a.partial.b"));
  for (const char* not_one : {"run.rtrace", "run.rtrace.partial", "run.rtrace.partial.Ab3dE6f",
                              "run.rtrace.partial.Ab3dE6fGh", "run.rtrace.partial.Ab3dE6f-", ".partial.Ab3dE6fG"}) {
    EXPECT_TRUE(ringtrace::output_of_partial(not_one).empty()) << not_one;
  }
  const fs::path dir = fresh_dir("rule_glob");
  for (const char* name : {"x.json.partial", "x.json.partial.short", "x.json.partial.Ab3dE6fG",
                           "y.json.partial.Ab3dE6fG", "x.json.partial.Ab3dE6f_"}) {
    std::ofstream(dir / name) << name;
  }
  const std::vector<fs::path> found = ringtrace::partial_files(dir / "x.json");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0], dir / "x.json.partial.Ab3dE6fG");
}

// A link planted where the output goes, or at the name the temporary used to have: the
// link's target is never written; the output replaces the link itself.
TEST(OutputFiles, LinksPlantedAtTheOutputOrTheOldTemporaryNameLeaveTheirTargetsAlone) {
  const fs::path dir = fresh_dir("links");
  const fs::path victim = dir / "victim.txt", other = dir / "other.txt";
  for (const std::string name : {"trace.json", "trace.json.gz"}) {
    std::ofstream(victim) << "precious";
    std::ofstream(other) << "also precious";
    const fs::path out = dir / name;
    fs::remove(out);
    fs::create_symlink(victim, out);
    fs::remove(dir / (name + ".partial"));
    fs::create_symlink(other, dir / (name + ".partial"));
    auto sink = OutputSink::open_file(out.string());
    sink->write("output");
    sink->close();
    EXPECT_EQ(read_file(victim), "precious") << name;
    EXPECT_EQ(read_file(other), "also precious") << name;
    EXPECT_FALSE(fs::is_symlink(out)) << name << ": the link itself is replaced";
    EXPECT_EQ(name.ends_with(".gz") ? gunzip(out) : read_file(out), "output") << name;
    EXPECT_TRUE(fs::is_symlink(dir / (name + ".partial"))) << name << ": a name ringtrace no longer uses";
  }
  // A dangling link at the output: replaced too, nothing created where it points.
  const fs::path dangling = dir / "dangling.json";
  fs::create_symlink(dir / "nowhere" / "x.json", dangling);
  auto sink = OutputSink::open_file(dangling.string());
  sink->write("output");
  sink->close();
  EXPECT_EQ(read_file(dangling), "output");
  EXPECT_FALSE(fs::exists(dir / "nowhere"));
}

// A FIFO nobody reads, a link to one, a device, a directory: refused at once, naming the
// path; nothing opened, so nothing blocks.
TEST(OutputFiles, NonRegularOutputsAreRefusedAtOnceNamingThem) {
  const fs::path dir = fresh_dir("fifo_out");
  const fs::path fifo = dir / "out.fifo", link = dir / "link.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  fs::create_symlink(fifo, link);
  const std::vector<std::pair<std::string, std::string>> cases = {{fifo.string(), "FIFO"},
                                                                  {link.string(), "FIFO"},
                                                                  {"/dev/null", "device"},
                                                                  {dir.string(), "Is a directory"},
                                                                  {(dir / "x.gz").string(), ""}};
  fs::create_directory(dir / "x.gz");
  for (const auto& c : cases) {
    const std::string& path = c.first;  // not a structured binding: clang 14 cannot capture one
    const std::string& kind = c.second;
    within_seconds([&] { return throws_naming([&] { OutputSink::open_file(path); }, {path, kind}); }, path);
    within_seconds([&] { return throws_naming([&] { ReportOutput report(path); }, {path, kind}); }, path);
  }
  EXPECT_TRUE(fs::is_fifo(fifo));
}

// The factory's check creates the temporary (and removes it) instead of asking access(),
// which answers yes to root for a directory where nothing can be created (/sys, /proc).
// Not root: a read-only directory.
TEST(OutputFiles, TheWritabilityCheckCreatesTheFileInsteadOfAskingAccess) {
  if (::geteuid() == 0) {
    for (const char* path : {"/sys/kernel/notes", "/proc/ringtrace-check.json"}) {
      const std::string parent = fs::path(path).parent_path().string();
      if (!fs::exists(parent)) continue;
      EXPECT_EQ(::access(parent.c_str(), W_OK | X_OK), 0) << "access() lets root through " << parent;
      EXPECT_TRUE(throws_naming([&] { OutputSink::open_file(path); }, {path})) << path;
    }
  } else {
    const fs::path dir = fresh_dir("read_only");
    fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
    const std::string path = (dir / "trace.json").string();
    EXPECT_TRUE(throws_naming([&] { OutputSink::open_file(path); }, {path, "Permission denied"}));
    fs::permissions(dir, fs::perms::owner_all);
  }
}

// Two sinks on one path (two processes, or a window and the session): each writes its
// own temporary, and the one that closes last owns the path, whole.
TEST(OutputFiles, TwoWritersOfOnePathEachKeepTheirFileWhole) {
  const fs::path dir = fresh_dir("two_writers");
  for (const std::string name : {"out.txt", "out.txt.gz"}) {
    const fs::path out = dir / name;
    auto a = OutputSink::open_file(out.string()), b = OutputSink::open_file(out.string());
    std::string a_text, b_text;
    for (int i = 0; i < 50000; ++i) {
      const std::string line_a = "a " + std::to_string(i) + "\n", line_b = "b " + std::to_string(i) + "\n";
      a->write(line_a);
      b->write(line_b);
      a_text += line_a;
      b_text += line_b;
      if (i % 1000 == 0) {
        a->flush();
        b->flush();
      }
    }
    EXPECT_EQ(ringtrace::partial_files(out).size(), 2u) << name;
    b->close();
    EXPECT_EQ(name.ends_with(".gz") ? gunzip(out) : read_file(out), b_text) << name;
    a->close();
    EXPECT_EQ(name.ends_with(".gz") ? gunzip(out) : read_file(out), a_text) << name;
    EXPECT_TRUE(ringtrace::partial_files(out).empty()) << name;
  }
}

// Inputs: only regular files (or links to them) are opened; a FIFO is refused without
// waiting for a writer, and so are devices and directories.
TEST(InputFiles, OnlyRegularFilesAreOpenedAndAFifoNeverBlocks) {
  const fs::path dir = fresh_dir("inputs");
  const fs::path file = dir / "run.rtrace", link = dir / "link.rtrace", fifo = dir / "in.fifo";
  std::ofstream(file) << "bytes";
  fs::create_symlink(file, link);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  for (const fs::path& good : {file, link}) {
    const int fd = open_input(good.string());
    ASSERT_GE(fd, 0);
    char text[8] = {};
    EXPECT_EQ(::read(fd, text, sizeof text), 5);
    EXPECT_EQ(std::string(text), "bytes");
    EXPECT_EQ(::fcntl(fd, F_GETFL) & O_NONBLOCK, 0) << "O_NONBLOCK cleared for the reader";
    ::close(fd);
    EXPECT_NO_THROW(ringtrace::check_input_file(good));
  }
  const std::vector<std::pair<std::string, std::string>> bad = {{fifo.string(), "FIFO"},
                                                                {"/dev/null", "device"},
                                                                {dir.string(), "Is a directory"},
                                                                {(dir / "missing").string(), "No such file"}};
  for (const auto& c : bad) {
    const std::string& path = c.first;
    const std::string& why = c.second;
    within_seconds([&] { return throws_naming([&] { open_input(path); }, {path, why}); }, path);
    within_seconds([&] { return throws_naming([&] { ringtrace::check_input_file(path); }, {path, why}); }, path);
  }
}

// A file the live runtime keeps under a fixed name (the ring file, run.rtrace.rings):
// created without opening what the name held (a planted link's target is untouched),
// never shared with another process recording to the same path, removed only while the
// name is still its own.
TEST(OutputFiles, AnOwnedFileReplacesALinkAndIsRemovedOnlyWhileItIsOurs) {
  const fs::path dir = fresh_dir("owned");
  const fs::path path = dir / "run.rtrace.rings", victim = dir / "victim";
  std::ofstream(victim) << "precious";
  fs::create_symlink(victim, path);
  const int mine = create_owned_file(path, O_RDWR);
  ASSERT_GE(mine, 0);
  ASSERT_EQ(::write(mine, "mine", 4), 4);
  EXPECT_EQ(read_file(victim), "precious");
  EXPECT_FALSE(fs::is_symlink(path));
  EXPECT_EQ(read_file(path), "mine");
  struct stat st {};
  ASSERT_EQ(::fstat(mine, &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u & ~current_umask());
  // A second recording to the same path: its own file; the first keeps its own.
  const int theirs = create_owned_file(path, O_RDWR);
  ASSERT_EQ(::write(theirs, "theirs", 6), 6);
  EXPECT_FALSE(remove_owned_file(path, mine)) << "removed another process's file";
  EXPECT_EQ(read_file(path), "theirs");
  EXPECT_TRUE(remove_owned_file(path, theirs));
  EXPECT_FALSE(fs::exists(path));
  ::close(mine);
  ::close(theirs);
  EXPECT_TRUE(ringtrace::partial_files(path).empty());
  EXPECT_TRUE(throws_naming([&] { create_owned_file(dir / "missing" / "x.rings", O_RDWR); },
                            {(dir / "missing" / "x.rings").string()}));
}

// Removes what the tests above made.
struct RemoveScratch {
  ~RemoveScratch() {
    std::error_code ignored;
    fs::remove_all(fs::temp_directory_path() / ("ringtrace_output_" + std::to_string(getpid())), ignored);
  }
} g_remove_scratch;

}  // namespace
