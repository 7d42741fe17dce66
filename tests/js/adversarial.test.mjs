// The adversarial suite: every public function and method called with the bad inputs
// users make. Each case must (a) throw a FucinaError with a code (or, for a value a user callback
// throws, that value), (b) leave fc.memory().liveTensors where it was, and (c) leave the module
// usable. Cases are generated from the tables in adversarial_cases.mjs; a public member without
// a row fails the coverage test, so a new method cannot skip the suite.
import { describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as pkg from 'fucina';
import { VARIANTS, engine, assert, init, FucinaError } from './helpers.mjs';
import * as C from './adversarial_cases.mjs';

const { Tensor, Optimizer } = pkg;
const isObject = (v) => v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype;
const show = (v) => {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'function') return 'fn';
  if (Array.isArray(v)) return `[${v.map(show).join(', ')}]`;
  if (isObject(v)) return `{ ${Object.entries(v).map(([k, x]) => `${k}: ${show(x)}`).join(', ')} }`;
  if (ArrayBuffer.isView(v)) return v.constructor.name;
  return String(v);
};

const idxBytes = new Uint8Array([0, 0, 8, 1, 0, 0, 0, 2, 7, 9]);
const dir = mkdtempSync(`${tmpdir()}/fucina-adversarial-`);
const idxFile = `${dir}/ok.idx`;
const gzTruncated = `${dir}/truncated.gz`;
writeFileSync(idxFile, idxBytes);
const gz = gzipSync(idxBytes);
writeFileSync(gzTruncated, gz.subarray(0, gz.length - 6));

