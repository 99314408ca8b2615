// Loads a Chrome trace into Catapult (chrome://tracing's importer and model, see
// catapult_loader.mjs) and checks what it builds against expected.json (written by
// chrome_folded_live from the session's own event stream): process and thread names,
// thread sort indices, every zone's name, start and duration to the nanosecond, every
// zone's parent, the counters (one series "value" each, every sample), and no import
// warning at all.
//
// Nesting: without displayTimeUnit (which old Perfetto builds misread, see
// docs/formats/chrome_trace.md), Catapult compares times rounded to the microsecond
// when it nests. True nesting always survives (rounding keeps order); a zone that
// starts after an earlier event on its thread ended and ends within that event's
// rounded microsecond is drawn inside it. Every parent must be the recorded one or
// such an event; the number of those is printed.
//   node check_catapult.mjs <trace.json> <expected.json> [process|per_thread]
import {importWithCatapult} from './catapult_loader.mjs';
import {check, checkMade, equal, equalMultiset, finish, readText} from './common.mjs';

const [tracePath, expectedPath, counterMode = 'process'] = process.argv.slice(2);
const expected = JSON.parse(readText(expectedPath));
const model = importWithCatapult(readText(tracePath));

// Every warning counts: the session's counts ride in a process_name event's args, which
// Catapult takes without a word (a metadata name of their own was "Unrecognized").
equal(model.importWarnings.map(w => w.message), [], 'import warnings');

const processes = Object.values(model.processes);
equal(processes.length, 1, 'processes');
const proc = processes[0];
equal(proc?.name, expected.process_name, 'process name');

const ns = ms => Math.round(ms * 1e6);
const key = (name, begin, dur) => JSON.stringify([name, begin, dur]);
// Catapult shifts the trace to start at 0: one offset for every zone of every thread.
let offset;
{
  const first = Math.min(...expected.threads.flatMap(t => t.zones.map(z => z[1])));
  const starts = Object.values(proc.threads).flatMap(t => t.sliceGroup.slices)
                     .filter(s => s.category === 'zone' || s.category === 'region').map(s => ns(s.start));
  offset = first - Math.min(...starts);
}

let zones = 0, roundedNesting = 0;
for (const thread of expected.threads) {
  const model = proc.threads[thread.tid];
  check(model !== undefined, `catapult has no thread ${thread.tid}`);
  if (!model) continue;
  equal(model.name, thread.name, `name of thread ${thread.tid}`);
  equal(model.sortIndex, thread.sort_index, `sort index of thread ${thread.name}`);
  const slices = model.sliceGroup.slices.filter(s => s.category === 'zone' || s.category === 'region');
  const sliceKey = s => key(s.title, ns(s.start) + offset, ns(s.duration));
  equalMultiset(slices.map(sliceKey), thread.zones.map(z => key(z[0], z[1], z[2])),
                `thread ${thread.name}: zones [name, start ns, duration ns]`);
  const parentOf = new Map(thread.zones.map(z => {
    const p = z[3] < 0 ? null : thread.zones[z[3]];
    return [key(z[0], z[1], z[2]), p ? key(p[0], p[1], p[2]) : null];
  }));
  for (const s of slices) {
    const parent = s.parentSlice;
    const got = parent && (parent.category === 'zone' || parent.category === 'region') ? sliceKey(parent) : null;
    if (got === parentOf.get(sliceKey(s))) continue;
    // Only the documented microsecond rounding may move a zone: into an earlier event
    // (zone or instant) that ended before it began and whose end rounds to the same
    // microsecond as the zone's end or later.
    // (Catapult nests before it shifts the trace to 0: microseconds of the file's times.)
    // Catapult rounds milliseconds in floating point (Math.round(ms * 1000)), so an end
    // exactly half a microsecond past may round either way: taken as within.
    const us = ms => Math.round((ns(ms) + offset) / 1000);
    const rounded = parent !== undefined && ns(parent.end) <= ns(s.start) &&
                    ns(s.end) + offset <= us(parent.end) * 1000 + 500;
    check(rounded, `thread ${thread.name}: zone ${sliceKey(s)} inside ${parent ? sliceKey(parent) : 'nothing'}, ` +
                   `recorded inside ${parentOf.get(sliceKey(s))}`);
    roundedNesting += rounded ? 1 : 0;
  }
  zones += slices.length;
}
equal(zones, expected.zone_count, 'zones in the model');
checkMade(Object.values(proc.threads).flatMap(t => t.sliceGroup.slices)
              .filter(s => s.category === 'zone' || s.category === 'region').map(s => s.title),
          expected, 'catapult');

// Counters: a counter per name (process) or per name and thread (per_thread), each with
// the one series "value".
const counterOf = ([name, tid]) => (counterMode === 'per_thread' ? `${name} (tid ${tid})` : name);
const counters = Object.values(proc.counters);
equal(counters.map(c => c.name).sort(), [...new Set(expected.counters.map(counterOf))].sort(), 'counter names');
for (const counter of counters) {
  equal(counter.series.map(s => s.name), ['value'], `series of counter ${counter.name}`);
  const actual = counter.series[0]?.samples.map(s => JSON.stringify([ns(s.timestamp) + offset, s.value])) ?? [];
  const want = expected.counters.filter(c => counterOf(c) === counter.name).map(c => JSON.stringify([c[2], c[3]]));
  equal(actual.length, want.length, `samples of counter ${counter.name}`);
  equalMultiset(actual, want, `samples [ns, value] of counter ${counter.name}`);
}
console.log(`catapult: ${zones} zones, ${roundedNesting} drawn inside an earlier event by microsecond rounding`);
finish(`catapult ${tracePath}`);
