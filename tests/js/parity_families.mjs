// What the parity suites read from the repository in Node: the fixture families
// (tests/fixtures/parity/*.json), the op list (src/fucina/ops/ops.list) and the webgpu device's
// coverage matrix (docs/webgpu-ops.md). A page fetches the same files (tests/browser/).
import { readFileSync, readdirSync } from 'node:fs';

const root = new URL('../../', import.meta.url);
const dir = new URL('tests/fixtures/parity/', root);

/** The parity fixture families: [file name, parsed document], sorted by name. */
export function families() {
  return readdirSync(dir).filter((f) => f.endsWith('.json')).sort()
    .map((f) => [f, JSON.parse(readFileSync(new URL(f, dir), 'utf8'))]);
}

/** The ops of ops.list, in its order. */
export function opList() {
  return readFileSync(new URL('src/fucina/ops/ops.list', root), 'utf8').split('\n')
    .map((line) => line.replace(/#.*/, '').trim()).filter(Boolean);
}

/** docs/webgpu-ops.md's table: op → { status, why }; an op with two rows throws. */
export function webgpuMatrix() {
  const rows = new Map();
  for (const line of readFileSync(new URL('docs/webgpu-ops.md', root), 'utf8').split('\n')) {
    const m = /^\| `(\w+)` \| (yes|partly|no) \|(.*)\|$/.exec(line);
    if (!m) continue;
    if (rows.has(m[1])) throw new Error(`docs/webgpu-ops.md: ${m[1]} has two rows`);
    rows.set(m[1], { status: m[2], why: m[3].trim() });
  }
  return rows;
}