/** The tensors, models and bytes the tables name; made once per engine, outside every baseline. */
function fixtures(fc, foreign) {
  const f = {
    x: fc.variable(['r', 'c'], [2, 3], [1, 2, 3, 4, 5, 6]),
    p: fc.constant(['r', 'c'], [2, 3], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]),
    acc: fc.constant(['r', 'c'], [2, 3], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]),  // written in place
    tk1: fc.constant(['r', 'c'], [2, 3], [1, 2, 3, 4, 5, 6]),  // consumed by takeAddNoGrad's valid call
    tk2: fc.constant(['r', 'c'], [2, 3], [1, 2, 3, 4, 5, 6]),  // and takeScaleNoGrad's
    s: fc.variable([], [], [2]),
    one: fc.ones([], []),
    v: fc.constant(['c'], [3], [1, 2, 3]),
    w: fc.constant(['o', 'c'], [2, 3], [1, 0, 1, 0, 1, 0]),
    bias: fc.constant(['o'], [2], [1, 2]),
    m: fc.constant(['k', 'o'], [3, 2], [1, 2, 3, 4, 5, 6]),
    idx: fc.constant(['k'], [2], [0, 2], 'i32'),
    gidx: fc.zeros(['r', 'c'], [2, 3], 'i32'),
    rows: fc.constant(['r', 'c'], [2, 2], [1, 2, 3, 4]),  // a source for indexAdd, setRows, setSlice
    lab: fc.constant(['r'], [2], [0, 2], 'i32'),
    mask: fc.constant(['r', 'c'], [2, 3], [1, 0, 1, 0, 1, 0], 'u8'),
    sq: fc.constant(['r', 'one'], [2, 1], [1, 2]),
    even: fc.constant(['r', 'c'], [2, 4], [1, 2, 3, 4, 5, 6, 7, 8]),
    q: fc.constant(['t', 'd'], [2, 4], [1, 2, 3, 4, 5, 6, 7, 8]),
    q4: fc.constant(['head', 't', 'd'], [1, 2, 4], [1, 2, 3, 4, 5, 6, 7, 8]),
    img: fc.constant(['c', 'h', 'w'], [1, 4, 4], Array.from({ length: 16 }, (_, i) => i)),
    img10: fc.zeros(['batch', 'c', 'h', 'w'], [1, 1, 10, 10]),
    img9: fc.zeros(['batch', 'c', 'h', 'w'], [1, 1, 9, 10]),
    wconv: fc.constant(['out', 'c', 'kh', 'kw'], [1, 1, 1, 1], [2]),
    lin: fc.constant(['batch', 'in'], [1, 2], [1, 2]),
    emb: fc.constant(['t', 'e'], [1, 4], [1, 2, 3, 4]),
    ids: fc.constant(['t'], [2], [0, 3], 'i32'),
    tokens: fc.constant(['batch', 't'], [1, 3], [1, 2, 3], 'i32'),
    tokensOut: fc.constant(['batch', 't'], [1, 3], [1, 2, 300], 'i32'),
    gone: fc.ones(['r', 'c'], [2, 3]),
    c4: fc.ones(['c'], [4]),
    h: fc.ones(['d'], [2], 'f16'),
    hv: fc.variable(['d'], [2], [1, 2]).to('f16'),  // a 16-bit tensor that requires gradients
    idxOut: fc.constant(['k'], [1], [9], 'i32'),
    gidxOut: fc.full(['r', 'c'], [2, 3], 9, 'i32'),
    labOut: fc.constant(['r'], [2], [0, 7], 'i32'),
    w32: fc.ones(['r', 'c'], [2, 32]),
    wlin: fc.constant(['c', 'in'], [3, 2], [1, 0, 0, 1, 1, 1]),
    labLin: fc.constant(['batch'], [1], [2], 'i32'),
    teacherLin: fc.constant(['batch', 'c'], [1, 3], [0.5, 1, -1]),
    qw: fc.ones(['d'], [4]),
    seq: fc.constant(['batch', 'c', 't'], [1, 1, 5], [1, 2, 3, 4, 5]),
    wseq: fc.constant(['out', 'c', 'k'], [1, 1, 2], [1, -1]),
    wseqT: fc.constant(['c', 'out', 'k'], [1, 1, 2], [1, -1]),
    cols: fc.constant(['patch', 'l'], [2, 1], [1, 2]),
    c1: fc.ones(['c'], [1]),
    qcos: fc.ones(['t', 'd'], [2, 2]),
    qsin: fc.zeros(['t', 'd'], [2, 2]),
    foreign,
    fc,
  };
  f.gone.dispose();
  f.prep = fc.prepareConv2dWeights(f.wconv);
  f.prepGone = fc.prepareConv2dWeights(f.wconv);
  f.prepGone.dispose();
  f.packed = fc.packRhs(f.w, 'c');  // {o=2, c=3}: v and its rmsNorm multiply by it
  f.packedGone = fc.packRhs(f.w, 'c');
  f.packedGone.dispose();
  f.packedHalf = fc.packRhs(fc.scope(() => f.w.narrow('c', 0, 2).contiguous()), 'c');  // even's c=4 halves to 2
  f.x64 = fc.ones(['t', 'c'], [1, 64]);
  f.packedQ8 = fc.packRhs(fc.scope(() => f.w32.quantize('q8_0', 'c')), 'c');
  f.bytes = fc.encodeSafetensors({ w: f.p });
  f.params = fc.nn.saveParameters([f.x]);
  f.corrupt = f.bytes.subarray(0, f.bytes.length - 3);
  f['#Linear'] = new fc.nn.Linear('in', 'out', 2, 2, 0);
  f['#Conv2d'] = new fc.nn.Conv2d('c', 'out', 1, 2, 1, 0);
  f['#LayerNorm'] = new fc.nn.LayerNorm('e', 4);
  f['#Embedding'] = new fc.nn.Embedding('t', 'e', 4, 2, 0.02, 0);
  f['#Mlp'] = new fc.nn.Mlp({ sizes: [2, 2] }, 0);
  f['#Cnn'] = new fc.nn.Cnn(C.CNN, 0);
  f['#Gpt'] = new fc.nn.Gpt(C.GPT, 0);
  f['#GptToFreeze'] = new fc.nn.Gpt(C.GPT, 0);
  // GPT-2: a model per method that changes one, one that never gets adapters, one disposed.
  const gpt2 = (seed, lora) => {
    const m = new fc.nn.Gpt2(C.GPT2, seed);
    if (lora) fc.nn.lora(m, lora).forEach((t) => t.dispose());
    return m;
  };
  f['#Gpt2'] = gpt2(0);
  f['#Gpt2Add'] = gpt2(1);
  f['#Gpt2Load'] = gpt2(2);
  f['#Gpt2ForLora'] = gpt2(3);
  f['#Gpt2Lora'] = gpt2(4, { rank: 2, targets: ['c_attn'] });
  f['#Gpt2Bare'] = gpt2(5);
  f['#Gpt2To'] = gpt2(9);  // to() returns the model, which the harness then disposes
  f['#Gpt2Gone'] = gpt2(6);
  f['#Gpt2Gone'].dispose();
  f.gpt2Bytes = f['#Gpt2'].save();
  f.adapterBytes = f['#Gpt2Lora'].saveAdapters();
  const rank4 = gpt2(7, { rank: 4, targets: ['c_attn'] });
  f.adapterBytes4 = rank4.saveAdapters();
  rank4.dispose();
  const twoLayers = new fc.nn.Gpt2({ ...C.GPT2, n_layer: 2 }, 8);
  f.gpt2Bytes2 = twoLayers.save();
  twoLayers.dispose();
  // Llama: the same, and PEFT's files of one with adapters.
  const llama = (seed, lora) => {
    const m = new fc.nn.Llama(C.LLAMA, seed);
    if (lora) fc.nn.lora(m, lora).forEach((t) => t.dispose());
    return m;
  };
  f['#Llama'] = llama(0);
  f['#LlamaAdd'] = llama(1);
  f['#LlamaLoad'] = llama(2);
  f['#LlamaForPeft'] = llama(3);
  f['#LlamaLora'] = llama(4, { rank: 2, targets: ['q_proj', 'down_proj'] });
  f['#LlamaTo'] = llama(9);
  f['#LlamaGone'] = llama(5);
  f['#LlamaGone'].dispose();
  f.llamaBytes = f['#Llama'].save();
  f.llamaBlob = new Blob([f.llamaBytes]);
  f.llamaAdapterBytes = f['#LlamaLora'].saveAdapters();
  ({ safetensors: f.llamaPeftBytes, config: f.llamaPeftConfig } = fc.nn.exportPeft(f['#LlamaLora']));
  // The adapters as a peft file: the same tensors without fucina's "fucina.lora" metadata.
  f.peftBytes = fc.scope(() => fc.encodeSafetensors(fc.decodeSafetensors(f.adapterBytes).tensors));
  f.wl = fc.constant(['in', 'out'], [2, 2], [1, 2, 3, 4]);
  f['#LoraLinear'] = new fc.nn.LoraLinear(f.wl, null, 'in', 'out');
  f['#LoraLinear'].adapt({ rank: 2 });
  f['#LoraGone'] = new fc.nn.LoraLinear(f.wl, null, 'in', 'out');
  f['#LoraGone'].dispose();
  f.tail = () => f.x.exp();  // checkpointTail's valid argument
  Object.assign(f, {
    idxBytes, idxFile, gzTruncated, idxTruncated: idxBytes.subarray(0, 6), idxCount: idxBytes.subarray(0, 9),
    idxType: Uint8Array.from(idxBytes, (b, i) => (i === 2 ? 0x0d : b)),
    split: { images: new Float32Array(4), labels: new Int32Array(1), count: 1, h: 2, w: 2 },
  });
  return f;
}

