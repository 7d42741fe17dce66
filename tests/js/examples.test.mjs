// The README's "Train a model in 20 lines": examples/train.mjs runs against the built package and
// its loss falls, and the README's two code blocks are exactly examples/train.mjs and
// examples/train.cpp, so they cannot drift (the ctest examples_cpp builds and runs the C++ one).
import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { assert } from './helpers.mjs';

const root = new URL('../../', import.meta.url);
const read = (path) => readFileSync(new URL(path, root), 'utf8');

test('examples/train.mjs trains: the loss it prints falls every time, to under 0.05', () => {
  const out = execFileSync(process.execPath, [new URL('examples/train.mjs', root).pathname], { encoding: 'utf8' });
  const losses = [...out.matchAll(/^step \d+: loss (\d+\.\d+)$/gm)].map((m) => Number(m[1]));
  assert.equal(losses.length, 6, out);
  losses.slice(1).forEach((loss, i) => assert.ok(loss < losses[i], out));
  assert.ok(losses.at(-1) < 0.05, out);
});

test("README's 'Train a model in 20 lines' code blocks are examples/train.mjs and examples/train.cpp", () => {
  const section = read('README.md').split(/^## /m).find((s) => s.startsWith('Train a model in 20 lines'));
  assert.ok(section, 'README.md has a "## Train a model in 20 lines" section');
  const blocks = [...section.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)]
    .filter(([, lang]) => lang === 'js' || lang === 'cpp')
    .map(([, lang, body]) => [lang, body]);
  assert.deepEqual(blocks, [['js', read('examples/train.mjs')], ['cpp', read('examples/train.cpp')]]);
});
