// Prepended to the Emscripten ES module (--extern-pre-js): its Node branch uses require and
// __dirname, which ES modules lack. Browsers skip this block.
var require, __dirname, __filename;
if (typeof process == 'object' && typeof process.versions == 'object' && typeof process.versions.node == 'string') {
  const { createRequire } = await import('module');
  require = createRequire(import.meta.url);
  __filename = (await import('url')).fileURLToPath(import.meta.url);
  __dirname = (await import('path')).dirname(__filename);
}
