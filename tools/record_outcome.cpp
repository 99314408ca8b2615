// `ringtrace record`: what became of each output, from the files the run left and what
// its processes reported (runtime/launch/record_report.hpp). A cause is named when it is
// known (a process's own error, a refusal, a static program under --memory); "unknown"
// when it is not, never a guess.
#include <elf.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <string_view>

#include "commands.hpp"
#include "record_run.hpp"
#include "ringtrace/files.hpp"

namespace ringtrace::tool {

namespace {

using detail::RecordReport;

std::string exit_text(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) +
           ")";
  return "status " + std::to_string(status);
}

void add_to(std::string& list, std::string_view separator, std::string_view item) {
  if (!list.empty()) list.append(separator);
  list.append(item);
}

std::string named(const RecordReport& r) { return r.program + " (pid " + std::to_string(r.pid) + ")"; }

// The file PROGRAM names, as execvp finds it ("" when it finds none).
std::string program_file(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  const std::string dirs = path != nullptr ? path : "/bin:/usr/bin";
  for (std::size_t from = 0; from <= dirs.size();) {
    std::size_t to = dirs.find(':', from);
    if (to == std::string::npos) to = dirs.size();
    const std::string candidate = (to == from ? std::string(".") : dirs.substr(from, to - from)) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    from = to + 1;
  }
  return {};
}

// What the program's file says about why none of its processes reported: read as
// untrusted (every offset checked against the bytes read).
std::string why_nothing_reported(const RecordPlan& plan) {
  const std::string file = program_file(plan.program[0]);
  std::ifstream in(file, std::ios::binary);
  std::string head(1 << 20, '\0');  // the headers and, in a small program, its strings
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  if (head.starts_with("#!")) {
    return "it is a script, and none of the programs it ran recorded (none links ringtrace" +
           std::string(plan.memory ? ", and none took the preload" : "; --memory records any dynamically linked one") +
           ")";
  }
  if (head.size() < sizeof(Elf64_Ehdr) || std::memcmp(head.data(), ELFMAG, SELFMAG) != 0)
    return "unknown why (no process reported a session)";
  Elf64_Ehdr eh;
  std::memcpy(&eh, head.data(), sizeof eh);
  bool dynamic = false;
  if (eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr)) {
    for (std::size_t i = 0; i < eh.e_phnum; ++i) {
      const std::size_t at = eh.e_phoff + i * sizeof(Elf64_Phdr);
      if (eh.e_phoff > head.size() || at + sizeof(Elf64_Phdr) > head.size()) break;
      Elf64_Phdr ph;
      std::memcpy(&ph, head.data() + at, sizeof ph);
      dynamic = dynamic || ph.p_type == PT_INTERP;
    }
  }
  struct stat st {};
  const bool set_id = ::stat(file.c_str(), &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)) != 0;
  if (plan.memory && !dynamic) {
    return "it is statically linked, and --memory's preload (LD_PRELOAD) cannot enter a static program: link it "
           "with ringtrace::memory (docs/memory.md) to record its allocations";
  }
  if (plan.memory && set_id) {
    return "it is set-user-ID or set-group-ID, and the loader ignores --memory's preload (LD_PRELOAD) for such a "
           "program";
  }
  std::string whole = head;  // the rest of the file, for the runtime's names
  whole.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  const bool links =
      whole.find("_ZN9ringtrace") != std::string::npos || whole.find("libringtrace") != std::string::npos;
  if (!links && !plan.memory) {
    return "it does not link ringtrace (--memory records the allocations of any dynamically linked program)";
  }
  return "unknown why: no process reported a session (was RINGTRACE_OUTPUT taken out of its environment?)";
}

// The reports, by what they say happened to each process's session.
struct Sessions {
  std::vector<const RecordReport*> refused, unfinished, failed, execs;
  // Each file the reports say was written, and who wrote it, in the order they finished.
  std::map<std::string, std::vector<const RecordReport*>> writers;
};

Sessions sort_reports(const std::vector<RecordReport>& reports) {
  Sessions s;
  std::map<std::uint32_t, const RecordReport*> open;  // pid -> its session's start
  for (const RecordReport& r : reports) {
    switch (r.kind) {
      case RecordReport::Kind::start:
        open[r.pid] = &r;
        break;
      case RecordReport::Kind::refused:
        s.refused.push_back(&r);
        break;
      case RecordReport::Kind::end:
      case RecordReport::Kind::exec:
        open.erase(r.pid);
        if (!r.errors.empty()) s.failed.push_back(&r);
        if (r.kind == RecordReport::Kind::exec) s.execs.push_back(&r);
        for (const std::string& o : r.outputs) s.writers[o].push_back(&r);
        break;
    }
  }
  for (const auto& [pid, start] : open) s.unfinished.push_back(start);
  return s;
}

