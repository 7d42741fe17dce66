// The worker side of every demo: loads the engine (the repository's dist/) inside this module
// Worker and runs a trainer in time slices, so 'stop' and 'config' messages from the page get
// through between steps. The engine never runs on the main thread: Emscripten's threads
// busy-wait there, and a long training step would freeze the page.
//
//   serveTrainer(async (fc, config) => ({
//     info: {...},            // optional, posted with 'ready'
//     step() { ... },         // one training step (async or not); returns a progress object to
//                             // post, or nothing; { done: true } in it stops the loop
//     dispose() { ... },      // frees the trainer's tensors before the next config
//     handle(message) { ... } // optional: any other message type; its result is posted back
//   }));
//
// Page -> worker: { type: 'config', config } (stops, rebuilds), 'start', 'stop', or other types.
// Worker -> page: { type: 'ready', variant, threads, device, info }, { type: 'progress', ... },
//   'started', 'stopped', { type: 'error', message }, { type: 'fallback', message, running }.
//
// The device: the engine attaches it when it starts, so a worker runs on one, the `device` of its
// URL's query (common/device.mjs; 'cpu' without one). Where that device cannot do what the
// trainer needs (a kernel it lacks, a synchronous read, no adapter, a lost device) the worker
// makes the cpu the default device and posts 'fallback' (the error's message, and whether training
// was running) instead of 'ready', or after 'stopped'; the page shows why and configures again,
// which builds on the cpu.

const SLICE_MS = 40;  // how long the loop runs steps before it lets messages in

const post = (msg) => self.postMessage(msg);
const errorText = (e) => (e && (e.stack || e.message)) || String(e);

// A task after the messages already queued (setTimeout(0) would be clamped to 4 ms).
const nextTask = () => new Promise((resolve) => {
  const channel = new MessageChannel();
  channel.port1.onmessage = resolve;
  channel.port2.postMessage(0);
});

// The codes that say a device cannot do what the trainer needs, where the cpu can.
const DEVICE_GAPS = ['DeviceUnavailable', 'UnsupportedOnDevice', 'DeviceReadIsAsync', 'DeviceLost'];

/** One training step in a scope: zeroGrad, loss, backward, update; resolves to the loss value (read
 * with data(): on a device, item() cannot wait for it). */
export async function trainStep(fc, opt, lossOf) {
  const loss = fc.scope(() => {
    opt.zeroGrad();
    const l = lossOf();
    l.backward();
    opt.step();
    return l.detach();
  });
  try {
    return (await loss.data())[0];
  } finally {
    loss.dispose();
  }
}

export function serveTrainer(createTrainer) {
  let device = new URL(self.location.href).searchParams.get('device') ?? 'cpu';
  const load = (on) => import('../../../dist/index.browser.mjs').then(({ init }) => init(on === 'cpu' ? {} : { device: on }));
  let engine = load(device), fc = null, trainer = null, running = false, loop = Promise.resolve();
  engine.catch(() => {});  // the first config reports a failure

  /** Whether e is a device's gap; if it is, new tensors go to the cpu from now on (a cpu engine
   * where the device had no adapter) and the page hears why. */
  function fallBack(e, wasRunning = false) {
    if (!DEVICE_GAPS.includes(e?.code) || device === 'cpu') return false;
    device = 'cpu';
    if (fc) fc.defaultDevice = 'cpu';
    else engine = load('cpu');
    post({ type: 'fallback', message: String(e.message).split('\n')[0], running: wasRunning });
    return true;
  }

  async function run() {
    post({ type: 'started' });
    while (running) {
      const begin = performance.now();
      do {
        const progress = await trainer.step();
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
      try {
        fc ??= await engine;
        trainer = await createTrainer(fc, msg.config ?? {});
      } catch (e) {
        if (fallBack(e)) return;
        throw e;
      }
      post({ type: 'ready', variant: fc.variant, threads: fc.threads, device: fc.defaultDevice, info: trainer.info ?? {} });
    } else if (msg.type === 'start') {
      if (!trainer) throw new Error("'start' before any 'config'");
      if (running) return;
      running = true;
      // A failing step reports its error (or falls back) and leaves the loop stopped.
      loop = run().catch((e) => {
        running = false;
        post({ type: 'stopped' });
        if (!fallBack(e, true)) post({ type: 'error', message: errorText(e) });
      });
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
