// A file of two processes made by `ringtrace merge`, converted to Perfetto's protobuf
// and to Chrome JSON, loaded in trace_processor (v20.1, WebAssembly): both processes
// with their pids and names, each thread under its own process, and per process the
// slices (count, names, starts and durations to the ns) that the Chrome trace of the
// same merged file holds; no import error or data loss in `stats`.
//   node check_merged.mjs <merged.perfetto-trace> <merged.json>
import fs from 'node:fs';
import {loadTrace} from '../clients/trace_processor.mjs';
import {check, equal, equalMultiset, finish, readText} from '../chrome_folded/clients/common.mjs';

const [perfettoPath, jsonPath] = process.argv.slice(2);
const json = JSON.parse(readText(jsonPath));
const processNames = new Map(json.filter(e => e.name === 'process_name').map(e => [e.pid, e.args.name]));
equal(processNames.size, 2, 'processes named in the Chrome trace');
// [pid, tid, name, start ns, duration ns] of every zone, from the Chrome trace.
const want = json.filter(e => e.ph === 'X')
                 .map(e => JSON.stringify([e.pid, e.tid, e.name, Math.round(e.ts * 1000), Math.round(e.dur * 1000)]));

for (const [label, bytes] of [['perfetto', fs.readFileSync(perfettoPath)], ['chrome', fs.readFileSync(jsonPath)]]) {
  const tp = await loadTrace(bytes);
  equal(tp.query("select name, idx, value from stats where severity in ('error', 'data_loss') and value > 0"), [],
        `${label}: import errors in stats`);
  const processes = tp.query('select pid, name from process where pid != 0 and name is not null');
  equalMultiset(processes.map(r => JSON.stringify([r.pid, r.name])),
                [...processNames].map(([pid, name]) => JSON.stringify([pid, name])), `${label}: processes`);
  const slices = tp.query(`select p.pid as pid, t.tid as tid, s.name as name, s.ts as ts, s.dur as dur
                           from slice s join thread_track tt on s.track_id = tt.id join thread t using (utid)
                           join process p using (upid)`);
  check(slices.length > 1000, `${label}: ${slices.length} slices`);
  equalMultiset(slices.map(r => JSON.stringify([r.pid, r.tid, r.name, r.ts, r.dur])), want,
                `${label}: slices [pid, tid, name, ts, dur]`);
}
finish('merged');
