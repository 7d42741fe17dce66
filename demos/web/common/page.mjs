// What every demo page shares: the query-string test hook, the window.__demo state a test reads,
// the error banner, and a steps-per-second meter.
//
//   ?autostart=1&steps=N   start training at once and stop after N steps (the browser test)

export const params = new URLSearchParams(location.search);
export const autostart = params.get('autostart') === '1';
export const stepLimit = params.has('steps') ? Number(params.get('steps')) : Infinity;

/** The state a test reads: errors (strings), and whatever the demo adds (losses, done, ...). */
export const demo = (window.__demo = { errors: [], done: false });

/** Shows message in the page's #errors banner, records it for the test and logs it. */
export function showError(message) {
  const text = String(message);
  demo.errors.push(text);
  console.error(text);
  const banner = document.getElementById('errors');
  if (banner) {
    banner.hidden = false;
    banner.textContent = demo.errors.join('\n');
  }
}
window.addEventListener('error', (e) => showError(e.error?.stack || e.message || 'error event'));
window.addEventListener('unhandledrejection', (e) => showError(e.reason?.stack || e.reason?.message || e.reason));

/** Steps per second over the last few seconds of (time, step) samples. Until two samples of a
 * new run arrive (and after a stop) it keeps the last rate measured, rather than showing 0. */
export class RateMeter {
  constructor(windowMs = 3000) { this.windowMs = windowMs; this.samples = []; this.last = 0; }
  reset() { this.samples = []; }
  add(step, now = performance.now()) {
    this.samples.push([now, step]);
    while (this.samples.length > 2 && now - this.samples[0][0] > this.windowMs) this.samples.shift();
  }
  get perSecond() {
    if (this.samples.length < 2) return this.last;
    const [[t0, s0], [t1, s1]] = [this.samples[0], this.samples.at(-1)];
    if (t1 > t0) this.last = (1000 * (s1 - s0)) / (t1 - t0);
    return this.last;
  }
}

/** Sets the text of the element with this id (status badges and readouts). */
export function setText(id, text) {
  document.getElementById(id).textContent = text;
}

/** On the worker's 'ready': the engine variant, thread count and device in the badges (the
 * device where the page has a #device-used badge) and in __demo. */
export function showEngine({ variant, threads, device }) {
  Object.assign(demo, { variant, threads, device });
  setText('variant', variant);
  setText('threads', threads);
  if (document.getElementById('device-used')) setText('device-used', device);
}
