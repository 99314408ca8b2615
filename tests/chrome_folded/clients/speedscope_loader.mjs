// Loads speedscope's own importers (the code its web app runs when a file is dropped on
// it) under plain Node. speedscope ships only a browser bundle, so the bundle is run in
// a vm context with the few browser globals its modules touch at load time; the app's
// boot (rendering into document.body) is cut off, and the promise of its lazily loaded
// import module, the one the app awaits for every file, is exposed instead.
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import {nodeModules} from './common.mjs';

export async function loadSpeedscopeImporters() {
  const dir = path.join(nodeModules(), 'speedscope/dist/release');
  const version = JSON.parse(fs.readFileSync(path.join(nodeModules(), 'speedscope/package.json'), 'utf8')).version;
  const file = fs.readdirSync(dir).find(f => /^speedscope-.*\.js$/.test(f));
  if (!file) throw new Error(`no speedscope bundle in ${dir}`);
  let source = fs.readFileSync(path.join(dir, file), 'utf8');
  const importer = source.match(/async function \w+\(\w+,\w+\)\{return\(await (\w+)\)\.importProfileGroupFromText\(/);
  const boot = source.lastIndexOf('console.log(`speedscope v');
  if (!importer || boot < 0) {
    throw new Error(`speedscope ${version}: bundle layout not recognized (tested with 1.25.0)`);
  }
  source = source.slice(0, boot) + `globalThis.__speedscopeImport=${importer[1]};})();`;

  const anything = () => new Proxy(function() {}, {
    get: (target, key) => (key === Symbol.toPrimitive ? () => '' : anything()),
    apply: () => anything(),
    construct: () => anything(),
  });
  const context = {
    console: {log() {}, warn() {}, error: console.error, assert() {}},  // importers log what they detect
    TextDecoder, TextEncoder, setTimeout, clearTimeout, URL, atob, btoa,
    document: anything(),
    navigator: {userAgent: 'node', platform: 'node'},
    location: {href: 'file:///', hash: '', search: '', protocol: 'file:'},
    localStorage: {getItem: () => null, setItem() {}},
    matchMedia: () => ({matches: false, addEventListener() {}, addListener() {}}),
    requestAnimationFrame: f => setTimeout(f, 0),
    addEventListener() {},
  };
  context.window = context;
  context.self = context;
  vm.createContext(context);
  vm.runInContext(source, context, {filename: file});
  const importers = await context.__speedscopeImport;
  if (typeof importers?.importProfileGroupFromText !== 'function') {
    throw new Error(`speedscope ${version}: importProfileGroupFromText not found`);
  }
  return importers;
}

// Imports a file's text as speedscope does when the file is opened in it.
export async function importWithSpeedscope(fileName, text) {
  const importers = await loadSpeedscopeImporters();
  const group = await importers.importProfileGroupFromText(fileName, text);
  if (!group) throw new Error(`speedscope did not recognize ${fileName}`);
  return group;
}
