// Shared by the node:test suites: they import the built package by its name ("fucina"), as a
// user would, and run every behaviour case on both wasm variants.
import assert from 'node:assert/strict';
import { init, FucinaError } from 'fucina';

export const VARIANTS = ['threaded-simd', 'simd'];

const engines = new Map();
/** One engine per variant (and backend) per test file (loading a module costs ~100 ms). */
export async function engine(variant, backend = 'cpu') {
  const key = `${variant}/${backend}`;
  if (!engines.has(key)) engines.set(key, await init({ variant, backend, threads: variant === 'simd' ? undefined : 2 }));
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

export { init, FucinaError, assert };
