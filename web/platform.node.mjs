// What init() and the data helpers need from Node: the Node glue of each variant (linked with
// -sENVIRONMENT=node and no process-wide handlers, see CMakeLists.txt), its .wasm read from disk
// (Node's fetch cannot read file URLs), thread counts and file reading. Reached only through the
// package's "node" exports condition, so no browser bundle sees these imports.
import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { gunzipSync } from 'node:zlib';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = (name) => new URL(`./wasm/${name}`, import.meta.url).href;
const isUrl = (s) => /^[a-z][a-z0-9+.-]+:/i.test(s);  // a scheme of two letters or more: not C:\
const asUrl = (s) => (isUrl(s) ? s : pathToFileURL(s).href);
const asPath = (s) => (s.startsWith('file:') ? fileURLToPath(s) : s);

// A Buffer as a plain Uint8Array over the same memory (new Uint8Array(buffer) would copy it: the
// training images are 47 MB).
const view = (buffer) => new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);

// Reads a path, a file: URL or an http(s) URL.
async function readBytes(source) {
  const s = String(source);
  if (/^https?:/.test(s)) {
    const response = await fetch(s);
    if (!response.ok) throw new Error(`HTTP ${response.status} for ${s}`);
    return new Uint8Array(await response.arrayBuffer());
  }
  return view(await readFile(asPath(s)));
}

export const platform = {
  name: 'node',
  loadHint: 'if the files were moved, say where they are with init({ baseUrl }) or init({ locateFile })',
  threadsPossible: () => true,
  defaultThreads: async () => availableParallelism(),
  base: () => pathToFileURL(`${process.cwd()}/`).href,
  async load(variant, moduleOptions, locate) {
    const glue = locate(`fucina-${variant}.node.mjs`, here(`fucina-${variant}.node.mjs`));
    const { default: createFucina } = await import(asUrl(glue));
    moduleOptions.wasmBinary = await readBytes(locate(`fucina-${variant}.wasm`, here(`fucina-${variant}.wasm`)));
    // The pthread worker is CommonJS: ship it as .cjs inside this "type": "module" package.
    const worker = locate(`fucina-${variant}.node.worker.cjs`, here(`fucina-${variant}.node.worker.cjs`));
    moduleOptions.locateFile = (name) => (name.endsWith('.worker.js') ? asPath(worker) : name);
    return createFucina;
  },
  started(M) {
    // Pool workers would keep Node's event loop alive forever; let the process exit when the
    // program is done, as it would with plain JS.
    if (M.PThread) for (const w of [...M.PThread.unusedWorkers, ...M.PThread.runningWorkers]) w.unref?.();
  },
  readBytes,
  gunzip: async (bytes) => view(gunzipSync(bytes)),
};
