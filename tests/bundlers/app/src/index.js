// The app's page script: starts the engine in a module Worker (the form every bundler follows)
// and leaves the worker's report in window.result for the test.
const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
worker.onmessage = (e) => { window.result = e.data; };
worker.onerror = (e) => { window.result = { ok: false, error: `worker error: ${e.message || '(no message)'}` }; };
worker.postMessage('train');
