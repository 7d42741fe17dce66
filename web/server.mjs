// A small dependency-free static server for local development and the browser test.
//
// Every response carries COOP/COEP/CORP headers, so pages are cross-origin isolated and get
// SharedArrayBuffer (the threaded-simd build). Paths under /plain/ map to the same files with the
// prefix stripped and are served WITHOUT those headers, so the same page there is not isolated
// (the facade falls back to the simd build). Two options serve things outside root: `files` maps
// exact URL paths to files (nothing else under those URLs resolves, so nothing can escape), and
// `redirects` maps exact URL paths to other URLs (demos/web/server.mjs uses both).
//
//   node web/server.mjs [port]        serves the repository root on http://127.0.0.1:port/
//   import { startServer } from './server.mjs';
//   const { url, close } = await startServer({ root, port: 0 });

import { createServer } from 'node:http';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.txt': 'text/plain; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.ts': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
};

const ISOLATION_HEADERS = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

const PLAIN_PREFIX = '/plain/';

/** Maps a request path to { file, isolated } or null when the path is not allowed. */
function mapPath(root, rawPath) {
  let path;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    return null;
  }
  if (path.includes('\0') || path.includes('\\')) return null;
  let isolated = true;
  if (path === '/plain') path = PLAIN_PREFIX;
  if (path.startsWith(PLAIN_PREFIX)) {
    isolated = false;
    path = path.slice(PLAIN_PREFIX.length - 1);  // keep the leading '/'
  }
  // Reject any '..' segment outright (before and independent of normalisation).
  if (path.split('/').some((seg) => seg === '..')) return null;
  const file = resolve(root, '.' + path);
  if (file !== root && !file.startsWith(root + sep)) return null;
  return { file, isolated };
}

function send(res, status, headers, body) {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', ...headers });
  res.end(body);
}

async function handle(root, routes, req, res) {
  const url = new URL(req.url, 'http://localhost');
  // The raw path, not url.pathname: URL parsing would silently resolve '..' and '%2e%2e' away.
  const rawPath = req.url.split(/[?#]/, 1)[0];
  if (routes.redirects.has(rawPath) && (req.method === 'GET' || req.method === 'HEAD')) {
    return send(res, 302, { ...ISOLATION_HEADERS, Location: routes.redirects.get(rawPath) }, '');
  }
  const mapped = routes.files.has(rawPath) ? { file: routes.files.get(rawPath), isolated: true }
    : rawPath.startsWith('/') ? mapPath(root, rawPath) : null;
  const baseHeaders = mapped && !mapped.isolated ? {} : ISOLATION_HEADERS;
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    return send(res, 405, { ...baseHeaders, Allow: 'GET, HEAD' }, 'method not allowed\n');
  }
  if (!mapped) return send(res, 403, baseHeaders, 'forbidden\n');
  let { file } = mapped;
  let info;
  try {
    info = await stat(file);
    if (info.isDirectory()) {
      if (!url.pathname.endsWith('/')) {
        return send(res, 301, { ...baseHeaders, Location: url.pathname + '/' + url.search }, '');
      }
      file = join(file, 'index.html');
      info = await stat(file);
    }
  } catch {
    return send(res, 404, baseHeaders, 'not found\n');
  }
  if (!info.isFile()) return send(res, 404, baseHeaders, 'not found\n');
  const type = MIME[extname(file).toLowerCase()] ?? 'application/octet-stream';
  res.writeHead(200, {
    ...baseHeaders,
    'Content-Type': type,
    'Content-Length': info.size,
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
  });
  if (req.method === 'HEAD') return res.end();
  const stream = createReadStream(file);
  stream.on('error', () => res.destroy());
  stream.pipe(res);
}

/**
 * Starts the server on 127.0.0.1. port 0 picks a free port.
 * Resolves to { url, port, close() }; url ends with '/', and close() resolves once it has stopped.
 * onRequest(method, path, status), optional, is called for each response (tests use it).
 * files { '/url/path': '/abs/file' } and redirects { '/url/path': '/other/url' }: exact paths.
 */
export function startServer({ root, port = 0, onRequest, files = {}, redirects = {} } = {}) {
  if (!root) throw new Error('startServer: root is required');
  const absRoot = resolve(root);
  const routes = { files: new Map(Object.entries(files).map(([u, f]) => [u, resolve(f)])),
    redirects: new Map(Object.entries(redirects)) };
  const sockets = new Set();
  const server = createServer((req, res) => {
    if (onRequest) res.on('finish', () => onRequest(req.method, req.url, res.statusCode));
    handle(absRoot, routes, req, res).catch((e) => {
      if (!res.headersSent) send(res, 500, ISOLATION_HEADERS, `internal error: ${e.message}\n`);
      else res.destroy();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  return new Promise((resolvePromise, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      const actual = server.address().port;
      resolvePromise({
        url: `http://127.0.0.1:${actual}/`,
        port: actual,
        close: () => new Promise((done) => {
          server.close(() => done());
          for (const s of sockets) s.destroy();  // keep-alive connections would hold close() open
        }),
      });
    });
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const port = process.argv[2] === undefined ? 8000 : Number(process.argv[2]);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`usage: node web/server.mjs [port]   (got port '${process.argv[2]}')`);
    process.exit(2);
  }
  const root = fileURLToPath(new URL('..', import.meta.url));
  const { url } = await startServer({ root, port });
  console.log(`fucina dev server: serving ${root}`);
  console.log(`  isolated (COOP/COEP, threaded-simd): ${url}tests/browser/train.html`);
  console.log(`  plain (no COOP/COEP, simd):          ${url}plain/tests/browser/train.html`);
}
