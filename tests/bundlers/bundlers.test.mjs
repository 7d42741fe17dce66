// The packed package in fresh apps built by each common bundler with no fucina-specific
// configuration (docs/bundlers.md), and in a bundler-free page: each app trains in headless
// Chromium, served with COOP/COEP (cross-origin isolated: threaded-simd) and without (simd).
// The app sources are tests/bundlers/app/; each bundler runs from the repository's devDependencies.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, skipReason, launchBrowser, openPage } from '../browser/helpers.mjs';
import { startServer } from '../../web/server.mjs';

const bin = (p) => join(ROOT, 'node_modules', p);
let work, tarball, browser;

before(async () => {
  if (skipReason) return;
  work = mkdtempSync(join(tmpdir(), 'fucina-bundlers-'));
  execFileSync('npm', ['pack', join(ROOT, 'dist'), '--pack-destination', work, '--loglevel=error'], { cwd: work });
  tarball = join(work, readdirSync(work).find((f) => f.endsWith('.tgz')));
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** A fresh copy of the app with the packed package installed, as `npm install fucina` gives. */
function makeApp(name) {
  const dir = join(work, name);
  cpSync(join(ROOT, 'tests', 'bundlers', 'app'), dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `app-${name}`, private: true, type: 'module' }));
  execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error', tarball], { cwd: dir });
  return dir;
}

const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/** A page that loads the bundled script `script` (a URL relative to the page). */
const page = (script) => `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>fucina</title><script type="module" src="${script}"></script>\n`;

/** Opens url in Chromium, waits for window.result, checks it trained on the expected variant. */
async function trains(url, variant) {
  const { context, page: p, problems } = await openPage(browser);
  try {
    await p.goto(url);
    await p.waitForFunction(() => window.result !== undefined, null, { timeout: 60_000 });
    const result = await p.evaluate(() => window.result);
    assert.ok(result.ok, `${url}: ${result.error}`);
    assert.equal(result.variant, variant, `${url} ran ${result.variant}`);
    assert.ok(result.last < result.first / 10, `${url} did not train: ${JSON.stringify(result)}`);
    assert.deepEqual(problems, [], `${url} logged errors`);
    return result;
  } finally {
    await context.close();
  }
}

/** Serves folder `out` (isolated at /, not at /plain/) and trains its `pagePath` both ways. */
async function trainsBothWays(out, pagePath = 'index.html', requests = []) {
  const missing = [];
  const server = await startServer({ root: out, onRequest: (method, path, status) => {
    requests.push(path);
    if (status >= 400) missing.push(`${status} ${path}`);
  } });
  try {
    const isolated = await trains(`${server.url}${pagePath}`, 'threaded-simd');
    // The worker's default: one thread per core (2 on CI's machines), at most 8.
    assert.ok(isolated.threads >= Math.min(2, availableParallelism()), `threaded-simd ran ${isolated.threads} thread(s)`);
    await trains(`${server.url}plain/${pagePath}`, 'relaxed-simd');  // Chromium has relaxed SIMD
  } catch (e) {
    if (missing.length) throw new Error(`${e.message}\nthe server answered: ${missing.join(', ')}`, { cause: e });
    throw e;
  } finally {
    await server.close();
  }
}

const opts = { skip: skipReason, timeout: 240_000 };

test('Vite build: an app importing fucina builds and trains', opts, async () => {
  const dir = makeApp('vite');
  run(process.execPath, [bin('vite/bin/vite.js'), 'build', '--logLevel', 'warn'], dir);
  await trainsBothWays(join(dir, 'dist'));
});

