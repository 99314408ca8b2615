// Loads the rich live session's Chrome trace into Perfetto's trace_processor (v20.1,
// WebAssembly) and into Catapult, and checks them against expected.json (written by
// rich_live from the session's own event stream):
//   trace_processor: every zone (name, start, duration to the ns, thread) with its args
//     (integers, doubles, texts with hostile bytes), every flow linking the right two
//     slices, every message (an instant on its thread, named by its text, the text in the
//     arg "message"), and no import error or data loss in `stats`;
//   Catapult: the same flows between the same slices, every async span (begins on one
//     thread, ends on another) with its start and end, the zones' args, and the messages.
//   node check_rich_chrome.mjs <rich.json> <expected.json>
import fs from 'node:fs';
import {loadTrace} from '../clients/trace_processor.mjs';
import {importWithCatapult} from '../chrome_folded/clients/catapult_loader.mjs';
import {check, equal, equalMultiset, finish, readText} from '../chrome_folded/clients/common.mjs';

const [tracePath, expectedPath] = process.argv.slice(2);
const expected = JSON.parse(readText(expectedPath));
const text = readText(tracePath);
const key = v => JSON.stringify(v);
const sortedArgs = args => Object.keys(args).sort().map(k => [k, args[k]]);

// --- trace_processor -----------------------------------------------------------------
{
  const tp = await loadTrace(fs.readFileSync(tracePath));
  equal(tp.query("select name, idx, value from stats where severity in ('error', 'data_loss') and value > 0"), [],
        'trace_processor: import errors in stats');
  const all = tp.query(`select s.id as id, s.name as name, s.ts as ts, s.dur as dur, thread.tid as tid,
                               s.arg_set_id as arg_set_id, coalesce(s.category, '') as category
                        from slice s join thread_track tt on s.track_id = tt.id join thread using (utid)`);
  const slices = all.filter(s => s.category !== 'message');
  const args = new Map();
  for (const r of tp.query('select arg_set_id, key, int_value, string_value, real_value from args')) {
    if (!r.key.startsWith('args.')) continue;
    if (!args.has(r.arg_set_id)) args.set(r.arg_set_id, {});
    args.get(r.arg_set_id)[r.key.slice(5)] = r.int_value ?? r.real_value ?? r.string_value;
  }
  const zoneKey = (tid, name, ts, dur, a) => key([tid, name, ts, dur, sortedArgs(a)]);
  equalMultiset(slices.map(s => zoneKey(s.tid, s.name, s.ts, s.dur, args.get(s.arg_set_id) ?? {})),
                expected.zones.map(z => zoneKey(z[0], z[1], z[2], z[3], z[4])),
                'trace_processor: zones [tid, name, ts, dur, args]');
  const byId = new Map(slices.map(s => [s.id, s]));
  const flows = tp.query('select slice_out, slice_in from flow').map(f => {
    const a = byId.get(f.slice_out), b = byId.get(f.slice_in);
    return key([[a?.tid, a?.ts], [b?.tid, b?.ts]]);
  });
  equalMultiset(flows, expected.flows.map(key), 'trace_processor: flows [[tid, ts] out, [tid, ts] in]');
  check(expected.flows.length > 0 && flows.length === expected.flows.length,
        `trace_processor: ${flows.length} flows, expected ${expected.flows.length}`);
  // Messages: instants (dur 0) on their thread's track, named by the text, which the
  // arg "message" carries whole.
  const messages = all.filter(s => s.category === 'message');
  equalMultiset(messages.map(m => key([m.tid, m.ts, m.dur, args.get(m.arg_set_id)?.message])),
                expected.messages.map(m => key([m[0], m[1], 0, m[2]])), 'trace_processor: messages [tid, ts, 0, text]');
  check(expected.messages.length > 0 && messages.every(m => m.name === args.get(m.arg_set_id)?.message),
        `trace_processor: ${messages.length} messages named by their text`);
}

// --- Catapult --------------------------------------------------------------------------
{
  const model = importWithCatapult(text);
  equal(model.importWarnings.map(w => w.message), [], 'Catapult: import warnings');
  const proc = Object.values(model.processes)[0];
  const ns = ms => Math.round(ms * 1e6);
  // Catapult shifts the trace to start at 0: one offset for everything.
  const all = Object.values(proc.threads).flatMap(t => t.sliceGroup.slices.map(s => [t.tid, s]));
  const slices = all.filter(([, s]) => s.category !== 'message');
  const messages = all.filter(([, s]) => s.category === 'message');
  const first = Math.min(...expected.zones.map(z => z[2]));
  const offset = first - Math.min(...slices.map(([, s]) => ns(s.start)));
  const at = (tid, s) => [tid, ns(s.start) + offset];
  const zoneKey = (tid, name, ts, dur, a) => key([tid, name, ts, dur, sortedArgs(a)]);
  equalMultiset(slices.map(([tid, s]) => zoneKey(tid, s.title, ns(s.start) + offset, ns(s.duration), s.args)),
                expected.zones.map(z => zoneKey(z[0], z[1], z[2], z[3], z[4])),
                'Catapult: zones [tid, name, ts, dur, args]');
  const tidOf = new Map(slices.map(([tid, s]) => [s, tid]));
  const flows = model.flowEvents.map(f => key([at(tidOf.get(f.startSlice), f.startSlice),
                                               at(tidOf.get(f.endSlice), f.endSlice)]));
  equalMultiset(flows, expected.flows.map(key), 'Catapult: flows [[tid, ts] out, [tid, ts] in]');
  const asyncs = Object.values(proc.threads).flatMap(t => t.asyncSliceGroup.slices)
                     .map(s => key([s.title, ns(s.start) + offset, ns(s.start + s.duration) + offset]));
  equalMultiset(asyncs, expected.asyncs.map(a => key([a[0], a[2], a[3]])),
                'Catapult: async spans [name, begin ns, end ns]');
  check(asyncs.length === expected.asyncs.length && asyncs.length > 0, `Catapult: ${asyncs.length} async spans`);
  equalMultiset(messages.map(([tid, s]) => key([tid, ns(s.start) + offset, ns(s.duration), s.title, s.args.message])),
                expected.messages.map(m => key([m[0], m[1], 0, m[2], m[2]])),
                'Catapult: messages [tid, ts, 0, name, text]');
  check(messages.length === expected.messages.length && messages.length > 0, `Catapult: ${messages.length} messages`);
}

finish('rich Chrome trace in trace_processor and Catapult');
