// Loads a live session's trace with context switches (switches_live) into
// trace_processor (v20.1, WebAssembly: what Perfetto UI runs) and checks that the off-CPU
// intervals are where they belong: every "nap" zone of expected.json is a slice of its
// thread with its "on_cpu_ns" arg equal to the on-CPU time the test computed from the
// switch events, its off-CPU slices ("off-CPU (blocked)" / "(preempted)") lie on the same
// thread track inside it, each a child of the innermost zone around it (the sleep's of
// the nap itself), and their durations add up to the zone's duration
// less its on-CPU time (within a nanosecond per slice: an interval that starts with the
// zone is written a nanosecond later; within a microsecond per slice for the JSON file,
// whose times are microseconds with three decimals).
//   node check_switches_trace.mjs <trace file> <expected.json> <ns tolerance per slice>
import fs from 'node:fs';
import {loadTrace} from '../clients/trace_processor.mjs';
import {check, equal, finish, readText} from '../chrome_folded/clients/common.mjs';

const [tracePath, expectedPath, toleranceText] = process.argv.slice(2);
const tolerance = Number(toleranceText);
const expected = JSON.parse(readText(expectedPath));
const tp = await loadTrace(fs.readFileSync(tracePath));
equal(tp.query("select name, idx, value from stats where severity in ('error', 'data_loss') and value > 0"), [],
      'import errors in stats');
const slices = tp.query(`select s.id as id, s.name as name, s.ts as ts, s.dur as dur, s.parent_id as parent,
                                s.track_id as track, s.arg_set_id as arg_set_id, thread.tid as tid
                         from slice s join thread_track tt on s.track_id = tt.id join thread using (utid)`);
const onCpu = new Map();
for (const r of tp.query("select arg_set_id, int_value from args where key = 'debug.on_cpu_ns' or key = 'args.on_cpu_ns'")) {
  onCpu.set(r.arg_set_id, Number(r.int_value));
}
const byId = new Map(slices.map(s => [s.id, s]));
const offNames = new Set(['off-CPU (blocked)', 'off-CPU (preempted)']);
check(slices.some(s => offNames.has(s.name)), 'no off-CPU slice at all');
check(expected.zones.length >= 8, `only ${expected.zones.length} nap zones expected`);
const near = (a, b, slack) => Math.abs(Number(a) - Number(b)) <= slack;
for (const [tid, begin, dur, on] of expected.zones) {
  const zone = slices.find(s => s.name === 'nap' && s.tid === tid && near(s.ts, begin, tolerance) && near(s.dur, dur, 2 * tolerance));
  if (zone === undefined) {
    check(false, `no nap slice of tid ${tid} at ${begin}`);
    continue;
  }
  check(onCpu.get(zone.arg_set_id) === on, `nap at ${begin}: on_cpu_ns ${onCpu.get(zone.arg_set_id)}, expected ${on}`);
  const end = Number(zone.ts) + Number(zone.dur);
  const off = slices.filter(s => offNames.has(s.name) && s.track === zone.track && Number(s.ts) >= Number(zone.ts) &&
                                 Number(s.ts) + Number(s.dur) <= end);
  check(off.some(o => o.parent === zone.id), `nap at ${begin} (a 3 ms sleep) has no off-CPU child`);
  // Each inside it nests in the innermost zone around it (nap, or the spin inside it).
  for (const o of off) {
    const parent = byId.get(o.parent);
    check(parent !== undefined && (parent.name === 'nap' || parent.name === 'spin') && Number(parent.ts) <= Number(o.ts) &&
          Number(o.ts) + Number(o.dur) <= Number(parent.ts) + Number(parent.dur), `off-CPU slice at ${o.ts}: parent ${parent?.name}`);
  }
  const sum = off.reduce((a, o) => a + Number(o.dur), 0);
  check(near(sum, dur - on, tolerance * (off.length + 2)),
        `nap at ${begin}: off-CPU children sum to ${sum} ns, the zone waited ${dur - on} ns`);
}
finish('switches trace');
