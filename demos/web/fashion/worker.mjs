// The Fashion-MNIST trainer: the same models, standardisation, batch sizes and Adam settings as
// demos/node/fashion_mnist.mjs, in a Worker. The data (from the demos server's
// /data/fashion-mnist/) is loaded once and kept across model switches. Every evalEvery steps the
// model classifies a fixed subset of the test split: its accuracy, and the predictions for the
// first SHOWN images, which the page draws.
import { loadFashionMnist, shuffledIndices, makeBatch } from '../../../dist/index.browser.mjs';
import { serveTrainer, trainStep } from '../common/worker-loop.mjs';

const EVAL_COUNT = 1000;
const EVAL_CHUNK = 250;  // images per forward pass when evaluating (bounds the CNN's activations)
const SHOWN = 32;
const MODELS = {
  mlp: { batch: 128, lr: 1e-3, evalEvery: 50, make: (fc) => new fc.nn.Mlp({ sizes: [784, 512, 256, 10] }, 1) },
  cnn: { batch: 64, lr: 2e-3, evalEvery: 25, make: (fc) => new fc.nn.Cnn({}, 1) },
};

let data = null;
function loadData() {
  if (!data) {
    self.postMessage({ type: 'status', text: 'Loading Fashion-MNIST (30 MB)…' });
    const base = '/data/fashion-mnist';  // fetched (and gunzipped) by the facade
    data = Promise.all([loadFashionMnist({ base, train: true }), loadFashionMnist({ base, train: false })]).catch((e) => {
      data = null;  // a later config tries again
      throw new Error(`${e.message}\nThe demos server maps ${base}/ to Debian's dataset-fashion-mnist ` +
        '(apt-get install dataset-fashion-mnist); start it with `npm run demos`.');
    });
  }
  return data;
}

serveTrainer(async (fc, { model: kind = 'mlp', steps = Infinity, evalEvery }) => {
  const [train, test] = await loadData();
  const spec = MODELS[kind];
  if (!spec) throw new Error(`unknown model '${kind}' (mlp or cnn)`);
  evalEvery ??= spec.evalEvery;
  const model = spec.make(fc);
  // Pixels standardised with the training split's mean and standard deviation.
  const standardize = (images) => images.subScalar(0.2860).divScalar(0.3530);
  const input = kind === 'mlp' ? (images) => standardize(images).merge(['h', 'w'], 'in') : standardize;
  const opt = fc.optim.adam(model.parameters(), { lr: spec.lr });
  const evalOrder = Int32Array.from({ length: EVAL_COUNT }, (_, i) => i);
  const batchesPerEpoch = Math.floor(train.count / spec.batch);
  let step = 0, order = null;

  /** { accuracy, predictions (of the first SHOWN) } on the first EVAL_COUNT test images. On the
   * cpu by the model's inference path (its weights packed, convolutions prepared, once for all
   * chunks); on a device, which packs nothing yet, by its forward. The logits are read with data()
   * (a device's reads are async) and their argmax taken here. */
  async function evaluate() {
    const predicted = new Int32Array(EVAL_COUNT);
    const packed = fc.defaultDevice === 'cpu' ? fc.noGrad(() => model.pack()) : null;
    try {
      for (let begin = 0; begin < EVAL_COUNT; begin += EVAL_CHUNK) {
        const logits = fc.noGrad(() => fc.scope(() => {
          const { images } = makeBatch(fc, test, evalOrder, begin, EVAL_CHUNK);
          return (packed ?? model).forward(input(images)).permuteTo(['batch', 'class']);
        }));
        const values = await logits.data();
        logits.dispose();
        for (let i = 0; i < EVAL_CHUNK; ++i) {
          const row = values.subarray(10 * i, 10 * i + 10);
          predicted[begin + i] = row.indexOf(Math.max(...row));
        }
      }
    } finally {
      packed?.dispose();
    }
    const correct = predicted.reduce((a, p, i) => a + (p === test.labels[i]), 0);
    return { accuracy: correct / EVAL_COUNT, predictions: Array.from(predicted.subarray(0, SHOWN)) };
  }

  const count = (p) => p.shape.reduce((a, b) => a * b, 1);
  return {
    info: {
      model: kind, batch: spec.batch, lr: spec.lr, evalEvery, evalCount: EVAL_COUNT, trainCount: train.count,
      parameters: model.parameters().reduce((a, p) => a + count(p), 0),
      shown: { images: test.images.slice(0, SHOWN * 784), labels: Array.from(test.labels.subarray(0, SHOWN)) },
      ...(await evaluate()),
    },
    async step() {
      const inEpoch = step % batchesPerEpoch;
      if (inEpoch === 0) order = shuffledIndices(train.count, step / batchesPerEpoch + 1);
      const loss = await trainStep(fc, opt, () => {
        const { images, labels } = makeBatch(fc, train, order, inEpoch * spec.batch, spec.batch);
        return model.forward(input(images)).crossEntropy(labels, 'class');
      });
      step += 1;
      const done = step >= steps;
      const progress = { step, loss, epoch: step / batchesPerEpoch, done };
      return step % evalEvery === 0 || done ? { ...progress, ...(await evaluate()) } : progress;
    },
    dispose() {
      opt.dispose();
      for (const p of model.parameters()) p.dispose();
    },
  };
});
