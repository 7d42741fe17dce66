// The package's one .d.ts is strict-clean for a TypeScript consumer, matches
// the runtime member for member, and tests/ts/consumer.ts uses every public member (so a new
// runtime function without a type, or a type without a use in the consumer, fails here).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import * as pkg from 'fucina';
import { init, Tensor, Optimizer, PackedRhs, FucinaError } from 'fucina';

const root = fileURLToPath(new URL('../../', import.meta.url));
const tsconfig = `${root}tests/ts/tsconfig.json`;
const publicOf = (names) => [...new Set(names)].filter((n) => n !== 'constructor' && !n.startsWith('_')).sort();
// A prototype's own names and its base classes' (PackedRhs and PreparedConv2d share OwnedHandle's).
const protoNames = (proto) => (proto && proto !== Object.prototype
  ? [...Object.getOwnPropertyNames(proto), ...protoNames(Object.getPrototypeOf(proto))] : []);
const instanceNames = (o) => publicOf([...Object.keys(o), ...protoNames(Object.getPrototypeOf(o))]);

test('tsc -p tests/ts (strict, nodenext, types through the package) reports nothing', () => {
  let output = '';
  try {
    output = execFileSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-p', tsconfig, '--pretty', 'false'],
      { cwd: root, encoding: 'utf8' });
  } catch (e) {
    assert.fail(`tsc failed (exit ${e.status}):\n${e.stdout}${e.stderr}`);
  }
  assert.equal(output.trim(), '', output);
});

/** The consumer compiled in memory: the checker, the d.ts's declared members and the consumer's uses. */
function compile() {
  const parsed = ts.getParsedCommandLineOfConfigFile(tsconfig, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(String(d.messageText)); } });
  const program = ts.createProgram(parsed.fileNames, parsed.options);
  const checker = program.getTypeChecker();
  const consumer = program.getSourceFiles().find((f) => f.fileName.endsWith('tests/ts/consumer.ts'));
  // 'fucina' resolves through package.json's exports to dist/index.d.ts (a copy of web/index.d.ts).
  const dts = program.getSourceFiles().find((f) => f.fileName.endsWith('/dist/index.d.ts'));
  assert.ok(consumer && dts, 'the consumer and the package types are in the program');
  const moduleSymbol = checker.getSymbolAtLocation(dts);
  const exports = new Map(checker.getExportsOfModule(moduleSymbol).map((s) => [s.name, s]));
  const typeOf = (name) => checker.getDeclaredTypeOfSymbol(exports.get(name));
  const members = (name) => publicOf(checker.getPropertiesOfType(typeOf(name)).map((p) => p.name));

  // Uses: `expr.member` recorded as "<type of expr>.member", and the names the consumer imports.
  const used = new Set();
  const imported = new Set();
  const visit = (node) => {
    if (ts.isPropertyAccessExpression(node)) {
      const type = checker.getTypeAtLocation(node.expression);
      const types = type.isUnion() ? type.types : [type];
      for (const t of types) used.add(`${checker.typeToString(checker.getNonNullableType(t))}.${node.name.text}`);
    }
    if (ts.isImportSpecifier(node)) imported.add(node.name.text);
    ts.forEachChild(node, visit);
  };
  visit(consumer);
  return { checker, exports, typeOf, members, used, imported };
}

