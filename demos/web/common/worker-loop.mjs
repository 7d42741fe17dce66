// The worker side of every demo: loads the engine (the repository's dist/) inside this module
// Worker and runs a trainer in time slices, so 'stop' and 'config' messages from the page get
// through between steps. The engine never runs on the main thread: Emscripten's threads
// busy-wait there, and a long training step would freeze the page.
//
//   serveTrainer(async (fc, config) => ({
//     info: {...},            // optional, posted with 'ready'
//     step() { ... },         // one training step; returns a progress object to post, or nothing;
//                             // { done: true } in it stops the loop
//     dispose() { ... },      // frees the trainer's tensors before the next config
//     handle(message) { ... } // optional: any other message type; its result is posted back
//   }));
//
// Page -> worker: { type: 'config', config } (stops, rebuilds), 'start', 'stop', or other types.
// Worker -> page: { type: 'ready', variant, threads, info }, { type: 'progress', ... },
//   'started', 'stopped', { type: 'error', message }.

const SLICE_MS = 40;  // how long the loop runs steps before it lets messages in

const post = (msg) => self.postMessage(msg);
const errorText = (e) => (e && (e.stack || e.message)) || String(e);

// A task after the messages already queued (setTimeout(0) would be clamped to 4 ms).
const nextTask = () => new Promise((resolve) => {
  const channel = new MessageChannel();
  channel.port1.onmessage = resolve;
  channel.port2.postMessage(0);
});

/** One training step in a scope: zeroGrad, loss, backward, update; returns the loss value. */
export function trainStep(fc, opt, lossOf) {
  return fc.scope(() => {
    opt.zeroGrad();
    const l = lossOf();
    l.backward();
    opt.step();
    return l.item();
  });
}

export function serveTrainer(createTrainer) {
  let fc = null, trainer = null, running = false, loop = Promise.resolve();
  const engine = import('../../../dist/index.browser.mjs').then(({ init }) => init());

  async function run() {
    post({ type: 'started' });
    while (running) {
      const begin = performance.now();
      do {
        const progress = trainer.step();
        if (progress) post({ type: 'progress', ...progress });
        if (progress?.done) running = false;
      } while (running && performance.now() - begin < SLICE_MS);
      await nextTask();
    }
    post({ type: 'stopped' });
  }

  async function stop() {
    running = false;
    await loop;
  }

  async function handle(msg) {
    if (msg.type === 'config') {
      await stop();
      trainer?.dispose?.();
      trainer = null;
      fc ??= await engine;
      trainer = await createTrainer(fc, msg.config ?? {});
      post({ type: 'ready', variant: fc.variant, threads: fc.threads, info: trainer.info ?? {} });
    } else if (msg.type === 'start') {
      if (!trainer) throw new Error("'start' before any 'config'");
      if (running) return;
      running = true;
      // A failing step reports its error and leaves the loop stopped.
      loop = run().catch((e) => { running = false; post({ type: 'stopped' }); post({ type: 'error', message: errorText(e) }); });
    } else if (msg.type === 'stop') {
      await stop();
    } else {
      if (!trainer?.handle) throw new Error(`unknown message type '${msg.type}'`);
      const reply = await trainer.handle(msg);
      if (reply !== undefined) post(reply);
    }
  }

  // Messages are handled one after another, in order, each after the previous has finished.
  let queue = Promise.resolve();
  self.addEventListener('message', (e) => {
    queue = queue.then(() => handle(e.data)).catch((err) => post({ type: 'error', message: errorText(err) }));
  });
  self.addEventListener('unhandledrejection', (e) => post({ type: 'error', message: `unhandled rejection in worker: ${errorText(e.reason)}` }));
}
