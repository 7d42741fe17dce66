// scripts/docs-js builds the JS API reference from web/index.d.ts with TypeDoc,
// warnings as errors (an undocumented member, a non-exported type or a broken link fails it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

test('scripts/docs-js generates build/docs/js without a warning', () => {
  const run = spawnSync('bash', ['scripts/docs-js'], { cwd: root, encoding: 'utf8', timeout: 60_000 });
  assert.equal(run.status, 0, `scripts/docs-js exited ${run.status}:\n${run.stdout}${run.stderr}`);
  assert.doesNotMatch(run.stdout + run.stderr, /\[warning\]/);
  for (const page of ['index.html', 'classes/Tensor.html', 'interfaces/Fucina.html', 'interfaces/Gpt.html'])
    assert.ok(existsSync(`${root}build/docs/js/${page}`), `build/docs/js/${page}`);
  assert.match(readFileSync(`${root}build/docs/js/classes/Tensor.html`, 'utf8'), /Contracts the shared axis/);
});