// '@name' strings (in bad values and raw arguments) are fixtures, also inside arrays and objects.
function resolve(v, f) {
  if (typeof v === 'string' && v.startsWith('@')) return f[v.slice(1)];
  if (Array.isArray(v)) return v.map((e) => resolve(e, f));
  if (isObject(v)) return Object.fromEntries(Object.entries(v).map(([k, e]) => [k, resolve(e, f)]));
  return v;
}

function validOf(a, f) {
  if (a.kind === 'tensor') return f[a.value];
  if (a.kind === 'tensors') return a.value.map((n) => f[n]);
  return resolve(a.value, f);
}

function badValues(a) {
  if (a.kind === 'raw') return a.extra;
  const own = C.BAD[a.kind];
  if (a.kind !== 'options' && a.kind !== 'loss') return own;
  const base = typeof a.value === 'string' ? {} : a.value;
  const perKey = Object.entries(a.extra).flatMap(([k, kind]) =>
    (Array.isArray(kind) ? kind : k === 'bias' ? C.BAD.tensor.filter((b) => b !== null) : C.BAD[kind])
      .map((bad) => ({ ...base, [k]: bad })));
  return [...own, ...perKey];
}

/** Every case of one row: { label, run, bad } where run(f) makes the call. */
function casesOf(key, spec, call) {
  const out = [];
  spec.args.forEach((a, i) => {
    for (const bad of badValues(a)) {
      out.push({ label: `${key}(arg ${i} = ${show(bad)})`, bad,
        run: (f) => call(f, spec.args.map((b, j) => (j === i ? resolve(bad, f) : validOf(b, f)))) });
    }
  });
  return out;
}

