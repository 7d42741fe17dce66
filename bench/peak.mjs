// wasm SIMD128's multiply-add ceiling on one core, the bound any wasm kernel (ours or TF.js's
// XNNPACK) runs under: baseline SIMD128 has no fused multiply-add, so a multiply-add is two
// instructions. The same loop as bench/peak.h's native ones, written here as a hand-assembled
// module so that it needs no build and runs wherever the npm package does (Node, a browser page):
//   loop { acc[i] = acc[i] * mul + add  for 12 independent accumulators } while (--n)
//   node bench/peak.mjs [--json]
// It also measures relaxed SIMD's fused multiply-add where the engine validates it.
import { enableRelaxedSimd } from './protocol.mjs';

const CHAINS = 12;

// Unsigned LEB128, the encoding of every size and index in a wasm binary.
function leb(n) {
  const out = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n) byte |= 0x80;
    out.push(byte);
  } while (n);
  return out;
}
const section = (id, bytes) => [id, ...leb(bytes.length), ...bytes];
const f32x4 = (v) => [...new Uint8Array(new Float32Array([v, v, v, v]).buffer)];

// relaxed SIMD's f32x4.relaxed_madd (final opcode 0xfd 0x105): one instruction where the engine has
// it (Chrome >= 114, Node >= 22 or 20 with --experimental-wasm-relaxed-simd; docs/relaxed-simd.md).
const RELAXED_MADD = [0xfd, ...leb(0x105)];

function peakModuleBytes({ relaxed = false } = {}) {
  const SIMD = 0xfd, LOCAL_GET = 0x20, LOCAL_SET = 0x21, LOCAL_TEE = 0x22;
  const mulLocal = CHAINS + 1, addLocal = CHAINS + 2;  // local 0 is the iteration count
  const body = [1, ...leb(CHAINS + 2), 0x7b];  // one run of locals: 14 × v128
  const constant = (v, local) => body.push(SIMD, 0x0c, ...f32x4(v), LOCAL_SET, local);
  for (let i = 0; i < CHAINS; ++i) constant(i * 1e-3, 1 + i);
  constant(0.999999, mulLocal);
  constant(1e-7, addLocal);
  body.push(0x03, 0x40);  // loop (no result)
  for (let i = 0; i < CHAINS; ++i) {
    if (relaxed) body.push(LOCAL_GET, 1 + i, LOCAL_GET, mulLocal, LOCAL_GET, addLocal, ...RELAXED_MADD, LOCAL_SET, 1 + i);
    else  // f32x4.mul = 0xfd 0xe6 0x01, f32x4.add = 0xfd 0xe4 0x01
      body.push(LOCAL_GET, 1 + i, LOCAL_GET, mulLocal, SIMD, 0xe6, 0x01, LOCAL_GET, addLocal, SIMD, 0xe4, 0x01, LOCAL_SET, 1 + i);
  }
  body.push(LOCAL_GET, 0, 0x41, 1, 0x6b, LOCAL_TEE, 0, 0x0d, 0, 0x0b);  // n -= 1; br_if loop; end
  // The result sums lane 0 of every chain, so that no chain is dead code.
  for (let i = 0; i < CHAINS; ++i) {
    body.push(LOCAL_GET, 1 + i, SIMD, 0x1f, 0);  // f32x4.extract_lane 0
    if (i) body.push(0x92);  // f32.add
  }
  body.push(0x0b);
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, [1, 0x60, 1, 0x7f, 1, 0x7d]),  // type 0: (i32) -> f32
    ...section(3, [1, 0]),  // function 0 has type 0
    ...section(7, [1, 4, ...new TextEncoder().encode('peak'), 0x00, 0]),  // export "peak" = function 0
    ...section(10, [1, ...leb(body.length), ...body]),
  ]);
}

// CPU time of this process in ms where the host has it (Node), else wall time (a page).
const cpuMs = typeof process !== 'undefined' && process.cpuUsage
  ? () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; }
  : () => performance.now();

// GFLOP/s (a multiply and an add per lane counted as 2 FLOPs): the best of `tries` calls, since
// V8 runs a function from its baseline compiler first and swaps in optimized code in the background.
export function simd128MulAddPeakGflops({ iterations = 5_000_000, tries = 8, relaxed = false } = {}) {
  const { peak } = new WebAssembly.Instance(new WebAssembly.Module(peakModuleBytes({ relaxed }))).exports;
  let best = 0;
  for (let t = 0; t < tries; ++t) {
    const c0 = cpuMs();
    peak(iterations);
    const ms = cpuMs() - c0;
    best = Math.max(best, (2 * 4 * CHAINS * iterations) / (ms * 1e-3) * 1e-9);
  }
  return best;
}

/** Whether this engine takes relaxed SIMD's final opcodes (the check a relaxed variant must pass). */
export const relaxedSimdSupported = () => WebAssembly.validate(peakModuleBytes({ relaxed: true }));

const argv = globalThis.process?.argv ?? [];
if (import.meta.url === `file://${argv[1]}`) {
  await enableRelaxedSimd(relaxedSimdSupported);
  const gflops = simd128MulAddPeakGflops();
  const relaxed = relaxedSimdSupported() ? simd128MulAddPeakGflops({ relaxed: true }) : undefined;
  if (argv.includes('--json')) console.log(JSON.stringify({ impl: 'wasm-simd128', peak_gflops: gflops, relaxed_madd_gflops: relaxed }));
  else console.log(`wasm SIMD128 mul+add peak, one core (process CPU time): ${gflops.toFixed(1)} GFLOP/s; relaxed_madd: ` +
    (relaxed ? `${relaxed.toFixed(1)} GFLOP/s` : 'not supported by this engine'));
}
