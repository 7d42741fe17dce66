// `npm pack` gives a tarball that installs into a fresh project and trains from ESM in Node 20,
// loading its wasm from inside node_modules.
import { test } from 'node:test';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assert } from './helpers.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));

test('npm pack installs into a fresh project and trains there', { timeout: 180_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'fucina-pack-'));
  try {
    const npm = (args, cwd) => execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'],
      { cwd, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false' } });
    npm(['pack', '--pack-destination', dir], root);
    const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
    assert.ok(tarball, 'npm pack wrote no tarball');
    const listing = execFileSync('tar', ['-tzf', join(dir, tarball)], { encoding: 'utf8' });
    for (const f of ['index.mjs', 'index.d.ts', 'threaded-simd/fucina.wasm', 'threaded-simd/fucina.worker.js',
      'threaded-simd/package.json', 'simd/fucina.wasm', 'simd/fucina.mjs'])
      assert.match(listing, new RegExp(`package/dist/${f.replace('.', '\\.')}`), `${f} missing from the tarball`);

    const app = join(dir, 'app');
    execFileSync('mkdir', ['-p', app]);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    npm(['install', '--offline', join(dir, tarball)], app);
    writeFileSync(join(app, 'train.mjs'), `
      import { init } from 'fucina';
      for (const variant of ['threaded-simd', 'simd']) {
        const fc = await init({ variant });
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
        console.log(JSON.stringify({ variant, threads: fc.threads, first: losses[0], last: losses.at(-1) }));
      }
    `);
    const lines = execFileSync('node', ['train.mjs'], { cwd: app, encoding: 'utf8' }).trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((l) => l.variant), ['threaded-simd', 'simd']);
    for (const l of lines) assert.ok(l.last < l.first / 10, JSON.stringify(l));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
