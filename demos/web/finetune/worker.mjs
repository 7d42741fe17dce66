// The Fine-tune worker: finetune.mjs behind the shared worker loop. The page tokenizes (it owns
// the tokenizer, so the worker sees only token ids) and sends the base, the text's ids and the
// choices in 'config'; each step reports its loss and the memory it took.
//
// Messages (page -> worker) besides config/start/stop:
//   config: { base: { name, url } | { name, bytes, config }, tokens, dtype, rank, targets, checkpointBlocks }
//           a base is fetched or received once and kept by name, so a new dtype or rank reloads it
//           from memory ({ name } alone reuses a kept base)
//   { type: 'runFor', steps }          the next run stops after this many steps
//   { type: 'tokens', tokens }         a new text to train on (the adapters keep what they learned)
//   { type: 'sample', which, prompt, options }
//                                      generates from the prompt's ids: { type: 'token', which, id }
//                                      per token as it is drawn, then { type: 'sample', which, ids, ms }
//   { type: 'adapters' }               replies { type: 'adapters', bytes } (safetensors)
import { serveTrainer } from '../common/worker-loop.mjs';
import { createFineTuner } from './finetune.mjs';

const bases = new Map();  // name -> { bytes, config }

async function baseFor({ name, url, bytes, config }) {
  if (bytes) bases.set(name, { bytes: new Uint8Array(bytes), config });
  if (!bases.has(name)) {
    if (!url) throw new Error(`no base named '${name}' was sent`);
    const get = async (file) => {
      const response = await fetch(new URL(file, url));
      if (!response.ok) throw new Error(`${new URL(file, url).pathname}: HTTP ${response.status}`);
      return response;
    };
    const [model, cfg] = await Promise.all([get('model.safetensors'), get('config.json')]);
    bases.set(name, { bytes: new Uint8Array(await model.arrayBuffer()), config: await cfg.json() });
  }
  return bases.get(name);
}

serveTrainer(async (fc, { base, tokens, dtype, rank, targets, checkpointBlocks }) => {
  const { bytes, config } = await baseFor(base);
  const loadStarted = performance.now();
  const tuner = createFineTuner(fc, { modelBytes: bytes, config, tokens, dtype, rank, targets, checkpointBlocks });
  const loadMs = performance.now() - loadStarted;
  let stopAt = Infinity;
  const report = () => ({ step: tuner.steps, memory: tuner.memory() });

  return {
    info: { config, dtype, rank, targets, checkpointBlocks, fileBytes: bytes.length, loadMs, adapterCount: tuner.adapterCount,
      training: tuner.training, span: tuner.span, tokens: tokens.length, ...report() },
    step() {
      const progress = tuner.step();
      const done = progress.step >= stopAt;
      if (done) stopAt = Infinity;
      return { step: progress.step, loss: progress.loss, ms: progress.ms, done, memory: tuner.memory(),
        liveTensors: fc.memory().liveTensors };
    },
    handle(msg) {
      switch (msg.type) {
        case 'runFor': stopAt = tuner.steps + msg.steps; return undefined;
        case 'tokens': tuner.setTokens(msg.tokens); return { type: 'tokens', span: tuner.span, tokens: msg.tokens.length };
        case 'sample': {
          const started = performance.now();
          const onToken = (id) => { self.postMessage({ type: 'token', which: msg.which, id }); };
          const ids = tuner.sample(msg.prompt, { ...msg.options, onToken });
          return { type: 'sample', which: msg.which, step: tuner.steps, ids, ms: performance.now() - started };
        }
        case 'adapters': return { type: 'adapters', bytes: tuner.saveAdapters(), step: tuner.steps, ...report() };
        default: throw new Error(`unknown message type '${msg.type}'`);
      }
    },
    dispose() { tuner.dispose(); },
  };
});
