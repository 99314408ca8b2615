// The ground truth's reader (truth.hpp), its first half: the counting preload's files,
// and running the programs whose files they are.
#include "truth.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

extern char** environ;

namespace memtruth {

namespace fs = std::filesystem;

Counts& Counts::operator+=(const Counts& o) {
  allocs += o.allocs;
  alloc_bytes += o.alloc_bytes;
  frees += o.frees;
  free_bytes += o.free_bytes;
  foreign_frees += o.foreign_frees;
  foreign_free_bytes += o.foreign_free_bytes;
  unknown_frees += o.unknown_frees;
  reallocs += o.reallocs;
  failed_reallocs += o.failed_reallocs;
  live_blocks += o.live_blocks;
  live_bytes += o.live_bytes;
  return *this;
}

Counts Snapshot::window(const std::string& name) const {
  auto it = windows.find(name);
  return it == windows.end() ? Counts{} : it->second;
}

const Snapshot* CounterFile::find(const std::string& label) const {
  for (auto it = snapshots.rbegin(); it != snapshots.rend(); ++it) {
    if (it->label == label) return &*it;
  }
  return nullptr;
}

std::uint64_t number(const std::string& digits) {
  std::uint64_t v = 0;
  for (char c : digits) {
    if (c >= '0' && c <= '9') v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

namespace {

// "key=value" words into a map; the other words in order.
std::map<std::string, std::uint64_t> fields_of(std::istringstream& words, std::vector<std::string>* plain = nullptr) {
  std::map<std::string, std::uint64_t> out;
  std::string w;
  while (words >> w) {
    const std::size_t eq = w.find('=');
    if (eq == std::string::npos) {
      if (plain) plain->push_back(w);
      continue;
    }
    out[w.substr(0, eq)] = std::strtoull(w.c_str() + eq + 1, nullptr, 10);
  }
  return out;
}

Counts counts_of(const std::map<std::string, std::uint64_t>& f) {
  const auto get = [&](const char* k) {
    auto it = f.find(k);
    return it == f.end() ? std::uint64_t{0} : it->second;
  };
  Counts c;
  c.allocs = get("allocs");
  c.alloc_bytes = get("alloc_bytes");
  c.frees = get("frees");
  c.free_bytes = get("free_bytes");
  c.foreign_frees = get("foreign_frees");
  c.foreign_free_bytes = get("foreign_free_bytes");
  c.unknown_frees = get("unknown_frees");
  c.reallocs = get("reallocs");
  c.failed_reallocs = get("failed_reallocs");
  c.live_blocks = get("live_blocks");
  c.live_bytes = get("live_bytes");
  return c;
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

CounterFile read_counter_file(const fs::path& file) {
  CounterFile f;
  f.path = file;
  std::ifstream in(file);
  if (!in) {
    f.problem = "cannot read " + file.string();
    return f;
  }
  std::string line;
  if (!std::getline(in, line) || line != "memtruth 1") {
    f.problem = file.string() + ": not a counter file (first line '" + line + "')";
    return f;
  }
  Snapshot* s = nullptr;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string what;
    words >> what;
    if (what == "pid") {
      words >> f.pid;
    } else if (what == "ppid") {
      words >> f.ppid;
    } else if (what == "exe") {
      words >> f.exe;
    } else if (what == "snapshot") {
      f.snapshots.emplace_back();
      s = &f.snapshots.back();
      words >> s->label;
    } else if (s == nullptr) {
      f.problem = file.string() + ": '" + line + "' before any snapshot";
    } else if (what == "window") {
      std::string name;
      words >> name;
      s->windows[name] = counts_of(fields_of(words));
    } else if (what == "thread") {
      std::uint64_t tid = 0;
      std::string key, name;
      words >> tid >> key >> name;
      s->threads[{tid, name}] = counts_of(fields_of(words));
    } else if (what == "caller") {
      CallerCounts c;
      std::string key, at, fn;
      words >> key >> c.window >> at >> at >> fn >> c.function;
      const std::size_t plus = at.rfind('+');
      c.module = at.substr(0, plus);
      c.offset = plus == std::string::npos ? "" : at.substr(plus + 1);
      const auto fields = fields_of(words);
      c.allocs = fields.count("allocs") ? fields.at("allocs") : 0;
      c.bytes = fields.count("bytes") ? fields.at("bytes") : 0;
      c.live_blocks = fields.count("live_blocks") ? fields.at("live_blocks") : 0;
      c.live_bytes = fields.count("live_bytes") ? fields.at("live_bytes") : 0;
      s->callers.push_back(c);
    } else if (what == "errors") {
      s->errors = fields_of(words);
    } else if (what == "notes") {
      s->notes = fields_of(words);
    } else if (what == "end") {
      s->ended = true;
    }
  }
  return f;
}

std::vector<CounterFile> read_counter_files(const fs::path& dir, const std::string& prefix) {
  std::vector<CounterFile> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) out.push_back(read_counter_file(entry.path()));
  }
  return out;
}

std::string inexact(const Snapshot& s) {
  std::string out;
  if (!s.ended) out = "snapshot '" + s.label + "' has no end line";
  for (const auto& [key, value] : s.errors) {
    if (value != 0) out += (out.empty() ? "" : ", ") + key + "=" + std::to_string(value);
  }
  if (s.errors.empty()) out += (out.empty() ? "" : ", ") + std::string("no errors line");
  return out;
}

// --- Running programs ---

Run run(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& set,
        const std::vector<std::string>& unset, const fs::path& cwd) {
  Run r;
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool drop = false;
    for (const std::string& u : unset) drop = drop || u == name;
    for (const auto& s : set) drop = drop || s.first == name;
    if (!drop) env.push_back(entry);
  }
  for (const auto& [name, value] : set) env.push_back(name + "=" + value);
  std::vector<char*> envp, args;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> copy = argv;
  for (std::string& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  char out_name[] = "/tmp/memtruth-out-XXXXXX";
  char err_name[] = "/tmp/memtruth-err-XXXXXX";
  const int out_fd = ::mkstemp(out_name);
  const int err_fd = ::mkstemp(err_name);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  posix_spawn_file_actions_adddup2(&actions, null_fd, 0);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned == 0) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  } else {
    r.err = "cannot run " + argv[0] + ": " + std::strerror(spawned);
  }
  ::close(null_fd);
  ::close(out_fd);
  ::close(err_fd);
  r.out = read_text(out_name);
  r.err += read_text(err_name);
  ::unlink(out_name);
  ::unlink(err_name);
  return r;
}

std::string shell_words(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

}  // namespace memtruth
