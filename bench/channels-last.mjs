// Channels first against channels last, with and without XNNPACK (bench/README.md, "Channels last
// and XNNPACK"): W2 and W6 natively, channels first (w2, w6-b*) and last (w2-nhwc, w6-b*-nhwc),
// the last also on a build without XNNPACK (build/native-noxnn, configured with
// -DFUCINA_XNNPACK=OFF and built here when missing); one fresh process per run, every
// configuration once per round, on 1 and 2 threads; prints the median of the per-step medians.
//   node bench/channels-last.mjs [--rounds 7]
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const args = process.argv.slice(2);
const at = args.indexOf('--rounds');
const rounds = at >= 0 ? Number(args[at + 1]) : 7;
const builds = { xnnpack: 'build/native', 'no XNNPACK': 'build/native-noxnn' };
const bench = (build) => `${build}/bench/fucina_bench`;

const run = (cmd, argv) => {
  const p = spawnSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (p.status !== 0) throw new Error(`${cmd} ${argv.join(' ')} failed`);
  return p.stdout;
};
if (!existsSync(bench(builds['no XNNPACK']))) {
  run('cmake', ['-S', '.', '-B', builds['no XNNPACK'], '-G', 'Ninja', '-DFUCINA_XNNPACK=OFF', '-DBUILD_TESTING=OFF']);
  run('cmake', ['--build', builds['no XNNPACK'], '--target', 'fucina_bench']);
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const rows = new Map(), loads = [];
let isa = '';
for (let r = 0; r < rounds; ++r) {
  for (const threads of [1, 2]) {
    for (const w of ['w2', 'w2-nhwc', 'w6-b1', 'w6-b1-nhwc', 'w6-b64', 'w6-b64-nhwc']) {
      // The two builds differ only in channels-last forwards.
      for (const [name, build] of Object.entries(builds)) {
        if (!w.endsWith('-nhwc') && name !== 'xnnpack') continue;
        const j = JSON.parse(run(bench(build), ['--workload', w, '--threads', String(threads), '--json']));
        const key = `${w} ${threads} thr${w.endsWith('-nhwc') ? `, ${name}` : ''}`;
        rows.set(key, [...(rows.get(key) ?? []), j.median_ms]);
        loads.push(j.load_avg_1m);
        isa = j.isa;
      }
    }
  }
}
console.log(`${rounds} rounds, ISA ${isa}, 1-minute load ${Math.min(...loads)}-${Math.max(...loads)}; median ms a step (min-max)`);
for (const [key, v] of rows)
  console.log(`${key.padEnd(32)} ${median(v).toFixed(3).padStart(8)}  (${Math.min(...v).toFixed(3)}-${Math.max(...v).toFixed(3)})`);
