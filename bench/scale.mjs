// Scale (bench/README.md): W3's training step at d_model 128/256/512 × 2/4/8 blocks, natively and in
// wasm, one thread, each in a fresh process through bench/run.mjs; prints time per predicted token
// against FLOPs per token as a Markdown table and draws them, log-log, beside each build's roofline
// (one core's multiply-add ceiling: the dispatched ISA's FMA peak, SIMD128's mul+add) in an SVG.
//   node bench/scale.mjs [--quick] [--rounds N] [--configs fucina-native:1,fucina-wasm-st:1] [--svg bench/scale.svg]
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SCALE_WORKLOADS, gflopPerStep, scaleShape } from './protocol.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const option = (name, fallback) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : fallback);
const configs = option('--configs', 'fucina-native:1,fucina-wasm-st:1');
const svgPath = option('--svg', join(here, 'scale.svg'));
const TOKENS = 16 * 128;  // predicted tokens per step

const p = spawnSync(process.execPath, [join(here, 'run.mjs'), '--json', '--workloads', SCALE_WORKLOADS.join(','),
  '--rounds', option('--rounds', '1'), '--configs', configs, ...(argv.includes('--quick') ? ['--quick'] : [])],
{ encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 26 });
if (p.status !== 0) process.exit(p.status ?? 1);
const records = p.stdout.trim().split('\n').map((l) => JSON.parse(l)).filter((r) => r.round === 'median');
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
    return r ? `${(r.median_ms * 1e3 / TOKENS).toFixed(1)} (${r.gflops_median.toFixed(1)}, ${(100 * r.peak_fraction).toFixed(0)}%)` : '';
  });
  console.log(`| ${d} | ${layers} | ${(gflopPerStep(w) * 1e3 / TOKENS).toFixed(1)} | ${cells.join(' | ')} |`);
}

// ---- the plot: x MFLOP per token, y µs per token, both log10; a roofline is y = x / peak
const W = 640, H = 420, L = 70, R = 20, T = 30, B = 50;
const xs = SCALE_WORKLOADS.map((w) => gflopPerStep(w) * 1e3 / TOKENS);
const ys = runs.map((r) => r.median_ms * 1e3 / TOKENS);
const ceilings = [['native', peaks.native, '#1f77b4'], ['wasm SIMD128', peaks.simd128, '#d62728']].filter(([, v]) => v);
const lx = (v) => Math.log10(v);
const [x0, x1] = [Math.floor(lx(Math.min(...xs))), Math.ceil(lx(Math.max(...xs)))];
const ceilingYs = ceilings.flatMap(([, g]) => [xs[0] / g, xs.at(-1) / g].map((v) => v * 1e3 / 1e3));
const [y0, y1] = [Math.floor(lx(Math.min(...ys, ...ceilingYs))), Math.ceil(lx(Math.max(...ys, ...ceilingYs)))];
const px = (v) => L + (lx(v) - x0) / (x1 - x0) * (W - L - R);
const py = (v) => H - B - (lx(v) - y0) / (y1 - y0) * (H - T - B);
const svg = [`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
  `<rect width="${W}" height="${H}" fill="white"/>`,
  `<text x="${W / 2}" y="18" text-anchor="middle">W3 at scale, one thread: time per token against work per token (log-log)</text>`];
for (let e = x0; e <= x1; ++e)
  svg.push(`<line x1="${px(10 ** e)}" y1="${T}" x2="${px(10 ** e)}" y2="${H - B}" stroke="#ddd"/>`,
    `<text x="${px(10 ** e)}" y="${H - B + 16}" text-anchor="middle">${10 ** e}</text>`);
for (let e = y0; e <= y1; ++e)
  svg.push(`<line x1="${L}" y1="${py(10 ** e)}" x2="${W - R}" y2="${py(10 ** e)}" stroke="#ddd"/>`,
    `<text x="${L - 6}" y="${py(10 ** e) + 4}" text-anchor="end">${10 ** e}</text>`);
svg.push(`<text x="${(L + W - R) / 2}" y="${H - 12}" text-anchor="middle">MFLOP per predicted token</text>`,
  `<text x="16" y="${(T + H - B) / 2}" text-anchor="middle" transform="rotate(-90 16 ${(T + H - B) / 2})">µs per token</text>`);
// MFLOP / (GFLOP/s) = ms·1e-3... in µs: MFLOP·1e6 / (GFLOP/s·1e9) s = MFLOP / GFLOP/s · 1e3 µs
for (const [name, g, color] of ceilings) {
  const a = 10 ** x0, b = 10 ** x1;
  svg.push(`<line x1="${px(a)}" y1="${py(a / g * 1e3)}" x2="${px(b)}" y2="${py(b / g * 1e3)}" stroke="${color}" stroke-dasharray="5,4"/>`,
    `<text x="${px(b) - 4}" y="${py(b / g * 1e3) - 6}" text-anchor="end" fill="${color}">${name} ceiling ${g.toFixed(0)} GFLOP/s</text>`);
}
const colors = { 'fucina-native': '#1f77b4', 'fucina-wasm-st': '#d62728', 'fucina-wasm-mt': '#ff7f0e' };
impls.forEach((c, i) => {
  const color = colors[c.split(':')[0]] ?? '#2ca02c';
  for (const w of SCALE_WORKLOADS) {
    const r = get(w, c);
    if (!r) continue;
    const { d, layers } = scaleShape(w);
    const x = gflopPerStep(w) * 1e3 / TOKENS, y = r.median_ms * 1e3 / TOKENS;
    svg.push(`<circle cx="${px(x)}" cy="${py(y)}" r="4" fill="${color}"><title>${c} d${d} l${layers}: ${y.toFixed(1)} µs/token, ` +
      `${(100 * r.peak_fraction).toFixed(0)}% of peak</title></circle>`);
  }
  svg.push(`<circle cx="${L + 16}" cy="${T + 14 + 18 * i}" r="4" fill="${color}"/>`,
    `<text x="${L + 26}" y="${T + 18 + 18 * i}">${c.replace(':', ', ')} thread</text>`);
});
svg.push('</svg>');
writeFileSync(svgPath, `${svg.join('\n')}\n`);
console.log(`\nplot: ${svgPath}`);
