#!/usr/bin/env node
// Writes what web/ops.table.mjs declares into the two files that cannot read it at run time:
//   web/ops.bindings.inc  the Embind bindings of the table's ops (included by web/bindings.cpp);
//   web/index.d.ts        the blocks between "BEGIN ops.table <block>" and "END ops.table <block>"
//                         markers: the options interfaces, the Tensor methods, the engine functions.
// Usage: node web/gen-ops.mjs          rewrite both files
//        node web/gen-ops.mjs --check  exit 1 if either is stale (tests/js/op_table.test.mjs does the same)
// The facade itself reads the table when it loads (web/facade.mjs, installOps).
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { OPS } from './ops.table.mjs';

const here = (f) => fileURLToPath(new URL(f, import.meta.url));
export const BINDINGS_FILE = here('ops.bindings.inc');
export const DTS_FILE = here('index.d.ts');
const WIDTH = 100;

// ---------------------------------------------------------------- the arguments, flattened

/**
 * The leaves of an op's arguments in binding order: options objects are replaced by their fields
 * (recursively). Each leaf: { arg, local (its C++ name), what (its name in messages) }.
 */
export function leavesOf(op) {
  const out = [];
  // path: what goes before a field's name in messages: top-level options' fields are named bare
  // ("conv2d: stride"), nested ones by path ("conv2d: axes.height"); null for a positional argument.
  const walk = (a, path) => {
    if (a.kind === 'options') a.fields.forEach((f) => walk(f, path === null ? '' : `${path}${a.name}.`));
    else out.push({ arg: a, local: a.name, what: `${op.name}: ${path ?? ''}${a.label ?? a.name}` });
  };
  op.args.forEach((a) => walk(a, null));
  const seen = new Set();
  for (const { local } of out) {
    if (seen.has(local) || local === 'self') throw new Error(`gen-ops: ${op.name} has two arguments or fields named ${local} (or one named self)`);
    seen.add(local);
  }
  return out;
}

// ---------------------------------------------------------------- C++

const cppString = (s) => JSON.stringify(s);

/** The binding's parameters and the C++ statements converting them into locals, for one leaf. */
function cppLeaf({ arg: a, local, what }) {
  const p = `${local}_`;
  switch (a.kind) {
    case 'tensor':
      return a.optional
        ? { params: [`val ${p}`], init: `const std::optional<Tensor> ${local} = optionalTensorOf(${p}, ${cppString(what)});` }
        : { params: [`val ${p}`], init: `const Tensor ${local} = tensorOf(${p}, ${cppString(what)});` };
    case 'tensors':
      return { params: [`val ${p}`], init: `const std::vector<Tensor> ${local} = tensorsOf(${p}, ${cppString(what)});` };
    case 'axis':
      return { params: [`std::string ${p}`], init: `const fucina::Tag ${local}(${p});` };
    case 'tags':
      return { params: [`val ${p}`], init: `const fucina::Tags ${local} = toTags(${p}, ${cppString(what)});` };
    case 'shape':
      return { params: [`val ${p}`], init: `const fucina::Extents ${local} = toExtents(${p});` };
    case 'int': {
      const [type, fn] = { size: ['size_t', 'toSize'], seed: ['uint64_t', 'toSeed'] }[a.cpp] ?? ['int64_t', 'toInt'];
      return { params: [`double ${p}`], init: `const ${type} ${local} = ${fn}(${p}, ${cppString(what)});` };
    }
    case 'number':
      return a.nullable
        ? { params: [`val ${p}`], init: `const std::optional<double> ${local} = optionalNumberOf(${p}, ${cppString(what)});` }
        : { params: [`double ${local}`] };  // numbers and booleans pass as they are
    case 'bool':
      return { params: [`bool ${local}`] };
    case 'floats':
      return { params: [`val ${p}`], init: `const std::vector<float> ${local} = emscripten::convertJSArrayToNumberVector<float>(${p});` };
    case 'enum':
      return a.enum.cpp
        ? { params: [`std::string ${p}`], init: `const auto ${local} = ${a.enum.cpp}(${p});` }
        : { params: [`std::string ${p}`], init: `const std::string& ${local} = ${p};` };
    case 'pair':
      return { params: [`double ${p}0`, `double ${p}1`],
        init: `const std::array<int64_t, 2> ${local}{toInt(${p}0, ${cppString(`${what}[0]`)}), toInt(${p}1, ${cppString(`${what}[1]`)})};` };
    default:
      throw new Error(`gen-ops: unknown argument kind ${a.kind}`);
  }
}

