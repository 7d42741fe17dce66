// The webgpu device's op coverage matrix (docs/webgpu-ops.md) held to what the device does, on
// both variants (gpu.mjs: Dawn over SwiftShader). Every op of src/fucina/ops/ops.list has one row:
//   yes     every PyTorch parity case of the op (tests/fixtures/parity/, as ops_parity.test.mjs
//           replays them on the cpu) passes with its inputs made on the device: the output and
//           every input gradient, read back, within the cpu's tolerance;
//   partly  each case passes or is UnsupportedOnDevice, and there are both (the row says which);
//   no      each case is UnsupportedOnDevice: the row says why.
// The ops without a parity case run webgpu_parity.mjs's EXTRA calls on both devices instead.
// tests/browser/webgpu.test.mjs holds the same matrix to the device in Chromium.
import { test } from 'node:test';
import { VARIANTS, assert } from './helpers.mjs';
import { families, opList, webgpuMatrix } from './parity_families.mjs';
import { EXTRA, casesByOp, outcomes, judge } from './webgpu_parity.mjs';
import { gpuEngine } from './gpu.mjs';

const ops = opList();
const cases = casesByOp(families().map(([, doc]) => doc));

test('docs/webgpu-ops.md has one row for every op of ops.list, each no with its reason', () => {
  const rows = webgpuMatrix();
  assert.deepEqual(ops.filter((op) => !rows.has(op)), [], 'ops of ops.list without a row');
  assert.deepEqual([...rows.keys()].filter((op) => !ops.includes(op)), [], 'rows for ops not in ops.list');
  for (const [op, { status, why }] of rows) if (status !== 'yes') assert.ok(why.length > 0, `${op}: ${status} says why`);
  assert.deepEqual(ops.filter((op) => !cases.has(op) && !EXTRA[op]), [], 'ops with neither a parity case nor an EXTRA call');
});

for (const variant of VARIANTS) {
  test(`webgpu (${variant}): every op does on the device what docs/webgpu-ops.md says, the parity fixtures replayed there`, async () => {
    const fc = await gpuEngine(variant);
    const rows = webgpuMatrix();
    const got = await outcomes(fc, ops, cases);
    assert.deepEqual(ops.map((op) => judge(op, rows.get(op).status, got[op])).filter(Boolean), []);
    await fc.sync();
  });
}
