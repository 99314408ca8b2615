// The files a set of exporters writes, compared as Session::add_exporter compares them
// (ringtrace::output_path_key: `dir/../dir/x` is `dir/x`): two exporters writing one file
// would interleave into a broken one, so the second is refused. Used for the session's
// exporters and for the exporters of each window or snapshot, which must not write a
// file the session's exporters write.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "ringtrace/exporter.hpp"

namespace ringtrace::detail {

class OutputClaims {
 public:
  OutputClaims() = default;
  // The files `exporters` write, claimed (a clash among them is not checked).
  explicit OutputClaims(std::span<const std::shared_ptr<Exporter>> exporters);

  // Claims the files `exporter` writes; the first one already claimed (by another
  // exporter or by this one twice, as a pstats report on the profile's own path) is
  // returned instead, and then nothing is claimed.
  std::optional<std::filesystem::path> claim(const Exporter& exporter);

  // Claims one file (a clash is not checked).
  void claim_path(const std::filesystem::path& path);

  // The claimed files, as given (not as compared).
  const std::vector<std::filesystem::path>& paths() const { return paths_; }

 private:
  // The keys of paths_ made so far: output_path_key reads the file system (a stat and a
  // readlink per component), so a key is made only when a claim has one to compare with
  // (a session of one exporter makes none: issue 44).
  void make_keys();
  std::vector<std::filesystem::path> paths_;
  std::vector<std::filesystem::path> keys_;  // output_path_key of paths_[0, keys_.size())
};

}  // namespace ringtrace::detail