function tensorCall(name) {
  const getter = !!Object.getOwnPropertyDescriptor(Tensor.prototype, name)?.get;
  return (self) => (f, args) => (getter ? f[self][name] : f[self][name](...args));
}

// ---- hand-written rows: callbacks, heap exhaustion, optimizers
const thrown = [new RangeError('boom'), null, undefined, 'text', 7];
const returned = { 42: () => 42, null: () => null, '@gone': (f) => f.gone, '@foreign': (f) => f.foreign };

function callbackCases() {
  const out = [];
  // A fresh leaf per case: its gradient, and everything made, is freed at the end.
  const withLeaf = (f, body) => {
    const x = f.fc.variable(['d'], [2], [1, 2]);
    const made = [];
    try {
      return body(x, (t) => (made.push(t), t));
    } finally {
      made.forEach((t) => t.dispose());
      x.dispose();
    }
  };
  const sites = {
    'checkpoint block': (f, r) => withLeaf(f, (x) => f.fc.checkpoint(r, [x])),
    'checkpoint recompute': (f, r) => withLeaf(f, (x, keep) => {
      let n = 0;
      const y = keep(f.fc.checkpoint((a) => (n++ === 0 ? a.exp() : r(a)), [x]));
      keep(y.sumAll()).backward();
    }),
    'customVjp forward': (f, r) => withLeaf(f, (x) => f.fc.customVjp({ forward: r, backward: () => [null] }, [x])),
    'customVjp backward': (f, r) => withLeaf(f, (x, keep) =>
      keep(keep(f.fc.customVjp({ forward: ([a]) => a.scale(2), backward: (...a) => [r(...a)] }, [x])).sumAll()).backward()),
    'gradcheck loss': (f, r) => withLeaf(f, (x) => f.fc.gradcheck(r, [x])),
  };
  // generate's onToken returns a boolean or nothing (anything else goes on): only what it throws.
  for (const value of thrown)
    for (const model of ['#Gpt2', '#Llama', '#Gpt'])
      out.push({ label: `${model.slice(1)} generate onToken throws ${show(value)}`, expect: value,
        run: (f) => f[model].generate([1, 2], { maxTokens: 3, onToken: () => { throw value; } }) });
  for (const [site, run] of Object.entries(sites)) {
    for (const value of thrown)
      out.push({ label: `${site} throws ${show(value)}`, expect: value, run: (f) => run(f, () => { throw value; }) });
    for (const [what, r] of Object.entries(returned))
      out.push({ label: `${site} returns ${what}`, bad: what, run: (f) => run(f, () => r(f)) });
    if (site !== 'checkpoint block' && site !== 'customVjp forward')
      out.push({ label: `${site} returns a wrong shape`, run: (f) => run(f, () => f.fc.ones(['e'], [3])) });
  }
  const grads = { none: () => [], extra: (f) => [f.fc.ones(['d'], [2]), f.fc.ones(['d'], [2])], text: () => 'nope',
    number: () => [42], object: () => ({}), nested: (f) => [[f.fc.ones(['d'], [2])]] };
  for (const [what, g] of Object.entries(grads)) {
    out.push({ label: `customVjp backward returns ${what}`, run: (f) => withLeaf(f, (x, keep) =>
      keep(keep(f.fc.customVjp({ forward: ([a]) => a.scale(2), backward: () => g(f) }, [x])).sumAll()).backward()) });
  }
  out.push({ label: 'noGrad fn throws null', expect: null, run: (f) => f.fc.noGrad(() => { throw null; }) });
  out.push({ label: 'scope fn throws a string', expect: 's', run: (f) => f.fc.scope(() => { f.fc.ones(['d'], [2]); throw 's'; }) });
  return out;
}

