// Loads a Chrome trace into Perfetto's trace_processor (v20.1, the WebAssembly build
// npm ships: tests/clients/trace_processor.mjs) and checks what it imported against
// expected.json (written by chrome_folded_live from the session's own event stream):
// every zone's name, start and duration to the nanosecond, its nesting depth, the
// number of zones per thread, thread and process names, the counter tracks (one name
// each, process-wide or per thread) with every sample, and no import error in `stats`.
// The same checks hold for the Perfetto exporter's protobuf file of the same session
// (format `perfetto`: counter tracks are named by the counter alone, with no arg key).
// No stray slice: the slices are the zones and the instants, nothing else (the session's
// counts are not an event). A Perfetto file has the counts as trace metadata and no
// clock snapshot (Perfetto UI would draw each as a marker), but with delta timestamps
// (format `perfetto-delta`: one snapshot per thread sequence).
//   node check_trace_processor.mjs <trace.json[.gz]|trace.perfetto-trace> <expected.json> [process|per_thread] [json|perfetto|perfetto-delta]
import fs from 'node:fs';
import {loadTrace} from '../../clients/trace_processor.mjs';
import {check, checkMade, equal, equalMultiset, finish, readText} from './common.mjs';

const [tracePath, expectedPath, counterMode = 'process', format = 'json'] = process.argv.slice(2);
const expected = JSON.parse(readText(expectedPath));
const tp = await loadTrace(fs.readFileSync(tracePath));

// Import problems: trace_processor counts them in `stats` (severity error or data_loss).
const problems = tp.query("select name, idx, value from stats where severity in ('error', 'data_loss') and value > 0");
equal(problems, [], 'import errors in stats');

equal(tp.query('select name from process where name is not null').map(r => r.name), [expected.process_name],
      'process name');

let zones = 0;
for (const thread of expected.threads) {
  const rows = tp.query(`select name from thread where tid = ${thread.tid}`);
  equal(rows.map(r => r.name), [thread.name], `name of thread ${thread.tid}`);
  // [name, begin ns, duration ns, depth] of every zone on the thread's track.
  const actual = tp.query(
      `select s.name as name, s.ts as ts, s.dur as dur, s.depth as depth from slice s
       join thread_track tt on s.track_id = tt.id join thread using (utid)
       where thread.tid = ${thread.tid} and coalesce(s.category, 'zone') in ('zone', 'region')`)
      .map(r => JSON.stringify([r.name, r.ts, r.dur, r.depth]));
  const want = thread.zones.map(z => {
    let depth = 0;
    for (let p = z[3]; p >= 0; p = thread.zones[p][3]) depth += 1;
    return JSON.stringify([z[0], z[1], z[2], depth]);
  });
  equal(actual.length, want.length, `thread ${thread.name}: zone count`);
  equalMultiset(actual, want, `thread ${thread.name}: zones [name, start ns, duration ns, depth]`);
  zones += actual.length;
}
equal(zones, expected.zone_count, 'zones in trace_processor');
// Against what the program made, counted by itself: every zone by name, and the instants.
checkMade(tp.query(
    `select s.name as name from slice s join thread_track tt on s.track_id = tt.id
     where coalesce(s.category, 'zone') in ('zone', 'region')`).map(r => r.name), expected, 'trace_processor');
equal(tp.query('select count(*) as n from slice')[0].n, expected.made.zone_count + expected.made.instants,
      'slices: the zones and instants the program made');
equal(tp.query('select count(*) as n from slice')[0].n, expected.zone_count + expected.instant_count,
      'slices: the zones and the instants, nothing else');

if (format !== 'json') {
  const counts = Object.fromEntries(
      tp.query("select name, int_value as v from metadata where name like 'cr-ringtrace_session.%'")
          .map(r => [r.name.slice('cr-ringtrace_session.'.length), r.v]));
  equal([counts.recorded_events, counts.dropped_events, counts.closed_at_stop],
        [expected.recorded, 0, expected.closed_at_stop], 'session counts in the metadata table');
  const snapshots = tp.query('select count(distinct snapshot_id) as n from clock_snapshot')[0].n;
  if (format === 'perfetto-delta') {
    check(snapshots >= expected.threads.length, `${snapshots} clock snapshots for ${expected.threads.length} threads`);
  } else {
    equal(snapshots, 0, 'clock snapshots');
  }
}

// Counters: the track is named by the counter once ("<name> value": trace_processor
// appends the arg key), one per name (process) or per name and thread (per_thread).
const suffix = format === 'json' ? ' value' : '';
const trackOf = ([name, tid]) => counterMode === 'per_thread' ? `${name} (tid ${tid})${suffix}` : `${name}${suffix}`;
const tracks = tp.query('select id, name from counter_track');
const wantTracks = [...new Set(expected.counters.map(trackOf))].sort();
equal(tracks.map(t => t.name).sort(), wantTracks, 'counter track names');
for (const track of tracks) {
  const actual = tp.query(`select ts, value from counter where track_id = ${track.id}`)
      .map(r => JSON.stringify([r.ts, r.value]));
  const want = expected.counters.filter(c => trackOf(c) === track.name).map(c => JSON.stringify([c[2], c[3]]));
  equal(actual.length, want.length, `samples on track "${track.name}"`);
  equalMultiset(actual, want, `samples [ns, value] on track "${track.name}"`);
}
finish(`trace_processor ${tracePath}`);
