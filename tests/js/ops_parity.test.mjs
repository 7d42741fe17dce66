// PyTorch parity through the facade: every case of tests/fixtures/parity/<family>.json (written by
// tests/fixtures/parity/generate.py with python3-torch, run by hand) replayed on both wasm
// variants and on the reference backend, as tests/cpp/parity_ops_tests.cpp replays them
// natively: the output and every input gradient within 1e-5 + 1e-4·|want| of PyTorch's float64
// values, constant extras (topK's indices) equal.
import { describe, test } from 'node:test';
import { VARIANTS, engine, values, assert } from './helpers.mjs';
import { OPS, makeInput, nums, closeValues } from './parity_cases.mjs';
import { families } from './parity_families.mjs';

function assertClose(what, got, want) {
  assert.deepEqual(got.tags.length, want.tags.length, `${what}: rank`);
  closeValues(what, values(got.permuteTo(want.tags)), want);
}

// Both variants on the cpu backend, and the simd variant on the reference backend (its scalar
// kernels, as parity_ops_tests.cpp replays them natively).
const CONFIGS = [...VARIANTS.map((v) => [v, 'cpu']), ['simd', 'reference']];
for (const [variant, backend] of CONFIGS) {
  describe(backend === 'cpu' ? variant : `${variant}, ${backend} backend`, () => {
    for (const [, doc] of families()) {
      test(`PyTorch parity: ${doc.family} (${doc.cases.length} cases)`, async () => {
        const fc = await engine(variant, backend);
        for (const c of doc.cases) {
          assert.ok(OPS[c.op], `${c.name}: op ${c.op} has no entry in ops_parity.test.mjs`);
          fc.scope(() => {
            const leaves = {}, views = {};
            for (const [k, e] of Object.entries(c.inputs)) [leaves[k], views[k]] = makeInput(fc, nums(e));
            const r = OPS[c.op](views, c.args, fc);
            const [out, extras] = Array.isArray(r) ? r : [r, {}];
            assertClose(`${c.name}: output`, out, nums(c.output));
            for (const [k, want] of Object.entries(c.extras))
              assert.deepEqual(values(extras[k].permuteTo(want.tags)), want.values, `${c.name}: ${k}`);
            if (Object.keys(c.grads).length === 0) return;
            const gy = c.grad_output;
            out.backward(fc.constant(gy.tags, gy.shape, Float32Array.from(gy.values)));
            for (const [k, want] of Object.entries(c.grads)) assertClose(`${c.name}: gradient of ${k}`, leaves[k].grad(), want);
          });
        }
      });
    }
  });
}

test('every fixture op has a JS entry', () => {
  for (const [file, doc] of families())
    for (const c of doc.cases)
      assert.ok(OPS[c.op], `${file}: ${c.name} uses op ${c.op}, which has no entry here`);
});
