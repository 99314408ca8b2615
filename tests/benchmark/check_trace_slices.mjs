// A benchmark's trace in the real readers: each file (Chrome JSON or Perfetto) loads into
// trace_processor v20.1 (tests/clients/trace_processor.mjs) with no import error, its
// process named after the benchmark, and exactly as many slices as the zones the trace
// says it kept (its metadata's traced_zones: the Chrome trace's last event's
// args.ringtrace_metadata, the Perfetto trace's metadata table); a Chrome file also
// loads in Catapult without a single import warning.
//   node check_trace_slices.mjs <trace>...   (a `*` in a file name matches the one file it fits:
//                                             benchmark names with a `/` get a hash suffix)
import fs from 'node:fs';
import nodePath from 'node:path';
import {loadTrace} from '../clients/trace_processor.mjs';
import {importWithCatapult} from '../chrome_folded/clients/catapult_loader.mjs';
import {check, equal, finish} from '../chrome_folded/clients/common.mjs';

function resolve(pattern) {
  const base = nodePath.basename(pattern);
  if (!base.includes('*')) return pattern;
  const dir = nodePath.dirname(pattern);
  const [head, tail] = base.split('*');
  const found = fs.readdirSync(dir).filter((f) => f.startsWith(head) && f.endsWith(tail));
  if (found.length !== 1) throw new Error(`${pattern}: ${found.length} files match`);
  return nodePath.join(dir, found[0]);
}

for (const path of process.argv.slice(2).map(resolve)) {
  const bytes = fs.readFileSync(path);
  const json = bytes[0] === 0x5b;  // '['
  const tp = await loadTrace(bytes);
  equal(tp.query("select name, idx, value from stats where severity in ('error', 'data_loss') and value > 0"), [],
        `${path}: import errors`);
  let meta;
  if (json) {
    const events = JSON.parse(bytes.toString('utf8'));
    meta = events[events.length - 1].args.ringtrace_metadata;
    equal(importWithCatapult(bytes.toString('utf8')).importWarnings.map(w => w.message), [],
          `${path}: Catapult's import warnings`);
  } else {
    meta = Object.fromEntries(tp.query("select name, int_value, str_value from metadata where name like 'cr-ringtrace_metadata.%'")
                                  .map(r => [r.name.slice('cr-ringtrace_metadata.'.length), r.int_value ?? r.str_value]));
  }
  check(meta && meta.traced_zones > 0, `${path}: no traced_zones in its metadata: ${JSON.stringify(meta)}`);
  if (!(meta && meta.traced_zones > 0)) continue;
  equal(tp.query('select count(*) as n from slice')[0].n, meta.traced_zones, `${path}: slices against traced_zones`);
  equal(tp.query('select name from process where name is not null').map(r => r.name), [meta.benchmark],
        `${path}: process name`);
  check(tp.query('select name from thread').some(r => r.name === meta.benchmark), `${path}: no thread named ${meta.benchmark}`);
  console.log(`${path}: ${meta.traced_zones} slices, ${meta.untraced_zones} zones left out (cut by ${meta.cut_by})`);
}
finish('benchmark traces in trace_processor');
