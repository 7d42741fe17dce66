// init()'s file-location options (for CDNs and custom layouts): locateFile, baseUrl and wasmUrl
// find the engine's files wherever they are, and a wrong option or a missing file fails with a
// clear FucinaError (InvalidArgument, or LoadFailed naming the remedy).
import { test } from 'node:test';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { init, FucinaError } from 'fucina';
import { assert, VARIANTS } from './helpers.mjs';

const wasmDir = fileURLToPath(new URL('../../dist/wasm/', import.meta.url));
const works = (fc) => assert.equal(fc.constant(['a'], [3], [1, 2, 3]).sumAll().item(), 6);
const rejectsWith = (promise, code, pattern) => assert.rejects(promise,
  (e) => e instanceof FucinaError && e.code === code && pattern.test(e.message) ? true : assert.fail(`${e.code}: ${e.message}`));

for (const variant of VARIANTS) {
  test(`${variant}: baseUrl and locateFile load the files from another folder`, async () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'fucina-files-'));
    try {
      cpSync(wasmDir, elsewhere, { recursive: true });
      works(await init({ variant, baseUrl: pathToFileURL(`${elsewhere}/`) }));
      works(await init({ variant, baseUrl: pathToFileURL(elsewhere).href }));  // no trailing slash
      const asked = [];
      works(await init({ variant, locateFile: (file, v) => { asked.push([file, v]); return join(elsewhere, file); } }));
      assert.ok(asked.some(([f]) => f === `fucina-${variant}.wasm`), JSON.stringify(asked));
      assert.ok(asked.every(([, v]) => v === variant));
      works(await init({ variant, wasmUrl: join(elsewhere, `fucina-${variant}.wasm`) }));
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  test(`${variant}: a folder without the files fails with LoadFailed`, async () => {
    const empty = mkdtempSync(join(tmpdir(), 'fucina-empty-'));
    try {
      await rejectsWith(init({ variant, baseUrl: pathToFileURL(`${empty}/`) }), 'LoadFailed', /cannot load the .* engine.*baseUrl/);
      await rejectsWith(init({ variant, wasmUrl: join(empty, 'nothing.wasm') }), 'LoadFailed', /nothing\.wasm/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
}

test('bad location options are InvalidArgument', async () => {
  await rejectsWith(init({ locateFile: 'x' }), 'InvalidArgument', /locateFile must be a function/);
  await rejectsWith(init({ variant: 'simd', locateFile: () => 42 }), 'InvalidArgument', /locateFile\('fucina-simd.*returned 42, not a URL/);
  await rejectsWith(init({ baseUrl: 7 }), 'InvalidArgument', /baseUrl must be a string or URL, got 7/);
  await rejectsWith(init({ wasmUrl: '/x.wasm' }), 'InvalidArgument', /wasmUrl names one variant/);
  await rejectsWith(init({ variant: 'auto', wasmUrl: '/x.wasm' }), 'InvalidArgument', /wasmUrl names one variant/);
  await rejectsWith(init({ variant: 'simd', wasmUrl: {} }), 'InvalidArgument', /wasmUrl must be a string or URL, got an object/);
});
