// Scale (bench/README.md): W3's training step at d_model 128/256/512 × 2/4/8 blocks, natively and in
// wasm, one thread, each in a fresh process through bench/run.mjs; prints time per predicted token
// against FLOPs per token as a Markdown table and draws them, log-log, beside each build's roofline
// (one core's multiply-add ceiling: the dispatched ISA's FMA peak, SIMD128's mul+add) in an SVG.
//   node bench/scale.mjs [--quick] [--rounds N] [--configs fucina-native:1,fucina-wasm-st:1] [--svg bench/scale.svg]
//                        [--from bench/scale.json]
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SCALE_WORKLOADS, gflopPerStep, scaleShape } from './protocol.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const option = (name, fallback) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : fallback);
const configs = option('--configs', 'fucina-native:1,fucina-wasm-st:1');
const svgPath = option('--svg', join(here, 'scale.svg'));
const TOKENS = 16 * 128;  // predicted tokens per step
const mflopPerToken = (w) => gflopPerStep(w) * 1e3 / TOKENS;
const usPerToken = (r) => r.median_ms * 1e3 / TOKENS;

// The run's JSON records (run.mjs --json) are kept beside the plot (scale.json), and --from FILE
// redraws the table and the plot from such a file without running anything.
let raw;
if (argv.includes('--from')) {
  raw = readFileSync(option('--from'), 'utf8');
} else {
  const p = spawnSync(process.execPath, [join(here, 'run.mjs'), '--json', '--workloads', SCALE_WORKLOADS.join(','),
    '--rounds', option('--rounds', '1'), '--configs', configs, ...(argv.includes('--quick') ? ['--quick'] : [])],
  { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 26 });
  if (p.status !== 0) process.exit(p.status ?? 1);
  raw = p.stdout;
  writeFileSync(svgPath.replace(/\.svg$/, '') + '.json', raw);
}
const records = raw.trim().split('\n').map((l) => JSON.parse(l)).filter((r) => r.round === 'median');
const peaks = records.find((r) => r.peaks).peaks;
const runs = records.filter((r) => r.workload && !r.error);

// ---- the table: one row per shape, a column group per configuration
const impls = [...new Set(runs.map((r) => `${r.impl}:${r.threads}`))];
const get = (w, c) => runs.find((r) => r.workload === w && `${r.impl}:${r.threads}` === c);
console.log(`one core's ceilings (GFLOP/s): ${peaks.isa} ${peaks.native?.toFixed(1)}, wasm SIMD128 ${peaks.simd128?.toFixed(1)}\n`);
console.log(`| d_model | blocks | MFLOP / token | ${impls.map((c) => `${c} µs / token (GFLOP/s, of peak)`).join(' | ')} |`);
console.log(`|---|---|---|${impls.map(() => '---|').join('')}`);
for (const w of SCALE_WORKLOADS) {
  const { d, layers } = scaleShape(w);
  const cells = impls.map((c) => {
    const r = get(w, c);
    return r ? `${usPerToken(r).toFixed(1)} (${r.gflops_median.toFixed(1)}, ${(100 * r.peak_fraction).toFixed(0)}%)` : '';
  });
  console.log(`| ${d} | ${layers} | ${mflopPerToken(w).toFixed(1)} | ${cells.join(' | ')} |`);
}

