// The npm package as users get it: `npm pack dist` gives a tarball within its size budget, with
// exactly the package's files, a browser entry that reaches no Node built-in, a README that makes
// sense outside the repository, and it installs into a fresh project and trains there from ESM and
// from require() (Node >= 20.19), loading its wasm from inside node_modules.
import { test, before, after } from 'node:test';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assert } from './helpers.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dist = join(root, 'dist');
let work, tarball, files;

const npm = (args, cwd) => execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'],
  { cwd, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false' } });

before(() => {
  work = mkdtempSync(join(tmpdir(), 'fucina-pack-'));
  npm(['pack', dist, '--pack-destination', work], work);
  tarball = join(work, readdirSync(work).find((f) => f.endsWith('.tgz')));
  files = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).trim().split('\n').map((f) => f.replace(/^package\//, '')).sort();
});
after(() => rmSync(work, { recursive: true, force: true }));

test('the tarball holds exactly the package files, within the size budget', () => {
  const expected = ['LICENSE', 'README.md', 'package.json', 'index.d.ts', 'index.node.mjs', 'index.browser.mjs',
    'facade.mjs', 'platform.node.mjs', 'platform.browser.mjs', 'errors.mjs', 'data.mjs', 'nn.mjs', 'pretrained.mjs', 'ops.table.mjs', 'webgpu.mjs',
    ...['simd', 'threaded-simd', 'relaxed-simd'].flatMap((v) => [`wasm/fucina-${v}.wasm`, `wasm/fucina-${v}.mjs`, `wasm/fucina-${v}.node.mjs`]),
    'wasm/fucina-threaded-simd.node.worker.cjs', 'threaded-simd-worker.mjs'].sort();
  assert.deepEqual(files, expected);
  // Budget: 2.1 MB compressed, 9.8 MB unpacked (measured 2026-12-01: 1.03 MB and 4.48 MB; 2026-12-02,
  // with the dtype branches (f64, integer, 16-bit and q8_0 paths): 1.16 MB and 5.29 MB, each wasm
  // 0.33-0.44 MB larger; with GPT-2 and LoRA (nn::Gpt2 and its bindings): 1.26 MB and 5.64 MB, the
  // simd wasm 0.12 MB and the threaded one 0.19 MB larger; with the 38 ops that complete the
  // reference's inventory (100 -> 138 ops, each with its f64 and 16-bit paths and its binding) and
  // the op table: 1.54 MB and 6.92 MB, the simd wasm 2.75 MB and the threaded one 3.59 MB, whose
  // JS-based exceptions wrap every call that may throw; with the 6 in-place helpers, 13 views, flips
  // and shifts and 12 diagonal and indexing ops (154 -> 185 ops): 1.70 MB and 7.67 MB, the simd
  // wasm 3.05 MB and the threaded one 4.01 MB, so 1.9 and 8.3 MB; 2026-12-04, with the kernel
  // primitives and the reference backend that init({ backend: 'reference' }) runs (every primitive
  // twice, the elementwise rows instantiated per form and dtype in both backends): 1.8 MB and
  // 8.68 MB, the simd wasm 3.47 MB and the threaded one 4.57 MB, so 9.0 MB; 2026-12-05, every op on
  // the primitives: 1.80 MB and 8.81 MB, the simd wasm 3.52 MB and the threaded one 4.65 MB; with
  // the webgpu device (its backend, compiled for size, the WGSL it writes, the device contexts, the
  // shim): 1.91 MB and 9.26 MB, the simd wasm 3.65 MB and the threaded one 4.87 MB, so 2.0 and
  // 9.5 MB: the GPU is the next speed step. The growth since the figures before also holds the
  // previous stop's channels-last and optimizer primitives, not measured apart); 2026-12-05, with
  // the Llama family and PEFT's files (nn::Model, nn::Llama and its loader, their bindings; no
  // std::regex, which alone cost the simd wasm 0.14 MB): 2.00 MB and 9.57 MB, the simd wasm
  // 3.79 MB and the threaded one 5.09 MB, so 2.1 and 9.8 MB: the models users fine-tune today;
  // with the webgpu kernels of most ops, 16-bit, u8 and q8_0 elements and the models on the device:
  // 2.06 MB and 9.78 MB, the simd wasm 3.86 MB and the threaded one 5.22 MB (the budget's edge);
  // with tensors bound in pieces past the adapter's binding limit (GPT-2's f32 embedding on a
  // 128 MiB binding), the device's value checks, its memory budget and out-of-memory reports, and
  // the recurrence and BCE kernels: 2.10 MB and 9.91 MB, the simd wasm 3.91 MB and the threaded one
  // 5.29 MB, so 2.2 and 10.3 MB (a page loads one variant: ~1 MB of compressed wasm); 2026-12-06,
  // with the relaxed-simd variant (a third build, 3.69 MB of wasm, 0.80 MB gzipped, and its -O1
  // glues, 0.13 MB each): 3.01 MB and 14.01 MB, so 3.1 and 14.3 MB. A page or process still loads
  // one variant; the relaxed one is the smallest .wasm of the three.
  // Each op costs ~6 KB of simd wasm and ~9 KB of threaded wasm. Raising it is a decision: say why
  // in the commit.
  const packed = statSync(tarball).size;
  const unpacked = files.reduce((n, f) => n + statSync(join(dist, f)).size, 0);
  assert.ok(packed <= 3.1e6, `tarball is ${packed} bytes, over its 3.1 MB budget`);
  assert.ok(unpacked <= 14.3e6, `unpacked package is ${unpacked} bytes, over its 14.3 MB budget`);
});

test('the manifest: exports conditions, engines, sideEffects; the repository points into dist/', () => {
  const pkg = JSON.parse(readFileSync(join(dist, 'package.json'), 'utf8'));
  assert.deepEqual(pkg.exports['.'], { types: './index.d.ts', node: './index.node.mjs', browser: './index.browser.mjs', default: './index.browser.mjs' });
  assert.equal(pkg.engines.node, '>=20.19');
  assert.equal(pkg.browser, './index.browser.mjs', 'tools that read no exports (webpack 4) take the browser entry');
  assert.equal(pkg.sideEffects, false);
  assert.equal(pkg.private, undefined);
  const repo = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  assert.equal(repo.private, true, 'the repository manifest must not be publishable (the package is dist/)');
  const prefixed = Object.fromEntries(Object.entries(pkg.exports['.']).map(([k, v]) => [k, v.replace('./', './dist/')]));
  assert.deepEqual(repo.exports['.'], prefixed, 'package.json exports drifted from web/package.json');
  assert.equal(repo.engines.node, pkg.engines.node);
});

// The module graph of the browser entry, by its static and literal dynamic imports.
function moduleGraph(entry) {
  const seen = new Map();
  const visit = (file) => {
    if (seen.has(file)) return;
    const text = readFileSync(file, 'utf8');
    seen.set(file, text);
    for (const [, spec] of text.matchAll(/(?:\bimport\s*(?:[\w{}*\s,]+from\s*)?|\bexport\s*[\w{}*\s,]+from\s*|\bimport\s*\(\s*)['"]([^'"]+)['"]/g)) {
      assert.ok(spec.startsWith('./'), `${file} imports '${spec}': the browser entry may import only the package's own files`);
      visit(join(dirname(file), spec));
    }
  };
  visit(entry);
  return seen;
}

test('the browser entry reaches no Node built-in, and neither does the browser glue', () => {
  const graph = moduleGraph(join(dist, 'index.browser.mjs'));
  assert.ok(graph.size >= 6, `only ${graph.size} modules found: the import scan is broken`);
  for (const [file, text] of graph) {
    assert.doesNotMatch(text, /['"]node:|\brequire\s*\(|\bprocess\.(on|versions)/, `${file} mentions Node`);
  }
  for (const v of ['simd', 'threaded-simd', 'relaxed-simd']) {
    const glue = readFileSync(join(dist, 'wasm', `fucina-${v}.mjs`), 'utf8');
    assert.doesNotMatch(glue, /\brequire\s*\(|\bawait import|process\["on"\]/, `the ${v} browser glue has Node code`);
    const nodeGlue = readFileSync(join(dist, 'wasm', `fucina-${v}.node.mjs`), 'utf8');
    assert.doesNotMatch(nodeGlue, /process\["on"\]\("(uncaughtException|unhandledRejection)"/, `the ${v} Node glue installs process handlers`);
  }
});

test('the package README is for users of the package, and links nothing the tarball lacks', () => {
  const readme = readFileSync(join(dist, 'README.md'), 'utf8');
  assert.match(readme, /^# fucina/);
  assert.match(readme, /npm install fucina/);
  assert.doesNotMatch(readme, /npm (start|test)\b/, 'the package README must not describe the repository workflow');
  for (const [, target] of readme.matchAll(/\]\(([^)]+)\)/g)) {
    if (/^(https?:|#)/.test(target)) continue;
    assert.ok(files.includes(target.replace(/^\.\//, '').replace(/#.*/, '')), `README links ${target}, which is not in the package`);
  }
});

test('npm pack installs into a fresh project and trains there, from import and from require', { timeout: 180_000 }, () => {
  const app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  npm(['install', '--offline', tarball], app);
  writeFileSync(join(app, 'train.mjs'), `
    import { init, relaxedSimdSupported } from 'fucina';
    // The last init is auto on one thread: relaxed-simd where this Node validates relaxed SIMD.
    for (const variant of ['threaded-simd', 'simd', undefined]) {
      const fc = await init({ variant, threads: variant ? undefined : 1 });
      let w = fc.variable(['in'], [2], [0, 0]);
      const x = fc.constant(['batch', 'in'], [3, 2], [1, 2, 3, 4, 5, 6]);
      const y = fc.constant(['batch'], [3], [5, 11, 17]);
      const losses = [];
      for (let i = 0; i < 50; ++i) {
        w = fc.scope(() => {
          const d = x.dot(w, 'in').sub(y);
          const loss = d.mul(d).meanAll();
          loss.backward();
          losses.push(loss.item());
          return fc.noGrad(() => fc.variable(['in'], [2], w.detach().sub(w.grad().scale(0.01)).toArray()));
        });
      }
      console.log(JSON.stringify({ variant: fc.variant, relaxed: relaxedSimdSupported(), threads: fc.threads, first: losses[0], last: losses.at(-1) }));
    }
    // Asked for by name where the engine lacks relaxed SIMD: a typed rejection, never a hang.
    if (!relaxedSimdSupported()) console.log(JSON.stringify(await init({ variant: 'relaxed-simd' }).then(() => 'loaded', (e) => e.code)));
  `);
  const run = (flags) => execFileSync('node', [...flags, 'train.mjs'], { cwd: app, encoding: 'utf8' }).trim().split('\n').map((l) => JSON.parse(l));
  const plain = run([]);
  if (!plain[0].relaxed) assert.equal(plain.pop(), 'LoadFailed');
  const oneThread = plain[0].relaxed ? 'relaxed-simd' : 'simd';
  assert.deepEqual(plain.map((l) => l.variant), ['threaded-simd', 'simd', oneThread]);
  // Node 20 validates relaxed SIMD only behind its V8 flag; Node 22 always.
  const relaxed = run(Number(process.versions.node.split('.')[0]) < 22 ? ['--experimental-wasm-relaxed-simd'] : []);
  assert.deepEqual(relaxed.map((l) => l.variant), ['threaded-simd', 'simd', 'relaxed-simd']);
  for (const l of [...plain, ...relaxed]) assert.ok(l.last < l.first / 10, JSON.stringify(l));

  writeFileSync(join(app, 'train.cjs'), `
    const { init } = require('fucina');
    init({ variant: 'simd' }).then((fc) => console.log(fc.constant(['a'], [2], [3, 4]).sumAll().item()));
  `);
  assert.equal(execFileSync('node', ['train.cjs'], { cwd: app, encoding: 'utf8' }).trim(), '7');
});
