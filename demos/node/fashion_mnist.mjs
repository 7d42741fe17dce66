// The flagship demo behind `npm start`: trains a classifier on the real Fashion-MNIST (Debian's
// dataset-fashion-mnist) in Node on the wasm engine, with a progress bar, then prints the test
// accuracy. Options: --model mlp|cnn (default mlp), --epochs N (default 2), --variant
// threaded-simd|simd, --threads N, --data DIR, --steps N (at most N steps per epoch: a smoke test).
import os from 'node:os';
import { parseArgs } from 'node:util';
import { init, loadFashionMnist, shuffledIndices, makeBatch } from 'fucina';

const { values: opts } = parseArgs({
  options: {
    model: { type: 'string', default: 'mlp' },
    epochs: { type: 'string', default: '2' },
    variant: { type: 'string' },
    threads: { type: 'string' },
    data: { type: 'string', default: '/usr/share/datasets/fashion-mnist' },
    steps: { type: 'string' },
  },
});
if (!['mlp', 'cnn'].includes(opts.model)) throw new Error(`--model must be mlp or cnn, got ${opts.model}`);
const epochs = Number(opts.epochs);
const CLASSES = ['T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt', 'Sneaker', 'Bag', 'Ankle boot'];

const fc = await init({
  variant: opts.variant,
  threads: opts.threads === undefined ? Math.min(os.availableParallelism(), 8) : Number(opts.threads),
});
const [train, test] = await Promise.all([
  loadFashionMnist({ base: opts.data, train: true }),
  loadFashionMnist({ base: opts.data, train: false }),
]);
console.log(`fucina ${fc.variant} (${fc.threads} thread${fc.threads > 1 ? 's' : ''}): ` +
  `${opts.model.toUpperCase()} on Fashion-MNIST, ${train.count} training and ${test.count} test images`);

// Pixels standardized with the training split's mean and standard deviation.
const standardize = (images) => images.subScalar(0.2860).divScalar(0.3530);
const model = opts.model === 'mlp' ? new fc.nn.Mlp({ sizes: [784, 512, 256, 10] }, 1) : new fc.nn.Cnn({}, 1);
const input = opts.model === 'mlp' ? (images) => standardize(images).merge(['h', 'w'], 'in') : standardize;
const batchSize = opts.model === 'mlp' ? 128 : 64;
const opt = fc.optim.adam(model.parameters(), { lr: opts.model === 'mlp' ? 1e-3 : 2e-3 });

// One line, rewritten in place on a terminal; every 10% as a new line in a log.
function progress(epoch, step, steps, loss, perSecond) {
  const width = 30, done = Math.round((width * step) / steps);
  const line = `epoch ${epoch}/${epochs} [${'#'.repeat(done)}${'.'.repeat(width - done)}] ` +
    `${String(step).padStart(String(steps).length)}/${steps}  loss ${loss.toFixed(4)}  ${Math.round(perSecond)} images/s`;
  if (process.stdout.isTTY) process.stdout.write(`\r${line}`);
  else if (step === steps || step % Math.ceil(steps / 10) === 0) console.log(line);
}

const steps = Math.min(Math.ceil(train.count / batchSize), opts.steps === undefined ? Infinity : Number(opts.steps));
const started = performance.now();
for (let epoch = 1; epoch <= epochs; ++epoch) {
  const order = shuffledIndices(train.count, epoch);
  const epochStart = performance.now();
  let smoothed = null;
  for (let step = 1; step <= steps; ++step) {
    const loss = fc.scope(() => {
      const { images, labels } = makeBatch(fc, train, order, (step - 1) * batchSize, batchSize);
      opt.zeroGrad();
      const l = model.forward(input(images)).crossEntropy(labels, 'class');
      l.backward();
      opt.step();
      return l.item();
    });
    smoothed = smoothed === null ? loss : 0.95 * smoothed + 0.05 * loss;
    const seconds = (performance.now() - epochStart) / 1000;
    progress(epoch, step, steps, smoothed, (step * batchSize) / seconds);
  }
  if (process.stdout.isTTY) process.stdout.write('\n');
}
const trainSeconds = (performance.now() - started) / 1000;

// Test accuracy, and the per-class picture.
const correctByClass = new Array(10).fill(0), countByClass = new Array(10).fill(0);
const order = Int32Array.from({ length: test.count }, (_, i) => i);
fc.noGrad(() => {
  for (let begin = 0; begin < test.count; begin += 1000) {
    fc.scope(() => {
      const { images, labels } = makeBatch(fc, test, order, begin, 1000);
      const logits = model.forward(input(images)).permuteTo(['batch', 'class']).toArray();
      const ys = labels.toArray();
      for (let i = 0; i < ys.length; ++i) {
        const row = logits.subarray(i * 10, i * 10 + 10);
        const predicted = row.indexOf(Math.max(...row));
        countByClass[ys[i]] += 1;
        correctByClass[ys[i]] += predicted === ys[i];
      }
    });
  }
});
const accuracy = correctByClass.reduce((a, b) => a + b, 0) / test.count;
console.log(`trained ${epochs} epoch${epochs > 1 ? 's' : ''} in ${trainSeconds.toFixed(1)} s; ` +
  `test accuracy ${(100 * accuracy).toFixed(2)}%`);
console.log(CLASSES.map((c, i) => `  ${c.padEnd(12)} ${(100 * correctByClass[i] / countByClass[i]).toFixed(1)}%`).join('\n'));
const peak = fc.memory().peakBytes;
console.log(`peak tensor memory ${(peak / 2 ** 20).toFixed(1)} MiB`);
console.log('\nThe same engine trains in a browser: `npm run demos`, then open http://127.0.0.1:8080/ ' +
  '(Fashion-MNIST MLP/CNN, a tiny GPT, LoRA fine-tuning, a 2-D playground; demos/web/README.md).');
