// A Chrome trace cut where a flush leaves it (after an event, before the next line's
// comma: what a killed process leaves on disk) loads in trace_processor (Perfetto) and
// Catapult (chrome://tracing): every zone written before the cut is there with its
// recorded name, start and duration, every thread with an event before the cut is
// named, and neither reader reports an import error.
//   node check_cut_files.mjs <trace.json> <expected.json> [cuts]
//   node check_cut_files.mjs <killed run's trace> <expected.json> whole
// `whole` loads the file as it is, without its closing bracket: the trace a process
// killed with SIGKILL left (its zones must be among those expected.json lists).
import fs from 'node:fs';
import {loadTrace} from '../../clients/trace_processor.mjs';
import {importWithCatapult} from './catapult_loader.mjs';
import {check, checkMade, equal, equalMultiset, finish} from './common.mjs';

const [tracePath, expectedPath, cutCount = '6'] = process.argv.slice(2);
const text = fs.readFileSync(tracePath, 'utf8');
const expected = JSON.parse(fs.readFileSync(expectedPath, 'utf8'));
const key = (tid, name, begin, dur) => JSON.stringify([tid, name, begin, dur]);
const recorded = new Set(expected.threads.flatMap(t => t.zones.map(z => key(t.tid, z[0], z[1], z[2]))));

// Flush points: every end of an event, i.e. before each ",\n" separator.
const points = [];
for (let at = text.indexOf(',\n'); at >= 0; at = text.indexOf(',\n', at + 1)) points.push(at);
const firstZone = text.indexOf('"ph":"X"');
const usable = points.filter(p => p > firstZone);
const cuts = [];
if (cutCount === 'whole') {
  // A kill lands between two flushes: the file ends after a complete event.
  check(text.endsWith('}'), `${tracePath} does not end after a complete event: ...${JSON.stringify(text.slice(-80))}`);
  check(!text.trimEnd().endsWith(']'), `${tracePath} is closed: not a killed run's trace`);
  cuts.push(text.length);
} else {
  check(usable.length >= Number(cutCount), `only ${usable.length} cut points after the first zone`);
  for (let i = 1; i <= Number(cutCount); ++i) cuts.push(usable[Math.floor(i * (usable.length - 1) / (Number(cutCount) + 1))]);
}

// Microseconds with three decimals (or the longer dur form) to integer nanoseconds.
const ns = us => Math.round(us * 1000);
for (const cut of cuts) {
  const prefix = text.slice(0, cut);
  check(prefix.endsWith('}'), `cut at ${cut} does not end an event`);
  // What the cut holds, read by the test itself: the format lets a reader close the array.
  const events = JSON.parse(prefix + ']');
  const zones = events.filter(e => e.ph === 'X').map(e => key(e.tid, e.name, ns(e.ts), ns(e.dur)));
  const names = new Map();
  for (const e of events) if (e.ph === 'M' && e.name === 'thread_name') names.set(e.tid, e.args.name);
  const tids = new Set(events.filter(e => e.ph !== 'M').map(e => e.tid));
  const where = `cut after ${events.length} events (byte ${cut})`;
  check(zones.length > 0, `${where}: no zone`);
  for (const z of zones) check(recorded.has(z), `${where}: zone ${z} was not recorded`);
  // No more of each name than the program made (counted by itself).
  checkMade(events.filter(e => e.ph === 'X').map(e => e.name), expected, where, true);
  for (const tid of tids) check(names.has(tid), `${where}: thread ${tid} has events but no name`);

  const tp = await loadTrace(new TextEncoder().encode(prefix));
  equal(tp.query("select name, value from stats where severity in ('error', 'data_loss') and value > 0"), [],
        `${where}: trace_processor import errors`);
  const tpZones = tp.query(
      `select thread.tid as tid, s.name as name, s.ts as ts, s.dur as dur from slice s
       join thread_track tt on s.track_id = tt.id join thread using (utid) where coalesce(s.category, 'zone') in ('zone', 'region')`)
      .map(r => key(r.tid, r.name, r.ts, r.dur));
  equalMultiset(tpZones, zones, `${where}: trace_processor zones [tid, name, start ns, duration ns]`);
  for (const [tid, name] of names) {
    equal(tp.query(`select name from thread where tid = ${tid}`).map(r => r.name), [name],
          `${where}: trace_processor name of thread ${tid}`);
  }

  const model = importWithCatapult(prefix);
  const warnings = model.importWarnings.map(w => w.message);
  equal(warnings, [], `${where}: catapult import warnings`);
  const proc = Object.values(model.processes)[0];
  const slices = Object.values(proc?.threads ?? {}).flatMap(
      t => t.sliceGroup.slices.filter(s => s.category === 'zone' || s.category === 'region').map(s => [t.tid, s]));
  // Catapult starts the trace at 0: the earliest zone gives the offset.
  const offset = Math.min(...zones.map(z => JSON.parse(z)[2])) - Math.min(...slices.map(([, s]) => ns(s.start * 1000)));
  equalMultiset(slices.map(([tid, s]) => key(tid, s.title, ns(s.start * 1000) + offset, ns(s.duration * 1000))), zones,
                `${where}: catapult zones [tid, name, start ns, duration ns]`);
  // (Catapult drops a thread without events; those with events must be named.)
  for (const tid of tids) equal(proc?.threads[tid]?.name, names.get(tid), `${where}: catapult name of thread ${tid}`);
}
finish(cutCount === 'whole' ? `killed run's trace ${tracePath}` : `cut files of ${tracePath} (${cuts.length} cuts)`);
