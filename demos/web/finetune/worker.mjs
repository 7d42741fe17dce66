// The Fine-tune worker: finetune.mjs behind the shared worker loop, on the device of its URL
// (worker-loop.mjs: a device gap falls back to the cpu). The page tokenizes (it owns the
// tokenizer, so the worker sees only token ids) and sends the base, the text's ids and the
// choices in 'config'; each step reports its loss and the memory it took on that device.
//
// Messages (page -> worker) besides config/start/stop:
//   config: { run, base: { url } | { files, config }, tokens, dtype, rank, targets, checkpointBlocks, training }
//           the shipped base ({ url }) is fetched once and kept; a base from disk comes as `files`,
//           its model.safetensors Files (one, or a checkpoint's shards): a File is a handle to the
//           disk, cheap to send, read as the base loads (a Llama-family base one tensor at a
//           time), so a new dtype or rank reads it again rather than keeping its bytes. `run`
//           comes back in 'ready', so the page can tell a stale one from the latest; `training`
//           overrides finetune.mjs's TRAINING (the test hook's smaller batches)
//   { type: 'runFor', steps }          the next run stops after this many steps
//   { type: 'tokens', tokens }         a new text to train on (the adapters keep what they learned)
//   { type: 'sample', which, prompt, options }
//                                      generates from the prompt's ids: { type: 'token', which, id }
//                                      per token as it is drawn, then { type: 'sample', which, ids, ms }
//   { type: 'peft' }                   replies { type: 'peft', safetensors, adapterConfig, step }:
//                                      the adapters as PEFT's adapter_model.safetensors bytes and
//                                      adapter_config.json (an object)
import { serveTrainer } from '../common/worker-loop.mjs';
import { createFineTuner, familyOf } from './finetune.mjs';

const fetched = new Map();  // url -> { weights: [Blob], config }: the shipped base, fetched once

async function baseFor({ url, files, config }) {
  if (files) return { weights: files, config };
  if (!fetched.has(url)) {
    const get = async (file) => {
      const response = await fetch(new URL(file, url));
      if (!response.ok) throw new Error(`${new URL(file, url).pathname}: HTTP ${response.status}`);
      return response;
    };
    const [model, cfg] = await Promise.all([get('model.safetensors'), get('config.json')]);
    fetched.set(url, { weights: [await model.blob()], config: await cfg.json() });
  }
  return fetched.get(url);
}

serveTrainer(async (fc, { run, base, tokens, dtype, rank, targets, checkpointBlocks, training }) => {
  const { weights, config } = await baseFor(base);
  const loadStarted = performance.now();
  const tuner = await createFineTuner(fc, { weights, config, tokens, dtype, rank, targets, checkpointBlocks, ...training });
  const loadMs = performance.now() - loadStarted;
  let stopAt = Infinity;
  const report = () => ({ step: tuner.steps, memory: tuner.memory() });

  return {
    info: { run, config, family: familyOf(config), dtype, rank, targets, checkpointBlocks,
      fileBytes: weights.reduce((n, w) => n + w.size, 0), shards: weights.length, loadMs, adapterCount: tuner.adapterCount,
      training: tuner.training, span: tuner.span, tokens: tokens.length, ...report() },
    async step() {
      const progress = await tuner.step();
      const done = progress.step >= stopAt;
      if (done) stopAt = Infinity;
      return { step: progress.step, loss: progress.loss, ms: progress.ms, done, memory: tuner.memory(),
        liveTensors: fc.memory().liveTensors };
    },
    async handle(msg) {
      switch (msg.type) {
        case 'runFor': stopAt = tuner.steps + msg.steps; return undefined;
        case 'tokens': tuner.setTokens(msg.tokens); return { type: 'tokens', span: tuner.span, tokens: msg.tokens.length };
        case 'sample': {
          const started = performance.now();
          const onToken = (id) => { self.postMessage({ type: 'token', which: msg.which, id }); };
          const ids = await tuner.sample(msg.prompt, { ...msg.options, onToken });
          return { type: 'sample', which: msg.which, step: tuner.steps, ids, ms: performance.now() - started };
        }
        case 'peft': {
          const { safetensors, config: adapterConfig } = await tuner.exportPeft();
          return { type: 'peft', safetensors, adapterConfig, step: tuner.steps };
        }
        default: throw new Error(`unknown message type '${msg.type}'`);
      }
    },
    dispose() { tuner.dispose(); },
  };
});