const heapCases = [
  { label: 'zeros of 2^31 floats', code: 'OutOfMemory', run: (f) => f.fc.zeros(['d'], [2 ** 31]) },
  // 2 GiB: within the address space, so the heap itself is asked (and cannot grow that far).
  { label: 'zeros of 2^29 floats', code: 'OutOfMemory', run: (f) => f.fc.zeros(['d'], [2 ** 29]) },
];

function optimizerCases() {
  const live = (f, body) => {
    const o = f.fc.optim.sgd([f.x], { lr: 0.1 });
    try {
      return body(o);
    } finally {
      o.dispose();
    }
  };
  const dead = (f, body) => {
    const o = f.fc.optim.adam([f.x]);
    o.dispose();
    return body(o);
  };
  return [
    { key: 'step', label: 'step() after dispose', run: (f) => dead(f, (o) => o.step()) },
    { key: 'zeroGrad', label: 'zeroGrad() after dispose', run: (f) => dead(f, (o) => o.zeroGrad()) },
    { key: 'lr', label: 'lr after dispose', run: (f) => dead(f, (o) => o.lr) },
    { key: 'lr', label: 'lr = 1 after dispose', run: (f) => dead(f, (o) => { o.lr = 1; }) },
    ...C.BAD.number.map((bad) => ({ key: 'lr', label: `lr = ${show(bad)}`, run: (f) => live(f, (o) => { o.lr = bad; }) })),
  ];
}
const OPTIMIZER_EXEMPT = { params: 'a copy of the list, no arguments', isDisposed: 'a flag', dispose: 'idempotent' };

// ---- the members to cover, found by enumeration
// A prototype's public names, its base classes' included (nn.Gpt2 and nn.Llama share theirs).
const publicNames = (proto) => [...new Set(ownAndInherited(proto))].filter((n) => n !== 'constructor' && !n.startsWith('_'));
const ownAndInherited = (proto) => (proto && proto !== Object.prototype
  ? [...Object.getOwnPropertyNames(proto), ...ownAndInherited(Object.getPrototypeOf(proto))] : []);
const isClass = (v) => typeof v === 'function' && /^class\b/.test(Function.prototype.toString.call(v));

function covered(fc) {
  const missing = [];
  const need = (area, names, ...tables) => {
    for (const n of names) if (!tables.some((t) => Object.hasOwn(t, n))) missing.push(`${area}.${n}`);
  };
  need('Tensor', publicNames(Tensor.prototype), C.TENSOR, C.TENSOR_EXEMPT);
  need('fc', publicNames(Object.getPrototypeOf(fc)), C.FC, C.FC_EXEMPT);
  need('optim', Object.keys(fc.optim), C.OPTIM);
  const statics = (v) => Object.getOwnPropertyNames(v).filter((n) => !['length', 'name', 'prototype'].includes(n));
  const nnNames = Object.entries(fc.nn).flatMap(([k, v]) =>
    [k, ...(isClass(v) ? [...publicNames(v.prototype).map((m) => `${k}#${m}`), ...statics(v).map((m) => `${k}.${m}`)] : [])]);
  need('nn', nnNames, C.NN, C.NN_EXEMPT);
  need('Optimizer', publicNames(Optimizer.prototype), Object.fromEntries(C.OPTIMIZER.map((n) => [n, 1])));
  need('Optimizer', C.OPTIMIZER, Object.fromEntries([...optimizerCases().map((c) => [c.key, 1]), ...Object.entries(OPTIMIZER_EXEMPT)]));
  need('fucina', Object.keys(pkg).filter((k) => typeof pkg[k] === 'function'), C.MODULE, C.MODULE_EXEMPT);
  return missing;
}

