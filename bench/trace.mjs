#!/usr/bin/env node
// Summarizes a region trace (Note [Region trace], src/fucina/exec/trace.h) per timed step:
// where the calling thread's time goes, op by op, and for each parallel region how long the
// other threads waited for it to start and for its last chunk.
//   FUCINA_BUILD_DIR=build/trace scripts/build -DFUCINA_TRACE=ON
//   FUCINA_TRACE_FILE=w1-2.tsv build/trace/bench/fucina_bench --workload w1 --threads 2 --steps 200
//   node bench/trace.mjs w1-2.tsv [--last N]      # N: the last N steps (default: all but the first 10%)
//   node bench/trace.mjs --compare w1-1a.tsv,w1-1b.tsv w1-2a.tsv,w1-2b.tsv
//     # per op, µs per step averaged over each side's traces (1 thread, 2 threads), the ratio, and
//     # the loss: what the second side takes beyond half the first's
import { readFileSync } from 'node:fs';

const kinds = { region: 1, regionEnd: 2, chunk: 3, chunkEnd: 4, claim: 5, claimEnd: 6, gemm: 7, gemmEnd: 8, step: 9 };

export function parseTrace(text) {
  const events = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const [ns, thread, kind, a, b, ...label] = line.split('\t');
    events.push({ ns: Number(ns), thread: Number(thread), kind: Number(kind), a: Number(a), b: Number(b), label: label.join('\t') });
  }
  return events.sort((x, y) => x.ns - y.ns);
}

