// One op table: web/ops.table.mjs is the one declaration of each op of the facade.
// Fails when an op of C++'s public list (src/fucina/ops/ops.list) is not in JS, when an op is in
// the .d.ts but not at run time or the other way round, when the files generated from the table
// (web/ops.bindings.inc, the generated blocks of web/index.d.ts) are stale, and when a generated
// method does not check its arguments the one way (InvalidArgument naming the op and the argument).
import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { OPS, HAND_WRITTEN, NOT_IN_JS } from '../../web/ops.table.mjs';
import { generated, bindingsText, dtsBlocks } from '../../web/gen-ops.mjs';
import { axis, int } from '../../web/ops.table.mjs';
import { Tensor } from 'fucina';
import { init, assert, throwsCode } from './helpers.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const tableNames = OPS.map((op) => op.name);

/** The op names of ops.list, in order (text after '#' ignored). */
function cppOps() {
  return readFileSync(`${root}src/fucina/ops/ops.list`, 'utf8').split('\n')
    .map((line) => line.replace(/#.*/, '').trim()).filter(Boolean);
}

/** Member names of class Tensor and interface Fucina in web/index.d.ts (syntax only). */
function declared() {
  const file = ts.createSourceFile('index.d.ts', readFileSync(`${root}web/index.d.ts`, 'utf8'), ts.ScriptTarget.Latest);
  const members = {};
  for (const s of file.statements)
    if ((ts.isClassDeclaration(s) || ts.isInterfaceDeclaration(s)) && ['Tensor', 'Fucina'].includes(s.name?.text))
      members[s.name.text] = new Set(s.members.map((m) => m.name?.getText(file)).filter(Boolean));
  return members;
}

test('the generated files are what web/gen-ops.mjs makes of the table (else run node web/gen-ops.mjs)', () => {
  for (const [file, want, have] of generated())
    assert.ok(want === have, `${file} is stale: run node web/gen-ops.mjs`);
  const shipped = readFileSync(`${root}dist/ops.table.mjs`, 'utf8');
  assert.equal(shipped, readFileSync(`${root}web/ops.table.mjs`, 'utf8'), 'dist/ops.table.mjs is older than web/: run scripts/build-wasm');
});

test('an op with several results is bound and declared as an array of Tensors', () => {
  // No op of the table has two results yet (topK will): this checks what the generator makes of one.
  const topK = { name: 'topK', on: 'tensor', doc: 'The k largest along axis.', args: [axis('axis'), int('k', { min: 0 })],
    returns: { kind: 'tensors', ts: '[values: Tensor, indices: Tensor]' } };
  assert.match(bindingsText([topK]), /return handlesOf\(self\.topK\(ctxOf\(self\), axis, k\)\);/);  // on the receiver's device
  assert.match(dtsBlocks([topK]).tensor, /^ {2}topK\(axis: string, k: number\): \[values: Tensor, indices: Tensor\];$/m);
});

test("C++'s public op list and the JS op table agree", () => {
  const list = cppOps();
  assert.equal(new Set(list).size, list.length, 'ops.list names an op twice');
  assert.equal(new Set(tableNames).size, tableNames.length, 'the op table declares an op twice');
  const inJs = new Set([...tableNames, ...Object.keys(HAND_WRITTEN)]);
  const missing = list.filter((op) => !inJs.has(op) && !(op in NOT_IN_JS));
  assert.deepEqual(missing, [], `in src/fucina/ops/ops.list but not in JS (add them to web/ops.table.mjs): ${missing.join(', ')}`);
  const unlisted = [...inJs, ...Object.keys(NOT_IN_JS)].filter((op) => !list.includes(op));
  assert.deepEqual(unlisted, [], `in web/ops.table.mjs but not in src/fucina/ops/ops.list: ${unlisted.join(', ')}`);
  const both = tableNames.filter((op) => op in HAND_WRITTEN || op in NOT_IN_JS);
  assert.deepEqual(both, [], 'an op of the table is also listed as hand-written or not in JS');
});

test('every op is in the .d.ts and at run time, and every method at run time is in the .d.ts', async () => {
  const fc = await init({ variant: 'simd' });
  const dts = declared();
  const receivers = { tensor: ['Tensor', Tensor.prototype], engine: ['Fucina', Object.getPrototypeOf(fc)] };
  const problems = [];
  for (const op of OPS) {
    const [type, proto] = receivers[op.on];
    if (!dts[type].has(op.name)) problems.push(`${type}.${op.name}: in the table but not in web/index.d.ts`);
    if (typeof proto[op.name] !== 'function') problems.push(`${type}.${op.name}: in the table but not at run time`);
  }
  for (const op of Object.keys(HAND_WRITTEN)) {
    const where = Object.entries(receivers).filter(([, [, proto]]) => typeof proto[op] === 'function').map(([, [type]]) => type);
    if (where.length !== 1) problems.push(`${op}: hand-written, but at run time on ${where.join(' and ') || 'neither Tensor nor Fucina'}`);
    else if (!dts[where[0]].has(op)) problems.push(`${where[0]}.${op}: at run time but not in web/index.d.ts`);
  }
  // Both ways for every public method (types.test.mjs does the same for the published file).
  for (const [type, proto] of Object.values(receivers)) {
    const runtime = Object.getOwnPropertyNames(proto).filter((n) => n !== 'constructor' && !n.startsWith('_'));
    for (const n of runtime) if (!dts[type].has(n)) problems.push(`${type}.${n}: at run time but not in web/index.d.ts`);
    for (const n of dts[type]) if (!runtime.includes(n) && !(type === 'Fucina' && n in fc)) problems.push(`${type}.${n}: in web/index.d.ts but not at run time`);
  }
  // Each Tensor op of the table has its binding (the engine's Handle class); the engine functions'
  // bindings are called by the adversarial suite's valid rows.
  const x = fc.ones(['d'], [2]);
  for (const op of OPS.filter((o) => o.on === 'tensor'))
    if (typeof x._handle[op.name] !== 'function') problems.push(`Tensor.${op.name}: no binding (rebuild the wasm: scripts/build-wasm)`);
  assert.deepEqual(problems, []);
});

// A value of the wrong kind, and a well-typed one, for each argument kind.
const BAD = { tensor: 42, tensors: 'x', axis: 7, tags: 'r', shape: 'x', int: 1.5, number: '1', bool: 1, floats: [1, 'x'], enum: 'nope', pair: 'x', options: 7 };
const good = (a, x) => ({ tensor: x, tensors: [x], axis: 'r', tags: ['r'], shape: [2], int: a.min ?? 0, number: 1, bool: false, floats: [1, 2],
  enum: a.enum?.values[0], pair: a.min ?? 1, options: {} })[a.kind];

test('every op of the table checks each argument and option: InvalidArgument naming the op and the argument', async () => {
  const fc = await init({ variant: 'simd' });
  const x = fc.ones(['r', 'c'], [2, 2]);
  const problems = [];
  const expect = (op, args, name, label) => {
    // Checks run in argument order before the engine is called: the bad one is the one reported.
    const e = throwsCode(() => (op.on === 'tensor' ? x[op.name](...args) : fc[op.name](...args)), 'InvalidArgument');
    if (!e.message.startsWith(`InvalidArgument: ${op.name}: `) || !e.message.includes(name))
      problems.push(`${label}: ${e.message}`);
  };
  for (const op of OPS) {
    op.args.forEach((a, i) => {
      const before = op.args.slice(0, i).map((b) => good(b, x));
      expect(op, [...before, BAD[a.kind]], a.kind === 'options' ? 'options' : a.label ?? a.name, `${op.name} argument ${a.name}`);
      if (a.kind !== 'options') return;
      // Each field of an options object (nested ones by path), bad on its own.
      const fields = (o, path) => o.fields.flatMap((f) => [[f, path], ...(f.kind === 'options' ? fields(f, [...path, f.name]) : [])]);
      for (const [f, path] of fields(a, [])) {
        const bad = path.reduceRight((inner, key) => ({ [key]: inner }), { [f.name]: BAD[f.kind] });
        if (a.check?.(bad)) continue;  // a rule over several keys speaks first (layerNorm's weight and bias)
        expect(op, [...before, bad], [...path, f.label ?? f.name].join('.'), `${op.name} option ${[...path, f.name].join('.')}`);
      }
    });
  }
  assert.deepEqual(problems, []);
  x.dispose();
});