// A file several sessions wrote holds the last one's: said, with how to keep each.
void say_replaced(const Sessions& s, const RecordPlan& plan) {
  const bool per_process = std::any_of(plan.outputs.begin(), plan.outputs.end(),
                                       [](const RecordOutput& o) { return o.path.find("%p") != std::string::npos; });
  for (const auto& [file, writers] : s.writers) {
    if (writers.size() < 2) continue;
    const RecordReport& last = *writers.back();
    const bool one_pid =
        std::all_of(writers.begin(), writers.end(), [&](const RecordReport* w) { return w->pid == last.pid; });
    if (one_pid) {
      error("record", file + " holds the recording of " + last.program + ": " + writers.front()->program + " (pid " +
                          std::to_string(last.pid) + ") became it with exec, and its own recording up to then was " +
                          "replaced");
    } else {
      error("record", file + " was written by " + std::to_string(writers.size()) +
                          " processes, each replacing the one before: it holds the recording of " + named(last) +
                          ", the last to finish" +
                          (per_process ? "" : "; put %p in the file name for one file per process"));
    }
  }
}

}  // namespace

int say_outcome(const RecordPlan& plan, const std::vector<FileTimes>& before, const RunResult& run,
                const std::vector<RecordReport>& reports) {
  const Sessions sessions = sort_reports(reports);
  std::string written, partial, missing_list;
  std::vector<std::string> missing;
  bool all_whole = true, partial_trace = false;
  for (std::size_t k = 0; k < plan.outputs.size(); ++k) {
    bool whole = false, any = false;
    for (const auto& [path, when] : files_of(plan.outputs[k].path)) {
      const auto earlier = before[k].find(path);
      if (earlier != before[k].end() && earlier->second == when) continue;
      std::error_code ec;
      const std::uintmax_t bytes = std::filesystem::file_size(path, ec);
      const std::string described = path.string() + " (" + (ec ? std::string("size unknown") : byte_size(bytes)) + ")";
      const bool temporary = !ringtrace::output_of_partial(path).empty();
      add_to(temporary ? partial : written, ", ", described);
      whole = whole || !temporary;
      partial_trace = partial_trace || (temporary && std::string_view(plan.outputs[k].format) == "rtrace");
      any = true;
    }
    if (!any) {
      add_to(missing_list, ", ", plan.outputs[k].path);
      missing.push_back(plan.outputs[k].path);
    }
    all_whole = all_whole && whole;
  }
  const int status = run.status;
  const std::string ran = plan.program[0] + " (" + exit_text(status) + ")";
  if (!written.empty()) {
    std::fprintf(stderr, "ringtrace record: wrote %s in %s from %s\n", written.c_str(), elapsed(run.took).c_str(),
                 ran.c_str());
  }
  say_replaced(sessions, plan);
  for (const RecordReport* r : sessions.failed) {
    for (const std::string& e : r->errors) error("record", named(*r) + ": " + e);
    all_whole = false;
  }
  for (const RecordReport& r : reports) {  // drops, said where they happened (--policy drop: by request)
    if (r.kind != RecordReport::Kind::start && r.dropped != 0 && r.errors.empty()) {
      error("record", named(r) + ": " + thousands(r.dropped) + " of " + thousands(r.recorded + r.dropped) +
                          " events dropped (ringtrace info lists them by thread)");
    }
  }
  for (const RecordReport* r : sessions.refused) {
    for (const std::string& e : r->errors) error("record", named(*r) + " was not recorded: " + e);
    all_whole = false;
  }
  if (!partial.empty()) {
    // The binary file's temporary is a recording cut short, which the tool reads
    // (docs/file-format.md); the other formats' hold what their exporters had written.
    const std::string readable =
        partial_trace ? "; ringtrace convert, report and info read a binary file's temporary as a file cut short" : "";
    if (!reports.empty() && sessions.unfinished.empty()) {  // every session ended: its error is said above
      error("record", ran + ": what was written before the error above is in " + partial + readable);
    } else {
      const std::string who = sessions.unfinished.size() == 1 ? named(*sessions.unfinished.front()) : "a process";
      error("record", ran + ": " + who + " killed or crashed before its end left what it recorded up to its last " +
                          "drainer pass in " + partial + readable);
    }
  }
  if (!missing.empty()) {
    // Why: a process's refusal (said above), one that ended before its first write, or,
    // when no process reported at all, what the program's file tells.
    std::string why;
    if (!sessions.refused.empty()) {
      why = "its session was refused (above)";
    } else if (!sessions.unfinished.empty()) {
      why = named(*sessions.unfinished.front()) +
            " ended before its session's first write (_exit, or killed or crashed within milliseconds of its start)";
    } else if (reports.empty()) {
      why = why_nothing_reported(plan);
    } else {
      why = "no process that recorded wrote it (unknown why)";
    }
    error("record", ran + " did not write " + missing_list + ": " + why);
  }
  const int program_status =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  // The program's failure first; a program that succeeded without being recorded whole
  // is the tool's failure.
  return program_status != 0 ? program_status : all_whole ? 0 : 1;
}

}  // namespace ringtrace::tool
