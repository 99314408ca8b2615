// ringtrace: converts, reports on and inspects binary trace files (.rtrace).
//   ringtrace convert FILE --chrome OUT.json --pstats OUT.prof --folded OUT.folded ...
//   ringtrace report FILE
//   ringtrace info FILE
//   ringtrace merge FILE... -o OUT.rtrace
#include <unistd.h>  // isatty

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "commands.hpp"

namespace {

constexpr const char* kUsage =
    "usage: ringtrace <command> [arguments]\n"
    "\n"
    "Reads binary trace files (.rtrace) recorded with ringtrace::binary_trace_exporter.\n"
    "\n"
    "commands:\n"
    "  convert FILE [--chrome OUT] [--perfetto OUT] [--pstats OUT] [--folded OUT] [--summary OUT] [--table OUT]\n"
    "               any subset; '-' writes to standard output\n"
    "  report FILE  the key-averages table and the captured-ops summary\n"
    "  info FILE    process, host, duration, threads, call sites, drops, whether the file is complete\n"
    "  merge FILE... -o OUT\n"
    "               several processes' files into one, on one timeline\n"
    "\n"
    "'ringtrace <command> --help' describes a command.\n";

}  // namespace

namespace ringtrace::tool {

int error(std::string_view command, std::string_view message, int status) {
  std::fprintf(stderr, "ringtrace %.*s: %.*s\n", static_cast<int>(command.size()), command.data(),
               static_cast<int>(message.size()), message.data());
  return status;
}

bool wants_help(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

int usage(const std::vector<std::string>& args, const char* text) {
  const bool help = wants_help(args);
  std::fputs(text, help ? stdout : stderr);
  return help ? 0 : 2;
}

std::string duration(std::uint64_t ns) {
  char text[64];
  if (ns >= 1000000000u) {
    std::snprintf(text, sizeof text, "%.3f s", static_cast<double>(ns) / 1e9);
  } else if (ns >= 1000000u) {
    std::snprintf(text, sizeof text, "%.3f ms", static_cast<double>(ns) / 1e6);
  } else if (ns >= 1000u) {
    std::snprintf(text, sizeof text, "%.3f us", static_cast<double>(ns) / 1e3);
  } else {
    std::snprintf(text, sizeof text, "%llu ns", static_cast<unsigned long long>(ns));
  }
  return text;
}

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)), terminal_(::isatty(2) == 1), start_(std::chrono::steady_clock::now()) {}

void ProgressBar::operator()(std::uint64_t done, std::uint64_t total) {
  if (!terminal_) return;
  if (done >= total) {
    erase();
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (now - start_ < std::chrono::seconds(1) || (shown_ && now - drawn_ < std::chrono::milliseconds(100))) return;
  drawn_ = now;
  constexpr int kWidth = 30;
  const double part = total == 0 ? 0 : static_cast<double>(done) / static_cast<double>(total);
  const int filled = static_cast<int>(part * kWidth);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(kWidth - filled), '.');
  std::fprintf(stderr, "\r%s [%s] %3d%%  %.1f / %.1f MB", label_.c_str(), bar.c_str(), static_cast<int>(part * 100),
               static_cast<double>(done) / 1e6, static_cast<double>(total) / 1e6);
  std::fflush(stderr);
  shown_ = true;
}

void ProgressBar::erase() {
  if (!shown_) return;
  std::fprintf(stderr, "\r%*s\r", static_cast<int>(label_.size()) + 64, "");
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace ringtrace::tool

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (command == "convert") return ringtrace::tool::convert(args);
    if (command == "report") return ringtrace::tool::report(args);
    if (command == "info") return ringtrace::tool::info(args);
    if (command == "merge") return ringtrace::tool::merge(args);
  } catch (const std::exception& e) {
    return ringtrace::tool::error(command, e.what());
  }
  std::fprintf(stderr, "ringtrace: unknown command '%s'\n%s", command.c_str(), kUsage);
  return 2;
}
