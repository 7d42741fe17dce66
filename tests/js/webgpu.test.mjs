// The webgpu device in Node (gpu.mjs: Dawn over SwiftShader). Every case runs the same
// computation on the cpu device and on the webgpu device and compares.
import { test } from 'node:test';
import { init, FucinaError, assert, throwsCode, VARIANTS } from './helpers.mjs';
import { values } from './seeded.mjs';
import { gpuEngine, gpuWith } from './gpu.mjs';

function close(actual, expected, tol, what) {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < actual.length; ++i) {
    if ((Number.isNaN(expected[i]) && Number.isNaN(actual[i])) || actual[i] === expected[i]) continue;
    const d = Math.abs(actual[i] - expected[i]);
    assert.ok(d <= tol * (1 + Math.abs(expected[i])), `${what}[${i}]: ${actual[i]} vs ${expected[i]} (cpu)`);
  }
}

// Runs build(fc, device) with fc.defaultDevice = device: returns { name: Tensor } whose values are
// compared between the devices.
async function onBoth(fc, build) {
  const out = {};
  for (const device of ['cpu', 'webgpu']) {
    fc.defaultDevice = device;
    const made = build(fc);
    out[device] = {};
    for (const [k, t] of Object.entries(made)) {
      assert.equal(t.device, device, `${k} is on ${device}`);
      out[device][k] = Array.from(await t.data());
    }
  }
  fc.defaultDevice = 'webgpu';
  return out;
}

function compare(out, tol) {
  for (const k of Object.keys(out.cpu)) close(out.webgpu[k], out.cpu[k], tol, k);
}

// f32 neighbours of v (toward +inf with dir 1, toward -inf with -1).
function nextF32(v, dir) {
  const b = new DataView(new ArrayBuffer(4));
  b.setFloat32(0, v);
  const u = b.getUint32(0);
  if (v === 0) return dir * 1.401298464324817e-45;
  b.setUint32(0, (v > 0) === (dir > 0) ? u + 1 : u - 1);
  return b.getFloat32(0);
}

// Blocks of 32 that reach the q8_0 quantizer's edges: x/d exactly halfway (ties go away from
// zero) and a float to either side, with d = 1 and with an f16 d of odd mantissa; amax/127 on a
// tie between two f16 scales and its neighbours; NaN and infinities; zeros, subnormals, f16
// subnormal scales, scales past f16's range; an odd count of blocks.
function q8Blocks() {
  const out = [];
  const block = (head, seed, scale) => {
    const b = head.slice(0, 32);
    values(32 - b.length, seed).forEach((v) => b.push(v * scale));
    out.push(...b);
  };
  const halfway = (d) => {
    const b = [127 * d];
    for (const k of [0, 1, 2, 7, 63, 126]) {
      const t = Math.fround((k + 0.5) * d);
      b.push(t, nextF32(t, 1), nextF32(t, -1), -t);
    }
    return b;
  };
  block(halfway(1), 1, 100);
  block(halfway(1.0009765625), 2, 100);  // 1 + 2^-10
  block(halfway(0.0009765625 * 3), 3, 0.3);
  for (const dir of [0, 1, -1]) {
    const a = Math.fround(127 * (1 + 2 ** -11));  // amax/127 halfway between two f16 values
    block([dir === 0 ? a : nextF32(a, dir), 3.7], 4 + dir, 100);
  }
  block([NaN, 5, -2.5, NaN], 8, 4);
  block([Infinity, 1, -1e30], 9, 1);
  block([-Infinity, NaN], 10, 1);
  block(new Array(32).fill(0), 11, 0);
  block([1e-40, -3e-39], 12, 1e-39);  // subnormal: d = 0
  block([1e-5], 13, 1e-6);  // d an f16 subnormal
  block([3e38, -1e38], 14, 1e37);  // amax/127 past f16's range: d saturates
  return out;
}

// Weights with elements at s/2 and either side, s = mean|w| (the rest set so that it is near 1).
function ternaryTies() {
  const rest = values(28, 5).map((v) => 0.5 + Math.abs(v));
  const s = Math.fround(rest.reduce((a, b) => a + b, 0) / 30);
  const t = Math.fround(s / 2);
  return [t, nextF32(t, 1), -nextF32(t, -1), -t, ...rest.map(Math.fround)];
}

// The n × n matrix with w on its diagonal, row-major.
function diagonal(w) {
  const m = new Array(w.length * w.length).fill(0);
  w.forEach((v, i) => (m[i * w.length + i] = v));
  return m;
}

