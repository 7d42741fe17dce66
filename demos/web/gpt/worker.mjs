// The Tiny GPT worker: trainer.mjs behind the shared worker loop. Each step reports its loss and
// peak tensor memory; every `sampleEvery` steps it also continues the page's prompt.
//
// Messages (page -> worker) besides config/start/stop:
//   { type: 'runFor', steps }                 the next run stops after this many steps (the test hook)
//   { type: 'checkpoint', on }                switch block checkpointing on the live model
//   { type: 'settings', prompt, temperature, length, sampleEvery }
//   { type: 'sample' }                        sample now; replies { type: 'sampleText', step, prompt,
//                                             temperature, text } after every byte (the text so far),
//                                             then { type: 'sample', ..., text, ms }
import { serveTrainer } from '../common/worker-loop.mjs';
import { createTrainer } from './trainer.mjs';

serveTrainer(async (fc, { checkpointing = false, settings: initial = {} }) => {
  const response = await fetch(new URL('./text.txt', import.meta.url));
  if (!response.ok) throw new Error(`text.txt: HTTP ${response.status}`);
  const bytes = new Uint8Array(await response.arrayBuffer());
  const trainer = createTrainer(fc, bytes);
  trainer.checkpointing = checkpointing;
  const settings = { prompt: 'The fox ', temperature: 0.6, length: 160, sampleEvery: 100, ...initial };
  let stopAt = Infinity;

  const sample = async () => {
    const started = performance.now();
    const about = { step: trainer.steps, prompt: settings.prompt, temperature: settings.temperature };
    // The text so far after every byte, so that the page shows it as it is written.
    const onText = (text) => self.postMessage({ type: 'sampleText', ...about, text });
    const text = await trainer.sample(settings.prompt, settings.length, { temperature: settings.temperature, onText });
    return { type: 'sample', ...about, text, ms: performance.now() - started, liveTensors: fc.memory().liveTensors };
  };

  return {
    info: { model: trainer.config, training: trainer.training, parameters: trainer.parameterCount,
      textBytes: bytes.length, checkpointing: trainer.checkpointing, sample: await sample() },
    async step() {
      const progress = await trainer.step();
      const done = progress.step >= stopAt;
      if (done) stopAt = Infinity;
      if (progress.step % settings.sampleEvery === 0) self.postMessage(await sample());
      return { ...progress, done, liveTensors: fc.memory().liveTensors };
    },
    handle(msg) {
      switch (msg.type) {
        case 'runFor': stopAt = trainer.steps + msg.steps; return undefined;
        case 'checkpoint': trainer.checkpointing = msg.on; return { type: 'checkpoint', on: trainer.checkpointing };
        case 'settings': Object.assign(settings, msg.settings); return undefined;
        case 'sample': return sample();
        default: throw new Error(`unknown message type '${msg.type}'`);
      }
    },
    dispose() { trainer.dispose(); },
  };
});
