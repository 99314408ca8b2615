// Loads a Chrome trace into @paulirish/trace_engine (the trace model of Chrome DevTools'
// Performance panel) and checks what it reports against expected.json (written by
// chrome_folded_live from the session's own event stream): the process name, every
// thread's name, and every zone's name, start, duration and parent in the entry tree
// the model builds.
//   node check_trace_engine.mjs <trace.json[.gz]> <expected.json>
import {check, checkMade, equal, equalMultiset, finish, moduleUrl, readText} from './common.mjs';

const [tracePath, expectedPath] = process.argv.slice(2);
const expected = JSON.parse(readText(expectedPath));
const json = JSON.parse(readText(tracePath));

const {polyfillDOMRect} = await import(moduleUrl('@paulirish/trace_engine/analyze-trace.mjs'));
const Trace = await import(moduleUrl('@paulirish/trace_engine/models/trace/trace.js'));
polyfillDOMRect();
const model = Trace.TraceModel.Model.createWithAllHandlers();
await model.parse(json);
const data = model.parsedTrace().data;

const pid = json.find(e => e.ph === 'M' && e.name === 'process_name').pid;
equal(data.Meta.processNames.get(pid)?.args?.name, expected.process_name, 'process name');
const process_ = data.Renderer.processes.get(pid);
check(process_ !== undefined, `trace_engine has no process ${pid}`);

const ns = us => Math.round(us * 1000);  // ts/dur have three decimals: exact in ns
let zonesSeen = 0;
const namesSeen = [];
for (const thread of expected.threads) {
  const model = process_?.threads.get(thread.tid);
  check(model !== undefined, `trace_engine has no thread ${thread.tid}`);
  if (!model) continue;
  equal(model.name, thread.name, `name of thread ${thread.tid}`);
  check(model.tree !== undefined, `thread ${thread.name}: no entry tree`);
  // [name, begin ns, duration ns, parent name] of every zone, as the model nests them.
  const actual = [];
  let maxDepth = 0;
  const walk = (node, parent) => {
    const e = node.entry;
    actual.push(JSON.stringify([e.name, ns(e.ts), ns(e.dur), parent ? parent.entry.name : null]));
    namesSeen.push(e.name);
    maxDepth = Math.max(maxDepth, node.depth);
    for (const child of node.children) walk(child, node);
  };
  for (const root of model.tree?.roots ?? []) walk(root, null);
  const want = thread.zones.map(z => JSON.stringify([z[0], z[1], z[2], z[3] < 0 ? null : thread.zones[z[3]][0]]));
  equal(actual.length, want.length, `thread ${thread.name}: zone count`);
  equalMultiset(actual, want, `thread ${thread.name}: zones [name, start, duration, parent]`);
  let wantDepth = 0;
  for (const z of thread.zones) {
    let d = 0;
    for (let p = z[3]; p >= 0; p = thread.zones[p][3]) d += 1;
    wantDepth = Math.max(wantDepth, d);
  }
  equal(maxDepth, wantDepth, `thread ${thread.name}: deepest nesting`);
  // Self time as the model computes it (microseconds) against the session's, in ns.
  let selfModel = 0, selfWant = 0;
  const addSelf = node => {
    selfModel += node.selfTime ?? 0;
    for (const child of node.children) addSelf(child);
  };
  for (const root of model.tree?.roots ?? []) addSelf(root);
  for (const z of thread.zones) selfWant += z[5];
  check(Math.abs(selfModel * 1000 - selfWant) < 1 + thread.zones.length * 1e-3,
        `thread ${thread.name}: self time ${selfModel * 1000} ns, expected ${selfWant}`);
  zonesSeen += actual.length;
}
equal(zonesSeen, expected.zone_count, 'zones in the model');
checkMade(namesSeen, expected, 'trace_engine');
// The zone left open at stop() is there, closed at the stop time and marked.
const open = json.filter(e => e.ph === 'X' && e.args?.closed_at_stop === true);
equal(open.length, expected.closed_at_stop, 'zones marked closed_at_stop');
finish(`trace_engine ${tracePath}`);