// ---- the plot: x MFLOP per token, y µs per token, both log10; a roofline is y = x / peak
const W = 640, H = 420, L = 70, R = 20, T = 30, B = 50;
const xs = SCALE_WORKLOADS.map(mflopPerToken);
const ys = runs.map(usPerToken);
const ceilings = [['native', peaks.native, '#1f77b4'], ['wasm SIMD128', peaks.simd128, '#d62728']].filter(([, v]) => v);
const lx = (v) => Math.log10(v);
// A ceiling's time per token in µs: MFLOP / (GFLOP/s) is ms·1e-3... = MFLOP / GFLOP/s × 1e3 µs.
const ceilingUs = (mflop, gflops) => mflop / gflops * 1e3;
const xLo = Math.min(...xs) / 1.5, xHi = Math.max(...xs) * 1.5;
const yAll = [...ys, ...ceilings.flatMap(([, g]) => [ceilingUs(xLo, g), ceilingUs(xHi, g)])];
const yLo = Math.min(...yAll) / 1.5, yHi = Math.max(...yAll) * 1.5;
const px = (v) => L + (lx(v) - lx(xLo)) / (lx(xHi) - lx(xLo)) * (W - L - R);
const py = (v) => H - B - (lx(v) - lx(yLo)) / (lx(yHi) - lx(yLo)) * (H - T - B);
const ticks = (lo, hi) => {  // 1, 2, 5 × 10^k inside [lo, hi]
  const out = [];
  for (let e = Math.floor(lx(lo)); e <= Math.ceil(lx(hi)); ++e)
    for (const m of [1, 2, 5]) if (m * 10 ** e >= lo && m * 10 ** e <= hi) out.push(m * 10 ** e);
  return out;
};
const svg = [`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
  `<rect width="${W}" height="${H}" fill="white"/>`,
  `<text x="${W / 2}" y="18" text-anchor="middle">W3 at scale, one thread: time per token against work per token (log-log)</text>`];
for (const v of ticks(xLo, xHi))
  svg.push(`<line x1="${px(v)}" y1="${T}" x2="${px(v)}" y2="${H - B}" stroke="#ddd"/>`,
    `<text x="${px(v)}" y="${H - B + 16}" text-anchor="middle">${v}</text>`);
for (const v of ticks(yLo, yHi))
  svg.push(`<line x1="${L}" y1="${py(v)}" x2="${W - R}" y2="${py(v)}" stroke="#ddd"/>`,
    `<text x="${L - 6}" y="${py(v) + 4}" text-anchor="end">${v}</text>`);
svg.push(`<text x="${(L + W - R) / 2}" y="${H - 12}" text-anchor="middle">MFLOP per predicted token</text>`,
  `<text x="16" y="${(T + H - B) / 2}" text-anchor="middle" transform="rotate(-90 16 ${(T + H - B) / 2})">µs per token</text>`);
for (const [name, g, color] of ceilings)  // labelled under the line's left end, away from the points
  svg.push(`<line x1="${px(xLo)}" y1="${py(ceilingUs(xLo, g))}" x2="${px(xHi)}" y2="${py(ceilingUs(xHi, g))}" stroke="${color}" stroke-dasharray="5,4"/>`,
    `<text x="${px(xLo * 1.15)}" y="${py(ceilingUs(xLo * 1.15, g)) + 18}" fill="${color}">${name} ceiling ${g.toFixed(0)} GFLOP/s</text>`);
const colors = { 'fucina-native': '#1f77b4', 'fucina-wasm-st': '#d62728', 'fucina-wasm-mt': '#ff7f0e' };
impls.forEach((c, i) => {
  const color = colors[c.split(':')[0]] ?? '#2ca02c';
  for (const w of SCALE_WORKLOADS) {
    const r = get(w, c);
    if (!r) continue;
    const { d, layers } = scaleShape(w);
    const x = mflopPerToken(w), y = usPerToken(r);
    svg.push(`<circle cx="${px(x)}" cy="${py(y)}" r="4" fill="${color}"><title>${c} d${d} l${layers}: ${y.toFixed(1)} µs/token, ` +
      `${(100 * r.peak_fraction).toFixed(0)}% of peak</title></circle>`);
  }
  svg.push(`<circle cx="${L + 16}" cy="${T + 14 + 18 * i}" r="4" fill="${color}"/>`,
    `<text x="${L + 26}" y="${T + 18 + 18 * i}">${c.replace(':', ', ')} thread</text>`);
});
svg.push('</svg>');
writeFileSync(svgPath, `${svg.join('\n')}\n`);
console.log(`\nplot: ${svgPath}`);
