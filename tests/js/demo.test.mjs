// The `npm start` demo runs end to end (a few steps only: a smoke test, not a speed or accuracy
// check) when Debian's dataset-fashion-mnist is installed.
import { test } from 'node:test';
import { existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { assert } from './helpers.mjs';

const dataset = '/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz';
const demo = new URL('../../demos/node/fashion_mnist.mjs', import.meta.url).pathname;

for (const variant of ['threaded-simd', 'simd']) {
  test(`npm start's demo trains and reports the test accuracy (${variant})`, { skip: !existsSync(dataset) && 'dataset-fashion-mnist is not installed' }, () => {
    const out = execFileSync(process.execPath, [demo, '--epochs', '1', '--steps', '5', '--variant', variant], { encoding: 'utf8' });
    assert.match(out, /fucina (threaded-simd|simd) \(\d+ threads?\): MLP on Fashion-MNIST/);
    assert.match(out, /epoch 1\/1 \[#+\] 5\/5/);
    assert.match(out, /test accuracy \d+\.\d+%/);
    assert.match(out, /npm run demos/);
  });
}
