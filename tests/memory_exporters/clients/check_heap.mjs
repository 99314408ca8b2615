// The heap counter and the zones' memory args in the real clients, against the program's
// own bookkeeping (memory_heap_program DIR wrote DIR/expected.json):
// - trace_processor (tests/clients/trace_processor.mjs) on the Chrome trace, the one with
//   a sample at every change, and the Perfetto file: one counter track
//   "ringtrace: heap (bytes)", whose highest value is the program's own peak and the
//   session's (at the session's peak time, to the nanosecond), fewer samples when
//   coalesced than at every change; the "grow" slices' alloc_bytes and allocs args sum to
//   what the program allocated in them; no import error;
// - Catapult (chrome://tracing's model): the counter, its highest sample, no warning;
// - trace_engine (DevTools' model): the trace loads, the "grow" entries carry the args.
//   node check_heap.mjs DIR
import fs from 'node:fs';
import path from 'node:path';
import {loadTrace} from '../../clients/trace_processor.mjs';
import {importWithCatapult} from '../../chrome_folded/clients/catapult_loader.mjs';
import {check, equal, finish, moduleUrl, readText} from '../../chrome_folded/clients/common.mjs';

const dir = process.argv[2];
const expected = JSON.parse(readText(path.join(dir, 'expected.json')));
// The session's own allocations on the thread (before the program's zone "work") are the
// heap's baseline: the program's peak is counted above it.
let baseline;

const samples = {};
for (const [file, format] of [['heap_every.json', 'json'], ['heap.json', 'json'],
                              ['heap.perfetto-trace', 'perfetto']]) {
  const tp = await loadTrace(fs.readFileSync(path.join(dir, file)));
  equal(tp.query("select name, value from stats where severity in ('error', 'data_loss') and value > 0"), [],
        `${file}: import errors`);
  // The JSON's counter track is "<name> <arg key>" in trace_processor; Perfetto's is the name.
  const name = format === 'json' ? 'ringtrace: heap (bytes) value' : 'ringtrace: heap (bytes)';
  const tracks = tp.query(`select id, name from process_counter_track where name like 'ringtrace: heap%'`);
  equal(tracks.map(t => t.name), [name], `${file}: the heap's counter track`);
  if (tracks.length !== 1) continue;
  const rows = tp.query(`select ts, value from counter where track_id = ${tracks[0].id} order by ts`);
  samples[file] = rows.length;
  const work = tp.query("select ts, dur from slice where name = 'work'")[0];
  if (file === 'heap_every.json') {  // a sample at every change: the value when "work" began
    baseline = rows.filter(r => r.ts <= work.ts).reduce((last, r) => r.value, 0);
    equal(rows.filter(r => r.ts > work.ts + work.dur).map(r => r.value), [], `${file}: no change after "work"`);
    equal(rows[rows.length - 1]?.value, baseline, `${file}: the heap after "work" is as before it`);
  }
  const peak = rows.reduce((best, r) => (r.value > best.value ? r : best), {ts: 0, value: -1});
  equal(peak.value, expected.session_peak_bytes, `${file}: the counter's highest value is the session's peak`);
  equal(peak.ts, expected.session_peak_time_ns, `${file}: the time of the highest value`);
  check(peak.ts > work.ts && peak.ts < work.ts + work.dur, `${file}: the peak inside "work"`);
  equal(peak.value - baseline, expected.peak_bytes, `${file}: the counter's rise in "work" is the program's own peak`);
  const args = format === 'json' ? 'args' : 'debug';
  const grow = tp.query(
      `select sum(extract_arg(arg_set_id, '${args}.alloc_bytes')) as bytes,
              sum(extract_arg(arg_set_id, '${args}.allocs')) as allocs, count(*) as n
       from slice where name = 'grow'`)[0];
  equal(grow.n, 3, `${file}: grow slices`);
  equal(grow.bytes, expected.grow_alloc_bytes, `${file}: grow's alloc_bytes args`);
  equal(grow.allocs, expected.grow_allocs, `${file}: grow's allocs args`);
  const none = tp.query(
      `select count(*) as n from slice where name = 'shrink' and extract_arg(arg_set_id, '${args}.alloc_bytes') is not null`);
  equal(none[0].n, 0, `${file}: shrink allocated nothing: no alloc_bytes arg`);
}
check(samples['heap.json'] < samples['heap_every.json'],
      `coalesced samples (${samples['heap.json']}) fewer than at every change (${samples['heap_every.json']})`);
check(samples['heap_every.json'] >= expected.allocations, 'a sample at every change: one per allocation at least');

// Catapult.
const json = readText(path.join(dir, 'heap.json'));
const model = importWithCatapult(json);
equal(model.importWarnings.map(w => w.message), [], 'Catapult: import warnings');
const proc = Object.values(model.processes)[0];
const counter = Object.values(proc?.counters ?? {}).find(c => c.name === 'ringtrace: heap (bytes)');
check(counter !== undefined, 'Catapult: the counter "ringtrace: heap (bytes)"');
if (counter) {
  equal(counter.series.map(s => s.name), ['value'], 'Catapult: the counter series');
  equal(Math.max(...counter.series[0].samples.map(s => s.value)), expected.session_peak_bytes,
        'Catapult: highest sample');
  equal(Math.max(...counter.series[0].samples.map(s => s.value)) - baseline, expected.peak_bytes,
        "Catapult: the highest sample's rise is the program's own peak");
}

// trace_engine.
const {polyfillDOMRect} = await import(moduleUrl('@paulirish/trace_engine/analyze-trace.mjs'));
const Trace = await import(moduleUrl('@paulirish/trace_engine/models/trace/trace.js'));
polyfillDOMRect();
const engine = Trace.TraceModel.Model.createWithAllHandlers();
await engine.parse(JSON.parse(json));
const data = engine.parsedTrace().data;
let bytes = 0, allocs = 0, entries = 0;
for (const p of data.Renderer.processes.values()) {
  for (const t of p.threads.values()) {
    for (const e of t.entries) {
      if (e.name !== 'grow') continue;
      entries += 1;
      bytes += e.args?.alloc_bytes ?? 0;
      allocs += e.args?.allocs ?? 0;
    }
  }
}
equal(entries, 3, 'trace_engine: grow entries');
equal(bytes, expected.grow_alloc_bytes, "trace_engine: grow's alloc_bytes");
equal(allocs, expected.grow_allocs, "trace_engine: grow's allocs");
finish(`heap clients ${dir}`);