test('the d.ts matches the runtime, member for member, and the consumer uses every member', async () => {
  const { checker, exports, typeOf, members, used, imported } = compile();
  const fc = await init({ variant: 'simd' });
  const gpt = new fc.nn.Gpt({ vocab: 8, context: 4, dModel: 4, heads: 2, layers: 1, mlp: 8 });
  const x = fc.variable(['d'], [2], [1, 2]);
  const layers = {
    Linear: new fc.nn.Linear('in', 'out', 2, 2, 1),
    Conv2d: new fc.nn.Conv2d('c', 'o', 1, 1, 1, 1),
    LayerNorm: new fc.nn.LayerNorm('e', 2),
    Embedding: new fc.nn.Embedding('v', 'e', 2, 2, 0.1, 1),
    Mlp: new fc.nn.Mlp({ sizes: [2, 2] }),
    Cnn: new fc.nn.Cnn({ image: 10, conv1: 1, conv2: 1, hidden: 1 }),
    Gpt: gpt,
    Gpt2: new fc.nn.Gpt2({ vocab_size: 8, n_positions: 4, n_embd: 4, n_layer: 1, n_head: 1 }),
    Llama: new fc.nn.Llama({ model_type: 'llama', vocab_size: 8, hidden_size: 4, num_hidden_layers: 1, num_attention_heads: 1,
      intermediate_size: 8, max_position_embeddings: 4 }),
    LoraLinear: new fc.nn.LoraLinear(fc.ones(['in', 'out'], [2, 2]), null, 'in', 'out'),
  };
  let thrown;
  try {
    x.add(3);
  } catch (e) {
    thrown = e;
  }
  assert.ok(thrown instanceof FucinaError);
  const runtime = {
    Fucina: instanceNames(fc),
    Tensor: publicOf(protoNames(Tensor.prototype)),
    Optimizer: publicOf(protoNames(Optimizer.prototype)),
    PackedRhs: publicOf(protoNames(PackedRhs.prototype)),
    PreparedConv2d: instanceNames(fc.prepareConv2dWeights(fc.ones(['out', 'c', 'kh', 'kw'], [1, 1, 1, 1]))),
    Optim: publicOf(Object.keys(fc.optim)),
    Nn: publicOf(Object.keys(fc.nn)),
    ...Object.fromEntries(Object.entries(layers).map(([k, v]) => [k, instanceNames(v)])),
    GptBlock: publicOf(Object.keys(gpt.blocks[0])),
    MemoryInfo: publicOf(Object.keys(fc.memory())),
    GradcheckResult: publicOf(Object.keys(fc.gradcheck((a) => a.sumAll(), [x]))),
    SafetensorsContents: publicOf(Object.keys(fc.decodeSafetensors(fc.encodeSafetensors({ x })))),
    FucinaError: publicOf(Object.getOwnPropertyNames(thrown).filter((n) => n !== 'stack' && n !== 'message')),
  };
  const problems = [];

  // The module's value exports (classes and functions) are exactly the runtime's.
  const valueExports = [...exports.values()].filter((s) => s.flags & (ts.SymbolFlags.Value)).map((s) => s.name).sort();
  assert.deepEqual(valueExports, Object.keys(pkg).sort(), 'value exports of index.d.ts vs the module');
  for (const name of Object.keys(pkg)) if (!imported.has(name)) problems.push(`the consumer does not import ${name}`);

  for (const [area, names] of Object.entries(runtime)) {
    assert.ok(exports.has(area), `index.d.ts exports a type ${area}`);
    const declared = area === 'FucinaError'
      ? publicOf(checker.getPropertiesOfType(typeOf(area)).filter((p) => p.valueDeclaration?.parent?.name?.text === 'FucinaError').map((p) => p.name))
      : members(area);
    const missingType = names.filter((n) => !declared.includes(n));
    const missingRuntime = declared.filter((n) => !names.includes(n));
    if (missingType.length) problems.push(`${area}: at run time but not in index.d.ts: ${missingType.join(', ')}`);
    if (missingRuntime.length) problems.push(`${area}: in index.d.ts but not at run time: ${missingRuntime.join(', ')}`);
    // Data objects (MemoryInfo, ...) are covered when the consumer reads their fields.
    const unused = names.filter((n) => !used.has(`${area}.${n}`));
    if (unused.length) problems.push(`${area}: tests/ts/consumer.ts never uses ${unused.join(', ')}`);
  }

  // FucinaErrorCode is the C++ ErrorCode list (src/fucina/core/error.h) plus Internal and LoadFailed.
  const header = readFileSync(`${root}src/fucina/core/error.h`, 'utf8');
  const list = header.slice(header.indexOf('#define FUCINA_ERROR_CODES'), header.indexOf('enum class ErrorCode'));
  const cpp = [...list.matchAll(/X\((\w+)\)/g)].map((m) => m[1]);
  const codes = typeOf('FucinaErrorCode').types.map((t) => t.value);
  assert.deepEqual([...codes].sort(), [...cpp, 'Internal', 'LoadFailed'].sort(), 'FucinaErrorCode vs error.h');

  assert.deepEqual(problems, []);
  for (const l of Object.values(layers)) for (const p of l.parameters()) p.dispose();
  layers.Gpt2.dispose();
  layers.Llama.dispose();
  layers.LoraLinear.dispose();
});
