// The webgpu device's side of the op coverage matrix (docs/webgpu-ops.md), shared by the Node suite
// (webgpu_parity.test.mjs) and the page that replays it in Chromium (tests/browser/
// webgpu_parity.html): each op's parity cases, or its EXTRA call, run with the device as the
// default, and judge() holds the outcomes to the matrix's row. Imports nothing of Node's.
import { values } from './seeded.mjs';
import { OPS, makeInput, nums, closeValues, check } from './parity_cases.mjs';

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
    if (e?.code === 'UnsupportedOnDevice') return e;
    throw new Error(`${c.name}: ${e.message}`);
  }
  try {
    check(kept.out.device === 'webgpu', `${c.name}: the output is on the device`);
    closeValues(`${c.name}: output`, Array.from(await kept.out.data()), nums(c.output));
    for (const [k, want] of Object.entries(c.extras))
      check(JSON.stringify(Array.from(await kept.extras[k].data()).map(Number)) === JSON.stringify(want.values), `${c.name}: ${k}`);
    for (const [k, want] of Object.entries(c.grads))
      closeValues(`${c.name}: gradient of ${k}`, Array.from(await kept.grads[k].data()), want);
  } finally {
    for (const t of [kept.out, ...Object.values(kept.extras), ...Object.values(kept.grads)]) t.dispose();
  }
  return 'ok';
}

// The ops of ops.list without a parity case: a call made with the default device, whose results
// are compared between the devices.
export const EXTRA = {
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
    if (e?.code === 'UnsupportedOnDevice') return e;
    throw e;
  }
  try {
    for (let k = 0; k < got.length; ++k) {
      check(got[k].device === 'webgpu', `${op}: result ${k} is on the device`);
      closeValues(`${op}: result ${k}`, Array.from(await got[k].data()), { values: want[k] });
    }
  } finally {
    for (const t of got) t.dispose();
  }
  return 'ok';
}


/** op → its parity cases, from the fixture families' documents. */
export function casesByOp(docs) {
  const cases = new Map();
  for (const doc of docs) for (const c of doc.cases) (cases.get(c.op) ?? cases.set(c.op, []).get(c.op)).push(c);
  return cases;
}

/** Each op's outcomes on the webgpu device (fc's default from then on): its cases' names, each
 * with 'ok' or the UnsupportedOnDevice message; an op without cases runs its EXTRA call. */
export async function outcomes(fc, ops, cases) {
  fc.defaultDevice = 'webgpu';
  const out = {};
  for (const op of ops) {
    const list = [];
    if (cases.has(op)) for (const c of cases.get(op)) list.push([c.name, await replay(fc, c)]);
    else list.push([op, await runExtra(fc, op)]);
    out[op] = list.map(([name, r]) => [name, r === 'ok' ? 'ok' : r.message]);
  }
  return out;
}

/** What is wrong with an op's outcomes for its row's status in docs/webgpu-ops.md, or null. */
export function judge(op, status, list) {
  const ran = list.filter(([, r]) => r === 'ok').length;
  const refused = list.filter(([, r]) => r !== 'ok').map(([name, m]) => `${name}: ${m}`);
  if (status === 'yes') return refused.length === 0 ? null : `${op} is yes in docs/webgpu-ops.md, yet ${refused.join('; ')}`;
  if (status === 'no') return ran === 0 ? null : `${op} is no in docs/webgpu-ops.md, yet ${ran} case(s) ran on the device`;
  return ran > 0 && refused.length > 0 ? null : `${op} is partly in docs/webgpu-ops.md: ${ran} ran, ${refused.length} refused`;
}