/** The call of an fc.nn row: 'Class#method' on the fixture spec.self (a setter when spec.setter),
 * 'Class.method' a static, 'Class' with construct: true a constructor, else a function. */
function nnCall(name, spec) {
  const [cls, method] = name.split('#');
  if (method && spec.setter) return (f, [v]) => { f[spec.self][method] = v; };
  if (method) return (f, args) => f[spec.self][method](...args);
  if (spec.construct) return (f, args) => new f.fc.nn[cls](...args);
  const [owner, member] = cls.split('.');
  return member ? (f, args) => f.fc.nn[owner][member](...args) : (f, args) => f.fc.nn[cls](...args);
}

/** Every generated case, for one engine. */
function allCases() {
  const cases = [];
  for (const [name, spec] of Object.entries(C.TENSOR)) {
    const call = tensorCall(name);
    const self = spec.self ?? 'x';
    cases.push(...casesOf(`Tensor.${name}`, spec, call(self)));
    cases.push({ label: `Tensor.${name} on a disposed tensor`, bad: '@gone',
      run: (f) => call('gone')(f, spec.args.map((a) => validOf(a, f))) });
    if (spec.args.some((a) => a.kind === 'tensor'))
      cases.push({ label: `Tensor.${name} on another instance's tensor`, bad: '@foreign',
        run: (f) => call('foreign')(f, spec.args.map((a) => validOf(a, f))) });
  }
  for (const [name, spec] of Object.entries(C.FC)) cases.push(...casesOf(`fc.${name}`, spec, (f, args) => f.fc[name](...args)));
  for (const [name, spec] of Object.entries(C.OPTIM)) cases.push(...casesOf(`optim.${name}`, spec, (f, args) => f.fc.optim[name](...args)));
  for (const [name, spec] of Object.entries(C.NN))
    cases.push(...casesOf(`nn.${name}`, spec, nnCall(name, spec)).map((c) => ({ ...c, async: spec.async })));
  for (const [name, spec] of Object.entries(C.MODULE))
    cases.push(...casesOf(name, spec, (f, args) => pkg[name](...args)).map((c) => ({ ...c, async: spec.async })));
  // In a scope, which frees the intermediates a row makes (a tensor the engine leaked would stay).
  cases.push(...Object.entries(C.ENGINE).map(([label, run]) => ({ label, run: (f) => f.fc.scope(() => run(f)) })));
  cases.push(...Object.entries(C.PARTIAL).map(([label, run]) => ({ label, run })));
  cases.push(...callbackCases(), ...heapCases, ...optimizerCases().map((c) => ({ ...c, label: `Optimizer.${c.label}` })));
  return cases;
}

