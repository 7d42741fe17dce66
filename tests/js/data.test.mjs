// The JS dataset helpers: IDX (plain and gzip), the seeded shuffle shared with C++, batching,
// and the real Fashion-MNIST test split when Debian's dataset-fashion-mnist is installed.
import { test } from 'node:test';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseIdx, readIdx, shuffledIndices, loadFashionMnist, makeBatch } from 'fucina';
import { engine, throwsCode, values, assert } from './helpers.mjs';

function idxBytes(dims, vals, type = 0x08) {
  const b = [0, 0, type, dims.length];
  for (const d of dims) b.push((d >>> 24) & 255, (d >>> 16) & 255, (d >>> 8) & 255, d & 255);
  return Uint8Array.from([...b, ...vals]);
}

test('IDX files parse, plain and gzip-compressed', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fucina-idx-'));
  const bytes = idxBytes([3, 2, 2], [0, 255, 51, 102, 0, 0, 255, 255, 1, 2, 3, 4]);
  writeFileSync(join(dir, 'plain'), bytes);
  writeFileSync(join(dir, 'packed.gz'), gzipSync(bytes));
  for (const name of ['plain', 'packed.gz']) {
    const a = await readIdx(join(dir, name));
    assert.deepEqual(a.dims, [3, 2, 2]);
    assert.deepEqual(Array.from(a.values), [0, 255, 51, 102, 0, 0, 255, 255, 1, 2, 3, 4]);
  }
  throwsCode(() => parseIdx(Uint8Array.from([1, 2, 3])), 'InvalidArgument');
  throwsCode(() => parseIdx(idxBytes([2], [1, 2], 0x0d)), 'InvalidArgument');
  throwsCode(() => parseIdx(idxBytes([3], [1, 2])), 'InvalidArgument');
  await assert.rejects(readIdx(join(dir, 'missing')), { code: 'InvalidArgument' });
});

test('shuffledIndices matches the C++ permutation for the same seed', () => {
  assert.deepEqual(Array.from(shuffledIndices(10, 7)), [8, 1, 5, 9, 0, 4, 3, 2, 6, 7]);  // as data_tests.cpp
  assert.notDeepEqual(Array.from(shuffledIndices(10, 8)), [8, 1, 5, 9, 0, 4, 3, 2, 6, 7]);
  assert.equal(shuffledIndices(0, 1).length, 0);
  throwsCode(() => shuffledIndices(-1, 1), 'InvalidArgument');
});

test('makeBatch gathers samples in order into tensors', async () => {
  const fc = await engine('simd');
  const split = { images: Float32Array.from([0, 1, 0.2, 0.4, 1, 0]), labels: Int32Array.from([7, 1, 9]), count: 3, h: 1, w: 2 };
  const b = makeBatch(fc, split, [2, 0, 1], 0, 2);
  assert.deepEqual(b.images.shape, [2, 1, 2]);
  assert.deepEqual(values(b.images), [1, 0, 0, 1]);
  assert.equal(b.labels.dtype, 'i32');
  assert.deepEqual(values(b.labels), [9, 7]);
  assert.deepEqual(values(makeBatch(fc, split, [2, 0, 1], 2, 5).labels), [1]);
  throwsCode(() => makeBatch(fc, split, [5], 0, 1), 'IndexOutOfRange');
  // Labels shorter than the images (or images short of the count) are refused, naming both.
  const short = { ...split, labels: Int32Array.from([7, 1]) };
  throwsCode(() => makeBatch(fc, short, [0], 0, 1), 'InvalidArgument');
  assert.throws(() => makeBatch(fc, short, [0], 0, 1), /3 images and 2 labels/);
  throwsCode(() => makeBatch(fc, { ...split, images: split.images.subarray(0, 4) }, [0], 0, 1), 'InvalidArgument');
});

test('Fashion-MNIST test split loads when the dataset is installed', async (t) => {
  if (!existsSync('/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz')) {
    t.skip('dataset-fashion-mnist is not installed');
    return;
  }
  const split = await loadFashionMnist({ train: false });
  assert.equal(split.count, 10000);
  assert.equal(split.h, 28);
  assert.equal(split.images.length, 10000 * 28 * 28);
  const counts = new Array(10).fill(0);
  for (const y of split.labels) counts[y] += 1;
  assert.deepEqual(counts, new Array(10).fill(1000));
});
