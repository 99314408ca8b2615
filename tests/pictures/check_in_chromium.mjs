// The pictures in a real browser: Debian's Chromium, headless, driven by npm's
// playwright-core (its own browser download does not run here: /usr/bin/chromium, a
// fresh profile). For each SVG: it loads without a script error and a screenshot is
// taken. The flame graphs' own script is run as a user runs it: Search (the prompt
// answered with a regular expression) highlights the matching frames and says their
// share, equal to what the folded file of the same recording gives (computed here from
// the file, not from the SVG); a click zooms a frame to the whole width and hides the
// frames outside it; hovering shows the frame's value and share. The call graph drawn by
// Graphviz: one box per node of its DOT file, with the DOT's labels.
//   node check_in_chromium.mjs DIR      (DIR: make_pictures.sh's)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {pathToFileURL} from 'node:url';

const dir = process.argv[2];
const modules = process.env.RINGTRACE_NODE_MODULES || path.resolve(path.dirname(new URL(import.meta.url).pathname),
                                                                    '../clients/node_modules');
const entry = path.join(modules, 'playwright-core', 'index.mjs');
if (!fs.existsSync(entry)) throw new Error(`${entry} is missing: run "npm install" in tests/clients`);
const {chromium} = await import(pathToFileURL(entry).href);

let failures = 0;
function check(ok, message) {
  if (!ok) {
    failures += 1;
    console.error(`FAIL: ${message}`);
  }
}
const near = (a, b, tolerance, message) => check(Math.abs(a - b) <= tolerance, `${message}: ${a}, expected ${b}`);
const thousands = n => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

// The folded file: stacks (frame lists) and values.
function readFolded(file) {
  return fs.readFileSync(file, 'utf8').split('\n').filter(l => l !== '').map(line => {
    const space = line.lastIndexOf(' ');
    return {frames: line.slice(0, space).split(';'), value: Number(line.slice(space + 1))};
  });
}
// What a search for `re` should match: every line with a matching frame counts once.
function matchedValue(lines, re) {
  let sum = 0;
  for (const l of lines) if (l.frames.some(f => re.test(f))) sum += l.value;
  return sum;
}
const total = lines => lines.reduce((s, l) => s + l.value, 0);
// The value of the frame at `stack` (a prefix): its own line and every line above it.
function prefixValue(lines, stack) {
  let sum = 0;
  for (const l of lines) {
    if (stack.every((f, i) => l.frames[i] === f)) sum += l.value;
  }
  return sum;
}

const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'ringtrace-chromium-'));
// Removed however the script ends (a failed check throws before the end).
process.on('exit', () => fs.rmSync(profile, {recursive: true, force: true}));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

// Opens an SVG; fails on any script error or request other than the file itself.
async function open(file) {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('request', r => { if (r.url() !== pathToFileURL(file).href) errors.push(`request ${r.url()}`); });
  await page.goto(pathToFileURL(file).href, {waitUntil: 'load'});
  // The whole picture in the viewport (a fullPage screenshot of an SVG document hangs).
  const size = await page.evaluate(() => {
    const r = document.documentElement.getBoundingClientRect();
    return {width: Math.ceil(r.width), height: Math.ceil(r.height)};
  });
  await page.setViewportSize({width: Math.min(Math.max(size.width, 100), 4000),
                              height: Math.min(Math.max(size.height, 100), 4000)});
  const png = file.replace(/\.svg$/, '.png');
  await page.screenshot({path: png});
  check(fs.statSync(png).size > 5000, `${png}: a screenshot of ${fs.statSync(png).size} bytes`);
  return {page, errors};
}

