// Loads the rich live session's Perfetto file (protobuf) into trace_processor (v20.1,
// WebAssembly) and checks it against expected.json (rich_live, from the session's own
// event stream): every zone (thread, name, start and duration to the ns) with its args
// (integers, doubles, texts with hostile bytes repaired), every flow linking the right
// two slices, every async span (begins on one thread, ends on another) on a track of its
// own with its start and end, every message (an instant on its thread named by its text,
// the text in the annotation "message"), thread and process names, and no import error
// or data loss in `stats`.
//   node check_rich_perfetto.mjs <rich.perfetto-trace> <expected.json>
import fs from 'node:fs';
import {loadTrace} from '../clients/trace_processor.mjs';
import {check, equal, equalMultiset, finish, readText} from '../chrome_folded/clients/common.mjs';

const [tracePath, expectedPath] = process.argv.slice(2);
const expected = JSON.parse(readText(expectedPath));
const key = v => JSON.stringify(v);
const sortedArgs = args => Object.keys(args).sort().map(k => [k, args[k]]);

const tp = await loadTrace(fs.readFileSync(tracePath));
equal(tp.query("select name, idx, value from stats where severity in ('error', 'data_loss') and value > 0"), [],
      'import errors in stats');
equal(tp.query('select name from process where name is not null').map(r => r.name), ['rich live'], 'process name');
const names = tp.query('select tid, name from thread where name is not null').map(r => r.name).sort();
check(names.includes('producer') && names.includes('consumer'), `thread names ${names}`);

const all = tp.query(`select s.id as id, s.name as name, s.ts as ts, s.dur as dur, thread.tid as tid,
                             s.arg_set_id as arg_set_id, coalesce(s.category, '') as category
                      from slice s join thread_track tt on s.track_id = tt.id join thread using (utid)`);
const slices = all.filter(s => s.category !== 'message');
const args = new Map();
for (const r of tp.query('select arg_set_id, key, int_value, string_value, real_value from args')) {
  if (!r.key.startsWith('debug.')) continue;
  if (!args.has(r.arg_set_id)) args.set(r.arg_set_id, {});
  args.get(r.arg_set_id)[r.key.slice(6)] = r.int_value ?? r.real_value ?? r.string_value;
}
const zoneKey = (tid, name, ts, dur, a) => key([tid, name, ts, dur, sortedArgs(a)]);
equalMultiset(slices.map(s => zoneKey(s.tid, s.name, s.ts, s.dur, args.get(s.arg_set_id) ?? {})),
              expected.zones.map(z => zoneKey(z[0], z[1], z[2], z[3], z[4])), 'zones [tid, name, ts, dur, args]');
const byId = new Map(slices.map(s => [s.id, s]));
const flows = tp.query('select slice_out, slice_in from flow').map(f => {
  const a = byId.get(f.slice_out), b = byId.get(f.slice_in);
  return key([[a?.tid, a?.ts], [b?.tid, b?.ts]]);
});
equalMultiset(flows, expected.flows.map(key), 'flows [[tid, ts] out, [tid, ts] in]');
check(flows.length === expected.flows.length && flows.length > 0, `${flows.length} flows`);
// Async spans: slices on tracks that are not thread tracks.
const asyncs = tp.query(`select s.name as name, s.ts as ts, s.dur as dur from slice s
                         where s.track_id not in (select id from thread_track)`)
                   .map(s => key([s.name, s.ts, s.ts + s.dur]));
// The session's counts: trace metadata (no slice, no track).
const session = tp.query(`select name, int_value as v from metadata where name like 'cr-ringtrace_session.%'`);
const counts = Object.fromEntries(session.map(r => [r.name.slice('cr-ringtrace_session.'.length), r.v]));
check(counts.recorded_events > 0 && counts.dropped_events === 0 && counts.late_events === 0,
      `ringtrace_session counts ${JSON.stringify(counts)}`);
equalMultiset(asyncs, expected.asyncs.map(a => key([a[0], a[2], a[3]])), 'async spans [name, begin ns, end ns]');
// Messages: instants (dur 0) on their thread's track, named by the text, which the
// annotation "message" carries whole.
const messages = all.filter(s => s.category === 'message');
equalMultiset(messages.map(m => key([m.tid, m.ts, m.dur, m.name, args.get(m.arg_set_id)?.message])),
              expected.messages.map(m => key([m[0], m[1], 0, m[2], m[2]])), 'messages [tid, ts, 0, name, text]');
check(messages.length === expected.messages.length && messages.length > 0, `${messages.length} messages`);
finish('rich Perfetto trace in trace_processor');
