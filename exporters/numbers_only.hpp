// The aggregating exporters without an output, computing only their result: what
// ops_summary(trace) and key_averages(trace) replay a recorded trace into. Those
// functions live with replay() in the streams layer (runtime/streams/recorded_results.cpp):
// an exporter never sees the runtime.
#pragma once

#include <memory>

#include "ringtrace/exporters/ops_summary.hpp"
#include "ringtrace/exporters/table.hpp"

namespace ringtrace::detail {

// An OpsSummaryExporter whose summary() is all it gives.
std::unique_ptr<OpsSummaryExporter> ops_summary_numbers(const OpsSummaryOptions& options);
// A TableExporter whose table() is all it gives.
std::unique_ptr<TableExporter> table_numbers(const TableOptions& options);

}  // namespace ringtrace::detail