test('Vite dev server: the same app trains from the dev server', opts, async () => {
  const dir = makeApp('vite-dev');
  const { createServer } = await import(pathToFileURL(bin('vite/dist/node/index.js')).href);
  for (const [isolated, variant] of [[true, 'threaded-simd'], [false, 'relaxed-simd']]) {
    const headers = isolated ? { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' } : {};
    const server = await createServer({ root: dir, logLevel: 'silent', server: { host: '127.0.0.1', port: 0, headers } });
    await server.listen();
    try {
      await trains(server.resolvedUrls.local[0], variant);
    } finally {
      await server.close();
    }
  }
});

test('webpack 5: an app importing fucina builds and trains', opts, async () => {
  const dir = makeApp('webpack');
  // webpack's zero-configuration defaults: ./src/index.js -> ./dist/main.js.
  run(process.execPath, [bin('webpack-cli/bin/cli.js'), '--mode', 'production'], dir);
  writeFileSync(join(dir, 'dist', 'index.html'), page('./main.js'));
  await trainsBothWays(join(dir, 'dist'));
});

// esbuild and Rollup leave `new URL('./x', import.meta.url)` alone (esbuild#795; Rollup emits no
// such assets), so their apps copy the package's wasm/ folder beside the bundle, as
// docs/bundlers.md says; the worker is a second entry point, as these bundlers need for any worker.
test('esbuild: an app importing fucina bundles and trains', opts, async () => {
  const dir = makeApp('esbuild');
  run(bin('.bin/esbuild'), ['src/index.js', 'src/worker.js', '--bundle', '--format=esm', '--outdir=dist', '--log-level=warning'], dir);
  cpSync(join(dir, 'node_modules', 'fucina', 'wasm'), join(dir, 'dist', 'wasm'), { recursive: true });
  writeFileSync(join(dir, 'dist', 'index.html'), page('./index.js'));
  await trainsBothWays(join(dir, 'dist'));
});

test('esbuild without the copy: init() fails with LoadFailed saying what to copy', opts, async () => {
  const dir = makeApp('esbuild-nocopy');
  run(bin('.bin/esbuild'), ['src/index.js', 'src/worker.js', '--bundle', '--format=esm', '--outdir=dist', '--log-level=warning'], dir);
  writeFileSync(join(dir, 'dist', 'index.html'), page('./index.js'));
  const server = await startServer({ root: join(dir, 'dist') });
  const { context, page: p } = await openPage(browser);
  try {
    await p.goto(`${server.url}plain/index.html`);
    await p.waitForFunction(() => window.result !== undefined, null, { timeout: 60_000 });
    const result = await p.evaluate(() => window.result);
    assert.equal(result.ok, false);
    assert.match(result.error, /FucinaError: LoadFailed: cannot load the relaxed-simd engine .*copy node_modules\/fucina\/wasm\/ beside the bundle/);
  } finally {
    await context.close();
    await server.close();
  }
});

test('Rollup: an app importing fucina bundles and trains', opts, async () => {
  const dir = makeApp('rollup');
  writeFileSync(join(dir, 'rollup.config.mjs'), `import { nodeResolve } from ${JSON.stringify(pathToFileURL(bin('@rollup/plugin-node-resolve/dist/es/index.js')).href)};
export default { input: ['src/index.js', 'src/worker.js'], output: { dir: 'dist', format: 'es' }, plugins: [nodeResolve({ browser: true })] };
`);
  run(process.execPath, [bin('rollup/dist/bin/rollup'), '-c', '--silent'], dir);
  cpSync(join(dir, 'node_modules', 'fucina', 'wasm'), join(dir, 'dist', 'wasm'), { recursive: true });
  writeFileSync(join(dir, 'dist', 'index.html'), page('./index.js'));
  await trainsBothWays(join(dir, 'dist'));
});

test('no bundler: an import map on the main thread, a module Worker importing by path', opts, async () => {
  const dir = makeApp('plain');
  // Import maps do not reach workers: the worker imports the package's browser entry by path.
  writeFileSync(join(dir, 'plain-worker.js'), `import { init } from './node_modules/fucina/index.browser.mjs';
import { trainOnMessage } from './src/train.js';
self.onmessage = trainOnMessage(() => init());
`);
  writeFileSync(join(dir, 'plain.html'), `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>fucina, no bundler</title>
<script type="importmap">{ "imports": { "fucina": "./node_modules/fucina/index.browser.mjs" } }</script>
<script type="module">
import { init } from 'fucina';
import { train } from './src/train.js';
try {
  // The main thread: the simd variant (threaded-simd would busy-wait the page's thread).
  const main = train(await init({ variant: 'simd' }));
  if (!(main.last < main.first / 10)) throw new Error('the main thread did not train: ' + JSON.stringify(main));
  const worker = new Worker('./plain-worker.js', { type: 'module' });
  worker.onmessage = (e) => { window.result = e.data; };
  worker.onerror = (e) => { window.result = { ok: false, error: 'worker error: ' + (e.message || '(no message)') }; };
  worker.postMessage('go');
} catch (e) { window.result = { ok: false, error: String(e?.stack ?? e) }; }
</script>
`);
  await trainsBothWays(dir, 'plain.html');
});

test('files elsewhere (a CDN folder): init({ baseUrl }) loads both variants from there', opts, async () => {
  const dir = makeApp('cdn');
  // The package's wasm/ folder moves to /cdn/fucina/: nothing is left where the entry would look.
  cpSync(join(dir, 'node_modules', 'fucina', 'wasm'), join(dir, 'cdn', 'fucina'), { recursive: true });
  rmSync(join(dir, 'node_modules', 'fucina', 'wasm'), { recursive: true });
  writeFileSync(join(dir, 'cdn-worker.js'), `import { init } from './node_modules/fucina/index.browser.mjs';
import { trainOnMessage } from './src/train.js';
self.onmessage = trainOnMessage(() => init({ baseUrl: new URL('/cdn/fucina/', self.location.href).href }));
`);
  writeFileSync(join(dir, 'cdn.html'), `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>fucina from a CDN folder</title>
<script type="module">
const worker = new Worker('./cdn-worker.js', { type: 'module' });
worker.onmessage = (e) => { window.result = e.data; };
worker.onerror = (e) => { window.result = { ok: false, error: 'worker error: ' + (e.message || '(no message)') }; };
worker.postMessage('go');
</script>
`);
  const requests = [];
  await trainsBothWays(dir, 'cdn.html', requests);
  for (const v of ['relaxed-simd', 'threaded-simd'])
    assert.ok(requests.some((p) => p.endsWith(`/cdn/fucina/fucina-${v}.wasm`)), `${v}: the wasm was not fetched from /cdn/fucina/`);
});