/** The valid call of every row succeeds (so each bad case fails for its bad argument). */
async function validCalls(fc, f) {
  const failures = [];
  const rows = [
    ...Object.entries(C.TENSOR).map(([n, s]) => [`Tensor.${n}`, s, (a) => tensorCall(n)(s.self ?? 'x')(f, a)]),
    ...Object.entries(C.FC).map(([n, s]) => [`fc.${n}`, s, (a) => fc[n](...a)]),
    ...Object.entries(C.OPTIM).map(([n, s]) => [`optim.${n}`, s, (a) => fc.optim[n](...a)]),
    ...Object.entries(C.NN).map(([n, s]) => [`nn.${n}`, s, (a) => nnCall(n, s)(f, a)]),
    ...Object.entries(C.MODULE).map(([n, s]) => [n, s, (a) => pkg[n](...a)]),
  ];
  for (const [label, spec, call] of rows) {
    if (spec.skipValid) continue;
    try {
      const made = [];
      await fc.scope(async () => {
        const r = await call(spec.args.map((a) => validOf(a, f)));
        if (r instanceof Optimizer || (r && typeof r.dispose === 'function' && !(r instanceof Tensor))) made.push(r);
      });
      made.forEach((o) => o.dispose());
    } catch (e) {
      failures.push(`${label}: the valid call threw ${e?.name}: ${e?.message}`);
    }
  }
  return failures;
}

async function stillWorks(fc) {
  return fc.scope(() => {
    const a = fc.variable(['d'], [2], [1, 2]);
    a.mul(a).sumAll().backward();
    return Array.from(a.grad().toArray()).join(',');
  });
}

/** Runs one case; returns what went wrong, or null. */
async function check(fc, f, c) {
  const before = fc.memory().liveTensors;
  let threw = false;
  let error;
  try {
    const r = c.run(f);
    if (c.async) await r;
  } catch (e) {
    threw = true;
    error = e;
  }
  const problems = [];
  if (!threw) problems.push('nothing was thrown');
  else if ('expect' in c) {
    if (!Object.is(error, c.expect)) problems.push(`expected the thrown ${show(c.expect)}, got ${error?.name}: ${error?.message ?? show(error)}`);
  } else if (!(error instanceof FucinaError) || typeof error.code !== 'string' || !error.code) {
    problems.push(`not a FucinaError with a code: ${error?.name}: ${error?.message ?? show(error)}`);
  } else {
    const want = c.code ?? (c.bad === '@gone' ? 'TensorReleased' : c.bad === '@foreign' ? 'InvalidArgument' : null);
    if (want && error.code !== want) problems.push(`expected ${want}, got ${error.code}: ${error.message}`);
    if (c.bad === '@foreign' && !/another fucina instance/.test(error.message)) problems.push(`unclear message: ${error.message}`);
  }
  // A leak raises the count. An async row awaits, and the GC may run the finalizers of handles
  // earlier rows abandoned (a model's parameters() handles) in that time, so there fewer is not a
  // failure (CI saw readIdx's row go 165 -> 164 once).
  const after = fc.memory().liveTensors;
  if (after > before || (after < before && !c.async)) problems.push(`liveTensors ${before} -> ${after}`);
  if (!fc.isGradEnabled()) {
    problems.push('grad mode left off');
    while (!fc.isGradEnabled()) fc.noGrad(() => {});  // cannot repair; stop the cascade below
  }
  try {
    const g = await stillWorks(fc);
    if (g !== '2,4') problems.push(`the module computed ${g} afterwards`);
  } catch (e) {
    problems.push(`the module is broken afterwards: ${e?.name}: ${e?.message}`);
  }
  return problems.length ? `${c.label}: ${problems.join('; ')}` : null;
}

test('every public member has an adversarial row', async () => {
  const fc = await engine('simd');
  assert.deepEqual(covered(fc), []);
});

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('every adversarial case throws a coded FucinaError, leaks nothing and leaves the module working', async (t) => {
      const fc = await engine(variant);
      const other = await init({ variant, threads: variant === 'threaded-simd' ? 1 : undefined });
      const f = fixtures(fc, other.ones(['r', 'c'], [2, 3]));
      const failures = await validCalls(fc, f);
      const cases = allCases();
      for (const c of cases) {
        const problem = await check(fc, f, c);
        if (problem) failures.push(problem);
      }
      t.diagnostic(`${cases.length} cases`);
      assert.ok(cases.length > 2000, `only ${cases.length} cases`);
      assert.deepEqual(failures, [], `${failures.length} of ${cases.length} cases failed:\n${failures.join('\n')}`);
    });
  });
}
