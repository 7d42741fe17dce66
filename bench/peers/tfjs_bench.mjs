// Peer: TensorFlow.js with its wasm backend (SIMD; one thread in Node), on the workloads of
// ../../shared/BENCHMARKS.md with the same protocol as bench.mjs. One configuration per process:
//   node bench/peers/tfjs_bench.mjs --workload W [--grads stock|xt] [--embedding gather|onehot] [--json] [--quick]
// --grads xt (W1): each Linear's gradient through tf.customGrad with explicit tf.transpose, the
// fast path (tfjs-wasm sends transposed matMuls to a scalar loop). --embedding (W3): the token
// embedding by tf.gather (its gradient needs UnsortedSegmentSum) or by a one-hot matMul.
// Layout NHWC (tfjs's own). A workload the backend cannot run is reported as "error".
// W6 (w6-b1, w6-b64): W2's CNN forward in tf.tidy to the logits read back (dataSync); tfjs has no
// prepared or packed weights to opt into. W7 (generation) is not run: tfjs has no KV-cached
// attention, and its tensors' per-op overhead would make a hand-written loop measure that.
import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { GEMM_SHAPES, W6_BATCH, labelPattern, loadAverage1m, parseArgs, record, report, runProtocol } from '../protocol.mjs';

const args = parseArgs(process.argv.slice(2), ['grads', 'embedding']);
const grads = args.grads ?? 'stock', embedding = args.embedding ?? 'gather';
const impl = grads === 'xt' ? 'tfjs-wasm-xt' : embedding === 'onehot' && args.workload.startsWith('w3') ? 'tfjs-wasm-onehot' : 'tfjs-wasm';
const load = loadAverage1m();
await tf.setBackend('wasm');
await tf.ready();

const uniform = (shape, fanIn) => tf.variable(tf.randomUniform(shape, -1 / Math.sqrt(fanIn), 1 / Math.sqrt(fanIn), 'float32', 7));

// x[b, in] · w[in, out] + b with gradients dX = dY·transpose(W), dW = transpose(X)·dY: the
// transposes are materialized, so every matMul is a plain (non-transposed) one.
const denseXt = tf.customGrad((x, w, b, save) => {
  save([x, w]);
  return {
    value: tf.add(tf.matMul(x, w), b),
    gradFunc: (dy, [sx, sw]) => [tf.matMul(dy, tf.transpose(sw)), tf.matMul(tf.transpose(sx), dy), tf.sum(dy, 0)],
  };
});

class Dense {
  constructor(inF, outF) { [this.w, this.b] = [uniform([inF, outF], inF), uniform([outF], inF)]; }
  apply(x) { return grads === 'xt' ? denseXt(x, this.w, this.b) : tf.add(tf.matMul(x, this.w), this.b); }
}

/** A training step: minimize (forward + loss + backward + update), then read the loss to the host. */
function trainingStep(optimizer, lossOf, beforeUpdate = () => {}) {
  return () => {
    beforeUpdate();
    const cost = optimizer.minimize(lossOf, true);
    cost.dataSync();
    cost.dispose();
  };
}

const crossEntropy = (logits, labels, classes) => tf.losses.softmaxCrossEntropy(tf.oneHot(labels, classes), logits);

function w1() {
  const layers = [new Dense(784, 512), new Dense(512, 256), new Dense(256, 10)];
  const x = tf.randomNormal([128, 784], 0, 1, 'float32', 2), y = tf.tensor1d(labelPattern(128, 10), 'int32');
  const forward = () => layers.reduce((h, l, i) => (i < 2 ? tf.relu(l.apply(h)) : l.apply(h)), x);
  return { step: trainingStep(tf.train.sgd(0.01), () => crossEntropy(forward(), y, 10)) };
}

/** W2's CNN on a batch of NHWC images: its forward to the logits. */
function cnn(batch) {
  const k1 = uniform([3, 3, 1, 32], 9), b1 = uniform([32], 9), k2 = uniform([3, 3, 32, 64], 288), b2 = uniform([64], 288);
  const fc1 = new Dense(1600, 128), fc2 = new Dense(128, 10);
  const x = tf.randomNormal([batch, 28, 28, 1], 0, 1, 'float32', 2);
  return () => {
    let h = tf.maxPool(tf.relu(tf.add(tf.conv2d(x, k1, 1, 'valid'), b1)), 2, 2, 'valid');
    h = tf.maxPool(tf.relu(tf.add(tf.conv2d(h, k2, 1, 'valid'), b2)), 2, 2, 'valid');
    return fc2.apply(tf.relu(fc1.apply(tf.reshape(h, [batch, 1600]))));
  };
}

function w2() {
  const forward = cnn(64), y = tf.tensor1d(labelPattern(64, 10), 'int32');
  return { step: trainingStep(tf.train.sgd(0.01), () => crossEntropy(forward(), y, 10)), note: 'NHWC' };
}

function w6(workload) {
  const forward = cnn(W6_BATCH[workload]);
  const step = () => {
    const logits = tf.tidy(forward);
    logits.dataSync();
    logits.dispose();
  };
  return { step, note: 'NHWC, tf.tidy forward' };
}

