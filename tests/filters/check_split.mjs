// A split output's pieces (convert --split, written by filter_tests.sh) loaded one by one
// in trace_processor (v20.1, WebAssembly), as a user opens them: each loads with no
// import error or data loss, names its process and every thread whose slices it holds,
// and the slices of the pieces, less those a piece begins again at its start (the
// opened_at_window_start argument), add up to the unsplit file's, name by name.
//   node check_split.mjs WHOLE PIECE...
import fs from 'node:fs';
import {loadTrace} from '../clients/trace_processor.mjs';
import {check, equal, finish} from '../chrome_folded/clients/common.mjs';

const [wholePath, ...piecePaths] = process.argv.slice(2);
check(piecePaths.length >= 2, `${piecePaths.length} pieces: the test wants at least two`);

// Slices on thread tracks per name, but the off-CPU intervals (category ringtrace.sched:
// a piece's end cuts them too, unmarked) and, when asked, those begun again.
async function slicesByName(path, lessReopened) {
  const tp = await loadTrace(fs.readFileSync(path));
  equal(tp.query("select name, idx, value from stats where severity in ('error', 'data_loss') and value > 0"), [],
        `${path}: import errors in stats`);
  const reopened = lessReopened ? `and not exists (select 1 from args a where a.arg_set_id = s.arg_set_id
                                   and a.key like '%opened_at_window_start')` : '';
  const rows = tp.query(`select s.name as name, count(*) as n from slice s join thread_track tt on s.track_id = tt.id
                         where (s.category is null or s.category != 'ringtrace.sched') ${reopened} group by s.name`);
  const unnamed = tp.query(`select count(*) as n from thread t join thread_track tt using (utid)
                            where t.tid != 0 and (t.name is null or t.name = '')`);
  equal(unnamed[0].n, 0, `${path}: threads with slices but no name`);
  const processes = tp.query('select count(*) as n from process where pid != 0 and name is not null');
  check(processes[0].n >= 1, `${path}: its process is not named`);
  return new Map(rows.map(r => [r.name, Number(r.n)]));
}

const whole = await slicesByName(wholePath, false);
const sum = new Map();
for (const piece of piecePaths) {
  for (const [name, n] of await slicesByName(piece, true)) sum.set(name, (sum.get(name) || 0) + n);
}
const sorted = m => [...m].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
equal(sorted(sum), sorted(whole), `${piecePaths.length} pieces' slices by name against ${wholePath}`);
let total = 0;
for (const n of whole.values()) total += n;
check(total > 1000, `${wholePath}: only ${total} slices`);
finish(`split (${piecePaths.length} pieces, ${total} slices)`);
