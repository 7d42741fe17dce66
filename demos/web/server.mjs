// `npm run demos`: web/server.mjs (COOP/COEP, so the threaded engine runs) serving the repository
// root, plus Debian's Fashion-MNIST files (dataset-fashion-mnist) under /data/fashion-mnist/ and
// a redirect from / to the demos' landing page.
//
//   npm run demos [-- PORT]     or PORT=9000 npm run demos       (default 8080)
//   import { startDemosServer } from './demos/web/server.mjs';   (the browser test: port 0)

import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../../web/server.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const FASHION_DIR = '/usr/share/datasets/fashion-mnist';
const FASHION_FILES = ['train-images-idx3-ubyte.gz', 'train-labels-idx1-ubyte.gz',
  't10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz'];

/** Resolves to web/server.mjs's { url, port, close() }; url is the server root. */
export function startDemosServer({ port = 0, onRequest, fashionDir = FASHION_DIR } = {}) {
  // Exactly these four URLs map outside the repository: nothing else under /data/ resolves.
  const files = Object.fromEntries(FASHION_FILES.map((f) => [`/data/fashion-mnist/${f}`, join(fashionDir, f)]));
  return startServer({ root: ROOT, port, onRequest, files, redirects: { '/': '/demos/web/' } });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const arg = process.argv[2] ?? process.env.PORT ?? '8080';
  const port = Number(arg);
  if (!/^\d+$/.test(arg) || port > 65535) {
    console.error(`usage: npm run demos [-- PORT]   (got port '${arg}')`);
    process.exit(2);
  }
  let url;
  try {
    ({ url } = await startDemosServer({ port }));
  } catch (e) {
    if (e?.code !== 'EADDRINUSE') throw e;
    console.error(`npm run demos: port ${port} is taken (another server, or demos already running); ` +
      `pick another: npm run demos -- 9000   (or PORT=9000 npm run demos)`);
    process.exit(1);
  }
  const pages = [['', 'all demos'], ['fashion/', 'Fashion-MNIST classifier'], ['gpt/', 'Tiny GPT'],
    ['finetune/', 'Fine-tune (LoRA)'], ['playground/', '2-D playground']].map(([path, what]) => `  ${`${url}demos/web/${path}`.padEnd(48)} ${what}`);
  console.log(['fucina demos (Ctrl-C to stop):', ...pages].join('\n'));
}
