// base64-js as an ES module, for the page's import map (js-tiktoken imports it by name). The
// package is CommonJS, which a browser cannot import, but it also ships a browser build: a classic
// script that defines globalThis.base64js. This module loads that script and exports what it
// defines. Only js-tiktoken imports it, and finetune.mjs imports js-tiktoken only for a base with
// GPT-2's 50257-token vocabulary.
const src = new URL('../../../node_modules/base64-js/base64js.min.js', import.meta.url);
if (!globalThis.base64js) {
  await new Promise((resolve, reject) => {
    const script = document.createElement('script');
    script.src = src;
    script.onload = resolve;
    script.onerror = () => reject(new Error(`${src.pathname} did not load (npm ci installs base64-js with js-tiktoken)`));
    document.head.append(script);
  });
}
export default globalThis.base64js;
