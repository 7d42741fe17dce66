// What init() and the data helpers need from a browser (main thread or worker), with no Node
// built-in anywhere, so every bundler takes it as is (docs/bundlers.md):
// - Each file is named with `new URL('./wasm/…', import.meta.url)`, the form Vite and webpack
//   rewrite to the emitted asset; the glue is then imported from that URL at run time (the
//   bundler-ignore comments keep it out of the bundle: a bundled glue would be renamed, split or
//   wrapped, and its pthread workers could not import it back).
// - The pthread worker is made from a Blob of its source (a module of this package), so no
//   bundler has to emit or wrap it (Vite would bundle it as a classic iife worker and break it).
// - Vite's dev server pre-bundles dependencies into node_modules/.vite/deps/ without their assets
//   (vitejs/vite#8427): there, the files are taken from the package folder itself.

const FILES = {
  'threaded-simd': {
    glue: new URL('./wasm/fucina-threaded-simd.mjs', import.meta.url),
    wasm: new URL('./wasm/fucina-threaded-simd.wasm', import.meta.url),
  },
  simd: {
    glue: new URL('./wasm/fucina-simd.mjs', import.meta.url),
    wasm: new URL('./wasm/fucina-simd.wasm', import.meta.url),
  },
  'relaxed-simd': {
    glue: new URL('./wasm/fucina-relaxed-simd.mjs', import.meta.url),
    wasm: new URL('./wasm/fucina-relaxed-simd.wasm', import.meta.url),
  },
};

function place(url) {
  const here = new URL('./', import.meta.url).href;
  if (!/\/node_modules\/\.vite\/deps[^/]*\/$/.test(here)) return url.href;
  return new URL(url.href.slice(here.length), new URL('../../fucina/', here)).href;
}

async function readBytes(source) {
  const response = await fetch(source);
  if (!response.ok) throw new Error(`HTTP ${response.status} for ${source}`);
  return new Uint8Array(await response.arrayBuffer());
}

export const platform = {
  name: 'browser',
  loadHint: "esbuild and Rollup do not copy the package's wasm/ folder: copy node_modules/fucina/wasm/ " +
    'beside the bundle, or say where the files are with init({ baseUrl }) or init({ locateFile })',
  threadsPossible: () => globalThis.crossOriginIsolated === true,
  defaultThreads: async () => globalThis.navigator?.hardwareConcurrency ?? 1,
  base: () => globalThis.location?.href ?? import.meta.url,
  async load(variant, moduleOptions, locate) {
    const files = FILES[variant];
    const glue = locate(`fucina-${variant}.mjs`, place(files.glue));
    const wasm = locate(`fucina-${variant}.wasm`, place(files.wasm));
    let worker;
    if (variant === 'threaded-simd') {
      const { default: source } = await import('./threaded-simd-worker.mjs');
      worker = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
      moduleOptions.mainScriptUrlOrBlob = glue;  // what each pthread worker imports
    }
    moduleOptions.locateFile = (name) => (name.endsWith('.wasm') ? wasm : name.endsWith('.worker.js') ? worker : name);
    const { default: createFucina } = await import(/* webpackIgnore: true */ /* @vite-ignore */ glue);
    return createFucina;
  },
  readBytes,
  async gunzip(bytes) {
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  },
};
