// The merged file of check_clocks.py (two processes in different time namespaces, 200
// round trips of flows, CLOCK_REALTIME skewed), converted to Perfetto's protobuf and
// loaded in trace_processor (v20.1, WebAssembly): both processes with their pids and
// threads, the 400 flows between them, each from one process to the other and every
// receive's slice after its send's, and the clock offset merge measured in the metadata.
//   node check_clocks_perfetto.mjs WORKDIR   (check_clocks.py's; exit 77 when it skipped)
import fs from 'node:fs';
import path from 'node:path';
import {loadTrace} from '../clients/trace_processor.mjs';
import {check, equal, equalMultiset, finish} from '../chrome_folded/clients/common.mjs';

const work = process.argv[2];
const expectPath = path.join(work, 'expect.json');
if (!fs.existsSync(expectPath)) {
  console.log(`SKIPPED: ${expectPath} missing: check_clocks.py skipped or failed before writing it`);
  process.exit(77);
}
const expect = JSON.parse(fs.readFileSync(expectPath, 'utf8'));
const tp = await loadTrace(fs.readFileSync(path.join(work, 'merged.perfetto-trace')));
equal(tp.query("select name, idx, value from stats where severity in ('error', 'data_loss') and value > 0"), [],
      'import errors in stats');
const processes = tp.query('select pid from process where pid != 0');
equalMultiset(processes.map(r => r.pid), [expect.ping, expect.pong], 'processes');
const threads = tp.query(`select p.pid as pid, t.name as name from thread t join process p using (upid)
                          where t.name in ('ping', 'pong')`);
equalMultiset(threads.map(r => `${r.pid} ${r.name}`), [`${expect.ping} ping`, `${expect.pong} pong`],
              'each node\'s thread under its process');
const flows = tp.query(`select so.ts as out_ts, si.ts as in_ts, po.pid as out_pid, pi.pid as in_pid
                        from flow f
                        join slice so on f.slice_out = so.id join thread_track tro on so.track_id = tro.id
                        join thread tho on tro.utid = tho.utid join process po on tho.upid = po.upid
                        join slice si on f.slice_in = si.id join thread_track tri on si.track_id = tri.id
                        join thread thi on tri.utid = thi.utid join process pi on thi.upid = pi.upid`);
equal(flows.length, expect.flows, 'flows');
const across = flows.filter(f => f.out_pid !== f.in_pid);
equal(across.length, expect.flows, 'flows from one process to the other');
const early = flows.filter(f => f.in_ts < f.out_ts);
equal(early.length, 0, 'receives whose slice begins before its send\'s');
const meta = Object.fromEntries(
    tp.query("select name, int_value as v from metadata where name like 'cr-ringtrace_metadata.clock.%'")
        .map(r => [r.name.slice('cr-ringtrace_metadata.'.length), r.v]));
const key = `clock.pid ${expect.placed}`;
equal(meta[`${key}.offset_ns`], expect.offset_ns, 'the offset in the metadata');
equal(meta[`${key}.uncertainty_ns`], expect.uncertainty_ns, 'the uncertainty in the metadata');
check(meta[`${key}.agrees_with_realtime`] === 0, `CLOCK_REALTIME's disagreement in the metadata: ${JSON.stringify(meta)}`);
finish('clocks');