function w3() {
  const [V, T, D, H, L, B, M] = [256, 128, 128, 4, 2, 16, 512];
  const hd = D / H;
  const normal = (shape) => tf.variable(tf.randomNormal(shape, 0, 0.02, 'float32', 3));
  const ln = () => ({ w: tf.variable(tf.ones([D])), b: tf.variable(tf.zeros([D])) });
  const wte = normal([V, D]), wpe = normal([T, D]), lnf = ln();
  const blocks = [];
  for (let i = 0; i < L; ++i)
    blocks.push({ ln1: ln(), ln2: ln(), qkv: new Dense(D, 3 * D), proj: new Dense(D, D), fc: new Dense(D, M), out: new Dense(M, D) });
  const layerNorm = (x, p) => {
    const { mean, variance } = tf.moments(x, -1, true);
    return tf.add(tf.mul(tf.div(tf.sub(x, mean), tf.sqrt(tf.add(variance, 1e-5))), p.w), p.b);
  };
  const geluErf = (x) => tf.mul(tf.mul(x, 0.5), tf.add(1, tf.erf(tf.div(x, Math.SQRT2))));
  const mask = tf.mul(tf.sub(1, tf.linalg.bandPart(tf.ones([T, T]), -1, 0)), -1e9);  // 0 on and below the diagonal
  const tokens = labelPattern(B * (T + 1), V);
  const inputs = [], targets = [];
  for (let b = 0; b < B; ++b) {
    inputs.push(...tokens.slice(b * (T + 1), b * (T + 1) + T));
    targets.push(...tokens.slice(b * (T + 1) + 1, (b + 1) * (T + 1)));
  }
  const ids = tf.tensor1d(inputs, 'int32'), y = tf.tensor1d(targets, 'int32');
  const heads = (x) => tf.transpose(tf.reshape(x, [B, T, H, hd]), [0, 2, 1, 3]);  // [B, H, T, hd]
  const forward = () => {
    const te = embedding === 'onehot' ? tf.matMul(tf.oneHot(ids, V), wte) : tf.gather(wte, ids);
    let x = tf.add(tf.reshape(te, [B, T, D]), wpe);
    for (const b of blocks) {
      const qkv = tf.reshape(b.qkv.apply(tf.reshape(layerNorm(x, b.ln1), [B * T, D])), [B, T, 3 * D]);
      const [q, k, v] = tf.split(qkv, 3, 2).map(heads);
      const att = tf.softmax(tf.add(tf.mul(tf.matMul(q, k, false, true), 1 / Math.sqrt(hd)), mask));
      const a = tf.reshape(tf.transpose(tf.matMul(att, v), [0, 2, 1, 3]), [B * T, D]);
      x = tf.add(x, tf.reshape(b.proj.apply(a), [B, T, D]));
      const h = b.out.apply(geluErf(b.fc.apply(tf.reshape(layerNorm(x, b.ln2), [B * T, D]))));
      x = tf.add(x, tf.reshape(h, [B, T, D]));
    }
    const logits = tf.matMul(tf.reshape(layerNorm(x, lnf), [B * T, D]), wte, false, true);  // tied head
    return crossEntropy(logits, y, V);
  };
  // AdamW: tfjs has no decoupled weight decay, so p -= lr·wd·p first, then Adam (torch's order).
  const [lr, wd] = [1e-3, 0.01];
  const params = [wte, wpe, lnf.w, lnf.b, ...blocks.flatMap((b) => [b.ln1.w, b.ln1.b, b.ln2.w, b.ln2.b,
    ...[b.qkv, b.proj, b.fc, b.out].flatMap((d) => [d.w, d.b])])];
  const decay = () => tf.tidy(() => params.forEach((p) => p.assign(tf.mul(p, 1 - lr * wd))));
  return { step: trainingStep(tf.train.adam(lr, 0.9, 0.999, 1e-8), forward, decay),
    note: `${embedding} embedding, 2,048 predicted tokens`, profile: true };
}

function w4(workload) {
  const [m, k, n] = GEMM_SHAPES[workload];
  const a = tf.randomNormal([m, k], 0, 1, 'float32', 1), b = tf.randomNormal([k, n], 0, 1, 'float32', 2);
  return { step: () => tf.matMul(a, b).dispose(), note: 'tf.matMul(a[m,k], b[k,n])' };
}

let result;
try {
  if (args.threads !== 1) throw new Error('tfjs-wasm runs on one thread in Node');
  if (args.workload === 'w3-ckpt') throw new Error('tfjs has no activation checkpointing');
  if (args.workload === 'w7') throw new Error('not run: tfjs has no KV-cached generation (bench/README.md)');
  const { step, note, profile } = args.workload === 'w1' ? w1() : args.workload === 'w2' ? w2()
    : args.workload === 'w3' ? w3() : args.workload in W6_BATCH ? w6(args.workload) : w4(args.workload);
  const timing = runProtocol(step, { quick: args.quick });
  const extra = note ? { note } : {};
  if (profile) extra.peak_bytes = (await tf.profile(step)).peakBytes;  // BENCHMARKS.md's tfjs memory figure
  result = record(args.workload, impl, 1, timing, load, extra);
} catch (e) {
  result = { workload: args.workload, impl, threads: 1, error: String(e.message ?? e).split('\n')[0], load_avg_1m: load };
}
report(result, args.json);
process.exit(0);  // a failure is a result ("fails: reason"), not a crash
