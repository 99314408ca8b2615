// The results of the aggregating exporters for a recorded trace (pstats_table,
// ops_summary, key_averages): each replays the trace into its exporter, or the pstats
// aggregator, and returns what it computed. Here beside replay(): an exporter never sees
// the runtime.
#include <memory>

#include "numbers_only.hpp"  // the exporters without an output
#include "ringtrace/exporters/ops_summary.hpp"
#include "ringtrace/exporters/pstats.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/recorded_trace.hpp"

namespace ringtrace {

PstatsTable pstats_table(const RecordedTrace& trace) {
  // replay() drives any exporter; a small adapter keeps the aggregator's table.
  class Collect final : public Exporter {
   public:
    void on_events(std::span<const Event> events, const TraceContext& context) override {
      aggregator.add(events, context);
    }
    void on_finish(const TraceContext& context, const SessionStats&) override {
      aggregator.finish(context.clock().stop_ns);
    }
    PstatsAggregator aggregator;
  } collect;
  replay(trace, collect);
  return collect.aggregator.table();
}

OpsSummary ops_summary(const RecordedTrace& trace, const OpsSummaryOptions& options) {
  const std::unique_ptr<OpsSummaryExporter> exporter = detail::ops_summary_numbers(options);
  replay(trace, *exporter);
  return exporter->summary();
}

KeyAverages key_averages(const RecordedTrace& trace, const TableOptions& options) {
  const std::unique_ptr<TableExporter> exporter = detail::table_numbers(options);
  replay(trace, *exporter);
  return exporter->table();
}

}  // namespace ringtrace