// "fucina::optim::Sgd::update(fucina::ExecContext&, ...)::{lambda(long, long)#1}" -> "Sgd::update";
// an elementwise map names its op: "kernels::map Tensor::relu".
const plumbing = new Set(['forEachRowParallel', 'forEachRowPiece', 'forEachRow', 'StridedPlan', 'claimedFor', 'gemmAny']);
export function shortLabel(name) {
  const found = [];
  for (const m of name.matchAll(/((?:[A-Za-z_]\w*::)+[A-Za-z_]\w*)(?=[(<])/g)) {
    const parts = m[1].split('::');
    if (parts[0] !== 'fucina' || plumbing.has(parts.at(-1))) continue;
    const two = parts.slice(-2).join('::');
    if (!found.includes(two)) found.push(two);
  }
  return found.length ? found.join(' ') : name.slice(0, 60);
}

export function summarize(events, { last } = {}) {
  const stepsAt = events.filter((e) => e.kind === kinds.step);
  if (stepsAt.length < 2) throw new Error('trace.mjs: fewer than two timed steps in the trace (a bench run records them)');
  const caller = stepsAt[0].thread;
  const n = Math.min(last ?? Math.floor(stepsAt.length * 0.9), stepsAt.length - 1);
  const from = stepsAt[stepsAt.length - 1 - n].ns, to = stepsAt[stepsAt.length - 1].ns;
  const rows = new Map();  // label -> totals over the window (ns)
  const row = (label) => {
    if (!rows.has(label)) rows.set(label, { count: 0, ns: 0, regions: 0, late: 0, othersIdle: 0, callerIdle: 0 });
    return rows.get(label);
  };
  const claims = new Map();  // label|who -> { ns, units }
  const stack = [];  // the caller's open regions and GEMMs
  let region = null;  // the caller's outermost open pool region
  let outermostNs = 0;
  const busy = new Map(), chunkStart = new Map(), claimStart = new Map();
  for (const e of events) {
    if (e.ns < from || e.ns >= to) continue;
    if (e.thread === caller && (e.kind === kinds.region || e.kind === kinds.gemm)) {
      const label = e.kind === kinds.gemm ? `gemm ${e.a}x${e.b} ${e.label}`
        : stack.some((s) => s.gemm) ? stack.findLast((s) => s.gemm).label : shortLabel(e.label);
      stack.push({ ns: e.ns, label, gemm: e.kind === kinds.gemm });
      if (e.kind === kinds.region && !region) region = { ns: e.ns, label, firstOther: null, lastEnd: new Map() };
    } else if (e.thread === caller && (e.kind === kinds.regionEnd || e.kind === kinds.gemmEnd)) {
      const open = stack.pop();
      if (!open) continue;
      if (stack.length === 0) {
        const r = row(open.label);
        r.count += 1;
        r.ns += e.ns - open.ns;
        outermostNs += e.ns - open.ns;
      }
      if (region && e.kind === kinds.regionEnd && open.ns === region.ns) {
        if (region.lastEnd.size > 1 || region.firstOther !== null) {  // it ran on the pool
          const r = row(region.label);
          r.regions += 1;
          if (region.firstOther !== null) r.late += region.firstOther - region.ns;
          for (const [thread, end] of region.lastEnd) {
            if (thread === caller) r.callerIdle += e.ns - end;
            else r.othersIdle += e.ns - end;
          }
        }
        region = null;
      }
    } else if (e.kind === kinds.chunk) {
      chunkStart.set(e.thread, e.ns);
      if (region && e.thread !== caller && region.firstOther === null) region.firstOther = e.ns;
    } else if (e.kind === kinds.chunkEnd) {
      if (chunkStart.has(e.thread)) busy.set(e.thread, (busy.get(e.thread) ?? 0) + e.ns - chunkStart.get(e.thread));
      chunkStart.delete(e.thread);
      if (region) region.lastEnd.set(e.thread, e.ns);
    } else if (e.kind === kinds.claim) {
      claimStart.set(e.thread, { ns: e.ns, units: e.b - e.a, label: region?.label ?? '?' });
    } else if (e.kind === kinds.claimEnd && claimStart.has(e.thread)) {
      const c = claimStart.get(e.thread);
      claimStart.delete(e.thread);
      const key = `${c.label}|${e.thread === caller ? 'caller' : 'other'}`;
      const t = claims.get(key) ?? { ns: 0, units: 0 };
      t.ns += e.ns - c.ns;
      t.units += c.units;
      claims.set(key, t);
    }
  }
  const others = [...busy.entries()].filter(([t]) => t !== caller).reduce((s, [, v]) => s + v, 0);
  return { steps: n, caller, stepNs: (to - from) / n, outsideNs: (to - from - outermostNs) / n, othersBusyNs: others / n, rows, claims };
}

// Per label, µs per step averaged over each side's summaries; rows sorted by loss (b - a / 2).
export function compare(sidesA, sidesB) {
  const side = (summaries) => {
    const rows = new Map();
    const add = (label, ns) => rows.set(label, (rows.get(label) ?? 0) + ns / summaries.length / 1e3);
    for (const s of summaries) {
      for (const [label, r] of s.rows) add(label, r.ns / s.steps);
      add('(step)', s.stepNs);
      add('(outside regions and GEMMs)', s.outsideNs);
    }
    return rows;
  };
  const a = side(sidesA), b = side(sidesB);
  return [...new Set([...a.keys(), ...b.keys()])]
    .map((label) => ({ label, a: a.get(label) ?? 0, b: b.get(label) ?? 0 }))
    .map((r) => ({ ...r, loss: r.b - r.a / 2 }))
    .sort((x, y) => (x.label === '(step)' ? -1 : y.label === '(step)' ? 1 : y.loss - x.loss));
}

function main() {
  const args = process.argv.slice(2);
  if (args[0] === '--compare') {
    if (args.length !== 3) {
      console.error('usage: node bench/trace.mjs --compare A1.tsv[,A2.tsv...] B1.tsv[,B2.tsv...]');
      process.exit(2);
    }
    const load = (list) => list.split(',').map((f) => summarize(parseTrace(readFileSync(f, 'utf8'))));
    console.log('     A us     B us   A/B   loss (B - A/2)   what');
    for (const r of compare(load(args[1]), load(args[2])))
      console.log(`${r.a.toFixed(1).padStart(9)} ${r.b.toFixed(1).padStart(8)} ${(r.a / r.b).toFixed(2).padStart(5)}x ` +
                  `${r.loss.toFixed(1).padStart(8)}         ${r.label}`);
    return;
  }
  const file = args.find((a) => !a.startsWith('--'));
  const lastAt = args.indexOf('--last');
  if (!file) {
    console.error('usage: node bench/trace.mjs TRACE.tsv [--last N]');
    process.exit(2);
  }
  const s = summarize(parseTrace(readFileSync(file, 'utf8')), { last: lastAt >= 0 ? Number(args[lastAt + 1]) : undefined });
  const us = (ns) => (ns / s.steps / 1e3).toFixed(1).padStart(7);
  console.log(`${s.steps} steps: ${(s.stepNs / 1e3).toFixed(1)} us each; the caller outside every region and GEMM ` +
              `${(s.outsideNs / 1e3).toFixed(1)} us; other threads busy in chunks ${(s.othersBusyNs / 1e3).toFixed(1)} us`);
  console.log('per step, the caller\'s outermost regions and GEMMs: times, us, and where pool regions waited ' +
              '(others late = until another thread started; others / caller idle = after its last chunk)');
  console.log(' times      us   others late  others idle  caller idle  what');
  for (const [label, r] of [...s.rows].sort((a, b) => b[1].ns - a[1].ns)) {
    const pool = r.regions ? `${us(r.late)}      ${us(r.othersIdle)}      ${us(r.callerIdle)}` : ' '.repeat(37);
    console.log(`${(r.count / s.steps).toFixed(1).padStart(5)} ${us(r.ns)}   ${pool}  ${label}`);
  }
  if (s.claims.size) {
    console.log('claimed units (owner-first claims), us per unit: caller / other threads');
    const labels = [...new Set([...s.claims.keys()].map((k) => k.split('|')[0]))];
    for (const label of labels) {
      const c = s.claims.get(`${label}|caller`), o = s.claims.get(`${label}|other`);
      const per = (t) => (t ? `${(t.ns / t.units / 1e3).toFixed(2)} us x ${(t.units / s.steps).toFixed(1)}` : '-');
      console.log(`  ${label}: ${per(c)} / ${per(o)}`);
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) main();
