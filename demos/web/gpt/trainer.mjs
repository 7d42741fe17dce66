// The Tiny GPT demo's model and training loop, apart from the page and the worker so that Node can
// run it too: a byte-level fc.nn.Gpt learns text.txt from random windows with AdamW, measures the
// tensor memory of each step, and samples text from a prompt.

// The model: small enough to train visibly in a browser on two cores (measured there: a wider or
// deeper model, or larger batches, learn less per second of training).
import { makeRandom } from '../common/random.mjs';

export const MODEL = { vocab: 256, context: 64, dModel: 64, heads: 4, layers: 3, mlp: 256 };
export const TRAINING = { batch: 8, lr: 5e-3, warmupSteps: 30, weightDecay: 0.01, clip: 1, seed: 1 };

/** Bytes as text: printable ASCII and line breaks as they are, any other byte as '\u00b7' (an
 * untrained model emits all 256 byte values, most of them not valid UTF-8 on their own). */
function printable(bytes) {
  return String.fromCharCode(...bytes.map((b) => (b === 10 || (b >= 32 && b < 127) ? b : 0xb7)));
}

/**
 * A trainer over the bytes of a text (a Uint8Array), on fc.defaultDevice.
 * step() trains once and resolves to { step, loss, peakBytes, liveBytes, checkpointing, ms }:
 * peakBytes is the most tensor storage alive on the device from just before the step to the end of
 * backward (parameters, optimizer state, batch and everything the backward pass keeps), liveBytes
 * what lived before it; ms includes reading the loss back (a device's work ends there).
 */
export function createTrainer(fc, bytes, { model: modelConfig = MODEL, training = TRAINING } = {}) {
  const cfg = { ...MODEL, ...modelConfig };
  const t = { ...TRAINING, ...training };
  if (bytes.length < cfg.context + 2) throw new Error(`the text is too short (${bytes.length} bytes)`);
  const model = new fc.nn.Gpt({ ...cfg, checkpointBlocks: false }, t.seed);
  const params = model.parameters();
  const opt = fc.optim.adamw(params, { lr: t.lr, weightDecay: t.weightDecay });
  const schedule = (step) => (step < t.warmupSteps ? (t.lr * (step + 1)) / t.warmupSteps : t.lr);
  const random = makeRandom(t.seed);
  const span = cfg.context + 1;  // model.loss predicts the last `context` bytes from the first
  const device = fc.defaultDevice;
  const memory = () => (device === 'cpu' ? fc.memory() : fc.memory().devices[device]);
  let steps = 0, samples = 0;

  // batch random windows of the text as tokens{batch, t} (i32).
  function batchTokens() {
    const ids = new Int32Array(t.batch * span);
    for (let b = 0; b < t.batch; ++b) {
      const start = Math.floor(random() * (bytes.length - span));
      ids.set(bytes.subarray(start, start + span), b * span);
    }
    return fc.constant(['batch', 't'], [t.batch, span], ids, 'i32');
  }

  async function step() {
    const started = performance.now();
    opt.lr = schedule(steps);
    const liveBytes = memory().liveBytes;
    fc.resetPeak();
    const { loss, peakBytes } = fc.scope(() => {
      opt.zeroGrad();
      const l = model.loss(batchTokens());
      l.backward();
      const peak = memory().peakBytes;
      fc.optim.clipGradNormTensor(params, t.clip);  // on any device: no read
      opt.step();
      return { loss: l.detach(), peakBytes: peak };
    });
    const [value] = await loss.data();
    loss.dispose();
    steps += 1;
    return { step: steps, loss: value, peakBytes, liveBytes, checkpointing: model.config.checkpointBlocks, ms: performance.now() - started };
  }

  /**
   * prompt (a string) continued by `length` bytes, drawn by model.generateAsync (a KV cache: one
   * position per byte while the context lasts; seeded; temperature 0: greedy; on any device).
   * onText(text), if given, sees the continuation so far after every byte. Resolves to the
   * continuation, printable().
   */
  async function sample(prompt, length, { temperature = 0.8, seed = samples, onText } = {}) {
    samples += 1;
    const ids = [...new TextEncoder().encode(prompt)];
    if (ids.length === 0) ids.push(10);  // an empty prompt starts at a line break
    const out = [];
    await model.generateAsync(ids, { maxTokens: length, temperature, seed, onToken: (id) => {
      out.push(id);
      onText?.(printable(out));
    } });
    return printable(out);
  }

  return {
    config: cfg,
    training: t,
    parameterCount: params.reduce((n, p) => n + p.shape.reduce((a, b) => a * b, 1), 0),
    get steps() { return steps; },
    get checkpointing() { return model.config.checkpointBlocks; },
    // nn.mjs reads config.checkpointBlocks on every forward: switching it keeps the weights.
    set checkpointing(on) { model.config.checkpointBlocks = Boolean(on); },
    step,
    sample,
    dispose() {
      opt.dispose();
      params.forEach((p) => p.dispose());
    },
  };
}
