// Node behaviour of a program using the package: the engine installs no process-wide handlers, and
// an uncaught FucinaError prints its code, its message and a stack whose first frame is the
// caller's line, in well under 2 KB (the Emscripten glue's handlers used to print ~115 KB of
// minified code and exit with 7).
import { test, before, after } from 'node:test';
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assert } from './helpers.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = join(root, 'test-output', 'node-errors');  // inside the repository, so 'fucina' resolves

before(() => mkdirSync(dir, { recursive: true }));
after(() => rmSync(dir, { recursive: true, force: true }));

function runScript(name, body) {
  const file = join(dir, name);
  writeFileSync(file, body);
  const r = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 60_000 });
  return { ...r, file };
}

for (const variant of ['threaded-simd', 'simd']) {
  test(`${variant}: an uncaught FucinaError prints code, message and the caller's line, under 2 KB`, () => {
    const r = runScript(`uncaught-${variant}.mjs`, `import { init } from 'fucina';
const fc = await init({ variant: '${variant}' });
const a = fc.constant(['a'], [3], [1, 2, 3]);
const b = fc.constant(['b'], [2], [1, 2]);
a.dot(b, 'a');
`);
    assert.equal(r.status, 1, r.stderr);
    assert.ok(r.stderr.length < 2048, `stderr is ${r.stderr.length} bytes:\n${r.stderr.slice(0, 3000)}`);
    assert.match(r.stderr, /FucinaError: ShapeMismatch: dot over 'a'/);
    assert.match(r.stderr, /code: 'ShapeMismatch'/);
    const firstFrame = r.stderr.split('\n').find((l) => /^\s+at /.test(l));
    assert.ok(firstFrame?.includes(`${r.file}:5:`), `the first frame is not the caller's line 5: ${firstFrame}`);
  });

  test(`${variant}: an argument error from the facade also points at the caller`, () => {
    const r = runScript(`invalid-${variant}.mjs`, `import { init } from 'fucina';
const fc = await init({ variant: '${variant}' });
fc.constant(['a'], [3], [1, 2, 3]).scale('two');
`);
    assert.equal(r.status, 1, r.stderr);
    assert.ok(r.stderr.length < 2048, r.stderr);
    assert.match(r.stderr, /FucinaError: InvalidArgument: /);
    const firstFrame = r.stderr.split('\n').find((l) => /^\s+at /.test(l));
    assert.ok(firstFrame?.includes(`${r.file}:3:`), `first frame: ${firstFrame}`);
  });

  test(`${variant}: the program's own errors and rejections print as without the engine`, () => {
    const thrown = runScript(`own-${variant}.mjs`, `import { init } from 'fucina';
await init({ variant: '${variant}' });
throw new Error('mine');
`);
    assert.equal(thrown.status, 1);
    assert.ok(thrown.stderr.length < 600, thrown.stderr);
    assert.match(thrown.stderr, /Error: mine\n\s+at .*own-/);
    const rejected = runScript(`reject-${variant}.mjs`, `import { init } from 'fucina';
await init({ variant: '${variant}' });
setTimeout(() => Promise.reject(new Error('later')), 10);
`);
    assert.equal(rejected.status, 1);
    assert.ok(rejected.stderr.length < 600, rejected.stderr);
    assert.match(rejected.stderr, /Error: later/);
    const handled = runScript(`handled-${variant}.mjs`, `import { init } from 'fucina';
await init({ variant: '${variant}' });
process.on('uncaughtException', (e) => { console.log('handled', e.message); process.exitCode = 3; });
setTimeout(() => { throw new Error('mine'); }, 10);
`);
    assert.equal(handled.status, 3, handled.stderr);
    assert.equal(handled.stdout.trim(), 'handled mine');
  });
}
