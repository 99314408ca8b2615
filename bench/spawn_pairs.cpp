// spawn_pairs: what a program's start and exit cost, as whole processes. Runs each
// command in turn (A B C A B C ...), ROUNDS times, from posix_spawn to the reaped exit,
// standard streams on /dev/null, and prints for each its median wall time, its mean CPU
// time (user + system, the kernel's accounting of the reaped child: wait4) and the
// median of its pairwise differences with the last command (the baseline), so that a
// machine whose speed drifts over the minutes moves both sides of every pair alike.
//   spawn_pairs ROUNDS 'VAR=VALUE|PROGRAM|ARG' ... (VAR=VALUE added to the environment, or
//   '-' for none; ARG one argument, optional)
// bench/control_idle.sh uses it for the control channel's start and exit
// (docs/performance.md, "The control channel").
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern char** environ;

namespace {

struct Command {
  std::string text, variable, program, argument;
  std::vector<double> wall_us, cpu_us;
};

Command parse(const std::string& text) {
  Command c;
  c.text = text;
  const std::size_t first = text.find('|');
  const std::size_t second = first == std::string::npos ? first : text.find('|', first + 1);
  c.variable = text.substr(0, first);
  c.program = text.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1);
  if (second != std::string::npos) c.argument = text.substr(second + 1);
  return c;
}

double now_us() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// One run of `c`: false if it could not be started or did not exit 0.
bool run(Command& c, const posix_spawn_file_actions_t& streams) {
  std::vector<char*> environment;
  for (char** e = environ; *e != nullptr; ++e) environment.push_back(*e);
  if (c.variable != "-") environment.push_back(c.variable.data());
  environment.push_back(nullptr);
  std::vector<char*> argv{c.program.data()};
  if (!c.argument.empty()) argv.push_back(c.argument.data());
  argv.push_back(nullptr);
  const double start = now_us();
  pid_t pid = 0;
  if (posix_spawn(&pid, c.program.c_str(), &streams, nullptr, argv.data(), environment.data()) != 0) return false;
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) != pid) return false;
  c.wall_us.push_back(now_us() - start);
  c.cpu_us.push_back(static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 +
                     static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec));
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: spawn_pairs ROUNDS 'VAR=VALUE|PROGRAM|ARG' ...\n");
    return 2;
  }
  const int rounds = std::atoi(argv[1]);
  std::vector<Command> commands;
  for (int i = 2; i < argc; ++i) commands.push_back(parse(argv[i]));
  posix_spawn_file_actions_t streams;
  posix_spawn_file_actions_init(&streams);
  posix_spawn_file_actions_addopen(&streams, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&streams, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&streams, 2, "/dev/null", O_WRONLY, 0);
  for (int r = 0; r < rounds; ++r) {
    for (Command& c : commands) {
      if (!run(c, streams)) {
        std::fprintf(stderr, "spawn_pairs: %s did not run and exit 0\n", c.text.c_str());
        return 1;
      }
    }
  }
  const Command& baseline = commands.back();
  for (const Command& c : commands) {
    std::vector<double> differences;
    for (std::size_t r = 0; r < c.wall_us.size(); ++r) differences.push_back(c.wall_us[r] - baseline.wall_us[r]);
    double cpu = 0;
    for (const double t : c.cpu_us) cpu += t;
    std::printf("%s: wall median %.1f us, CPU mean %.1f us, wall median difference with the last %+.1f us\n",
                c.text.c_str(), median(c.wall_us), cpu / static_cast<double>(c.cpu_us.size()), median(differences));
  }
  return 0;
}
