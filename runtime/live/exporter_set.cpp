#include "exporter_set.hpp"

namespace ringtrace::detail {

ExporterSet::ExporterSet(std::vector<std::shared_ptr<Exporter>> exporters)
    : exporters_(std::move(exporters)), failed_(exporters_.size(), false) {
  bool all_raw = !exporters_.empty();
  for (std::size_t i = 0; i < exporters_.size(); ++i) {
    auto* raw = dynamic_cast<RawSink*>(exporters_[i].get());
    if (raw != nullptr) raw_sinks_.emplace_back(i, raw);
    all_raw = all_raw && raw != nullptr && !raw->wants_events();
  }
  raw_only_ = all_raw;
}

void ExporterSet::fail(std::size_t index, const char* callback, const char* what) {
  failed_[index] = true;
  std::string line = "exporter ";
  line += std::to_string(index);
  line += ' ';
  line += callback;
  line += ": ";
  line += what;
  errors_.push_back(std::move(line));
}

}  // namespace ringtrace::detail