for (const variant of VARIANTS) {
  test(`webgpu (${variant}): init makes the device the default; data() reads a device tensor back`, async () => {
    const fc = await gpuEngine(variant);
    assert.equal(fc.defaultDevice, 'webgpu');
    const t = fc.constant(['i'], [5], [1, 2, 3, 4, 5]);
    assert.equal(t.device, 'webgpu');
    assert.deepEqual(Array.from(await t.data()), [1, 2, 3, 4, 5]);
    throwsCode(() => t.toArray(), 'DeviceReadIsAsync');
    throwsCode(() => t.sum('i').item(), 'DeviceReadIsAsync');
    const odd = fc.full(['a', 'b'], [3, 7], -2.5);
    assert.deepEqual(Array.from(await odd.data()), new Array(21).fill(-2.5));
    const empty = fc.zeros(['a'], [0]);
    assert.deepEqual(Array.from(await empty.data()), []);
    const ints = fc.constant(['i'], [3], [7, -1, 2], 'i32');
    // Seeded draws are made on the host: the same values on both devices.
    const u = fc.uniform(['i'], [50], -1, 1, 7), nrm = fc.normal(['i'], [50], 0, 2, 8);
    fc.defaultDevice = 'cpu';
    assert.deepEqual(Array.from(await u.data()), Array.from(fc.uniform(['i'], [50], -1, 1, 7).toArray()));
    assert.deepEqual(Array.from(await nrm.data()), Array.from(fc.normal(['i'], [50], 0, 2, 8).toArray()));
    fc.defaultDevice = 'webgpu';
    assert.deepEqual(Array.from(await ints.data()), [7, -1, 2]);
    await fc.sync();
  });

  test(`webgpu (${variant}): to() moves between devices; what cannot move says why`, async () => {
    const fc = await gpuEngine(variant);
    fc.defaultDevice = 'cpu';
    const host = fc.constant(['r', 'c'], [2, 3], [1, 2, 3, 4, 5, 6]);
    const view = host.permuteTo(['c', 'r']);  // not contiguous: uploaded in its logical order
    fc.defaultDevice = 'webgpu';
    const dev = view.to('webgpu');
    assert.equal(dev.device, 'webgpu');
    assert.deepEqual(dev.tags, ['c', 'r']);
    assert.deepEqual(Array.from(await dev.data()), [1, 4, 2, 5, 3, 6]);
    assert.deepEqual(Array.from(await dev.to('webgpu').data()), [1, 4, 2, 5, 3, 6]);
    throwsCode(() => dev.to('cpu'), 'DeviceReadIsAsync');
    const w = fc.variable(['i'], [2], [1, 2]);
    fc.defaultDevice = 'cpu';
    throwsCode(() => fc.variable(['i'], [2], [1, 2]).to('webgpu'), 'UnsupportedOnDevice');
    fc.defaultDevice = 'webgpu';
    assert.equal(w.device, 'webgpu');
    assert.equal(w.requiresGrad, true);
  });

  test(`webgpu (${variant}): ops on two devices are DeviceMismatch; an op without a kernel UnsupportedOnDevice`, async () => {
    const fc = await gpuEngine(variant);
    const d = fc.constant(['i'], [3], [1, 2, 3]);
    fc.defaultDevice = 'cpu';
    const c = fc.constant(['i'], [3], [1, 2, 3]);
    fc.defaultDevice = 'webgpu';
    throwsCode(() => d.add(c), 'DeviceMismatch');
    throwsCode(() => c.add(d), 'DeviceMismatch');
    throwsCode(() => d.maskedSelect(fc.constant(['i'], [3], [1, 0, 1], 'u8'), 'k'), 'UnsupportedOnDevice');  // docs/webgpu-ops.md lists what has no kernel
    const wide = d.to('f64');  // f64 is held as two words there: copies and conversions to and from f32
    assert.deepEqual(Array.from(await wide.data()), [1, 2, 3]);
    throwsCode(() => wide.to('i32'), 'UnsupportedOnDevice');
    const e = throwsCode(() => fc.constant(['i'], [3], [1, 2, 3], 'f64').add(d), 'UnsupportedOnDevice');
    assert.match(e.message, /webgpu/);
  });

  test(`webgpu (${variant}): elementwise forward and VJP match the cpu, broadcast and strided`, async () => {
    const fc = await gpuEngine(variant);
    const out = await onBoth(fc, (fc) => {
      const x = fc.variable(['b', 'i'], [3, 37], values(111, 1));
      const y = fc.variable(['i'], [37], values(37, 2));
      const xt = x.permuteTo(['i', 'b']);  // a strided operand
      const z = xt.mul(y).add(x.div(y.abs().add(fc.scalar(0.5))))
        .sub(x.gelu().mul(y.tanh())).add(x.geluErf().scale(0.5))
        .add(x.relu().mul(x.sigmoid()))
        .add(x.exp().scale(0.25))
        .maximum(x.abs().add(fc.scalar(0.1)).sqrt().neg().minimum(y.silu()));
      const loss = z.sum('b').sum('i');
      loss.backward();
      return { z, loss, gx: x.grad(), gy: y.grad() };
    });
    compare(out, 2e-5);
  });

  test(`webgpu (${variant}): softmax and log-softmax rows and their VJPs match the cpu, short and long rows`, async () => {
    const fc = await gpuEngine(variant);
    for (const n of [1, 7, 300]) {
      const out = await onBoth(fc, (fc) => {
        const x = fc.variable(['r', 'c'], [5, n], values(5 * n, n).map((v) => 4 * v));
        const w = fc.constant(['r', 'c'], [5, n], values(5 * n, n + 1));
        const s = x.softmax('c');
        const ls = x.permuteTo(['c', 'r']).logSoftmax('c');  // made contiguous first
        s.mul(w).add(ls.mul(w)).sum('c').sum('r').backward();
        return { s, ls, gx: x.grad() };
      });
      compare(out, 2e-5);
    }
  });

  test(`webgpu (${variant}): layer and RMS normalization and their VJPs match the cpu`, async () => {
    const fc = await gpuEngine(variant);
    for (const n of [1, 9, 300]) {
      const out = await onBoth(fc, (fc) => {
        const x = fc.variable(['r', 'd'], [6, n], values(6 * n, 3 * n).map((v) => 3 * v + 1));
        const w = fc.variable(['d'], [n], values(n, 5));
        const b = fc.variable(['d'], [n], values(n, 6));
        const g = fc.constant(['r', 'd'], [6, n], values(6 * n, 7));
        const ln = x.layerNorm('d', { weight: w, bias: b, eps: 1e-5 });
        const rms = x.permuteTo(['d', 'r']).rmsNorm('d');  // normalized over the axis wherever it is
        ln.mul(g).add(rms.mul(g)).sum('d').sum('r').backward();
        return { ln, rms, gx: x.grad(), gw: w.grad(), gb: b.grad() };
      });
      compare(out, 5e-5);
    }
  });

  test(`webgpu (${variant}): the embedding and its scatter-add gradient match the cpu; a bad index is reported by the next read`, async () => {
    const fc = await gpuEngine(variant);
    const ids = [3, 0, 10, 3, 3, 7, 1, 10, 0, 5, 2, 3];  // repeats accumulate in the gradient
    const out = await onBoth(fc, (fc) => {
      const table = fc.variable(['v', 'd'], [11, 5], values(55, 1));
      const mid = fc.variable(['a', 'v', 'd'], [2, 11, 3], values(66, 2));  // the axis not first
      const idx = fc.constant(['b', 't'], [3, 4], ids, 'i64');
      const e = table.indexSelect('v', idx);
      const m = mid.indexSelect('v', idx);
      const w = fc.constant(['b', 't', 'd'], [3, 4, 5], values(60, 3));
      e.mul(w).sumAll().add(m.mul(m).sumAll()).backward();
      return { e, m, gt: table.grad(), gm: mid.grad() };
    });
    compare(out, 1e-5);
    const table = fc.constant(['v', 'd'], [11, 5], values(55, 1));
    const bad = table.indexSelect('v', fc.constant(['t'], [3], [1, 11, 2], 'i64'));  // checked on the device
    await assert.rejects(bad.data(), (e) => e instanceof FucinaError && e.code === 'IndexOutOfRange' && /\[0, 11\)/.test(e.message));
    const negative = table.indexSelect('v', fc.constant(['t'], [2], [0, -1], 'i64'));
    await assert.rejects(fc.sync(), (e) => e.code === 'IndexOutOfRange' && /position 1/.test(e.message));
    assert.deepEqual(Array.from(await table.indexSelect('v', fc.constant(['t'], [1], [4], 'i64')).data()),
      Array.from((await table.data()).slice(20, 25)), 'reported once: the next read is clean');
    negative.dispose();
  });

  test(`webgpu (${variant}): cross-entropy and NLL over labels match the cpu; a bad label is reported by the next read`, async () => {
    const fc = await gpuEngine(variant);
    const labels = [3, 0, 6, 6, 1, 2, 5, 0];
    for (const [reduction, smoothing] of [['mean', 0], ['sum', 0.1], ['none', 0.2]]) {
      const out = await onBoth(fc, (fc) => {
        const x = fc.variable(['c', 'n'], [7, 8], values(56, 11).map((v) => 3 * v));  // classes first: moved last
        const y64 = fc.constant(['n'], [8], labels, 'i64');
        const y32 = fc.constant(['n'], [8], labels, 'i32');
        const ce = x.crossEntropy(y64, 'c', { reduction, labelSmoothing: smoothing });
        const nll = x.logSoftmax('c').nllLoss(y32, 'c', reduction);
        const total = reduction === 'none' ? ce.add(nll).sum('n') : ce.add(nll);
        total.backward();
        return { ce, nll, gx: x.grad() };
      });
      compare(out, 2e-5);
    }
    const x = fc.constant(['n', 'c'], [2, 3], [1, 2, 3, 4, 5, 6]);
    const bad = x.crossEntropy(fc.constant(['n'], [2], [2, 3], 'i64'), 'c');
    await assert.rejects(bad.data(), (e) => e.code === 'IndexOutOfRange' && /\[0, 3\)/.test(e.message));
  });

  test(`webgpu (${variant}): unfold and fold match the cpu: strides, padding, dilation, batches, and their VJPs`, async () => {
    const fc = await gpuEngine(variant);
    const out = await onBoth(fc, (fc) => {
      const img = fc.variable(['n', 'c', 'h', 'w'], [2, 3, 7, 9], values(378, 95));
      const opts = { stride: [2, 1], padding: [1, 2], dilation: [1, 2] };
      const cols = img.unfold([3, 2], opts);
      const plain = img.permuteTo(['n', 'c', 'w', 'h']).unfold([2, 2]);  // strided images: made contiguous
      const back = cols.fold([7, 9], [3, 2], opts);                       // the adjoint: overlaps summed
      const g = fc.constant(cols.tags, cols.shape, values(cols.shape.reduce((a, b) => a * b, 1), 96));
      cols.mul(g).sumAll().add(plain.sumAll()).add(back.mul(back).sumAll()).backward();
      return { cols, plain, back, gimg: img.grad() };
    });
    compare(out, 2e-5);
  });

  test(`webgpu (${variant}): bceLoss matches the cpu; a value that is not a probability is reported by the next read`, async () => {
    const fc = await gpuEngine(variant);
    const out = await onBoth(fc, (fc) => {
      const p = fc.variable(['n', 'c'], [5, 41], values(205, 15).map((v) => 0.5 + 0.49 * v));
      const t = fc.constant(['c', 'n'], [41, 5], values(205, 16).map((v) => (v > 0 ? 1 : 0)));  // aligned by name
      const edges = fc.constant(['i'], [4], [0, 1, 0, 1]).bceLoss(fc.constant(['i'], [4], [0, 1, 1, 0]), 'none');
      const mean = p.bceLoss(t), sum = p.permuteTo(['c', 'n']).bceLoss(t, 'sum');
      mean.add(sum.scale(0.01)).backward();
      return { mean, sum, edges, gp: p.grad() };
    });
    compare(out, 2e-5);
    const bad = fc.constant(['i'], [5], [0.5, 0.2, 1.5, NaN, -1]).bceLoss(fc.constant(['i'], [5], [1, 0, 1, 0, 1]));
    await assert.rejects(bad.data(), (e) => e.code === 'InvalidArgument' && /outside \[0, 1\]/.test(e.message) && /position 2/.test(e.message));
    await fc.sync();  // reported once
  });

  test(`webgpu (${variant}): products match the cpu: batched, transposed operands, odd sizes`, async () => {
    const fc = await gpuEngine(variant);
    // k a multiple of 4 (rows loaded four k at a time) and not; views whose rows start off and on a multiple of 4.
    for (const [m, k, n] of [[1, 1, 1], [7, 19, 33], [65, 70, 130], [3, 129, 2], [5, 36, 67], [66, 72, 3]]) {
      const out = await onBoth(fc, (fc) => {
        const a = fc.variable(['b', 'm', 'k'], [2, m, k], values(2 * m * k, m + 10 * k));
        const w = fc.variable(['n', 'k'], [n, k], values(n * k, n));  // k inner: read transposed
        const bias = fc.variable(['n'], [n], values(n, 3));
        const y = a.addDot(w, 'k', bias);
        const yt = a.permuteTo(['k', 'b', 'm']).dot(w.permuteTo(['k', 'n']), 'k');
        const batched = a.dot(a, 'k');  // b and m are batch axes: one dot product per (b, m)
        const inner = k > 8 ? a.narrow('k', 4, k - 8).dot(w.narrow('k', 4, k - 8), 'k') : a.dot(w, 'k');
        const shifted = k > 8 ? a.narrow('k', 1, k - 5).dot(w.narrow('k', 3, k - 5), 'k') : a.dot(w, 'k');
        y.mul(yt).sum('n').sum('m').sum('b').backward();
        return { y, yt, batched, inner, shifted, ga: a.grad(), gw: w.grad(), gbias: bias.grad() };
      });
      compare(out, 1e-4);
    }
  });

  test(`webgpu (${variant}): sums over any axes match the cpu, long and short lines`, async () => {
    const fc = await gpuEngine(variant);
    const out = await onBoth(fc, (fc) => {
      const x = fc.constant(['a', 'b', 'c'], [5, 300, 3], values(4500, 9));
      return {
        a: x.sum('a'), b: x.sum('b'), c: x.sum('c'), ab: x.sum('a').sum('b'),
        mean: x.mean('b'), view: x.permuteTo(['c', 'a', 'b']).sum('b'),
      };
    });
    compare(out, 1e-5);
  });

  test(`webgpu (${variant}): extrema, products and scans along an axis match the cpu: long rows, ties, NaN, size 1, empty`, async () => {
    const fc = await gpuEngine(variant);
    const out = await onBoth(fc, (fc) => {
      const raw = values(3 * 700, 31).map((v) => Math.round(v * 8) / 8);  // coarse: many ties
      raw[5] = NaN;  // row 0 of the strided view below: NaN wins, at its first position
      raw[700 + 400] = raw[700 + 10] = 9;  // row 1 by the last axis: the first of two maxima
      const x = fc.variable(['r', 'c'], [3, 700], raw);
      const xt = fc.variable(['c', 'r'], [700, 3], values(2100, 32)).permuteTo(['r', 'c']);  // strided rows
      const one = fc.variable(['r', 'c'], [2, 1], [3, -4]);
      const short = fc.variable(['r', 'c'], [4, 3], values(12, 33));
      const [mx, mxi] = [x.max('c'), x.argmax('c')];
      const p = short.prod('c').sumAll().add(one.prod('c').sumAll());
      const cs = xt.cumsum('c'), csr = xt.cumsum('r');
      cs.mul(cs).sumAll().add(p.sumAll()).add(csr.sumAll()).add(xt.logsumexp('c').sumAll()).backward();  // max's and min's VJPs scatter (not yet on the device)
      return {
        mx, mxi: mxi.to('f32'), mn: x.min('r'), lse: xt.logsumexp('c'), p, cs, csr,
        gxt: xt.grad(), gshort: short.grad(), gone: one.grad(),
        empty: fc.zeros(['r', 'c'], [0, 5]).max('c'), emptyScan: fc.zeros(['r', 'c'], [2, 0]).cumsum('c'),
      };
    });
    compare(out, 2e-5);
  });

  test(`webgpu (${variant}): gated units and rotary rows and their VJPs match the cpu, long rows and strided`, async () => {
    const fc = await gpuEngine(variant);
    const out = await onBoth(fc, (fc) => {
      const x = fc.variable(['b', 't', 'd'], [2, 5, 600], values(6000, 41));
      const gate = fc.variable(['d', 't', 'b'], [600, 5, 2], values(6000, 42)).permuteTo(['b', 't', 'd']);
      const sw = x.swiglu('d'), gg = x.gated(gate, 'gelu'), st = x.situ(gate, 2.5);
      const r = x.rope({ base: 500 }), ra = x.permuteTo(['t', 'b', 'd']).rope({ mode: 'interleaved', offset: 7 });
      const w = fc.variable(['d'], [600], values(600, 43));
      const angles = values(7 * 300, 45).map((v) => 3 * v);
      const cos = fc.constant(['t', 'd'], [7, 300], angles.map(Math.cos)), sin = fc.constant(['t', 'd'], [7, 300], angles.map(Math.sin));
      const fused = x.rmsNormMulRopeHalfPrepared(w, cos, sin, 'd', { position: 't', offset: 2 });
      const g = fc.constant(['b', 't', 'd'], [2, 5, 600], values(6000, 44));
      sw.sumAll().add(gg.mul(g).sumAll()).add(st.mul(g).sumAll()).add(r.mul(g).sumAll())
        .add(ra.permuteTo(['b', 't', 'd']).mul(g).sumAll()).add(fused.mul(g).sumAll()).backward();
      return { sw, gg, st, r, ra, fused, gx: x.grad(), ggate: gate.grad(), gw: w.grad() };
    });
    compare(out, 5e-5);
  });

  test(`webgpu (${variant}): gathers and scatters along an axis match the cpu: repeated indices, i32 indices, strided tables`, async () => {
    const fc = await gpuEngine(variant);
    const ids = Array.from({ length: 3 * 40 }, (_, i) => (i * 7) % 9);  // every target hit several times
    const out = await onBoth(fc, (fc) => {
      const table = fc.variable(['c', 'r'], [9, 3], values(27, 51)).permuteTo(['r', 'c']);  // strided
      const ix64 = fc.constant(['r', 'c'], [3, 40], ids, 'i64');
      const ix32 = fc.constant(['r', 'c'], [3, 40], ids, 'i32');
      const g = table.gather('c', ix64), t = table.takeAlongAxis('c', ix32);
      const src = fc.variable(['r', 'c'], [3, 40], values(120, 52));
      const added = fc.zeros(['r', 'c'], [3, 9]).scatterAdd('c', ix64, src);  // repeats add in order
      const written = fc.zeros(['r', 'c'], [3, 9]).scatter('c', ix32, src);  // the last write wins
      const w = fc.constant(['r', 'c'], [3, 40], values(120, 53));
      g.mul(w).sumAll().add(t.sumAll()).add(added.mul(added).sumAll()).add(written.sumAll()).backward();
      return { g, t, added, written, gtable: table.grad(), gsrc: src.grad() };
    });
    compare(out, 2e-5);
  });

  test(`webgpu (${variant}): truth values, bands and u8 masks match the cpu: NaN, i64 pairs, long and empty rows, odd offsets`, async () => {
    const fc = await gpuEngine(variant);
    const raw = values(3 * 301, 61).map((v, i) => (i % 17 === 0 ? NaN : i % 13 === 0 ? Infinity : Math.round(v * 4) / 4));
    const big = [2 ** 40 + 1, -(2 ** 40), 5, -1, 2 ** 40, 7];
    const out = await onBoth(fc, (fc) => {
      const x = fc.constant(['r', 'c'], [3, 301], raw);
      const y = fc.constant(['c', 'r'], [301, 3], values(903, 62).map((v) => Math.round(v * 4) / 4)).permuteTo(['r', 'c']);
      const p = fc.constant(['i'], [6], big, 'i64'), q = fc.constant(['i'], [6], [2 ** 40, -(2 ** 40), 5, 0, 2 ** 40 + 1, 7], 'i64');
      const lt = x.compare(y, 'lt'), nan = x.isnan();
      const mask = x.compare(y, 'ge');
      const a = fc.variable(['r', 'c'], [3, 301], values(903, 63));
      const picked = fc.where(mask, a, a.neg());  // a u8 mask, widened on the device
      picked.sumAll().backward();
      return {
        lt: lt.to('f32'), nan: nan.to('f32'), ne: x.compare(y, 'ne').to('f32'), fin: x.isfinite().to('f32'),
        xor: lt.logicalXor(nan).to('f32'), anyRows: lt.any('c').to('f32'), allRows: x.isfinite().all('c').to('f32'),
        emptyAny: fc.zeros(['r', 'c'], [4, 0]).isnan().any('c').to('f32'), emptyAll: fc.zeros(['r', 'c'], [4, 0]).isnan().all('c').to('f32'),
        i64: fc.stack([p.compare(q, 'lt'), p.compare(q, 'eq'), p.compare(q, 'ge')], 'k').to('f32'),
        band: fc.bandMask('i', 'j', 7, 9, 2, 1).to('f32'), tril: a.tril('r', 'c', 1), triu: a.permuteTo(['c', 'r']).triu('r', 'c', -1),
        odd: nan.narrow('c', 3, 50).to('f32'), picked, ga: a.grad(),
      };
    });
    compare(out, 0);
    const odd = fc.constant(['c'], [9], [0, 1, NaN, 3, NaN, NaN, 6, 7, NaN]).isnan().narrow('c', 1, 6);
    assert.deepEqual(Array.from(await odd.data()), [0, 1, 0, 1, 1, 0], 'a u8 view from an odd byte');
  });

  test(`webgpu (${variant}): conversions among f32, i32, i64, u8, f16 and bf16 match the cpu bit for bit, strided and odd`, async () => {
    const fc = await gpuEngine(variant);
    const edge = [0, -0, 1, -1.5, 65504, 65520, 1e6, -1e6, 5.96e-8, 2.98e-8, 8.94e-8, 6.1e-5, 1 / 3, 1e-40,
      Infinity, -Infinity, NaN, 255.9, 256, -3.7, 2 ** 31, -(2 ** 31) - 512, 3e9, -3e9, 1 + 2 ** -8, 1 + 3 * 2 ** -9, 0.1];
    const out = await onBoth(fc, (fc) => {
      const x = fc.constant(['a', 'b'], [3, 9], edge);
      const xt = x.permuteTo(['b', 'a']);  // strided
      const h = xt.to('f16'), bh = xt.to('bf16');
      const r = {};
      for (const t of ['f32', 'i32', 'i64', 'u8']) { r[`f16_${t}`] = h.to(t).to('f32'); r[`bf16_${t}`] = bh.to(t).to('f32'); }
      for (const t of ['i32', 'i64', 'u8']) r[`x_${t}`] = xt.to(t).to('f32');
      r.i64_i32 = fc.constant(['i'], [4], [2 ** 40, -(2 ** 40), -7, 2 ** 31 - 1], 'i64').to('i32').to('f32');
      r.i64_f32 = fc.constant(['i'], [9], [2 ** 40 + 1, 2 ** 24 + 1, -(2 ** 24 + 3), 2 ** 32 - 3, -(2 ** 32 - 3), 2 ** 52 + 1,
        -(2 ** 50 + 3), 2 ** 53 - 1, 2 ** 25 + 3], 'i64').to('f32');  // one rounding, to nearest even
      r.u8_f16 = xt.to('u8').to('f16').to('f32');
      r.odd = h.narrow('b', 1, 5).to('f32');  // a 16-bit view from the second half of a word
      r.filled = fc.full(['i'], [5], 2.5, 'f16').to('f32');
      return r;
    });
    compare(out, 0);
    assert.deepEqual(Array.from(await fc.constant(['i'], [3], [1.5, -2, 65504]).to('f16').data()), [1.5, -2, 65504]);
    assert.deepEqual(Array.from(await fc.constant(['i'], [2], [1.5, -2]).to('bf16').data()), [1.5, -2]);
  });

  test(`webgpu (${variant}): 16-bit trainable leaves train on the device as on the cpu, with f32 gradients`, async () => {
    const fc = await gpuEngine(variant);
    for (const dtype of ['f16', 'bf16']) {
      const out = await onBoth(fc, (fc) => {
        const w = fc.variable(['o', 'k'], [5, 37], values(5 * 37, 81), dtype);  // the right operand of a product
        const b = fc.variable(['o'], [5], values(5, 82), dtype);                 // through to('f32')
        const x = fc.constant(['m', 'k'], [3, 37], values(3 * 37, 83));
        const r = {};
        const adam = fc.optim.adamw([w, b], { lr: 0.05, weightDecay: 0.1 });
        for (let step = 0; step < 2; ++step) {
          adam.zeroGrad();
          const y = x.dot(w, 'k').add(b.to('f32'));
          y.mul(y).sumAll().backward();
          r[`gw${step}`] = w.grad().scale(1);  // a copy: zeroGrad reuses the gradient
          r[`gb${step}`] = b.grad().scale(1);
          r[`norm${step}`] = fc.optim.clipGradNormTensor([w, b], 1.0);
          adam.step();
        }
        adam.dispose();
        const sgd = fc.optim.sgd([w], { lr: 0.1, momentum: 0.9 });
        sgd.step();
        sgd.dispose();
        assert.equal(w.dtype, dtype);
        assert.equal(r.gw0.dtype, 'f32');
        return { ...r, w, b };
      });
      compare(out, dtype === 'f16' ? 2e-3 : 8e-3);  // an update may round the other way to 16 bits
    }
  });

  test(`webgpu (${variant}): products with f16, bf16 and q8_0 weights read them in place, forward and VJP, as the cpu`, async () => {
    const fc = await gpuEngine(variant);
    for (const [m, k, n] of [[3, 64, 5], [1, 96, 1], [7, 160, 13]]) {
      const out = await onBoth(fc, (fc) => {
        const dev = fc.defaultDevice;
        fc.defaultDevice = 'cpu';  // the weights are made on the host and moved, as a model's are
        const w = fc.constant(['o', 'k'], [n, k], values(n * k, k + 1));
        const typed = { f16: w.to('f16'), bf16: w.to('bf16'), q8: w.quantize('q8_0', 'k') };
        fc.defaultDevice = dev;
        const x = fc.variable(['m', 'k'], [m, k], values(m * k, k + 2));
        const r = {};
        let total = fc.scalar(0);
        for (const [name, t] of Object.entries(typed)) {
          const wd = t.to(dev);
          r[name] = x.dot(wd, 'k');
          r[`${name}_t`] = x.dot(wd.permuteTo(['k', 'o']), 'k');  // the same weight, strided
          r[`${name}_f32`] = wd.to('f32');  // dequantized on the device
          total = total.add(r[name].mul(r[name]).sumAll());
        }
        total.backward();
        r.gx = x.grad();
        return r;
      });
      compare(out, 2e-5);
    }
  });

  test(`webgpu (${variant}): l2 rows, cumprod, upsampling and the channel affine match the cpu, forward and VJP`, async () => {
    const fc = await gpuEngine(variant);
    const out = await onBoth(fc, (fc) => {
      const raw = values(4 * 300, 71);
      for (let i = 300; i < 600; ++i) raw[i] = 0;  // a zero row: eps wins, the gradient passes as is
      raw[905] = 0;  // a zero inside a product
      const x = fc.variable(['r', 'd'], [4, 300], raw);
      const img = fc.variable(['n', 'c', 'h', 'w'], [2, 3, 5, 7], values(210, 72));
      const scale = fc.variable(['c'], [3], [0.5, -2, 1.5]), shift = fc.variable(['c'], [3], [1, 0, -1]);
      const g = fc.constant(['r', 'd'], [4, 300], values(1200, 73));
      const l2 = x.l2Normalize('d', 1e-6), cp = x.permuteTo(['d', 'r']).cumprod('d');
      const up = img.upsample2xNearest(), aff = img.permuteTo(['n', 'h', 'w', 'c']).channelAffine(scale, shift, 'c');
      l2.mul(g).sumAll().add(cp.sumAll()).add(up.mul(up).sumAll()).add(aff.mul(aff).sumAll()).backward();
      return { l2, cp, up, aff, gx: x.grad(), gimg: img.grad(), gscale: scale.grad(), gshift: shift.grad() };
    });
    compare(out, 5e-5);
  });

  test(`webgpu (${variant}): linear recurrences match the cpu, forward and VJP, along a strided axis and over no steps`, async () => {
    const fc = await gpuEngine(variant);
    const out = await onBoth(fc, (fc) => {
      const x = fc.variable(['t', 'r'], [37, 5], values(185, 91));        // time not last: made contiguous
      const decay = fc.variable(['t', 'r'], [37, 5], values(185, 92).map((v) => 0.5 + 0.4 * v));
      const h0 = fc.variable(['r'], [5], values(5, 93));
      const y = x.linearRecurrence(decay, 't', h0);
      const g = fc.constant(['t', 'r'], [37, 5], values(185, 94));
      const one = fc.variable(['r', 't'], [3, 1], [1, 2, 3]).linearRecurrence(fc.constant(['r', 't'], [3, 1], [0.5, 0.5, 0.5]), 't');
      const none = fc.constant(['r', 't'], [2, 0], []).linearRecurrence(fc.constant(['r', 't'], [2, 0], []), 't', h0.narrow('r', 0, 2));
      y.mul(g).sumAll().add(one.sumAll()).backward();
      return { y, one, none, gx: x.grad(), gd: decay.grad(), gh0: h0.grad() };
    });
    compare(out, 5e-5);
  });

  test(`webgpu (${variant}): sorts and top-k match the cpu: long rows, ties, NaN, both directions, size 1, and the VJP`, async () => {
    const fc = await gpuEngine(variant);
    const out = await onBoth(fc, (fc) => {
      const raw = values(3 * 1000, 81).map((v) => Math.round(v * 16) / 16);  // many ties
      raw[17] = raw[1500] = NaN;
      const x = fc.variable(['r', 'c'], [3, 1000], raw);
      const [asc, ascIx] = x.sort('c', false), [desc, descIx] = x.permuteTo(['c', 'r']).sort('c', true);
      const [top, topIx] = x.topK('c', 7, true), [low, lowIx] = x.topK('c', 5, false);
      const one = fc.constant(['r', 'c'], [2, 1], [3, -1]).sort('c', true)[0];
      const g = fc.constant(['r', 'k'], [3, 7], values(21, 82)).withTags(['r', 'c']);
      top.mul(g).sumAll().add(low.sumAll()).backward();
      return { asc, ascIx: ascIx.to('f32'), desc, descIx: descIx.to('f32'), top, topIx: topIx.to('f32'), low,
        lowIx: lowIx.to('f32'), arg: x.argsort('c', true).to('f32'), one, gx: x.grad(), none: x.topK('c', 0, true)[0] };
    });
    compare(out, 0);
  });

  test(`webgpu (${variant}): convolutions and their VJPs match the cpu: strides, padding, dilation, groups, both layouts`, async () => {
    const fc = await gpuEngine(variant);
    const out = await onBoth(fc, (fc) => {
      const x = fc.variable(['n', 'c', 'h', 'w'], [2, 4, 9, 11], values(792, 21));
      const w = fc.variable(['out', 'c', 'kh', 'kw'], [6, 2, 3, 2], values(72, 22));  // two groups
      const b = fc.variable(['out'], [6], values(6, 23));
      const y = x.conv2d(w, { bias: b, stride: [2, 1], padding: [1, 2], dilation: [1, 2], groups: 2 });
      const r = x.conv2dRelu(w, { bias: b, groups: 2 });
      const fused = fc.noGrad(() => x.conv2dRelu(w, { bias: b, groups: 2 }));  // bias and relu in the kernel
      const pooled = x.conv2dRelu(w, { bias: b, groups: 2, maxPool: 2 });  // Note [Pooled conv2dRelu]
      // Channels last: the same convolution over x laid out {n, h, w, c}.
      const wl = fc.variable(['out', 'c', 'kh', 'kw'], [5, 4, 3, 3], values(180, 24));
      const cl = x.permuteTo(['n', 'h', 'w', 'c']).contiguous().conv2d(wl, { padding: [1, 1] });
      // Long depth: the weight gradient sums 8 images of 32x32 positions in slices.
      const big = fc.variable(['n', 'c', 'h', 'w'], [8, 3, 32, 32], values(24576, 25));
      const wb = fc.variable(['out', 'c', 'kh', 'kw'], [7, 3, 3, 3], values(189, 26));
      const yb = big.conv2d(wb, { padding: [1, 1] });
      const s = fc.variable(['c', 't'], [3, 17], values(51, 27));
      const w1 = fc.variable(['out', 'c', 'k'], [4, 3, 3], values(36, 28));
      const y1 = s.conv1d(w1, { stride: 2, padding: 1 });
      const wt = fc.variable(['c', 'out', 'k'], [3, 2, 4], values(24, 29));
      const t1 = s.convTranspose1d(wt, { stride: 3, padding: 1, outputPadding: 1 });
      const one = fc.variable(['c', 'h', 'w'], [1, 1, 1], [2]).conv2d(fc.constant(['out', 'c', 'kh', 'kw'], [1, 1, 1, 1], [3]));
      y.mul(y).sumAll().add(r.sumAll()).add(pooled.mul(pooled).sumAll()).add(cl.mul(cl).sumAll()).add(yb.mul(yb).sumAll().scale(0.01)).add(y1.mul(y1).sumAll())
        .add(t1.mul(t1).sumAll()).backward();
      return { y, r, fused, pooled, cl, yb, y1, t1, one, gx: x.grad(), gw: w.grad(), gb: b.grad(), gwl: wl.grad(), gbig: big.grad(),
        gwb: wb.grad(), gs: s.grad(), gw1: w1.grad(), gwt: wt.grad() };
    });
    compare(out, 1e-4);
  });

  test(`webgpu (${variant}): max and average pooling and their VJPs match the cpu, ties and NaN included`, async () => {
    const fc = await gpuEngine(variant);
    const out = await onBoth(fc, (fc) => {
      const v = values(2 * 3 * 9 * 10, 31);
      v[5] = NaN;
      const x = fc.variable(['n', 'c', 'h', 'w'], [2, 3, 9, 10], v.map((e, i) => (i % 7 === 0 ? 0.5 : e)));
      const m2 = x.maxPool2d(2);
      const m3 = x.maxPool2d([3, 3], { stride: 2, padding: 1 });
      const a = x.avgPool2d([3, 2], { stride: [1, 2], padding: 1 });
      const last = x.permuteTo(['n', 'h', 'w', 'c']).contiguous().maxPool2d([2, 3], { stride: [1, 2] });  // lanes after the plane
      const ties = fc.variable(['h', 'w'], [4, 4], new Array(16).fill(1));
      const mt = ties.maxPool2d(2);
      m3.mul(m3).sumAll().add(a.mul(a).sumAll()).add(last.sumAll()).add(mt.sumAll()).backward();
      return { m2, m3, a, last, mt, gx: x.grad(), gties: ties.grad() };
    });
    compare(out, 1e-5);
  });

  test(`webgpu (${variant}): dropout draws the cpu's mask; its VJP too`, async () => {
    const fc = await gpuEngine(variant);
    const out = await onBoth(fc, (fc) => {
      const x = fc.variable(['a', 'b'], [5, 333], values(1665, 41));
      const d = x.permuteTo(['b', 'a']).dropout(0.3, 1234567890123);  // a strided operand
      const h = x.dropout(0.5, 7), none = x.dropout(0, 7);
      d.mul(x.permuteTo(['b', 'a'])).sumAll().add(h.sumAll()).backward();
      return { d, h, none, gx: x.grad() };
    });
    compare(out, 0);
  });

  test(`webgpu (${variant}): quantize writes the cpu's q8_0 bytes: ties, f16 scale ties, NaN, infinities, tiny and huge blocks`, async () => {
    const fc = await gpuEngine(variant);
    const blocks = q8Blocks();
    const out = await onBoth(fc, (fc) => {
      const x = fc.constant(['b', 'k'], [blocks.length / 32, 32], blocks);
      const r = { q: x.quantize('q8_0', 'k').to('f32') };
      // block axis not last (a strided read), one block, 16-bit sources, rows over two other axes
      r.strided = x.permuteTo(['k', 'b']).quantize('q8_0', 'k').to('f32');
      r.one = x.narrow('b', 3, 1).quantize('q8_0', 'k').to('f32');
      r.f16 = x.to('f16').quantize('q8_0', 'k').to('f32');
      r.bf16 = x.to('bf16').quantize('q8_0', 'k').to('f32');
      r.rows = fc.constant(['a', 'c', 'k'], [3, 5, 64], values(960, 77).map((v) => v * 1e3)).quantize('q8_0', 'k').to('f32');
      r.empty = fc.zeros(['a', 'k'], [0, 64]).quantize('q8_0', 'k').to('f32');
      return r;
    });
    compare(out, 0);
    throwsCode(() => fc.zeros(['k'], [33]).quantize('q8_0', 'k'), 'InvalidArgument');
    throwsCode(() => fc.zeros(['k'], [32], 'i32').quantize('q8_0', 'k'), 'DTypeMismatch');
  });

  test(`webgpu (${variant}): dotTernarySte matches the cpu, forward and VJP; ties at s/2 round to even`, async () => {
    const fc = await gpuEngine(variant);
    const out = await onBoth(fc, (fc) => {
      const x = fc.variable(['m', 'k'], [5, 37], values(185, 90));
      const w = fc.variable(['o', 'k'], [7, 37], values(259, 91));
      const y = x.dotTernarySte(w.permuteTo(['k', 'o']), 'k');  // a strided weight
      y.mul(y).sumAll().backward();
      return { y, gx: x.grad(), gw: w.grad() };
    });
    compare(out, 2e-5);
    // Elements at s/2 and its neighbours: ±s where fl(|w|/s) > 1/2, 0 at the tie (even), exactly
    // as the division decides, for the s the device computed.
    const w = ternaryTies();
    const eye = fc.constant(['m', 'k'], [w.length, w.length], diagonal(w.map(() => 1)));
    const q = Array.from(await eye.dotTernarySte(fc.variable(['k', 'o'], [w.length, 1], w), 'k').data());
    const s = Math.max(...q.map(Math.abs));
    assert.ok(s > 0);
    const f32 = (v) => Math.fround(v);
    q.forEach((v, i) => assert.equal(v, f32(Math.abs(w[i]) / s) > 0.5 ? Math.sign(w[i]) * s : 0, `q[${i}] of w ${w[i]}, s ${s}`));
  });

  test(`webgpu (${variant}): packed products match the cpu: dense f32 and f16 weights either way round, bias, q8_0, the fused forms`, async () => {
    const fc = await gpuEngine(variant);
    const out = await onBoth(fc, (fc) => {
      const x = fc.constant(['t', 'e'], [5, 96], values(480, 60));
      const w = fc.constant(['o', 'e'], [7, 96], values(672, 61));
      const wt = fc.constant(['e', 'o'], [96, 7], values(672, 62));  // depth first: packed transposed
      const w2 = fc.constant(['p', 'o', 'e'], [2, 3, 96], values(576, 63));  // two column axes
      const bias = fc.constant(['o'], [7], values(7, 64));
      const pw = fc.packRhs(w, 'e'), pt = fc.packRhs(wt, 'e'), p16 = fc.packRhs(w.to('f16'), 'e');
      const pq = fc.packRhs(w.quantize('q8_0', 'e'), 'e');
      const lin = new fc.nn.Linear('e', 'o', 96, 7, 69);  // a layer's pack() on the device it lives on
      const packed = lin.pack();
      const r = {
        layer: packed.forward(x), layerForward: fc.noGrad(() => lin.forward(x)),
        dense: x.dotPacked(pw), bias: x.dotPacked(pw, bias), t: x.dotPacked(pt), f16: x.dotPacked(p16),
        two: x.dotPacked(fc.packRhs(w2, 'e')), q8: x.dotPacked(pq, bias), rows: x.split('t', ['a', 'b'], [1, 5]).dotPacked(pw),
        strided: fc.constant(['e', 't'], [96, 5], values(480, 65)).dotPacked(pw),
        rms: x.rmsNormMulDotPacked(fc.constant(['e'], [96], values(96, 66)), pw),
        swiglu: fc.constant(['t', 'e'], [3, 192], values(576, 67)).splitSwiGluDotPacked(pw),
        geglu: fc.constant(['t', 'e'], [3, 192], values(576, 68)).gegluQuantDotPacked(pq),
        empty: fc.zeros(['t', 'e'], [0, 96]).dotPacked(pw),
      };
      packed.dispose();
      assert.equal(pw.dtype, 'f32');
      assert.equal(pq.dtype, 'q8_0');
      return r;
    });
    compare(out, 2e-5);
    fc.defaultDevice = 'cpu';
    const host = fc.packRhs(fc.constant(['o', 'e'], [2, 4], values(8, 1)), 'e');
    fc.defaultDevice = 'webgpu';
    throwsCode(() => fc.zeros(['t', 'e'], [1, 4]).dotPacked(host), 'DeviceMismatch');
    throwsCode(() => fc.variable(['t', 'e'], [1, 4], values(4, 2)).dotPacked(fc.packRhs(fc.zeros(['o', 'e'], [2, 4]), 'e')),
      'GradientPackedMatmulUnsupported');
  });

  test(`webgpu (${variant}): rollBy and shiftBy read their shifts on the device: i32 and i64, wrapped and clamped, any dtype, and the VJP`, async () => {
    const fc = await gpuEngine(variant);
    const huge = [2 ** 40 + 3, -(2 ** 62) - 5 * 2 ** 20, -(2 ** 63), 2 ** 53, 7, -13, 0];  // i64 beyond i32, INT64_MIN
    const out = await onBoth(fc, (fc) => {
      const x = fc.variable(['b', 't', 'c'], [7, 5, 3], values(105, 80));
      const k32 = fc.constant(['b'], [7], [1, -2, 0, 5, -5, 6, -11], 'i32');
      const k64 = fc.constant(['b'], [7], huge, 'i64');
      const r = {
        roll32: x.rollBy('t', 'b', k32), shift32: x.shiftBy('t', 'b', k32),
        roll64: x.rollBy('t', 'b', k64), shift64: x.shiftBy('t', 'b', k64),
        // the slices' axis after the moved one, a strided source, strided shifts
        after: x.permuteTo(['c', 't', 'b']).rollBy('c', 'b', fc.constant(['b'], [7], [3, -6, 0, 15, -15, 18, -33], 'i32')),
        strided: x.permuteTo(['t', 'b', 'c']).shiftBy('c', 'b', fc.constant(['b', 'z'], [7, 2], [1, 0, -1, 0, 2, 0, 3, 0, -3, 0, 0, 0, 4, 0], 'i64').select('z', 0)),
        i64: fc.constant(['b', 't'], [7, 2], Array.from({ length: 14 }, (_, i) => i - 6), 'i64').rollBy('t', 'b', k64).to('f32'),
        u8: fc.constant(['b', 't'], [7, 3], Array.from({ length: 21 }, (_, i) => i * 11), 'u8').shiftBy('t', 'b', k32).to('f32'),
        f16: x.to('f16').rollBy('t', 'b', k32).to('f32'),
        one: x.narrow('b', 2, 1).rollBy('t', 'b', k32.narrow('b', 2, 1)),
        empty: fc.zeros(['b', 't'], [7, 0]).rollBy('t', 'b', k32),
      };
      r.roll32.mul(r.roll64).add(r.shift32.mul(r.shift64)).sumAll().add(r.after.mul(r.after).sumAll()).add(r.strided.sumAll()).backward();
      return { ...r, gx: x.grad() };
    });
    compare(out, 0);
  });

  test(`webgpu (${variant}): viewWithStrides's VJP adds every element that lands on one place: overlapping, broadcast, disjoint`, async () => {
    const fc = await gpuEngine(variant);
    const out = await onBoth(fc, (fc) => {
      const x = fc.variable(['n'], [40], values(40, 95));
      const y = fc.variable(['a', 'b'], [6, 7], values(42, 96));
      const r = {
        windows: x.viewWithStrides(['p', 'q'], [33, 8], [1, 1]),             // sliding windows
        strided: x.viewWithStrides(['p', 'q', 'r'], [3, 4, 2], [5, 1, 3], 2),  // three axes, some overlap
        rows: x.viewWithStrides(['p', 'q'], [5, 6], [0, 2], 1),              // a zero stride: repeated rows
        point: x.viewWithStrides(['p'], [7], [0], 39),                       // every element on one
        disjoint: x.viewWithStrides(['p', 'q'], [4, 3], [9, 2], 3),          // no two coincide
        transposed: y.permuteTo(['b', 'a']).viewWithStrides(['p', 'q'], [10, 5], [3, 2]),  // of a strided tensor
      };
      let total = fc.scalar(0);
      for (const t of Object.values(r)) total = total.add(t.mul(t).sumAll());
      total.backward();
      return { ...r, gx: x.grad(), gy: y.grad() };
    });
    compare(out, 2e-5);
  });

  test(`webgpu (${variant}): normAll matches the cpu for every p, forward and VJP: ties at the maximum, NaN, strided, empty`, async () => {
    const fc = await gpuEngine(variant);
    const out = await onBoth(fc, (fc) => {
      const x = fc.variable(['a', 'b'], [9, 41], values(369, 97));
      const ties = fc.variable(['n'], [6], [0.5, -2, 2, 1, -2, 0]);
      const r = {};
      let total = fc.scalar(0);
      for (const p of [2, 1, 3, 0.5, Infinity]) {
        r[`p${p}`] = x.permuteTo(['b', 'a']).normAll(p);
        r[`ties${p}`] = ties.normAll(p);
        total = total.add(r[`p${p}`].mul(r[`p${p}`])).add(r[`ties${p}`]);
      }
      r.nan = fc.constant(['n'], [3], [NaN, -4, 1]).normAll(Infinity);  // NaN never wins the maximum
      r.empty = fc.zeros(['n'], [0]).normAll(3);
      total.backward();
      return { ...r, gx: x.grad(), gties: ties.grad() };
    });
    compare(out, 2e-5);
  });

  test(`webgpu (${variant}): f64 converts to f32 and back as on the cpu: rounding ties, subnormals, overflow, NaN`, async () => {
    const fc = await gpuEngine(variant);
    const edges = [1 + 2 ** -24, 1 + 2 ** -24 + 2 ** -50, 1 + 3 * 2 ** -24, -(1 + 2 ** -24), 1e-40, -3e-42, 1e-46, 7.1e-46,
      2 ** -150, 3 * 2 ** -151, 3.4028235677973366e38, 3.4028235677973362e38, 1e39, -1e300, 1e-300, 0, -0, Infinity, -Infinity,
      NaN, 0.1, -123456.789, 2 ** 127 * (2 - 2 ** -23)];
    const out = await onBoth(fc, (fc) => {
      const wide = fc.constant(['n'], [edges.length], edges, 'f64');
      const narrow = wide.to('f32');
      return { narrow, back: narrow.to('f64').to('f32'), strided: fc.constant(['a', 'b'], [2, 3], edges.slice(0, 6), 'f64').permuteTo(['b', 'a']).to('f32') };
    });
    compare(out, 0);
  });

  test(`webgpu (${variant}): crossEntropyExt matches the cpu, forward and VJP: soft targets, labels summed, averaged or per row, smoothing, weights, z-loss, ignored rows`, async () => {
    const fc = await gpuEngine(variant);
    const out = await onBoth(fc, (fc) => {
      const x = fc.variable(['class', 'b', 't'], [11, 3, 5], values(165, 98).map((v) => 4 * v));  // the class axis first: strided rows
      const soft = fc.variable(['b', 't', 'class'], [3, 5, 11], values(165, 99).map(Math.abs));
      const labels = fc.constant(['b', 't'], [3, 5], [0, 10, 3, -100, 7, 7, 1, 2, 9, -100, 4, 5, 6, 8, 0], 'i64');
      const weight = fc.constant(['class'], [11], values(11, 100).map((v) => 1 + v / 2));
      const r = {
        softMean: x.crossEntropyExt(soft, 'class', { labelSmoothing: 0.1, zLoss: 1e-3, weight }),
        softNone: x.crossEntropyExt(soft, 'class', { reduction: 'none' }),
        labelsSum: x.crossEntropyExt(labels, 'class', { reduction: 'sum', labelSmoothing: 0.2, zLoss: 1e-2, weight }),
        labelsNone: x.crossEntropyExt(labels, 'class', { reduction: 'none', labelSmoothing: 0.05 }),
        // The mean divides by the labels' weight sum (or count), computed where the labels are.
        labelsMean: x.crossEntropyExt(labels, 'class', { labelSmoothing: 0.1, weight }),
        countMean: x.crossEntropyExt(labels, 'class', { zLoss: 1e-2 }),
        wide: fc.constant(['r', 'c'], [2, 700], values(1400, 101).map((v) => 9 * v))
          .crossEntropyExt(fc.constant(['r'], [2], [699, 0], 'i32'), 'c', { reduction: 'sum' }),
        wideMean: fc.constant(['r', 'c'], [300, 3], values(900, 102))
          .crossEntropyExt(fc.constant(['r'], [300], values(300, 103).map((v) => (v > 0.8 ? -100 : Math.floor(3 * Math.abs(v)) % 3)), 'i64'), 'c'),
        allIgnored: fc.constant(['r', 'c'], [2, 3], values(6, 1)).crossEntropyExt(fc.constant(['r'], [2], [-100, -100], 'i64'), 'c'),
      };
      r.softMean.add(r.softNone.mul(r.softNone).sumAll()).add(r.labelsSum).add(r.labelsNone.mul(r.labelsNone).sumAll())
        .add(r.labelsMean.scale(3)).add(r.countMean.mul(r.countMean)).backward();
      return { ...r, gx: x.grad(), gsoft: soft.grad() };
    });
    compare(out, 2e-5);
    assert.ok(Number.isNaN(out.webgpu.allIgnored[0]), 'the mean over no counted labels is NaN, as on the cpu');
  });

  test(`webgpu (${variant}): linearCrossEntropyExt matches the cpu, forward and VJP: chunks, each reduction, weights, smoothing, ignored rows`, async () => {
    const fc = await gpuEngine(variant);
    const out = await onBoth(fc, (fc) => {
      const x = fc.variable(['in', 'b', 't'], [6, 3, 7], values(126, 104));  // the feature axis first: strided
      const w = fc.variable(['class', 'in'], [300, 6], values(1800, 105).map((v) => 2 * v));
      const labelList = [0, 299, 3, -100, 7, 7, 1, 2, 9, -100, 4, 5, 6, 8, 0, 150, 151, 2, 3, 4, 5];
      const labels = fc.constant(['b', 't'], [3, 7], labelList, 'i64');
      const weight = fc.constant(['class'], [300], values(300, 106).map((v) => 1 + v / 2));
      const r = {
        mean: x.linearCrossEntropyExt(w, labels, 'in', 'class', { chunkRows: 4, labelSmoothing: 0.1, weight }),
        count: x.linearCrossEntropyExt(w, labels, 'in', 'class', { chunkRows: 100, zLoss: 1e-3 }),
        sum: x.linearCrossEntropyExt(w, labels, 'in', 'class', { chunkRows: 5, reduction: 'sum' }),
        none: x.linearCrossEntropyExt(w, fc.constant(['b', 't'], [3, 7], labelList.map((y) => Math.max(y, 7)), 'i64'), 'in', 'class',
          { chunkRows: 1, reduction: 'none', ignoreIndex: 7 }),
      };
      r.mean.add(r.count.scale(2)).add(r.sum.scale(0.1)).add(r.none.mul(r.none).sumAll()).backward();
      return { ...r, gx: x.grad(), gw: w.grad() };
    });
    compare(out, 3e-5);
  });

  test(`webgpu (${variant}): linearDistillExt matches the cpu, forward and VJP: temperatures, hard labels mixed in, teacher probabilities, each reduction`, async () => {
    const fc = await gpuEngine(variant);
    const out = await onBoth(fc, (fc) => {
      const x = fc.variable(['b', 't', 'in'], [2, 5, 8], values(80, 107));
      const w = fc.variable(['in', 'class'], [8, 270], values(2160, 108).map((v) => 2 * v));  // the weight transposed
      const teacher = fc.constant(['class', 'b', 't'], [270, 2, 5], values(2700, 109).map((v) => 3 * v));
      const probs = teacher.softmax('class');
      const labels = fc.constant(['b', 't'], [2, 5], [0, 269, -100, 4, 100, 5, 6, -100, 8, 9], 'i64');
      const r = {
        kd: x.linearDistillExt(w, teacher, 'in', 'class', { temperature: 2, chunkRows: 3 }),
        mixed: x.linearDistillExt(w, teacher, 'in', 'class', { temperature: 1.5, alpha: 0.3, labels, chunkRows: 4 }),
        probs: x.linearDistillExt(w, probs, 'in', 'class', { teacherProbs: true, alpha: 0.5, labels, reduction: 'sum' }),
        none: x.linearDistillExt(w, teacher, 'in', 'class', { temperature: 0.7, alpha: 1, labels, reduction: 'none', chunkRows: 1 }),
      };
      r.kd.add(r.mixed.scale(2)).add(r.probs.scale(0.5)).add(r.none.mul(r.none).sumAll()).backward();
      return { ...r, gx: x.grad(), gw: w.grad() };
    });
    compare(out, 3e-5);
  });

  test(`webgpu (${variant}): maskedScatter matches the cpu, forward and VJP: u8 and f32 masks (NaN set), broadcast, strided, many blocks; a short source is reported by the next read`, async () => {
    const fc = await gpuEngine(variant);
    const bits = (n, seed, p) => values(n, seed).map((v) => (Math.abs(v) < p ? 1 : 0));
    const out = await onBoth(fc, (fc) => {
      const x = fc.variable(['a', 'b'], [7, 9], values(63, 110));
      const src = fc.variable(['s'], [70], values(70, 111));
      const big = fc.variable(['n'], [70001], values(70001, 112));  // 274 blocks of 256
      const bigSrc = fc.variable(['k', 's'], [2, 40000], values(80000, 113));
      const fmask = fc.constant(['b', 'a'], [9, 7], values(63, 114).map((v, i) => (i === 5 ? NaN : v > 0 ? v : 0)));
      const r = {
        u8: x.maskedScatter(fc.constant(['a', 'b'], [7, 9], bits(63, 115, 0.5), 'u8'), src),
        f32: x.permuteTo(['b', 'a']).maskedScatter(fmask, src),              // strided x, NaN counts as set
        rows: x.maskedScatter(fc.constant(['b'], [9], bits(9, 116, 0.6), 'u8'), src),  // broadcast over 'a'
        none: x.maskedScatter(fc.zeros(['a', 'b'], [7, 9]), src),
        all: x.maskedScatter(fc.ones(['a', 'b'], [7, 9]), src),
        big: big.maskedScatter(fc.constant(['n'], [70001], bits(70001, 117, 0.7), 'u8'), bigSrc),
      };
      let total = fc.scalar(0);
      for (const [k, t] of Object.entries(r)) total = total.add(t.mul(t).sumAll().scale(k === 'big' ? 1e-3 : 1));
      total.backward();
      return { ...r, gx: x.grad(), gsrc: src.grad(), gbig: big.grad(), gbigSrc: bigSrc.grad() };
    });
    compare(out, 1e-5);
    const short = fc.constant(['n'], [5], [1, 2, 3, 4, 5]).maskedScatter(fc.constant(['n'], [5], [1, 0, 1, 1, 0], 'u8'),
      fc.constant(['s'], [2], [9, 8]));  // sets 3, has 2: checked on the device
    await assert.rejects(short.data(), (e) => e.code === 'ShapeMismatch' && /sets 3 elements but its source has only 2/.test(e.message));
    assert.deepEqual(Array.from(await fc.constant(['n'], [2], [1, 2]).maskedScatter(fc.constant(['n'], [2], [0, 1], 'u8'),
      fc.constant(['s'], [1], [7])).data()), [1, 7], 'reported once: the next read is clean');
  });

  test(`webgpu (${variant}): multinomial draws the cpu's samples bit for bit: with and without replacement, f32 and f64 weights at the edges of f64; bad weights are reported by the next read`, async () => {
    const fc = await gpuEngine(variant);
    const f64Edges = [[1e308, 1e308, 1], [5e-324, 1e-320, 0, 2.5e-308], [1, 1e-300, 1e300, 0], [0.1, 0.2, 0.3, 0.4],
      [2 ** 53, 1, 1, 1], [1 - 2 ** -53, 2 ** -53, 0.5, 0.25]];
    const out = await onBoth(fc, (fc) => {
      const w = fc.constant(['r', 'c'], [40, 37], values(1480, 120).map((v, i) => (i % 7 === 3 ? 0 : Math.abs(v))));
      const spread = fc.constant(['r', 'c'], [3, 6], [3e38, 1, 1e-30, 1e-45, 0, 2e-38, 1e10, 1e-10, 1, 1, 1e10, 0,
        1, 1, 1, 1, 1, 1]);
      const r = {
        with: w.multinomial('c', 50, 7, true),
        without: w.multinomial('c', 20, 8),
        strided: w.permuteTo(['c', 'r']).multinomial('c', 5, 9, true),  // the weights' axis first
        spread: spread.multinomial('c', 200, 10, true),
        spreadWithout: spread.multinomial('c', 4, 11),
        none: w.multinomial('c', 0, 12),
      };
      f64Edges.forEach((row, k) => {
        const t = fc.constant(['c'], [row.length], Float64Array.from(row), 'f64');
        r[`f64_${k}`] = t.multinomial('c', 300, 13 + k, true);
        r[`f64_${k}_without`] = t.multinomial('c', row.filter((x) => x > 0).length, 20 + k);
      });
      return r;
    });
    compare(out, 0);
    for (const [weights, samples, replacement] of [[[1, -2, 3], 1, true], [[0, 0], 1, true], [[1, 0, 2], 3, false], [[1, NaN], 1, true]]) {
      const bad = fc.constant(['r', 'c'], [2, weights.length], [...weights.map((_, i) => i + 1), ...weights]);
      const drawn = bad.multinomial('c', samples, 1, replacement);  // checked on the device
      await assert.rejects(drawn.data(), (e) => e.code === 'InvalidArgument' && /multinomial's weights .* in row 1/.test(e.message),
        JSON.stringify(weights));
    }
    assert.equal((await fc.constant(['c'], [2], [0, 1]).multinomial('c', 1, 1).data())[0], 1, 'reported once: the next read is clean');
  });

  test(`webgpu (${variant}): grouped causal attention and its VJP match the cpu`, async () => {
    const fc = await gpuEngine(variant);
    for (const [Tq, Tk, causal] of [[5, 7, true], [9, 9, false], [70, 70, true], [1, 1, true]]) {
      const out = await onBoth(fc, (fc) => {
        const q0 = fc.variable(['b', 't', 'head', 'd'], [2, Tq, 4, 8], values(64 * Tq, Tq + 50));
        const q = q0.permuteTo(['b', 'head', 't', 'd']);  // laid out densely by the kernel
        const k = fc.variable(['b', 'head', 't', 'd'], [2, 2, Tk, 8], values(32 * Tk, Tk + 51));
        const v = fc.variable(['b', 'head', 't', 'd'], [2, 2, Tk, 6], values(24 * Tk, Tk + 52));
        const y = fc.groupedAttention(q, k, v, { causal });
        y.mul(y).sumAll().backward();
        return { y, gq: q0.grad(), gk: k.grad(), gv: v.grad() };
      });
      compare(out, 1e-4);
    }
  });

  test(`webgpu (${variant}): contiguous views that start inside their buffer are read from where they start`, async () => {
    // narrow along the outermost axis, or select: contiguous, at an offset (kernels that index
    // their operands directly must add it).
    const fc = await gpuEngine(variant);
    const out = await onBoth(fc, (fc) => {
      const big = fc.variable(['k', 'r', 'c'], [3, 4, 10], values(120, 71));
      const x = big.select('k', 1), img = big.narrow('k', 1, 2).split('c', ['h', 'w'], [2, 5]);
      const soft = x.softmax('c'), ln = x.layerNorm('c'), rms = x.rmsNorm('c');
      const conv = img.conv2d(fc.constant(['out', 'r', 'kh', 'kw'], [2, 4, 2, 2], values(32, 72)), {
        bias: fc.constant(['o2', 'out'], [2, 2], [1, 2, 3, 4]).select('o2', 1), axes: { channels: 'r' } });
      const pool = img.maxPool2d(2, { padding: 1 }), avg = img.avgPool2d(2);
      const drop = x.dropout(0.4, 9);
      const labels = fc.constant(['two', 'r'], [2, 4], [1, 2, 3, 4, 0, 9, 2, 5], 'i64').select('two', 1);
      const ce = x.crossEntropy(labels, 'c');
      const table = fc.constant(['k', 'v', 'e'], [2, 5, 3], values(30, 73)).select('k', 1);
      const rows = table.indexSelect('v', fc.constant(['two', 'q'], [2, 3], [0, 1, 2, 4, 4, 0], 'i64').select('two', 1));
      const qkv = big.narrow('k', 0, 3).split('c', ['head', 'hd'], [2, 5]);
      const att = fc.groupedAttention(qkv.select('k', 0).insertAxis('b', 0), qkv.select('k', 1).insertAxis('b', 0),
        qkv.select('k', 2).insertAxis('b', 0), { heads: 'head', time: 'r', dim: 'hd', causal: true });
      soft.add(ln).add(rms).add(drop).sumAll().add(ce).add(conv.sumAll()).add(pool.sumAll()).add(avg.sumAll())
        .add(att.mul(att).sumAll()).backward();
      return { soft, ln, rms, conv, pool, avg, drop, ce, rows, att, g: big.grad() };
    });
    compare(out, 1e-4);
  });

  test(`webgpu (${variant}): training steps match the cpu; steady state makes no buffer or pipeline and moves nothing`, async () => {
    const fc = await gpuEngine(variant);
    const curves = {};
    for (const device of ['cpu', 'webgpu']) {
      fc.defaultDevice = device;
      const x = fc.constant(['n', 'i'], [64, 20], values(1280, 4));
      const target = fc.constant(['n', 'o'], [64, 3], values(192, 5));
      const w1 = fc.variable(['i', 'h'], [20, 32], values(640, 6).map((v) => v * 0.3));
      const b1 = fc.variable(['h'], [32], new Array(32).fill(0));
      const w2 = fc.variable(['h', 'o'], [32, 3], values(96, 7).map((v) => v * 0.3));
      const opt = fc.optim.adam([w1, b1, w2], { lr: 0.01 });
      const sgd = fc.optim.sgd([w2], { lr: 0.05, momentum: 0.9 });
      const step = () => fc.scope(() => {
        const h = x.addDot(w1, 'i', b1).gelu();
        const loss = h.dot(w2, 'h').mseLoss(target);
        opt.zeroGrad();
        sgd.zeroGrad();
        loss.backward();
        opt.step();
        sgd.step();
        return loss.detach();  // the value only: the step's graph goes with the scope
      });
      const losses = [];
      for (let i = 0; i < 6; ++i) losses.push(step());
      curves[device] = [];
      for (const l of losses) curves[device].push((await l.data())[0]);
      if (device === 'webgpu') {
        // Steady state: steps whose results are let go make no buffer or pipeline, move nothing
        // (after one such step: the losses kept above held buffers a step takes from the pool).
        step().dispose();
        const before = fc.memory().devices.webgpu;
        for (let i = 0; i < 3; ++i) step().dispose();
        const after = fc.memory().devices.webgpu;
        assert.equal(after.buffersMade, before.buffersMade, 'no buffer made in steady state');
        assert.equal(after.pipelinesMade, before.pipelinesMade, 'no pipeline made in steady state');
        assert.equal(after.uploadedBytes, before.uploadedBytes, 'nothing uploaded in steady state');
        assert.equal(after.downloadedBytes, before.downloadedBytes, 'nothing downloaded before data()');
        assert.ok(after.dispatches > before.dispatches);
        // Batched: a submit carries many dispatches (Note [Dispatch batches]).
        assert.ok(after.submits - before.submits <= Math.ceil((after.dispatches - before.dispatches) / 64) + 1,
          `${after.submits - before.submits} submits for ${after.dispatches - before.dispatches} dispatches`);
      } else {
        for (let i = 0; i < 4; ++i) step().dispose();
      }
      curves[device].push(...(await w2.data()));
      opt.dispose();
      sgd.dispose();
    }
    fc.defaultDevice = 'webgpu';
    close(curves.webgpu, curves.cpu, 1e-4, 'losses and w2');
    assert.ok(curves.cpu[5] < curves.cpu[0], 'the loss falls');
  });

  test(`webgpu (${variant}): fc.nn's CNN and GPT train on the device to the cpu's losses, clipped there`, async () => {
    const fc = await gpuEngine(variant);
    const curves = {};
    for (const device of ['cpu', 'webgpu']) {
      fc.defaultDevice = device;
      // The CNN is made on the device; the GPT on the cpu and moved (model.to).
      const cnn = new fc.nn.Cnn({ image: 12, conv1: 4, conv2: 6, hidden: 16 }, 3);
      fc.defaultDevice = 'cpu';
      const gpt = new fc.nn.Gpt({ vocab: 32, context: 16, dModel: 32, heads: 4, layers: 2, mlp: 64 }, 4).to(device);
      fc.defaultDevice = device;
      assert.ok(gpt.parameters().every((p) => p.device === device && p.requiresGrad));
      const params = [...cnn.parameters(), ...gpt.parameters()];
      const opt = fc.optim.adamw(params, { lr: 1e-2 });
      const x = fc.constant(['batch', 'h', 'w'], [4, 12, 12], values(576, 61));
      const y = fc.constant(['batch'], [4], [1, 3, 5, 7], 'i32');
      const tokens = fc.constant(['batch', 't'], [2, 13], Array.from({ length: 26 }, (_, i) => (i * 7) % 32), 'i32');
      curves[device] = [];
      for (let i = 0; i < 4; ++i) {
        const kept = fc.scope(() => {
          opt.zeroGrad();
          const a = cnn.forward(x).crossEntropy(y, 'class'), b = gpt.loss(tokens);
          a.add(b).backward();
          const norm = fc.optim.clipGradNormTensor(params, 0.5);  // clips: the norm is over 0.5
          opt.step();
          return [a.detach(), b.detach(), norm];
        });
        for (const t of kept) curves[device].push((await t.data())[0]);
      }
      if (device === 'webgpu') {
        throwsCode(() => fc.optim.clipGradNorm(params, 0.5), 'DeviceReadIsAsync');
        throwsCode(() => gpt.to('cpu'), 'DeviceReadIsAsync');
        throwsCode(() => gpt.to('tpu'), 'InvalidArgument');
      }
      opt.dispose();
    }
    fc.defaultDevice = 'webgpu';
    close(curves.webgpu, curves.cpu, 2e-4, 'losses and norms');
    assert.ok(curves.cpu[9] < curves.cpu[0] && curves.cpu[10] < curves.cpu[1], 'the losses fall');
    assert.ok(curves.cpu[2] > 0.5, 'the gradients were clipped');
  });

  test(`webgpu (${variant}): checkpointed blocks give the device's gradients bit for bit`, async () => {
    const fc = await gpuEngine(variant);
    const grads = [];
    for (const checkpointBlocks of [false, true]) {
      const gpt = new fc.nn.Gpt({ vocab: 32, context: 16, dModel: 32, heads: 4, layers: 2, mlp: 64, checkpointBlocks }, 5);
      const tokens = fc.constant(['batch', 't'], [2, 13], Array.from({ length: 26 }, (_, i) => (i * 5) % 32), 'i32');
      gpt.loss(tokens).backward();
      const g = [];
      for (const p of gpt.parameters()) g.push(...(await p.grad().data()));
      grads.push(g);
    }
    assert.equal(grads[0].length, grads[1].length);
    assert.ok(grads[0].every((v, i) => Object.is(v, grads[1][i])), 'bitwise-equal gradients');
  });

  test(`webgpu (${variant}): generateAsync draws generate's tokens, on the cpu and from a model moved to the device`, async () => {
    const fc = await gpuEngine(variant);
    fc.defaultDevice = 'cpu';
    const gpt = new fc.nn.Gpt({ vocab: 32, context: 8, dModel: 32, heads: 4, layers: 2, mlp: 64 }, 6);
    const options = { maxTokens: 12, temperature: 0.9, topK: 5, seed: 3 };  // past the context: the uncached path too
    fc.defaultDevice = 'webgpu';  // a model's tokens are made where the model is, whatever the default
    const sampled = gpt.generate([1, 2, 3], options);
    let before = fc.memory().liveTensors;
    assert.deepEqual(await gpt.generateAsync([1, 2, 3], options), sampled);
    // On the cpu, data() resolves without a task in between: no finalizer runs, the count is exact.
    await assert.rejects(gpt.generateAsync([1], { maxTokens: 3, onToken: () => { throw new Error('enough'); } }), /enough/);
    assert.equal(fc.memory().liveTensors, before, 'the caches and logits are disposed, also when onToken throws');
    const greedy = gpt.generate([4], { maxTokens: 10, temperature: 0 });
    gpt.to('webgpu');
    fc.defaultDevice = 'cpu';
    throwsCode(() => gpt.generate([4], { maxTokens: 2 }), 'DeviceReadIsAsync');
    // liveTensors counts the host's tensors, the device's bytes its own; finalizers of handles
    // earlier tests let go may run during the reads, so only growth is a leak here.
    before = fc.memory().devices.webgpu.liveBytes;
    const stops = [];
    assert.deepEqual(await gpt.generateAsync([4], { maxTokens: 10, temperature: 0, onToken: (id) => stops.push(id) < 6 }),
      greedy.slice(0, 6));
    assert.deepEqual(stops, greedy.slice(0, 6));
    await assert.rejects(gpt.generateAsync([4], { maxTokens: 3, onToken: () => { throw new Error('enough'); } }), /enough/);
    assert.ok(fc.memory().devices.webgpu.liveBytes <= before, 'the caches and logits are disposed on the device too');
    gpt.parameters().forEach((p) => p.dispose());
  });

  test(`webgpu (${variant}): disposed tensors return their buffers to the pool`, async () => {
    const fc = await gpuEngine(variant);
    const before = fc.memory().devices.webgpu;
    fc.scope(() => {
      const a = fc.full(['i'], [1000], 1);
      a.add(a).mul(a);
    });
    const after = fc.memory().devices.webgpu;
    assert.equal(after.liveBytes, before.liveBytes);
    assert.equal(after.liveBuffers, before.liveBuffers);
    assert.ok(after.pooledBytes >= 4000);
    assert.ok(after.downloadedBytes >= 0 && after.uploadedBytes >= 0);
  });
}

