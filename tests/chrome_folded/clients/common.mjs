// Shared by the client checks: where the npm clients are, reading (gzip) files,
// assertions that name what differed, and the folded-stacks frame-name rule written
// again from docs/formats/folded_stacks.md (not taken from the exporter).
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import {fileURLToPath, pathToFileURL} from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

export function nodeModules() {
  const dir = process.env.RINGTRACE_NODE_MODULES || path.resolve(here, '../../clients/node_modules');
  if (!fs.existsSync(dir)) {
    throw new Error(`${dir} is missing: run "npm install --no-audit --no-fund" in tests/clients`);
  }
  return dir;
}

export function moduleUrl(relative) {
  const file = path.join(nodeModules(), relative);
  if (!fs.existsSync(file)) throw new Error(`${file} is missing: run "npm install" in tests/clients`);
  return pathToFileURL(file).href;
}

export function readText(file) {
  const bytes = fs.readFileSync(file);
  const gzip = bytes.length > 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
  if (file.endsWith('.gz') !== gzip) throw new Error(`${file}: gzip magic ${gzip} does not match its name`);
  return (gzip ? zlib.gunzipSync(bytes) : bytes).toString('utf8');
}

let failures = 0;
export function check(condition, message) {
  if (!condition) {
    failures += 1;
    console.error(`FAIL: ${message}`);
  }
}
export function equal(actual, expected, message) {
  const a = JSON.stringify(actual), e = JSON.stringify(expected);
  check(a === e, `${message}: got ${a}, expected ${e}`);
}
export function finish(what) {
  if (failures > 0) {
    console.error(`${what}: ${failures} check(s) failed`);
    process.exit(1);
  }
  console.log(`${what}: all checks passed`);
}

// The frame-name rule of the folded format: ';' and control characters become '_',
// trailing spaces become '_', and a space before a trailing number becomes '_'.
export function foldedFrame(name) {
  let s = name.replace(/[;\u0000-\u001f\u007f]/g, '_');
  if (s === '') return '(empty)';
  s = s.replace(/ +$/, m => '_'.repeat(m.length));
  return s.replace(/ ([0-9.]+)$/, '_$1');
}


// Compares two lists of keys as multisets; reports a few keys missing and extra.
export function equalMultiset(actual, expected, message) {
  const count = keys => {
    const m = new Map();
    for (const k of keys) m.set(k, (m.get(k) || 0) + 1);
    return m;
  };
  const a = count(actual), e = count(expected);
  const missing = [], extra = [];
  for (const [k, n] of e) if ((a.get(k) || 0) < n) missing.push(k);
  for (const [k, n] of a) if ((e.get(k) || 0) < n) extra.push(k);
  check(missing.length === 0 && extra.length === 0,
        `${message}: ${missing.length} expected not found, e.g. ${missing.slice(0, 3).join(' ')}; ` +
        `${extra.length} unexpected, e.g. ${extra.slice(0, 3).join(' ')}`);
}

// The zones a reader shows, per name, against what the program made, counted by the
// program itself beside each macro as it ran (expected.json's "made": read from no
// stream). `atMost`: a file cut short holds no more of each than that.
export function checkMade(zoneNames, expected, what, atMost = false) {
  check(expected.made !== undefined, `${what}: expected.json has no "made" counts`);
  if (expected.made === undefined) return;
  const got = {};
  for (const n of zoneNames) got[n] = (got[n] || 0) + 1;
  if (atMost) {
    for (const [n, c] of Object.entries(got)) {
      check(c <= (expected.made.zones[n] || 0), `${what}: ${c} zones ${JSON.stringify(n)}, the program made ${expected.made.zones[n] || 0}`);
    }
    return;
  }
  const sorted = o => Object.keys(o).sort().map(k => [k, o[k]]);
  equal(sorted(got), sorted(expected.made.zones), `${what}: zones per name, as the program counted them`);
}
