#include "output_claims.hpp"

#include <algorithm>

#include "ringtrace/files.hpp"  // output_path_key

namespace ringtrace::detail {

OutputClaims::OutputClaims(std::span<const std::shared_ptr<Exporter>> exporters) {
  for (const auto& exporter : exporters) {
    for (const auto& path : exporter->output_paths()) claim_path(path);
  }
}

void OutputClaims::claim_path(const std::filesystem::path& path) { paths_.push_back(path); }

void OutputClaims::make_keys() {
  while (keys_.size() < paths_.size()) keys_.push_back(output_path_key(paths_[keys_.size()]));
}

std::optional<std::filesystem::path> OutputClaims::claim(const Exporter& exporter) {
  const std::vector<std::filesystem::path> outputs = exporter.output_paths();
  if (paths_.empty() && outputs.size() <= 1) {  // nothing to compare with
    paths_ = outputs;
    return std::nullopt;
  }
  make_keys();
  const std::size_t before = keys_.size();
  for (const auto& path : outputs) {
    std::filesystem::path key = output_path_key(path);
    if (std::find(keys_.begin(), keys_.end(), key) != keys_.end()) {
      paths_.resize(before);
      keys_.resize(before);
      return path;
    }
    paths_.push_back(path);
    keys_.push_back(std::move(key));
  }
  return std::nullopt;
}

}  // namespace ringtrace::detail
