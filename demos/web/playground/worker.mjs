// The playground's trainer: a small ReLU MLP (fc.nn.Mlp, 2 -> hidden -> hidden -> 2) fitted to
// the page's points with full-batch Adam. Every few steps it evaluates the class-1 probability
// on a GRID x GRID lattice over the plot's square, which the page draws as the decision heatmap.
import { serveTrainer, trainStep } from '../common/worker-loop.mjs';

const GRID = 96;        // heatmap resolution (the page smooths it when scaling up)
const EXTENT = 1.25;    // the square [-EXTENT, EXTENT]² the page shows
const REPORT_EVERY = 10;
const HEATMAP_EVERY = 40;

const lattice = new Float32Array(GRID * GRID * 2);
for (let r = 0; r < GRID; ++r) {
  for (let c = 0; c < GRID; ++c) {
    lattice[2 * (r * GRID + c)] = -EXTENT + (2 * EXTENT * (c + 0.5)) / GRID;      // x grows rightwards
    lattice[2 * (r * GRID + c) + 1] = EXTENT - (2 * EXTENT * (r + 0.5)) / GRID;   // y grows upwards
  }
}

serveTrainer((fc, { xy, labels, hidden = 32, lr = 0.01, seed = 1, steps = Infinity }) => {
  const n = labels.length;
  const x = fc.constant(['batch', 'in'], [n, 2], xy);
  const y = fc.constant(['batch'], [n], labels, 'i32');
  const grid = fc.constant(['batch', 'in'], [GRID * GRID, 2], lattice);
  const model = new fc.nn.Mlp({ sizes: [2, hidden, hidden, 2] }, seed);
  const opt = fc.optim.adam(model.parameters(), { lr });
  let step = 0;

  // P(class 1) for each row of points, from the two logits, by the model's inference path: its
  // weights packed once (fc.nn.Mlp.pack) for all the lattice's points.
  const probabilities = (points) => fc.noGrad(() => fc.scope(() => {
    const packed = model.pack();
    try {
      const logits = packed.forward(points).permuteTo(['batch', 'class']).toArray();
      return Float32Array.from({ length: logits.length / 2 }, (_, i) => 1 / (1 + Math.exp(logits[2 * i] - logits[2 * i + 1])));
    } finally {
      packed.dispose();
    }
  }));

  return {
    info: { grid: GRID, extent: EXTENT, heatmap: probabilities(grid), parameters: model.parameters().reduce((a, p) => a + p.shape.reduce((u, v) => u * v, 1), 0) },
    async step() {
      const loss = await trainStep(fc, opt, () => model.forward(x).crossEntropy(y, 'class'));
      step += 1;
      const done = step >= steps;
      if (step % REPORT_EVERY !== 0 && !done) return undefined;
      const progress = { step, loss, done };
      if (step % HEATMAP_EVERY === 0 || step === REPORT_EVERY || done) {
        const p = probabilities(x);
        progress.accuracy = p.reduce((a, pi, i) => a + ((pi > 0.5) === (labels[i] === 1)), 0) / n;
        progress.heatmap = probabilities(grid);
      }
      return progress;
    },
    handle(msg) {
      if (msg.type !== 'lr') throw new Error(`unknown message type '${msg.type}'`);
      opt.lr = msg.lr;
    },
    dispose() {
      opt.dispose();
      for (const t of [x, y, grid, ...model.parameters()]) t.dispose();
    },
  };
});
