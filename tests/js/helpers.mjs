// Shared by the node:test suites: they import the built package by its name ("fucina"), as a
// user would, and run every behaviour case on each wasm variant.
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { init, FucinaError, relaxedSimdSupported } from 'fucina';

// Node 20 compiles relaxed SIMD behind a V8 flag (on by default from Node 22): turned on here,
// before any engine compiles, so the relaxed-simd variant runs in every suite.
if (!relaxedSimdSupported()) setFlagsFromString('--experimental-wasm-relaxed-simd');
assert.ok(relaxedSimdSupported(), 'this Node cannot run the relaxed-simd variant');

export const VARIANTS = ['threaded-simd', 'simd', 'relaxed-simd'];

const engines = new Map();
/** One engine per variant (and backend) per test file (loading a module costs ~100 ms). */
export async function engine(variant, backend = 'cpu') {
  const key = `${variant}/${backend}`;
  if (!engines.has(key)) engines.set(key, await init({ variant, backend, threads: variant === 'threaded-simd' ? 2 : undefined }));
  return engines.get(key);
}

/** Asserts that fn throws a FucinaError with this code, and returns it. */
export function throwsCode(fn, code) {
  let caught;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  assert.ok(caught, `expected a FucinaError ${code}, nothing was thrown`);
  assert.ok(caught instanceof FucinaError, `expected a FucinaError ${code}, got ${caught?.name}: ${caught?.message}`);
  assert.equal(caught.code, code, caught.message);
  return caught;
}

export const values = (t) => Array.from(t.toArray());

/** |got - want| <= atol + rtol·|want| element by element (f32 arithmetic against a float64
 * reference of the same weights); reports the worst element. */
export function assertClose(got, want, what, { atol = 1e-4, rtol = 1e-3 } = {}) {
  assert.equal(got.length, want.length, `${what}: ${got.length} values, expected ${want.length}`);
  let worst = -1, excess = 0;
  for (let i = 0; i < want.length; ++i) {
    const e = Math.abs(got[i] - want[i]) - (atol + rtol * Math.abs(want[i]));
    if (!(e <= excess)) [worst, excess] = [i, Number.isNaN(e) ? Infinity : e];
  }
  assert.ok(worst < 0, `${what}: element ${worst} is ${got[worst]}, expected ${want[worst]} (beyond ${atol} + ${rtol}·|want|)`);
}

export { init, FucinaError, assert };
