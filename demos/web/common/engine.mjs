// The page side of a demo's worker (see worker-loop.mjs): starts the module Worker and turns its
// messages into events. Worker failures (a module that does not load, an exception in a step)
// all arrive as one 'error' event with a message.
//
//   const engine = new Engine(new URL('./worker.mjs', import.meta.url));
//   engine.on('ready', (m) => ...).on('progress', (m) => ...).on('error', (m) => ...);
//   engine.config({ model: 'mlp' }); engine.start(); engine.stop(); engine.restart(url);

export class Engine {
  constructor(url) {
    this.handlers = new Map();
    this.#spawn(url);
  }

  /** Replaces the worker by a new one from url (on another device: common/device.mjs); the
   * handlers stay. */
  restart(url) {
    this.worker.terminate();
    this.#spawn(url);
  }

  #spawn(url) {
    this.worker = new Worker(url, { type: 'module' });
    this.worker.addEventListener('message', (e) => this.emit(e.data));
    this.worker.addEventListener('error', (e) => {
      e.preventDefault();
      const where = e.filename ? ` at ${e.filename}:${e.lineno}` : '';
      this.emit({ type: 'error', message: `worker error: ${e.message || `${url} or a module it imports failed to load`}${where}` });
    });
    this.worker.addEventListener('messageerror', () => this.emit({ type: 'error', message: 'worker messageerror' }));
  }

  /** Calls fn(message) for each message of this type ('ready', 'progress', 'error', ...). */
  on(type, fn) {
    if (!this.handlers.has(type)) this.handlers.set(type, []);
    this.handlers.get(type).push(fn);
    return this;
  }

  emit(msg) {
    for (const fn of this.handlers.get(msg.type) ?? []) fn(msg);
  }

  send(type, fields = {}) { this.worker.postMessage({ type, ...fields }); }
  config(config) { this.send('config', { config }); }
  start() { this.send('start'); }
  stop() { this.send('stop'); }
  terminate() { this.worker.terminate(); }
}
