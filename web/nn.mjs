// fc.nn: layers and the benchmark models (W1 mlp, W2 cnn, W3 gpt), the JavaScript twins of
// src/fucina/nn/{layers,models}.h. Same axes, same initialisation from the same seeds, so a model
// built here with seed s holds exactly the parameters C++ builds with seed s. The pretrained
// models and LoRA (Gpt2, Llama, LoraLinear, lora, exportPeft, exportPeftAsync, loadPeft) have no twin: they wrap
// C++'s, bound in web/bindings.cpp (web/pretrained.mjs).
import { FucinaError, checkInt, checkOptions, invalid, isPlainObject, pair, typeName } from './errors.mjs';
import { generateArgs, makePretrained } from './pretrained.mjs';

/** The per-parameter seed of C++'s nn::subSeed (kept below 2^53). */
export function subSeed(seed, index) {
  checkInt(seed, 'subSeed: seed', 0);
  checkInt(index, 'subSeed: index', 0);
  return Number((BigInt(seed) * 1000003n + BigInt(index) * 7919n + 1n) & ((1n << 53n) - 1n));
}

export function makeNn(fc) {
  const uniformVariable = (tags, shape, bound, seed) =>
    fc.scope(() => fc.variable(fc.uniform(tags, shape, -bound, bound, seed)));
  const defined = (...ts) => ts.filter((t) => t !== null);
  // A layer method's tensor argument, checked up front so that a mistake is reported in the
  // layer's terms ("nn.Gpt.loss: tokens ...") rather than by whichever op meets it first:
  // where = 'Layer.method', name = the argument; axes: { axis: extent (or null for any) } it
  // must have; dtypes: those allowed; forbid: axes the layer makes itself, which would collide.
  // Each mistake has the code the op would have thrown: DTypeMismatch, ShapeMismatch.
  const input = (x, where, name, { axes = {}, dtypes = ['f32'], forbid = [] } = {}) => {
    const what = `nn.${where}: ${name}`;
    fc._operand(x, what);
    const [tags, shape, dtype] = [x.tags, x.shape, x.dtype];
    const got = () => `got {${tags.map((t, i) => `${t}=${shape[i]}`).join(', ')}} ${dtype}`;
    const error = (code, message) => new FucinaError(code, `${code}: ${message}`);
    if (!dtypes.includes(dtype))
      throw error('DTypeMismatch', `${what} must be an ${dtypes.join(' or ')} tensor, ${got()}`);
    for (const [axis, extent] of Object.entries(axes)) {
      const i = tags.indexOf(axis);
      if (i < 0) throw error('ShapeMismatch', `${what} must have an axis '${axis}'${extent === null ? '' : ` of extent ${extent}`}, ${got()}`);
      if (extent !== null && shape[i] !== extent) throw error('ShapeMismatch', `${what}: axis '${axis}' must have extent ${extent}, ${got()}`);
    }
    const clash = tags.filter((t) => forbid.includes(t));
    if (clash.length)
      throw error('ShapeMismatch', `${what} must not have ${clash.map((t) => `'${t}'`).join(', ')}: the layer makes ${clash.length > 1 ? 'those axes' : 'that axis'} itself, ${got()}`);
    return x;
  };
  const INDEX_DTYPES = ['i32', 'i64'];
  const size = (x, what) => checkInt(x, what, 1, 2 ** 31 - 1);  // a layer's feature or channel count
  // A config object: unknown keys rejected, every given value a positive integer unless listed.
  const config = (c, defaults, what, other = []) => {
    const o = { ...defaults, ...checkOptions(c, [...Object.keys(defaults)], what) };
    for (const [k, v] of Object.entries(o)) if (!other.includes(k)) size(v, `${what}: ${k}`);
    return o;
  };

  /** y{..., out} = x{..., in} · weight{out, in} + bias{out}; U(±1/sqrt(in)) as torch. */
  class Linear {
    constructor(inAxis, outAxis, inFeatures, outFeatures, seed, options) {
      const { bias = true } = checkOptions(options, ['bias'], 'nn.Linear');
      if (typeof bias !== 'boolean') throw invalid('nn.Linear: bias must be a boolean');
      size(inFeatures, 'nn.Linear: inFeatures');
      size(outFeatures, 'nn.Linear: outFeatures');
      const bound = 1 / Math.sqrt(inFeatures);
      this.in = inAxis;
      this.out = outAxis;
      this.weight = uniformVariable([outAxis, inAxis], [outFeatures, inFeatures], bound, subSeed(seed, 0));
      this.bias = bias ? uniformVariable([outAxis], [outFeatures], bound, subSeed(seed, 1)) : null;
    }
    forward(x) {
      input(x, 'Linear.forward', 'x', { axes: { [this.in]: this.weight.shape[1] }, forbid: this.out === this.in ? [] : [this.out] });
      return this.bias ? x.addDot(this.weight, this.in, this.bias) : x.dot(this.weight, this.in);
    }
    /** The layer for inference: its weight packed once (fc.packRhs), forward by dotPacked. */
    pack() {
      const [packed, bias] = fc.scope(() => [fc.packRhs(this.weight.detach(), this.in), this.bias?.detach() ?? null]);
      return {
        forward: (x) => {
          input(x, 'Linear.pack().forward', 'x', { axes: { [this.in]: packed.depth }, forbid: this.out === this.in ? [] : [this.out] });
          return x.dotPacked(packed, bias);
        },
        dispose: () => {
          packed.dispose();
          bias?.dispose();
        },
      };
    }
    parameters() { return defined(this.weight, this.bias); }
  }

  /** conv2d + bias: x{..., in, h, w} -> {..., out, h', w'}; options as Tensor.conv2d's (no axes.channels). */
  class Conv2d {
    constructor(inAxis, outAxis, inChannels, outChannels, kernel, seed, options = {}) {
      checkOptions(options, ['stride', 'padding', 'dilation', 'groups', 'axes'], 'nn.Conv2d');
      // Checked now rather than at the first forward, where the mistake would be far from its cause.
      const { stride = 1, padding = 0, dilation = 1, groups = 1 } = options;
      [['stride', stride, 1], ['padding', padding, 0], ['dilation', dilation, 1]].forEach(([k, v, min]) => pair(v, `nn.Conv2d: ${k}`, min));
      size(groups, 'nn.Conv2d: groups');
      checkOptions(options.axes, ['height', 'width', 'kernelH', 'kernelW'], 'nn.Conv2d: axes');
      size(inChannels, 'nn.Conv2d: inChannels');
      size(outChannels, 'nn.Conv2d: outChannels');
      size(kernel, 'nn.Conv2d: kernel');
      if (inChannels % groups !== 0) throw invalid(`nn.Conv2d: inChannels ${inChannels} is not a multiple of groups ${groups}`);
      const axes = { kernelH: 'kh', kernelW: 'kw', ...(options.axes ?? {}), channels: inAxis, outChannels: outAxis };
      const bound = 1 / Math.sqrt((inChannels / groups) * kernel * kernel);
      this.options = { ...options, axes };
      this.weight = uniformVariable([outAxis, inAxis, axes.kernelH, axes.kernelW],
        [outChannels, inChannels / groups, kernel, kernel], bound, subSeed(seed, 0));
      this.bias = uniformVariable([outAxis], [outChannels], bound, subSeed(seed, 1));
    }
    #check(x, where) {
      const { channels, height = 'h', width = 'w', outChannels, kernelH, kernelW } = this.options.axes;
      const groups = this.options.groups ?? 1;
      input(x, where, 'x', { axes: { [channels]: this.weight.shape[1] * groups, [height]: null, [width]: null },
        forbid: [outChannels, kernelH, kernelW].filter((a) => a !== channels) });
    }
    forward(x) {
      this.#check(x, 'Conv2d.forward');
      return x.conv2d(this.weight, { ...this.options, bias: this.bias }); }
    forwardRelu(x, options = {}) {
      const { maxPool = 1 } = checkOptions(options, ['maxPool'], 'Conv2d.forwardRelu');
      this.#check(x, 'Conv2d.forwardRelu');
      return x.conv2dRelu(this.weight, { ...this.options, bias: this.bias, maxPool }); }
    /** The layer for inference: weight and bias prepared once (fc.prepareConv2dWeights). */
    pack() {
      const prepared = prepareConv(this);
      return {
        forward: (x) => {
          this.#check(x, 'Conv2d.pack().forward');
          return x.conv2dPrepared(prepared);
        },
        dispose: () => prepared.dispose(),
      };
    }
    parameters() { return [this.weight, this.bias]; }
  }
  // A Conv2d layer's weight and bias prepared for conv2dPrepared(Relu), detached (a snapshot).
  const prepareConv = (layer) => fc.scope(() =>
    fc.prepareConv2dWeights(layer.weight.detach(), { ...layer.options, bias: layer.bias.detach() }));

  /** Affine layer normalisation over axis: weight ones, bias zeros. */
  class LayerNorm {
    constructor(axis, features, eps = 1e-5) {
      size(features, 'nn.LayerNorm: features');
      if (typeof eps !== 'number') throw invalid('nn.LayerNorm: eps must be a number');
      this.axis = axis;
      this.eps = eps;
      this.weight = fc.scope(() => fc.variable(fc.ones([axis], [features])));
      this.bias = fc.scope(() => fc.variable(fc.zeros([axis], [features])));
    }
    forward(x) {
      input(x, 'LayerNorm.forward', 'x', { axes: { [this.axis]: this.weight.shape[0] } });
      return x.layerNorm(this.axis, { eps: this.eps, weight: this.weight, bias: this.bias }); }
    parameters() { return [this.weight, this.bias]; }
  }

  /** A lookup table {rows, dim} ~ N(0, std²): ids{...} -> {..., dim}. */
  class Embedding {
    constructor(rows, dim, count, features, std, seed) {
      size(count, 'nn.Embedding: count');
      size(features, 'nn.Embedding: features');
      this.rows = rows;
      this.table = fc.scope(() => fc.variable(fc.normal([rows, dim], [count, features], 0, std, seed)));
    }
    forward(ids) {
      const dim = this.table.tags[1];
      input(ids, 'Embedding.forward', 'ids', { dtypes: INDEX_DTYPES, forbid: [dim] });
      return this.table.indexSelect(this.rows, ids);
    }
    parameters() { return [this.table]; }
  }

  // Builds a model's layers in a scope, so that a layer failing (a size the heap cannot hold)
  // frees the ones already made; on success the parameters stay with the caller.
  const layered = (model, build) => fc.scope(() => {
    build();
    return model.parameters();
  });

  const hiddenTag = (i, last) => (i === last ? 'class' : `h${i}`);

  // The models' forward passes run in a scope: the intermediates' handles go at the end (the
  // graph keeps what backward needs), also when a layer fails part-way.

  /** W1: x{batch, "in"} -> (Linear+ReLU)* -> Linear -> logits{batch, "class"}. */
  class Mlp {
    constructor(options, seed = 0) {
      const { sizes = [784, 512, 256, 10] } = checkOptions(options, ['sizes'], 'nn.Mlp');
      if (!Array.isArray(sizes) || sizes.length < 2) throw invalid('nn.Mlp: sizes needs an input and an output size');
      sizes.forEach((n, i) => size(n, `nn.Mlp: sizes[${i}]`));
      const last = sizes.length - 1;
      this.layers = [];
      layered(this, () => {
        for (let i = 0; i < last; ++i)
          this.layers.push(new Linear(i === 0 ? 'in' : hiddenTag(i, last), hiddenTag(i + 1, last), sizes[i], sizes[i + 1], subSeed(seed, i)));
      });
    }
    forward(x) {
      const last = this.layers.length;
      input(x, 'Mlp.forward', 'x', { axes: { in: this.layers[0].weight.shape[1] },
        forbid: this.layers.map((_, i) => hiddenTag(i + 1, last)) });
      return fc.scope(() => this.layers.reduce((h, layer, i) => {
        const y = layer.forward(h);
        return i + 1 < this.layers.length ? y.relu() : y;
      }, x));
    }
    /** The model for inference: every layer packed once (Linear.pack); dispose() frees them. */
    pack() {
      const layers = this.layers.map((l) => l.pack());
      return {
        forward: (x) => fc.scope(() => layers.reduce((h, layer, i) => {
          const y = layer.forward(h);
          return i + 1 < layers.length ? y.relu() : y;
        }, x)),
        dispose: () => layers.forEach((l) => l.dispose()),
      };
    }
    parameters() { return this.layers.flatMap((l) => l.parameters()); }
  }

  const afterConvPool = (size) => Math.floor((size - 2) / 2);

  /** W2: images{batch, "c", "h", "w"} (or {batch, "h", "w"}) -> logits{batch, "class"}; with
   * channelsLast, images{batch, "h", "w", "c"} computed channels last (C++'s CnnConfig). */
  class Cnn {
    constructor(options, seed = 0) {
      const { image, channels, conv1, conv2, hidden, classes, channelsLast } = config(options,
        { image: 28, channels: 1, conv1: 32, conv2: 64, hidden: 128, classes: 10, channelsLast: false }, 'nn.Cnn',
        ['channelsLast']);
      if (typeof channelsLast !== 'boolean') throw invalid('nn.Cnn: channelsLast must be a boolean');
      const side = afterConvPool(afterConvPool(image));
      if (side < 1) throw invalid(`nn.Cnn: images of ${image} pixels are too small (need >= 10)`);
      this.config = { image, channels, conv1, conv2, hidden, classes, channelsLast };
      this.flatFeatures = conv2 * side * side;
      layered(this, () => {
        this.conv1 = new Conv2d('c', 'c1', channels, conv1, 3, subSeed(seed, 0));
        this.conv2 = new Conv2d('c1', 'c2', conv1, conv2, 3, subSeed(seed, 1));
        this.fc1 = new Linear('feature', 'hidden', this.flatFeatures, hidden, subSeed(seed, 2));
        this.fc2 = new Linear('hidden', 'class', hidden, classes, subSeed(seed, 3));
      });
    }
    // The images, checked, with a 'c' axis (one-channel images may leave it out).
    #images(images, where) {
      const { image, channels } = this.config;
      const forbid = ['c1', 'c2', 'kh', 'kw', 'feature', 'hidden', 'class'];
      input(images, where, 'images', { axes: { h: image, w: image }, forbid });
      if (channels !== 1 || images.tags.includes('c')) input(images, where, 'images', { axes: { c: channels } });
      if (images.tags.includes('c')) return images;
      return images.insertAxis('c', this.config.channelsLast ? images.tags.length : images.tags.length - 2);
    }
    // The features' order: channels last reads (h, w, c2), a view of its layout.
    get #flatOrder() { return this.config.channelsLast ? ['h', 'w', 'c2'] : ['c2', 'h', 'w']; }
    forward(images) {
      return fc.scope(() => {
        let h = this.conv1.forwardRelu(this.#images(images, 'Cnn.forward'), { maxPool: 2 });
        h = this.conv2.forwardRelu(h, { maxPool: 2 }).merge(this.#flatOrder, 'feature');
        return this.fc2.forward(this.fc1.forward(h).relu());
      });
    }
    /** The model for inference: convolutions prepared (relu fused), Linears packed, once. */
    pack() {
      const [conv1, conv2] = [prepareConv(this.conv1), prepareConv(this.conv2)];
      const [fc1, fc2] = [this.fc1.pack(), this.fc2.pack()];
      return {
        forward: (images) => fc.scope(() => {
          let h = this.#images(images, 'Cnn.pack().forward').conv2dPreparedRelu(conv1).maxPool2d(2);
          h = h.conv2dPreparedRelu(conv2).maxPool2d(2).merge(this.#flatOrder, 'feature');
          return fc2.forward(fc1.forward(h).relu());
        }),
        dispose: () => [conv1, conv2, fc1, fc2].forEach((p) => p.dispose()),
      };
    }
    parameters() { return [this.conv1, this.conv2, this.fc1, this.fc2].flatMap((l) => l.parameters()); }
  }

  // Causal self-attention of one block (C++'s nn::causalSelfAttention): qkv{batch..., t, part,
  // head, hd} of the new positions. With a KV cache (an array of { k, v } per block, Note [KV
  // cache] in src/fucina/nn/generate.h) their keys and values join block `layer`'s and the queries
  // attend over all of them, the causal mask aligned to the end.
  const causalSelfAttention = (qkv, cache, layer) => {
    let [k, v] = [qkv.select('part', 1), qkv.select('part', 2)];
    if (cache) {
      const past = cache[layer];
      if (past) {
        [k, v] = [fc.concat([past.k, k], 't'), fc.concat([past.v, v], 't')];
        cache[layer] = { k, v };
      } else {
        // The first forward attends as an uncached one does and keeps copies of K and V alone,
        // not the whole qkv buffer they view.
        cache[layer] = { k: k.contiguous(), v: v.contiguous() };
      }
    }
    return fc.groupedAttention(qkv.select('part', 0), k, v, { heads: 'head', time: 't', dim: 'hd', causal: true });
  };
  const cachedLength = (cache) => (cache?.length ? cache[0].k.shape[cache[0].k.tags.indexOf('t')] : 0);

  // fn() with fc.defaultDevice set to device: tensors a method makes for a model go where it is.
  const onDevice = (device, fn) => {
    const before = fc.defaultDevice;
    fc.defaultDevice = device;
    try {
      return fn();
    } finally {
      fc.defaultDevice = before;
    }
  };

  /** W3: a byte-level pre-LayerNorm GPT; tokens{batch, "t"} (i32) -> logits{batch, "t", "vocab"}. */
  class Gpt {
    constructor(options, seed = 0) {
      const c = config(options, { vocab: 256, context: 128, dModel: 128, heads: 4, layers: 2, mlp: 512, checkpointBlocks: false },
        'nn.Gpt', ['checkpointBlocks']);
      if (typeof c.checkpointBlocks !== 'boolean') throw invalid('nn.Gpt: checkpointBlocks must be a boolean');
      if (c.dModel % c.heads !== 0)
        throw invalid(`nn.Gpt: dModel ${c.dModel} is not a multiple of heads ${c.heads}`);
      this.config = c;
      this.blocks = [];
      layered(this, () => {
        this.token = new Embedding('vocab', 'e', c.vocab, c.dModel, 0.02, subSeed(seed, 0));
        this.position = new Embedding('t', 'e', c.context, c.dModel, 0.02, subSeed(seed, 1));
        this.final = new LayerNorm('e', c.dModel);
        for (let i = 0; i < c.layers; ++i) {
          const s = subSeed(seed, 16 + i);
          // The same parameter order as C++'s Gpt::Block::slots().
          const b = { ln1: new LayerNorm('e', c.dModel), ln2: new LayerNorm('e', c.dModel),
            qkv: new Linear('e', 'qkv', c.dModel, 3 * c.dModel, subSeed(s, 0)),
            proj: new Linear('ao', 'e', c.dModel, c.dModel, subSeed(s, 1)),
            fc: new Linear('e', 'mlp', c.dModel, c.mlp, subSeed(s, 2)),
            out: new Linear('mlp', 'e', c.mlp, c.dModel, subSeed(s, 3)) };
          b.layers = [b.ln1, b.qkv, b.proj, b.ln2, b.fc, b.out];
          this.blocks.push(b);
        }
      });
    }
    #block(b, x, params, cache = null, layer = 0) {
      // params: the block's parameters in slot order (they are checkpoint inputs when checkpointing).
      const [ln1w, ln1b, qkvw, qkvb, projw, projb, ln2w, ln2b, fcw, fcb, outw, outb] = params;
      const hd = this.config.dModel / this.config.heads;
      const qkv = x.layerNorm('e', { weight: ln1w, bias: ln1b }).addDot(qkvw, 'e', qkvb)
        .split('qkv', ['part', 'head', 'hd'], [3, this.config.heads, hd]);
      const a = causalSelfAttention(qkv, cache, layer);
      const h = x.add(a.merge(['head', 'hd'], 'ao').addDot(projw, 'ao', projb));
      const g = h.layerNorm('e', { weight: ln2w, bias: ln2b }).addDot(fcw, 'e', fcb).geluErf();
      return fc.checkpointTail(() => h.add(g.addDot(outw, 'mlp', outb)));  // Note [Checkpoint tail]
    }
    // Checks tokens{batch..., t} (i32/i64) for method and returns t: at least min tokens, and
    // the ones the model reads (all in forward, all but the last in loss) within the context.
    #tokens(tokens, method, min) {
      input(tokens, `Gpt.${method}`, 'tokens', { axes: { t: null }, dtypes: INDEX_DTYPES,
        forbid: ['vocab', 'e', 'qkv', 'part', 'head', 'hd', 'ao', 'mlp'] });
      const t = tokens.shape[tokens.tags.indexOf('t')];
      const max = this.config.context + min - 1;
      if (t < min || t > max)
        throw invalid(`nn.Gpt.${method}: tokens hold ${t} positions along 't'; ${method} takes ${min} to ${max} (context ${this.config.context})`);
      return t;
    }
    forward(tokens) { return this.#logits(tokens, this.#tokens(tokens, 'forward', 1)); }
    // logits{batch..., t, vocab} of t checked tokens; with a KV cache, tokens continue it
    // (positions from its length on) and their keys and values are appended (blocks not
    // checkpointed).
    #logits(tokens, t, cache = null) {
      const [logits] = fc.scope(() => {
        let x = this.token.forward(tokens).add(this.position.table.narrow('t', cachedLength(cache), t));
        for (const [i, b] of this.blocks.entries()) {
          const params = b.layers.flatMap((l) => l.parameters());
          if (cache || !this.config.checkpointBlocks) {
            x = this.#block(b, x, params, cache, i);
            continue;
          }
          // Trainable slots are checkpoint inputs; frozen ones (freezeProjections) stay captured.
          const trainable = params.filter((p) => p.requiresGrad);
          x = fc.checkpoint((xi, ...ps) => {
            let next = 0;
            return this.#block(b, xi, params.map((p) => (p.requiresGrad ? ps[next++] : p)));
          }, [x, ...trainable]);
        }
        // The head is tied to the embedding; the cache's new keys and values outlive the scope.
        return [this.final.forward(x).dot(this.token.table, 'e'), cache];
      });
      return logits;
    }
    /** Mean next-token cross-entropy of tokens[:, :-1] predicting tokens[:, 1:]. */
    loss(tokens) {
      const t = this.#tokens(tokens, 'loss', 2);
      return fc.scope(() => this.#logits(tokens.narrow('t', 0, t - 1), t - 1).crossEntropy(tokens.narrow('t', 1, t - 1), 'vocab'));
    }
    /** Samples up to maxTokens tokens after prompt and returns them: C++'s Gpt::generate (the
     * same arguments, loop, sampler and KV cache, nn::generate), onToken seeing each token. */
    generate(prompt, options) {
      const { ids, maxTokens, temperature, topK, seed, onToken } =
        generateArgs(prompt, options, this.config.vocab, 'nn.Gpt.generate');
      if (this.token.table.device !== 'cpu')
        throw new FucinaError('DeviceReadIsAsync', 'DeviceReadIsAsync: nn.Gpt.generate reads each step\'s logits ' +
          `synchronously, which the ${this.token.table.device} device cannot: await generateAsync() instead`);
      const positions = this.config.context;
      const context = Array.from(ids);
      const out = [];
      let cache = [];  // per block { k, v } of the positions run so far (Note [KV cache])
      let past = [];   // the entries a forward replaces, disposed after it (also when it fails)
      const drop = (kv) => kv.forEach(({ k, v }) => { k.dispose(); v.dispose(); });
      try {
        return fc.noGrad(() => {
          for (let step = 0; step < maxTokens; ++step) {
            const next = fc.scope(() => {
              // All of the context the first time, then only the newest token; once the context
              // outgrows the position table, its last `positions` tokens, uncached.
              const full = context.length > positions;
              const run = full ? positions : cache.length === 0 ? context.length : 1;
              const tokens = onDevice('cpu', () => fc.constant(['batch', 't'], [1, run], context.slice(-run), 'i32'));
              past = [...cache];
              const logits = this.#logits(tokens, run, full ? null : cache);
              drop(past);  // copied into the new keys and values (or not needed any more)
              past = [];
              if (full) cache = [];
              const last = logits.select('batch', 0).select('t', run - 1);
              const id = fc._call((M) => M.sampleToken(last._handle, temperature, topK, seed, step));
              return { id, cache };
            }).id;
            out.push(next);
            context.push(next);
            if (onToken !== undefined && onToken(next) === false) break;
          }
          return out;
        });
      } finally {
        drop(past);
        drop(cache);
      }
    }
    /** generate for a model on any device: each step's last logits are read with await data()
     * and the token drawn on the cpu by the same sampler (the same tokens as generate's). */
    async generateAsync(prompt, options) {
      const { ids, maxTokens, temperature, topK, seed, onToken } =
        generateArgs(prompt, options, this.config.vocab, 'nn.Gpt.generateAsync');
      const { device } = this.token.table;
      const positions = this.config.context;
      const context = Array.from(ids);
      const out = [];
      let cache = [];  // as generate's: the forward replaces its entries
      const drop = (entries) => entries.forEach(({ k, v }) => { k.dispose(); v.dispose(); });
      try {
        for (let step = 0; step < maxTokens; ++step) {
          const full = context.length > positions;
          const run = full ? positions : cache.length === 0 ? context.length : 1;
          const old = [...cache];
          let last;
          try {
            // Unscoped: the cache and the logits outlive a scope the caller's first step ran in.
            [last] = fc._unscoped(() => fc.noGrad(() => fc.scope(() => {
              const tokens = onDevice(device, () => fc.constant(['batch', 't'], [1, run], context.slice(-run), 'i32'));
              const logits = this.#logits(tokens, run, full ? null : cache);
              return [logits.select('batch', 0).select('t', run - 1).contiguous(), cache];
            })));
          } finally {
            drop(old.filter((e) => !cache.includes(e)));  // replaced by the forward's entries
          }
          if (full) {  // not cached past the context
            drop(cache);
            cache = [];
          }
          let values;
          try {
            values = await last.data();
          } finally {
            last.dispose();
          }
          const id = onDevice('cpu', () => fc.scope(() => {
            const row = fc.constant(['vocab'], [values.length], values);
            return fc._call((M) => M.sampleToken(row._handle, temperature, topK, seed, step));
          }));
          out.push(id);
          context.push(id);
          if (onToken !== undefined && onToken(id) === false) break;
        }
        return out;
      } finally {
        drop(cache);
      }
    }
    /** The trainable tensors: all, or after freezeProjections the embeddings and LayerNorms. */
    parameters() {
      return [...this.token.parameters(), ...this.position.parameters(),
        ...this.blocks.flatMap((b) => b.layers.flatMap((l) => l.parameters())), ...this.final.parameters()]
        .filter((p) => p.requiresGrad);
    }
    /** Makes the blocks' projections frozen constants: weights stored as dtype ('f32', 'f16',
     * 'bf16', or 'q8_0' with blocks along each weight's input axis), biases f32 (C++'s
     * Gpt::freezeProjections). Gradients still flow through them to the layers below. */
    freezeProjections(dtype) {
      if (!['f32', 'f16', 'bf16', 'q8_0'].includes(dtype))
        throw invalid(`nn.Gpt.freezeProjections: dtype is 'f32', 'f16', 'bf16' or 'q8_0', got ${JSON.stringify(dtype)}`);
      for (const b of this.blocks)
        for (const l of [b.qkv, b.proj, b.fc, b.out]) {
          const [w, bias] = [l.weight, l.bias];
          l.weight = fc.scope(() => (dtype === 'q8_0' ? w.detach().quantize('q8_0', l.in) : w.detach().to(dtype)));
          l.bias = fc.scope(() => bias.detach());
          w.dispose();  // the detached copies keep the storage they share
          bias.dispose();
        }
    }
  }

  // model.to(device): every tensor the model holds (its layers', its blocks') is copied to
  // device, a parameter as a new leaf there, and the old one disposed. Before the optimizer is made:
  // an optimizer keeps the parameters it was given. A device tensor's copy to the cpu needs an
  // async read, so moving back is DeviceReadIsAsync (read with data() and load instead).
  function moveTo(model, device, what) {
    if (device !== 'cpu' && device !== 'webgpu') throw invalid(`${what}: device must be 'cpu' or 'webgpu', got ${JSON.stringify(device)}`);
    const params = new Set(model.parameters());
    const held = [];  // [owner, key, tensor]
    const seen = new Set();
    const visit = (o) => {
      if (seen.has(o)) return;
      seen.add(o);
      for (const k of Object.keys(o)) {
        const v = o[k];
        if (fc._isTensor(v)) { if (v.device !== device) held.push([o, k, v]); }
        else if (Array.isArray(v) || isPlainObject(v) || LAYERS.has(v?.constructor)) visit(v);
      }
    };
    visit(model);
    const copies = new Map();
    fc.scope(() => {
      for (const [, , t] of held)
        if (!copies.has(t)) copies.set(t, params.has(t) ? fc.variable(t.detach().to(device)) : t.to(device));
      return [...copies.values()];
    });
    for (const [o, k, t] of held) o[k] = copies.get(t);
    for (const t of copies.keys()) t.dispose();
    return model;
  }
  const LAYERS = new Set([Linear, Conv2d, LayerNorm, Embedding, Mlp, Cnn, Gpt]);
  for (const layer of LAYERS) {
    /** Moves the layer's tensors to device ('cpu' or 'webgpu'); returns the layer. */
    layer.prototype.to = function to(device) { return moveTo(this, device, `nn.${layer.name}.to`); };
  }

  /** params (a model's parameters(), in order) as safetensors bytes: "param.0", "param.1", ... */
  function saveParameters(params, metadata = {}) {
    if (!Array.isArray(params)) throw invalid('nn.saveParameters: params must be an array of Tensors');
    params.forEach((p, i) => fc._operand(p, `nn.saveParameters: params[${i}]`));
    return fc.encodeSafetensors(Object.fromEntries(params.map((p, i) => [`param.${i}`, p])), metadata);
  }
  /** Reads saveParameters' bytes (or C++ nn::saveParameters' file) into params in place. */
  function loadParameters(params, bytes) { fc._loadParameters(params, bytes); }

  const { Gpt2, Llama, LoraLinear, lora, exportPeft, exportPeftAsync, loadPeft } = makePretrained(fc, input);
  return {
    Linear, Conv2d, LayerNorm, Embedding, Mlp, Cnn, Gpt, Gpt2, Llama, LoraLinear, lora, exportPeft, exportPeftAsync, loadPeft,
    subSeed, saveParameters, loadParameters,
  };
}
