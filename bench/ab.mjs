// Before/after: the same workloads on two checkouts of fucina, each already built (scripts/build
// and scripts/build-wasm in each), one fresh process per run, the two checkouts alternated
// (A B, then B A, ...) so that drift of the machine falls on both; prints each side's median of
// the per-step medians and after/before. For a change's "no speed lost" figures:
//   node bench/ab.mjs --before ../old-checkout --after . [--rounds 3]
//                     [--configs native,wasm-st,wasm-rx,wasm-mt] [--workloads w1,w2,w3,w4-1024]
// native: build/native/bench/fucina_bench on 1 thread; wasm-st: the simd variant; wasm-rx: the
// relaxed-simd variant; wasm-mt: the threaded variant on 2 threads (bench/bench.mjs, run in its own checkout so that it loads that
// checkout's dist/).
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const trees = { before: resolve(option('--before', '.')), after: resolve(option('--after', '.')) };
const rounds = Number(option('--rounds', '3'));
const configs = option('--configs', 'native,wasm-st,wasm-mt').split(',');
const workloads = option('--workloads', 'w1,w2,w3,w4-1024').split(',');

const commands = {
  native: (w) => ['build/native/bench/fucina_bench', ['--workload', w, '--threads', '1', '--json']],
  'wasm-st': (w) => [process.execPath, ['bench/bench.mjs', '--workload', w, '--variant', 'simd', '--threads', '1', '--json']],
  'wasm-rx': (w) => [process.execPath, ['bench/bench.mjs', '--workload', w, '--variant', 'relaxed-simd', '--threads', '1', '--json']],
  'wasm-mt': (w) => [process.execPath, ['bench/bench.mjs', '--workload', w, '--variant', 'threaded-simd', '--threads', '2', '--json']],
};
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

for (const config of configs) {
  if (!commands[config]) throw new Error(`ab: unknown config ${config} (native, wasm-st, wasm-rx, wasm-mt)`);
  for (const w of workloads) {
    const runs = { before: [], after: [] };
    for (let r = 0; r < rounds; ++r) {
      for (const side of r % 2 === 0 ? ['before', 'after'] : ['after', 'before']) {
        const [cmd, argv] = commands[config](w);
        const p = spawnSync(cmd, argv, { cwd: trees[side], encoding: 'utf8' });
        const line = (p.stdout ?? '').split('\n').filter((l) => l.startsWith('{')).pop();
        if (!line) throw new Error(`ab: ${config} ${w} on ${trees[side]} printed no result: ${p.stderr ?? p.error}`);
        runs[side].push(JSON.parse(line));
      }
    }
    const b = median(runs.before.map((j) => j.median_ms)), a = median(runs.after.map((j) => j.median_ms));
    const loads = [...runs.before, ...runs.after].map((j) => j.load_avg_1m);
    const isa = runs.after[0].isa ? `  ${runs.after[0].isa}` : '';
    console.log(`${config.padEnd(8)} ${w.padEnd(8)} before ${b.toFixed(3).padStart(9)} ms  after ${a.toFixed(3).padStart(9)} ms` +
      `  after/before ${(a / b).toFixed(3)}  load ${Math.min(...loads).toFixed(2)}-${Math.max(...loads).toFixed(2)}${isa}`);
  }
}