function cppOp(op) {
  const leaves = leavesOf(op);
  const parts = leaves.map(cppLeaf);
  const params = [...(op.on === 'tensor' ? ['Handle& self_'] : []), ...parts.flatMap((x) => x.params)];
  const inits = [...(op.on === 'tensor' ? ['const Tensor& self = self_.t;'] : []), ...parts.flatMap((x) => x.init ?? [])];
  // The context of the operands' device (a tensor method's receiver, else the first tensor
  // argument); an op without tensor operands makes its result on the default device.
  const first = leaves.find((l) => l.arg.kind === 'tensors' || (l.arg.kind === 'tensor' && !l.arg.optional));
  const context = op.on === 'tensor' ? 'ctxOf(self)' : first ? `ctxOf(${first.local})` : 'ctx()';
  const call = op.cpp?.replaceAll('ctx()', context) ??
    `${op.on === 'tensor' ? 'self.' : 'Tensor::'}${op.name}(${[context, ...leaves.map((l) => l.local)].join(', ')})`;
  const [type, result] = op.returns?.kind === 'tensors' ? ['std::vector<Tensor>', 'handlesOf'] : ['Tensor', 'wrap'];
  const body = call.includes(';')
    ? `return ${result}([&]() -> ${type} {\n${call.split('\n').map((l) => `        ${l.trim()}`).join('\n')}\n      }());`
    : `return ${result}(${call});`;
  const fn = op.on === 'tensor' ? 'c.function' : 'emscripten::function';
  return `  ${fn}(${cppString(op.name)}, +[](${params.join(', ')}) {\n    return guard([&] {\n` +
    `${inits.map((l) => `      ${l}\n`).join('')}      ${body}\n    });\n  });\n`;
}

/** The text of web/ops.bindings.inc (of the table's ops, or of others for a test). */
export function bindingsText(ops = OPS) {
  const tensorOps = ops.filter((op) => op.on === 'tensor');
  const engineOps = ops.filter((op) => op.on === 'engine');
  return '// Generated by web/gen-ops.mjs from web/ops.table.mjs: edit the table, then run\n' +
    '// `node web/gen-ops.mjs`. Included by web/bindings.cpp inside its anonymous namespace, after the\n' +
    '// converters used here (tensorOf, toTags, toInt, ...): each op converts and re-checks its\n' +
    '// arguments (the facade checked them first), then calls the C++ op under guard().\n\n' +
    `// Tensor methods (${tensorOps.length}).\n` +
    'void bindTensorOps(const emscripten::class_<Handle>& c) {\n' + tensorOps.map(cppOp).join('') + '}\n\n' +
    `// Engine functions (${engineOps.length}).\n` +
    'void bindEngineOps() {\n' + engineOps.map(cppOp).join('') + '}\n';
}

// ---------------------------------------------------------------- TypeScript