// The frames as the page has them now.
const framesOf = page => page.$$eval('g.f', gs => gs.map(g => {
  const r = g.querySelector('rect'), box = r.getBoundingClientRect();
  return {title: g.querySelector('title').textContent, o: +g.dataset.o, v: +g.dataset.v, d: +g.dataset.d,
          x: +r.getAttribute('x'), w: +r.getAttribute('width'), fill: r.getAttribute('fill'),
          match: g.classList.contains('match'), shown: box.width > 0 || box.height > 0,
          parent: g.classList.contains('parent')};
}));
const nameOf = title => title.slice(0, title.lastIndexOf(' ('));

async function search(page, term) {
  page.once('dialog', dialog => dialog.accept(term));
  await page.click('#search');
  return page.$eval('#matched', m => ({value: m.getAttribute('data-value'), text: m.textContent}));
}

// A flame graph of `folded`: search for each of `terms`, zoom into frame `zoomTo`.
async function checkFlame(svgFile, foldedFile, terms, zoomTo, unit) {
  const {page, errors} = await open(svgFile);
  const lines = readFolded(foldedFile), whole = total(lines);
  let frames = await framesOf(page);
  check(frames.length > 0, `${svgFile}: no frames`);
  for (const term of terms) {
    const re = new RegExp(term);
    const expected = matchedValue(lines, re);
    const got = await search(page, term);
    check(Number(got.value) === expected, `${svgFile}: search ${term} matched ${got.value}, the folded file ${expected}`);
    const share = (expected / whole * 100).toFixed(2);
    check(got.text.includes(`${share}%`) && got.text.includes(`${thousands(expected)} ${unit}`),
          `${svgFile}: search ${term} says "${got.text}", expected ${share}% and ${thousands(expected)} ${unit}`);
    frames = await framesOf(page);
    const named = frames.filter(f => re.test(nameOf(f.title)));
    check(named.length > 0 && named.every(f => f.match && f.fill === 'rgb(230,0,230)'),
          `${svgFile}: the ${named.length} frames named ${term} are not all highlighted`);
    check(frames.filter(f => f.match).length === named.length, `${svgFile}: frames highlighted that ${term} does not name`);
  }
  await search(page, '');
  frames = await framesOf(page);
  check(frames.every(f => !f.match && f.fill !== 'rgb(230,0,230)'), `${svgFile}: an empty search leaves highlights`);

  // Hover: the details line shows the frame's value and share.
  const target = frames.find(f => nameOf(f.title) === zoomTo[zoomTo.length - 1] && f.d === zoomTo.length);
  check(target !== undefined, `${svgFile}: no frame ${zoomTo.join(';')}`);
  if (target === undefined) return errors;
  const value = prefixValue(lines, zoomTo);
  check(target.v === value, `${svgFile}: ${zoomTo.join(';')} is ${target.v} wide, the folded file says ${value}`);
  const selector = `g.f[data-o="${target.o}"][data-d="${target.d}"] rect`;
  await page.hover(selector);
  const details = await page.$eval('#details', d => d.textContent);
  check(details === target.title && details.includes(`${thousands(value)} ${unit}`) &&
        details.includes(`${(value / whole * 100).toFixed(2)}%`), `${svgFile}: hover shows "${details}"`);

  // Click: the frame fills the width; what is above it scales with it; the rest hides.
  await page.click(selector);
  frames = await framesOf(page);
  for (const f of frames) {
    const inside = f.d >= target.d && f.o >= target.o && f.o + f.v <= target.o + target.v;
    const below = f.d < target.d && f.o <= target.o && f.o + f.v >= target.o + target.v;
    if (inside) {
      near(f.w, f.v / target.v * 1180, 0.011, `${svgFile}: zoomed width of ${f.title}`);
      near(f.x, 10 + (f.o - target.o) / target.v * 1180, 0.011, `${svgFile}: zoomed x of ${f.title}`);
      check(f.shown, `${svgFile}: ${f.title} hidden after zoom`);
    } else if (below) {
      check(f.parent && f.shown && Math.abs(f.w - 1180) < 0.011, `${svgFile}: parent ${f.title} not full and faded`);
    } else {
      check(!f.shown, `${svgFile}: ${f.title} outside the zoomed frame still shown`);
    }
  }
  await page.click('#unzoom');
  frames = await framesOf(page);
  for (const f of frames) near(f.w, f.v / whole * 1180, 0.011, `${svgFile}: width of ${f.title} after Reset Zoom`);
  check(frames.every(f => f.shown), `${svgFile}: frames hidden after Reset Zoom`);
  await page.close();
  return errors;
}

