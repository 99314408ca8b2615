// The golden files (hand-built stream with hostile names) opened by the real clients:
// trace_engine, Perfetto's trace_processor and speedscope must report exactly the
// names, nesting and durations that golden_trace() in chrome_folded_streams.cpp describes.
//   node check_golden.mjs <golden dir>
import fs from 'node:fs';
import path from 'node:path';
import {loadTrace} from '../../clients/trace_processor.mjs';
import {equal, equalMultiset, finish, moduleUrl, readText} from './common.mjs';
import {importWithSpeedscope} from './speedscope_loader.mjs';

const dir = process.argv[2];
const weirdZone = 'q"b\\s\nl;x\u0001 12 \u{1F642} \uFFFD end 7';  // \xFF became U+FFFD
const weirdThread = 'worker "1"\t\\ \u{1F680} \uFFFD(';         // \xC3\x28 became U+FFFD (
const weirdFrame = 'q"b\\s_l_x_ 12 \u{1F642} \uFFFD end_7';

// [name, start ns, duration ns, parent] per thread, from golden_trace().
const zones = {
  1001: [['main', 1000, 8000, null], ['parse', 1500, 2500, 'main'], ['lex', 2000, 750, 'parse'],
         ['graph', 5000, 1000, 'main'], ['parse', 5100, 500, 'graph'], ['lex', 7000, 2000, 'main']],
  1002: [[weirdZone, 1200, 1300, null], ['parse', 1300, 100, weirdZone], ['main', 3000, 6000, null]],
};
const names = {1001: 'main', 1002: weirdThread};

for (const file of ['basic.json', 'basic_nolocations.json']) {
  const json = JSON.parse(readText(path.join(dir, file)));
  const {polyfillDOMRect} = await import(moduleUrl('@paulirish/trace_engine/analyze-trace.mjs'));
  const Trace = await import(moduleUrl('@paulirish/trace_engine/models/trace/trace.js'));
  polyfillDOMRect();
  const model = Trace.TraceModel.Model.createWithAllHandlers();
  await model.parse(json);
  const data = model.parsedTrace().data;
  equal(data.Meta.processNames.get(4242)?.args?.name, 'golden "proc"', `${file}: process name`);
  for (const tid of [1001, 1002]) {
    const thread = data.Renderer.processes.get(4242)?.threads.get(tid);
    equal(thread?.name, names[tid], `${file}: trace_engine thread ${tid} name`);
    const actual = [];
    const walk = (node, parent) => {
      actual.push(JSON.stringify([node.entry.name, Math.round(node.entry.ts * 1000), Math.round(node.entry.dur * 1000),
                                  parent ? parent.entry.name : null]));
      for (const c of node.children) walk(c, node);
    };
    for (const root of thread?.tree?.roots ?? []) walk(root, null);
    equalMultiset(actual, zones[tid].map(z => JSON.stringify(z)), `${file}: trace_engine zones of thread ${tid}`);
  }

  // Perfetto's trace_processor: the same zones, their depth, the counters named once.
  const tp = await loadTrace(fs.readFileSync(path.join(dir, file)));
  equal(tp.query("select name from stats where severity in ('error', 'data_loss') and value > 0"), [],
        `${file}: trace_processor import errors`);
  for (const tid of [1001, 1002]) {
    equal(tp.query(`select name from thread where tid = ${tid}`).map(r => r.name), [names[tid]],
          `${file}: trace_processor thread ${tid} name`);
    const actual = tp.query(
        `select s.name as name, s.ts as ts, s.dur as dur, s.depth as depth from slice s join thread_track tt
         on s.track_id = tt.id join thread using (utid) where tid = ${tid} and coalesce(s.category, 'zone') in ('zone', 'region')`)
        .map(r => JSON.stringify([r.name, r.ts, r.dur, r.depth]));
    const depth = z => (z[3] === null ? 0 : 1 + depth(zones[tid].find(p => p[0] === z[3])));
    equalMultiset(actual, zones[tid].map(z => JSON.stringify([z[0], z[1], z[2], depth(z)])),
                  `${file}: trace_processor zones [name, start, duration, depth] of thread ${tid}`);
  }
  equal(tp.query('select t.name as name, c.ts as ts, c.value as value from counter c join counter_track t on c.track_id = t.id order by c.ts')
            .map(r => [r.name, r.ts, r.value]),
        [['queue_depth value', 2600, -2], ['queue_depth value', 4200, 5], ['load value', 4300, 0.25]],
        `${file}: trace_processor counters`);

  const group = await importWithSpeedscope(file, readText(path.join(dir, file)));
  equal(group.profiles.length, 2, `${file}: speedscope profiles`);
  for (const tid of [1001, 1002]) {
    const profile = group.profiles.find(p => p.getName().endsWith(`(tid ${tid})`));
    equal(profile?.getName(), `golden "proc" (pid 4242), ${names[tid]} (tid ${tid})`, `${file}: speedscope profile name`);
    const actual = [], stack = [];
    profile?.forEachCall(
      (node, t) => stack.push({name: node.frame.name.replace(/ \{.*\}$/s, ''), t}),
      (node, t) => {
        const call = stack.pop();
        actual.push(JSON.stringify([call.name, Math.round((t - call.t) * 1000), stack.length ? stack[stack.length - 1].name : null]));
      });
    equalMultiset(actual, zones[tid].map(z => JSON.stringify([z[0], z[2], z[3]])), `${file}: speedscope calls of thread ${tid}`);
  }
}

// Folded stacks: the frames and totals speedscope reads.
const folded = [
  ['basic.folded', 15300, {main: 8500, parse: 1750 + 500 + 100, lex: 750 + 2000, graph: 500, [weirdFrame]: 1200}],
  ['basic_total.folded', 8000 + 2500 + 750 + 1000 + 500 + 2000 + 1300 + 100 + 6000,
   {main: 14000, parse: 2500 + 500 + 100, lex: 2750, graph: 1000, [weirdFrame]: 1300}],
  ['basic_calls_threads.folded', 9,
   {main: 2, parse: 3, lex: 2, graph: 1, [weirdFrame]: 1, ['worker "1"_\\ \u{1F680} \uFFFD(']: 0}],
];
for (const [file, total, selfByFrame] of folded) {
  const group = await importWithSpeedscope(file, readText(path.join(dir, file)));
  const profile = group.profiles[0];
  equal(profile.getTotalWeight(), total, `${file}: speedscope total weight`);
  const got = {};
  profile.forEachFrame(f => { got[f.name] = f.getSelfWeight(); });
  equal(Object.keys(got).sort(), Object.keys(selfByFrame).sort(), `${file}: frames`);
  for (const [name, value] of Object.entries(selfByFrame)) equal(got[name], value, `${file}: self weight of ${name}`);
}
finish(`golden files in ${dir}`);