/** A doc comment wrapped to WIDTH columns at this indent. */
function docComment(text, indent) {
  const words = text.split(/\s+/).filter(Boolean);
  const lines = [];
  let line = '';
  for (const w of words) {
    const prefix = lines.length === 0 ? `${indent}/** ` : `${indent} * `;
    if (line && (prefix + line + ' ' + w).length > WIDTH - 3) {
      lines.push(line);
      line = w;
    } else line = line ? `${line} ${w}` : w;
  }
  lines.push(line);
  return lines.map((l, i) => `${i === 0 ? `${indent}/** ` : `${indent} * `}${l}${i === lines.length - 1 ? ' */' : ''}`).join('\n') + '\n';
}

function tsType(a) {
  switch (a.kind) {
    case 'tensor': return a.nullable ? 'Tensor | null' : 'Tensor';
    case 'tensors': return 'readonly Tensor[]';
    case 'axis': return 'string';
    case 'tags': return a.ts ?? 'readonly string[]';
    case 'shape': return 'readonly number[]';
    case 'int': case 'number': return 'number';
    case 'bool': return 'boolean';
    case 'floats': return 'readonly number[] | Float32Array';
    case 'pair': return 'Pair';
    case 'enum': return a.ts ?? a.enum.ts;
    case 'options': {
      if (a.ts) return a.ts;
      const short = a.shorthand && a.fields.find((f) => f.name === a.shorthand);
      return short ? `${tsType(short)} | ${a.type}` : a.type;
    }
    default: throw new Error(`gen-ops: unknown argument kind ${a.kind}`);
  }
}

const isOptional = (a) => a.kind === 'options' || 'default' in a || (a.kind === 'tensor' && a.optional);

function tsMethod(op, indent) {
  const params = op.args.map((a) => `${a.name}${isOptional(a) ? '?' : ''}: ${tsType(a)}`);
  const result = op.returns?.kind === 'tensors' ? op.returns.ts : op.returns === 'this' ? 'this' : 'Tensor';
  return docComment(op.doc, indent) + `${indent}${op.name}(${params.join(', ')}): ${result};\n`;
}

/** Every options interface the table names, bases before what extends them; one name, one field list. */
function optionInterfaces(ops) {
  const byType = new Map();
  const visit = (a) => {
    if (a.kind !== 'options') return;
    a.fields.forEach(visit);
    if (!a.type) return;
    const seen = byType.get(a.type);
    const names = a.fields.map((f) => f.name).join(',');
    if (seen && seen.fields.map((f) => f.name).join(',') !== names)
      throw new Error(`gen-ops: two option lists are named ${a.type}`);
    if (!seen) byType.set(a.type, a);
  };
  ops.forEach((op) => op.args.forEach(visit));
  const emitted = new Set();
  let out = '';
  const emit = (a) => {
    if (emitted.has(a.type)) return;
    const base = a.extends && byType.get(a.extends);
    if (a.extends && !base) throw new Error(`gen-ops: ${a.type} extends ${a.extends}, which no op declares`);
    if (base) emit(base);
    emitted.add(a.type);
    const inherited = new Set(base ? base.fields.map((f) => f.name) : []);
    out += (out ? '\n' : '') + docComment(a.doc ?? `Options of ${a.type}.`, '') +
      `export interface ${a.type}${base ? ` extends ${base.type}` : ''} {\n`;
    for (const f of a.fields.filter((f) => !inherited.has(f.name))) {
      const doc = f.kind === 'options' ? f.fieldDoc : f.doc;
      if (!doc) throw new Error(`gen-ops: ${a.type}.${f.name} has no doc`);
      out += docComment(doc, '  ') + `  ${f.name}?: ${tsType(f)};\n`;
    }
    out += '}\n';
  };
  [...byType.values()].forEach(emit);
  return out;
}

/** The generated blocks of index.d.ts, by marker name. */
export function dtsBlocks(ops = OPS) {
  return {
    options: optionInterfaces(ops),
    tensor: ops.filter((op) => op.on === 'tensor').map((op) => tsMethod(op, '  ')).join(''),
    engine: ops.filter((op) => op.on === 'engine').map((op) => tsMethod(op, '  ')).join(''),
  };
}

/** text with each block between its markers replaced. */
export function spliceDts(text, blocks = dtsBlocks()) {
  for (const [name, body] of Object.entries(blocks)) {
    const re = new RegExp(`(^[ \\t]*// BEGIN ops\\.table ${name}\\b[^\\n]*\\n)[\\s\\S]*?(^[ \\t]*// END ops\\.table ${name}\\b)`, 'm');
    if (!re.test(text)) throw new Error(`gen-ops: index.d.ts has no "BEGIN ops.table ${name}" ... "END ops.table ${name}" markers`);
    text = text.replace(re, (_, begin, end) => begin + body + end);
  }
  return text;
}

/** [file, what it should hold, what it holds] for each generated file. */
export function generated() {
  const dts = readFileSync(DTS_FILE, 'utf8');
  let bindings = '';
  try {
    bindings = readFileSync(BINDINGS_FILE, 'utf8');
  } catch {}
  return [[BINDINGS_FILE, bindingsText(), bindings], [DTS_FILE, spliceDts(dts), dts]];
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const check = process.argv.includes('--check');
  let stale = 0;
  for (const [file, want, have] of generated()) {
    if (want === have) continue;
    if (check) {
      console.error(`gen-ops: ${file} is stale: run node web/gen-ops.mjs`);
      ++stale;
    } else {
      writeFileSync(file, want);
      console.log(`gen-ops: wrote ${file}`);
    }
  }
  process.exit(stale ? 1 : 0);
}
