// Before/after in one process: both checkouts' wasm packages (each built by scripts/build-wasm)
// loaded side by side in one Node process, their steps alternated in rounds (A B, then B A, ...),
// so that the host's drift falls on both alike. These shared VMs drift by up to 40% within
// minutes (W2 simd: 35.5 then 24.9 ms in consecutive fresh processes, 2026-12-07), more than most
// changes are worth; bench/ab.mjs's fresh processes per run cannot tell such a change from it.
//   node bench/ab-paired.mjs --before ../old-checkout --after . [--variant simd|relaxed-simd]
//                            [--workloads w2,w4-1024] [--rounds 20] [--steps 8] [--warmup 150]
// Prints each side's median of its rounds' medians and the median of the rounds' after/before
// ratios (with their range). One-thread variants only: two threaded modules would each keep a
// pool of workers on the same two cores.
import { resolve } from 'node:path';
import { enableRelaxedSimd } from './protocol.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const trees = [resolve(option('--before', '.')), resolve(option('--after', '.'))];
const variant = option('--variant', 'simd');
if (!['simd', 'relaxed-simd'].includes(variant)) throw new Error('ab-paired: --variant is simd or relaxed-simd');
const workloads = option('--workloads', 'w2,w4-1024').split(',');
const [rounds, steps, warmup] = ['--rounds', '--steps', '--warmup'].map((f, i) => Number(option(f, [20, 8, 150][i])));

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const sides = [];
for (const tree of trees) {
  const { init, relaxedSimdSupported } = await import(`${tree}/dist/index.node.mjs`);
  if (variant === 'relaxed-simd') await enableRelaxedSimd(relaxedSimdSupported);
  sides.push({ fc: await init({ variant }), setUp: (await import(`${tree}/bench/workloads.mjs`)).setUp });
}

for (const w of workloads) {
  const step = sides.map(({ fc, setUp }) => setUp(fc, w).step);
  for (let i = 0; i < warmup; ++i) step.forEach((s) => s());
  const times = [[], []], ratios = [];
  for (let r = 0; r < rounds; ++r) {
    const round = [0, 0];
    for (const side of r % 2 === 0 ? [0, 1] : [1, 0]) {
      const ts = [];
      for (let i = 0; i < steps; ++i) {
        const t0 = performance.now();
        step[side]();
        ts.push(performance.now() - t0);
      }
      round[side] = median(ts);
      times[side].push(round[side]);
    }
    ratios.push(round[1] / round[0]);
  }
  const [b, a] = times.map(median);
  console.log(`${variant.padEnd(12)} ${w.padEnd(8)} before ${b.toFixed(3).padStart(9)} ms  after ${a.toFixed(3).padStart(9)} ms` +
    `  after/before ${median(ratios).toFixed(3)} (rounds ${Math.min(...ratios).toFixed(3)}-${Math.max(...ratios).toFixed(3)})`);
}
process.exit(0);
