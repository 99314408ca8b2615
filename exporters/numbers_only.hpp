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
// The table of the zones `exporter` has seen close so far in its current run, the zones
// still open left open (the live table of `ringtrace top`, runtime/launch/); `restart`
// then sets its counts back to zero, so that the next one holds the zones that close
// after this one. Its drops and zones closed at stop are 0: the caller has the session's
// counts. On the thread that feeds it (the drainer's).
KeyAverages table_so_far(TableExporter& exporter, const TraceContext& context, bool restart);

}  // namespace ringtrace::detail
