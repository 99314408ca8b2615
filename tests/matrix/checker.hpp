// The one checker of the matrix: every stream of every configuration goes through it.
// It knows the workload's rules (spec.hpp) and the manifest the workload wrote (what each
// thread produced), never the runtime's code: it rebuilds each thread's expected events
// and compares what arrived with them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "spec.hpp"
#include "stream.hpp"

namespace matrix {

struct SlotManifest {
  int slot = 0;
  Role role = Role::other;
  std::uint64_t tid = 0;
  std::uint64_t iterations = 0;
  std::uint64_t handler_runs = 0;
  std::uint64_t signals_sent = 0;
  bool blocks_signal = false;  // a runtime thread that blocks the workload's signal (none sent)
  std::string comm;
};

struct ThreadRow {  // one row of the session's stats
  std::uint64_t os_tid = 0, recorded = 0, dropped = 0, switches = 0;
  std::string name;
};

struct Manifest {
  bool read = false;
  bool done = false;
  std::string config;
  double scale = 1;
  std::uint64_t frame_marks = 0;
  std::map<int, SlotManifest> slots;
  std::map<std::string, std::uint64_t> stats;  // recorded, dropped, dropped_without_ring, ...
  std::string switches_unavailable;
  std::vector<ThreadRow> threads;
  std::vector<std::string> exporter_errors;
};
Manifest read_manifest(const std::filesystem::path& file);

struct CheckSummary {
  std::uint64_t events = 0;  // delivered, dropped markers and switches aside
  std::uint64_t produced = 0;
  std::uint64_t dropped = 0;  // the dropped markers' counts
  std::uint64_t switches = 0;
  std::uint64_t late = 0;
  std::uint64_t threads = 0;  // logical threads identified
};

// Checks one stream against the manifest; each failure one line, prefixed by the
// stream's source. Every stream is of the session that wrote the manifest, so the
// session's own counts (the manifest's stats) are compared with it too.
std::vector<std::string> check_stream(const Stream& stream, const Manifest& manifest, const MatrixConfig& config,
                                      CheckSummary& summary);

// What the session's stats say about the run, checked once per configuration. Lines
// that start with "note: " say something, fail nothing.
std::vector<std::string> check_manifest(const Manifest& manifest, const MatrixConfig& config, bool tsc_available);

}  // namespace matrix
