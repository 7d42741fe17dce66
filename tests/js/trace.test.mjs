// bench/trace.mjs: the per-step summary of a region trace (Note [Region trace]), on a trace
// written by hand so every figure is known.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compare, parseTrace, shortLabel, summarize } from '../../bench/trace.mjs';

const sgd = 'fucina::optim::Sgd::update(fucina::ExecContext&, unsigned long, long, float*, float const*, long)::{lambda(long, long)#1}';
const relu = 'fucina::kernels::forEachRowParallel<2ul, fucina::kernels::map<1ul, fucina::Tensor::relu(fucina::ExecContext&) const::{lambda(auto:1)#1}>(fucina::ExecContext&)::{lambda(long, long)#1}';

test('shortLabel names the op a region runs', () => {
  assert.equal(shortLabel(sgd), 'Sgd::update');
  assert.equal(shortLabel(relu), 'kernels::map Tensor::relu');
  assert.equal(shortLabel('int'), 'int');
});

test('summarize: per step, the caller\'s regions and GEMMs, waits at each end, and claimed units', () => {
  // Two steps (caller 0, worker 1), each: a GEMM whose claimed region the worker joins 2 µs late
  // and leaves 5 µs before the caller, then a serial region, then 10 µs outside any region.
  const rows = ['# header'];
  const ev = (ns, thread, kind, a = 0, b = 0, label = '') => rows.push([ns, thread, kind, a, b, label].join('\t'));
  for (const t0 of [0, 100000]) {
    ev(t0, 0, 9);
    ev(t0 + 1000, 0, 7, 128, 512, 'k=784 ta=0 tb=1');
    ev(t0 + 2000, 0, 1, 2, 1, 'fucina::claimedFor<...>::{lambda(long, long)#1}');
    ev(t0 + 2500, 0, 3, 0);
    ev(t0 + 3000, 0, 5, 0, 2);
    ev(t0 + 4000, 1, 3, 1);
    ev(t0 + 4500, 1, 5, 2, 4);
    ev(t0 + 40000, 1, 6);
    ev(t0 + 41000, 1, 4, 1);
    ev(t0 + 43000, 0, 6);
    ev(t0 + 45000, 0, 4, 0);
    ev(t0 + 46000, 0, 2);
    ev(t0 + 47000, 0, 8);
    ev(t0 + 50000, 0, 1, 100, 1000, sgd);
    ev(t0 + 90000, 0, 2);
  }
  ev(200000, 0, 9);
  const s = summarize(parseTrace(rows.join('\n')), { last: 2 });
  assert.equal(s.steps, 2);
  assert.equal(s.caller, 0);
  assert.equal(s.stepNs, 100000);
  assert.equal(s.outsideNs, 100000 - 46000 - 40000);  // the GEMM's 46 µs and SGD's 40 µs
  assert.equal(s.othersBusyNs, 37000);  // the worker's chunk, 4.0 to 41.0 µs
  const gemm = s.rows.get('gemm 128x512 k=784 ta=0 tb=1');
  assert.deepEqual(gemm, { count: 2, ns: 92000, regions: 2, late: 4000, othersIdle: 10000, callerIdle: 2000 });
  assert.deepEqual(s.rows.get('Sgd::update'), { count: 2, ns: 80000, regions: 0, late: 0, othersIdle: 0, callerIdle: 0 });
  assert.deepEqual(s.claims.get('gemm 128x512 k=784 ta=0 tb=1|caller'), { ns: 80000, units: 4 });
  assert.deepEqual(s.claims.get('gemm 128x512 k=784 ta=0 tb=1|other'), { ns: 71000, units: 4 });
});

test('summarize refuses a trace with no timed steps', () => {
  assert.throws(() => summarize(parseTrace('0\t0\t1\t1\t1\tx\n')), /fewer than two timed steps/);
});

test('compare: per op, each side averaged over its traces, sorted by what the second side loses', () => {
  const summary = (stepNs, rows) => ({ steps: 2, stepNs, outsideNs: 0, rows: new Map(rows.map(([l, ns]) => [l, { ns: ns * 2 }])) });
  const one = [summary(10000, [['gemm', 8000], ['relu', 2000]]), summary(12000, [['gemm', 10000], ['relu', 2000]])];
  const two = [summary(8000, [['gemm', 5000], ['relu', 3000]])];
  const rows = compare(one, two);
  assert.equal(rows[0].label, '(step)');
  assert.deepEqual(rows[0], { label: '(step)', a: 11, b: 8, loss: 2.5 });
  assert.deepEqual(rows.find((r) => r.label === 'relu'), { label: 'relu', a: 2, b: 3, loss: 2 });
  assert.deepEqual(rows.find((r) => r.label === 'gemm'), { label: 'gemm', a: 9, b: 5, loss: 0.5 });
  assert.ok(rows.indexOf(rows.find((r) => r.label === 'relu')) < rows.indexOf(rows.find((r) => r.label === 'gemm')));
});
