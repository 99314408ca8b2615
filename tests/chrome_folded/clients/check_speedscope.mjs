// Opens a file with speedscope's importers (the code its app runs on a dropped file)
// and checks what speedscope reports against expected.json from chrome_folded_live.
//   node check_speedscope.mjs chrome <trace.json> <expected.json>
//     one profile per thread, named after it; every zone's name, nesting and duration
//   node check_speedscope.mjs folded <stacks.folded> <expected.json>
//     self time: total weight = the session's total self time, to the nanosecond, and
//     every frame's self and total weight
//   node check_speedscope.mjs folded_calls <stacks.folded> <expected.json>
//     call counts with thread root frames: every frame's count, per thread
import {check, checkMade, equal, equalMultiset, finish, readText} from './common.mjs';
import {foldedFrame} from './common.mjs';
import {importWithSpeedscope} from './speedscope_loader.mjs';

const [mode, filePath, expectedPath] = process.argv.slice(2);
const expected = JSON.parse(readText(expectedPath));
const group = await importWithSpeedscope(filePath.split('/').pop(), readText(filePath));

// speedscope names a Chrome-trace frame "name" or, when the event has args, "name {args}".
function zoneName(frameName, expectedName) {
  if (frameName === expectedName) return frameName;
  if (frameName.startsWith(expectedName + ' {')) {
    try {
      JSON.parse(frameName.slice(expectedName.length + 1));
      return expectedName;
    } catch {
      return frameName;
    }
  }
  return frameName;
}

if (mode === 'chrome') {
  equal(group.profiles.length, expected.threads.length, 'profiles (one per thread)');
  const callNames = [];
  for (const thread of expected.threads) {
    const profile = group.profiles.find(p => p.getName().endsWith(`(tid ${thread.tid})`));
    check(profile !== undefined, `no profile for thread ${thread.tid}`);
    if (!profile) continue;
    equal(profile.getName(), `${expected.process_name} (pid ${profile.getName().match(/\(pid (\d+)\)/)?.[1]}), ${thread.name} (tid ${thread.tid})`,
          `profile name of thread ${thread.tid}`);
    const names = new Set(thread.zones.map(z => z[0]));
    const resolve = frame => {
      for (const n of names) {
        const r = zoneName(frame.name, n);
        if (r === n) return n;
      }
      return frame.name;
    };
    // [name, duration in ns, parent name] of every call speedscope replays.
    const actual = [], stack = [];
    profile.forEachCall(
      (node, t) => stack.push({name: resolve(node.frame), start: t}),
      (node, t) => {
        const call = stack.pop();
        const parent = stack.length ? stack[stack.length - 1].name : null;
        actual.push(JSON.stringify([call.name, Math.round((t - call.start) * 1000), parent]));
        callNames.push(call.name);
      });
    const want = thread.zones.map(z => JSON.stringify([z[0], z[2], z[3] < 0 ? null : thread.zones[z[3]][0]]));
    equalMultiset(actual, want, `thread ${thread.name}: calls [name, duration ns, parent]`);
    // Total weight: the span from the first zone's start to the last zone's end.
    const begin = Math.min(...thread.zones.map(z => z[1]));
    const end = Math.max(...thread.zones.map(z => z[1] + z[2]));
    check(Math.abs(profile.getTotalWeight() * 1000 - (end - begin)) < 1,
          `thread ${thread.name}: total weight ${profile.getTotalWeight()} us, expected ${(end - begin) / 1000}`);
  }
  checkMade(callNames, expected, 'speedscope calls');
} else if (mode === 'folded' || mode === 'folded_calls') {
  const calls = mode === 'folded_calls';
  equal(group.profiles.length, 1, 'profiles');
  const profile = group.profiles[0];
  const zones = expected.threads.flatMap(t => t.zones.map(z => ({thread: t, z})));
  equal(profile.getTotalWeight(), calls ? expected.zone_count : expected.self_total_ns, 'total weight');
  if (!calls) equal(expected.self_total_ns, expected.top_level_total_ns, 'sum of self times = sum of top-level zones');
  // Self weight per frame name.
  const want = new Map();
  for (const {z} of zones) {
    const name = foldedFrame(z[0]);
    want.set(name, (want.get(name) || 0) + (calls ? 1 : z[5]));
  }
  if (calls) {
    for (const t of expected.threads) want.set(foldedFrame(t.name), 0);  // thread roots: no self
  }
  const got = new Map();
  profile.forEachFrame(f => got.set(f.name, f.getSelfWeight()));
  for (const [name, value] of want) {
    if (value === 0 && !calls) continue;  // zero-self lines are not written
    equal(got.get(name), value, `self weight of frame ${JSON.stringify(name)}`);
  }
  for (const name of got.keys()) check(want.has(name), `unexpected frame ${JSON.stringify(name)}`);
  // Against what the program made, counted by itself: with call counts, each zone's
  // frame's calls; with self times, the frames are the zones it made (thread roots aside).
  const made = Object.entries(expected.made.zones).map(([n, c]) => [foldedFrame(n), c]);
  if (calls) {
    const madeCalls = [];
    for (const [frame, c] of made) for (let i = 0; i < c; ++i) madeCalls.push(frame);
    const gotCalls = [];
    const roots = new Set(expected.threads.map(t => foldedFrame(t.name)));
    profile.forEachFrame(f => { if (!roots.has(f.name)) for (let i = 0; i < f.getSelfWeight(); ++i) gotCalls.push(f.name); });
    equalMultiset(gotCalls, madeCalls, 'calls per frame, as the program counted its zones');
  } else {
    equal([...got.keys()].sort(), made.map(([frame]) => frame).sort(), 'frames: the zones the program made');
  }
  if (calls) {
    // Each thread's root frame totals that thread's zones.
    for (const t of expected.threads) {
      let total = 0;
      profile.forEachFrame(f => { if (f.name === foldedFrame(t.name)) total = f.getTotalWeight(); });
      equal(total, t.zones.length, `calls under thread root ${JSON.stringify(t.name)}`);
    }
  }
} else {
  throw new Error(`unknown mode ${mode}`);
}
finish(`speedscope ${mode} ${filePath}`);