test('webgpu: a lost device fails its tensors with DeviceLost, and the module computes on the cpu', async () => {
  // A device the test can destroy (as a driver reset or a tab in the background would).
  let device;
  const fc = await init({ variant: 'simd', device: 'webgpu', gpu: gpuWith((d) => (device = d)) });
  const w = fc.variable(['i'], [4], [1, 2, 3, 4]);
  w.mul(w).sumAll().backward();
  device.destroy();
  await new Promise((r) => setTimeout(r, 50));  // device.lost resolves
  assert.equal(fc.defaultDevice, 'cpu');
  throwsCode(() => w.mul(w), 'DeviceLost');
  await assert.rejects(w.data(), (e) => e.code === 'DeviceLost');
  await assert.rejects(fc.sync(), (e) => e.code === 'DeviceLost');
  throwsCode(() => { fc.defaultDevice = 'webgpu'; }, 'DeviceLost');
  const c = fc.constant(['i'], [3], [1, 2, 3]);
  assert.equal(c.device, 'cpu');
  assert.deepEqual(Array.from(c.mul(c).toArray()), [1, 4, 9]);
  w.dispose();
});

test('webgpu: init without a GPU is DeviceUnavailable, and so is a default device not attached', async () => {
  const cpuOnly = await init({ variant: 'simd' });
  assert.equal(cpuOnly.defaultDevice, 'cpu');
  assert.deepEqual(cpuOnly.memory().devices, {});
  throwsCode(() => { cpuOnly.defaultDevice = 'webgpu'; }, 'DeviceUnavailable');
  throwsCode(() => { cpuOnly.defaultDevice = 'gpu'; }, 'InvalidArgument');
  assert.equal(cpuOnly.defaultDevice, 'cpu');
  await cpuOnly.sync();  // nothing to wait for
  await assert.rejects(init({ variant: 'simd', device: 'webgpu' }), (e) => e instanceof FucinaError && e.code === 'DeviceUnavailable');
  const noAdapter = { requestAdapter: async () => null };
  await assert.rejects(init({ variant: 'simd', device: 'webgpu', gpu: noAdapter }), (e) => e instanceof FucinaError && e.code === 'DeviceUnavailable');
  await assert.rejects(init({ variant: 'simd', device: 'tpu' }), (e) => e instanceof FucinaError && e.code === 'InvalidArgument');
});