// The call graph drawn by Graphviz: its boxes are the DOT's nodes, labels included.
async function checkCallGraph(svgFile, dotFile) {
  const {page, errors} = await open(svgFile);
  const dot = fs.readFileSync(dotFile, 'utf8');
  const labels = [...dot.matchAll(/^ +(\w+) \[color=.*? label="((?:[^"\\]|\\.)*)"/gm)].map(m => m[2].split('\\n')[0]);
  const shown = await page.$$eval('g.node', gs => gs.map(g => [...g.querySelectorAll('text')].map(t => t.textContent)));
  check(shown.length === labels.length && labels.length > 0,
        `${svgFile}: ${shown.length} boxes drawn, the DOT has ${labels.length} nodes`);
  const names = shown.map(texts => texts[0]).sort(), expected = [...labels].sort();
  check(JSON.stringify(names) === JSON.stringify(expected), `${svgFile}: boxes ${names}, the DOT's ${expected}`);
  const visible = await page.$$eval('g.node', gs => gs.every(g => g.getBoundingClientRect().width > 10));
  check(visible, `${svgFile}: a box is not drawn`);
  await page.close();
  return errors;
}

const z = path.join(dir, 'zones');
const expected = JSON.parse(fs.readFileSync(path.join(z, 'expected.json'), 'utf8'));
const allErrors = [];
allErrors.push(...await checkFlame(path.join(z, 'flame.svg'), path.join(z, 'run.folded'), ['^lex$', 'parse|crc', 'fib'],
                                   ['main_loop', 'parse'], 'ns'));
allErrors.push(...await checkFlame(path.join(z, 'icicle.svg'), path.join(z, 'threads.folded'), ['^compress$'],
                                   ['worker', 'worker_loop', 'compress'], 'ns'));
allErrors.push(...await checkFlame(path.join(z, 'memory.svg'), path.join(z, 'alloc.folded'), ['^hoard$'],
                                   ['main_loop', 'churn'], 'bytes'));
// The bytes the program allocated and kept, as it counted them.
{
  const {page, errors} = await open(path.join(z, 'leaks.svg'));
  const got = await search(page, '^hoard$');
  check(Number(got.value) === expected.leaked_bytes['main_loop;hoard'],
        `leaks.svg: hoard holds ${got.value} bytes, the program kept ${expected.leaked_bytes['main_loop;hoard']}`);
  const memory = await open(path.join(z, 'memory.svg'));
  const allocated = await search(memory.page, '^churn$');
  check(Number(allocated.value) === expected.alloc_bytes['main_loop;churn'],
        `memory.svg: churn allocated ${allocated.value} bytes, the program ${expected.alloc_bytes['main_loop;churn']}`);
  allErrors.push(...errors, ...memory.errors);
}
allErrors.push(...await checkCallGraph(path.join(z, 'calls.svg'), path.join(z, 'calls.dot')));
allErrors.push(...await checkCallGraph(path.join(z, 'threads.svg'), path.join(z, 'threads.dot')));
allErrors.push(...await checkCallGraph(path.join(dir, 'functions', 'calls.svg'), path.join(dir, 'functions', 'calls.dot')));
check(allErrors.length === 0, `errors in the pages: ${allErrors.join('; ')}`);
await context.close();
if (failures > 0) {
  console.error(`pictures in Chromium: ${failures} check(s) failed`);
  process.exit(1);
}
console.log('pictures in Chromium: all checks passed');
