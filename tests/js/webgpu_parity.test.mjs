// The webgpu device's op coverage matrix (docs/webgpu-ops.md) held to what the device does, on
// both variants (gpu.mjs: Dawn over SwiftShader). Every op of src/fucina/ops/ops.list has one row:
//   yes     every PyTorch parity case of the op (tests/fixtures/parity/, as ops_parity.test.mjs
//           replays them on the cpu) passes with its inputs made on the device: the output and
//           every input gradient, read back, within the cpu's tolerance;
//   partly  each case passes or is UnsupportedOnDevice, and there are both (the row says which);
//   no      each case is UnsupportedOnDevice: the row says why.
// The ops without a parity case run the EXTRA calls below on both devices instead.
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { VARIANTS, assert, FucinaError } from './helpers.mjs';
import { values } from './seeded.mjs';
import { OPS, families, makeInput, nums, closeValues } from './parity_cases.mjs';
import { gpuEngine } from './gpu.mjs';

const root = new URL('../../', import.meta.url);
const opList = readFileSync(new URL('src/fucina/ops/ops.list', root), 'utf8').split('\n')
  .map((line) => line.replace(/#.*/, '').trim()).filter(Boolean);

/** docs/webgpu-ops.md's table: op → { status, why }. */
function matrix() {
  const rows = new Map();
  for (const line of readFileSync(new URL('docs/webgpu-ops.md', root), 'utf8').split('\n')) {
    const m = /^\| `(\w+)` \| (yes|partly|no) \|(.*)\|$/.exec(line);
    if (!m) continue;
    assert.ok(!rows.has(m[1]), `docs/webgpu-ops.md: ${m[1]} has two rows`);
    rows.set(m[1], { status: m[2], why: m[3].trim() });
  }
  return rows;
}

// Runs one parity case with the engine's default device: 'ok', or the UnsupportedOnDevice error.
async function replay(fc, c) {
  let kept;
  try {
    kept = fc.scope(() => {
      const leaves = {}, views = {};
      for (const [k, e] of Object.entries(c.inputs)) [leaves[k], views[k]] = makeInput(fc, nums(e));
      const r = OPS[c.op](views, c.args, fc);
      const [out, extras] = Array.isArray(r) ? r : [r, {}];
      const read = { out: out.permuteTo(c.output.tags), extras: {}, grads: {} };
      for (const k of Object.keys(c.extras)) read.extras[k] = extras[k].permuteTo(c.extras[k].tags);
      if (Object.keys(c.grads).length > 0) {
        const gy = c.grad_output;
        out.backward(fc.constant(gy.tags, gy.shape, Float32Array.from(gy.values)));
        for (const k of Object.keys(c.grads)) read.grads[k] = leaves[k].grad().permuteTo(c.grads[k].tags);
      }
      return read;
    });
  } catch (e) {
    if (e instanceof FucinaError && e.code === 'UnsupportedOnDevice') return e;
    throw new Error(`${c.name}: ${e.message}`);
  }
  try {
    assert.equal(kept.out.device, 'webgpu', `${c.name}: the output is on the device`);
    closeValues(`${c.name}: output`, Array.from(await kept.out.data()), nums(c.output));
    for (const [k, want] of Object.entries(c.extras))
      assert.deepEqual(Array.from(await kept.extras[k].data()).map(Number), want.values, `${c.name}: ${k}`);
    for (const [k, want] of Object.entries(c.grads))
      closeValues(`${c.name}: gradient of ${k}`, Array.from(await kept.grads[k].data()), want);
  } finally {
    for (const t of [kept.out, ...Object.values(kept.extras), ...Object.values(kept.grads)]) t.dispose();
  }
  return 'ok';
}

// The ops of ops.list without a parity case: a call made with the default device, whose results
// are compared between the devices.
const EXTRA = {
  dropout: (fc) => {
    const x = fc.variable(['r', 'c'], [3, 37], values(111, 1));
    const y = x.dropout(0.3, 11);
    y.mul(y).sumAll().backward();
    return [y, x.grad()];
  },
  multinomial: (fc) => [fc.constant(['r', 'c'], [2, 5], values(10, 2).map(Math.abs)).multinomial('c', 3, 5)],
  packRhs: (fc) => [fc.constant(['t', 'e'], [3, 32], values(96, 3)).dotPacked(fc.packRhs(fc.constant(['o', 'e'], [5, 32], values(160, 4)), 'e'))],
  dotPacked: (fc) => EXTRA.packRhs(fc),
  rmsNormMulDotPacked: (fc) => [fc.constant(['t', 'e'], [2, 32], values(64, 5))
    .rmsNormMulDotPacked(fc.constant(['e'], [32], values(32, 6)), fc.packRhs(fc.constant(['o', 'e'], [4, 32], values(128, 7)), 'e'))],
  splitSwiGluDotPacked: (fc) => [fc.constant(['t', 'e'], [2, 64], values(128, 8))
    .splitSwiGluDotPacked(fc.packRhs(fc.constant(['o', 'e'], [4, 32], values(128, 9)), 'e'))],
  gegluQuantDotPacked: (fc) => [fc.constant(['t', 'e'], [2, 64], values(128, 10))
    .gegluQuantDotPacked(fc.packRhs(fc.constant(['o', 'e'], [4, 32], values(128, 11)).quantize('q8_0', 'e'), 'e'))],
  prepareConv2dWeights: (fc) => {
    const w = fc.constant(['out', 'c', 'kh', 'kw'], [4, 3, 3, 3], values(108, 12));
    return [fc.constant(['n', 'c', 'h', 'w'], [1, 3, 6, 6], values(108, 13)).conv2dPrepared(fc.prepareConv2dWeights(w, { padding: [1, 1] }))];
  },
  conv2dPrepared: (fc) => EXTRA.prepareConv2dWeights(fc),
  conv2dPreparedRelu: (fc) => {
    const w = fc.constant(['out', 'c', 'kh', 'kw'], [4, 3, 3, 3], values(108, 14));
    return [fc.constant(['n', 'c', 'h', 'w'], [1, 3, 6, 6], values(108, 15)).conv2dPreparedRelu(fc.prepareConv2dWeights(w))];
  },
};

async function runExtra(fc, op) {
  fc.defaultDevice = 'cpu';
  const want = fc.scope(() => EXTRA[op](fc).map((t) => Array.from(t.toArray())));
  fc.defaultDevice = 'webgpu';
  let got;
  try {
    got = fc.scope(() => EXTRA[op](fc));
  } catch (e) {
    if (e instanceof FucinaError && e.code === 'UnsupportedOnDevice') return e;
    throw e;
  }
  try {
    for (let k = 0; k < got.length; ++k) {
      assert.equal(got[k].device, 'webgpu', `${op}: result ${k} is on the device`);
      closeValues(`${op}: result ${k}`, Array.from(await got[k].data()), { values: want[k] });
    }
  } finally {
    for (const t of got) t.dispose();
  }
  return 'ok';
}

const cases = new Map();  // op → its parity cases
for (const [, doc] of families()) for (const c of doc.cases) (cases.get(c.op) ?? cases.set(c.op, []).get(c.op)).push(c);

test('docs/webgpu-ops.md has one row for every op of ops.list, each no with its reason', () => {
  const rows = matrix();
  assert.deepEqual(opList.filter((op) => !rows.has(op)), [], 'ops of ops.list without a row');
  assert.deepEqual([...rows.keys()].filter((op) => !opList.includes(op)), [], 'rows for ops not in ops.list');
  for (const [op, { status, why }] of rows) if (status !== 'yes') assert.ok(why.length > 0, `${op}: ${status} says why`);
  assert.deepEqual(opList.filter((op) => !cases.has(op) && !EXTRA[op]), [], 'ops with neither a parity case nor an EXTRA call');
});

for (const variant of VARIANTS) {
  test(`webgpu (${variant}): every op does on the device what docs/webgpu-ops.md says, the parity fixtures replayed there`, async () => {
    const fc = await gpuEngine(variant);
    fc.defaultDevice = 'webgpu';
    const rows = matrix();
    for (const op of opList) {
      const outcomes = [];
      if (cases.has(op)) for (const c of cases.get(op)) outcomes.push([c.name, await replay(fc, c)]);
      else outcomes.push([op, await runExtra(fc, op)]);
      const ran = outcomes.filter(([, r]) => r === 'ok').length;
      const { status } = rows.get(op);
      const refused = outcomes.filter(([, r]) => r !== 'ok').map(([name, e]) => `${name}: ${e.message}`);
      if (status === 'yes') assert.deepEqual(refused, [], `${op} is yes in docs/webgpu-ops.md`);
      else if (status === 'no') assert.equal(ran, 0, `${op} is no in docs/webgpu-ops.md, yet ${ran} case(s) ran on the device`);
      else assert.ok(ran > 0 && refused.length > 0, `${op} is partly in docs/webgpu-ops.md: ${ran} ran, ${refused.length} refused`);
    }
    await fc.sync();
  });
}
