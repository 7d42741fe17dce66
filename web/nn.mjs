// fc.nn: layers and the benchmark models (W1 mlp, W2 cnn, W3 gpt), the JavaScript twins of
// src/fucina/nn/{layers,models}.h. Same axes, same initialisation from the same seeds, so a model
// built here with seed s holds exactly the parameters C++ builds with seed s. GPT-2 and LoRA
// (Gpt2, LoraLinear, lora) have no twin: they wrap C++'s nn::Gpt2 and nn::LoraLinear, bound in
// web/bindings.cpp.
import { FucinaError, checkInt, checkOptions, invalid, isPlainObject, pair, typeName } from './errors.mjs';

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
        let h = this.conv1.forward(this.#images(images, 'Cnn.forward')).relu().maxPool2d(2);
        h = this.conv2.forward(h).relu().maxPool2d(2).merge(this.#flatOrder, 'feature');
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

  const { Gpt2, LoraLinear, lora } = makeGpt2(fc, input);
  return { Linear, Conv2d, LayerNorm, Embedding, Mlp, Cnn, Gpt, Gpt2, LoraLinear, lora, subSeed, saveParameters, loadParameters };
}

// ---------------------------------------------------------------- GPT-2 and LoRA (bound C++)

const BASE_DTYPES = ['f32', 'f16', 'bf16', 'q8_0'];
const INT32_MAX = 2 ** 31 - 1;
const quoted = (v) => (typeof v === 'string' ? `'${v}'` : typeName(v));
// A token id outside the vocabulary: the engine's code for it (C++'s Gpt2::generate says the same).
const outOfRange = (message) => new FucinaError('IndexOutOfRange', `IndexOutOfRange: ${message}`);

function checkBool(v, what) {
  if (typeof v !== 'boolean') throw invalid(`${what} must be a boolean, got ${typeName(v)}`);
  return v;
}

function checkBytes(bytes, what) {
  if (!(bytes instanceof Uint8Array)) throw invalid(`${what} must be a Uint8Array (safetensors bytes), got ${typeName(bytes)}`);
  return bytes;
}

/** A Gpt2's options: [dtype, trainable, checkpointBlocks], checked. */
function gpt2Options(options, what) {
  const { dtype = 'f32', trainable = false, checkpointBlocks = false } =
    checkOptions(options, ['dtype', 'trainable', 'checkpointBlocks'], what);
  if (!BASE_DTYPES.includes(dtype)) throw invalid(`${what}: dtype is 'f32', 'f16', 'bf16' or 'q8_0', got ${quoted(dtype)}`);
  checkBool(trainable, `${what}: trainable`);
  checkBool(checkpointBlocks, `${what}: checkpointBlocks`);
  if (trainable && dtype !== 'f32')
    throw invalid(`${what}: trainable needs dtype 'f32' (a ${dtype} base is frozen: train LoRA adapters on it, fc.nn.lora)`);
  return [dtype, trainable, checkpointBlocks];
}

/** config.json as a parsed object -> the JSON text C++'s Gpt2Config::fromJson reads. */
function configJson(config, what) {
  if (!isPlainObject(config)) throw invalid(`${what}: config must be a config.json object (parsed), got ${typeName(config)}`);
  try {
    return JSON.stringify(config);
  } catch (e) {
    throw invalid(`${what}: config is not JSON (${e?.message ?? e})`);
  }
}

/** LoraOptions (nn/lora.h), defaults filled in and checked. */
function loraOptions(options, what) {
  const { rank = 8, alpha = 8, dropout = 0, targets = ['c_attn'], seed = 0 } =
    checkOptions(options, ['rank', 'alpha', 'dropout', 'targets', 'seed'], what);
  checkInt(rank, `${what}: rank`, 1, INT32_MAX);
  if (typeof alpha !== 'number' || !Number.isFinite(alpha) || alpha < 0)
    throw invalid(`${what}: alpha must be a finite number >= 0, got ${typeName(alpha)}`);
  if (typeof dropout !== 'number' || !(dropout >= 0 && dropout < 1))
    throw invalid(`${what}: dropout must be a number in [0, 1), got ${typeName(dropout)}`);
  if (!Array.isArray(targets) || targets.length === 0 || !targets.every((t) => typeof t === 'string' && t !== ''))
    throw invalid(`${what}: targets must be a non-empty array of layer names ('c_attn', 'h.0.mlp.c_fc', ...), got ${typeName(targets)}`);
  checkInt(seed, `${what}: seed`, 0);
  return { rank, alpha, dropout, targets: [...targets], seed };
}

/** A prompt (an array or typed array of token ids) as the Int32Array the binding takes. */
function promptIds(prompt, vocab, what) {
  if (!Array.isArray(prompt) && !(ArrayBuffer.isView(prompt) && !(prompt instanceof DataView)))
    throw invalid(`${what}: prompt must be an array or Int32Array of token ids, got ${typeName(prompt)}`);
  if (prompt.length === 0) throw invalid(`${what}: prompt must hold at least one token`);
  for (let i = 0; i < prompt.length; ++i) {
    const id = prompt[i];
    if (!Number.isInteger(id)) throw invalid(`${what}: prompt[${i}] must be an integer token id, got ${typeName(id)}`);
    if (id < 0 || id >= vocab) throw outOfRange(`${what}: prompt[${i}] = ${id} is not a token id in [0, ${vocab}) (vocab_size ${vocab})`);
  }
  return Int32Array.from(prompt);
}

/** generate's arguments for the model `what` ('nn.Gpt.generate'), checked, defaults filled in;
 * the prompt as an Int32Array. */
function generateArgs(prompt, options, vocab, what) {
  const { maxTokens = 32, temperature = 1, topK = 0, seed = 0, onToken } =
    checkOptions(options, ['maxTokens', 'temperature', 'topK', 'seed', 'onToken'], what);
  const ids = promptIds(prompt, vocab, what);
  checkInt(maxTokens, `${what}: maxTokens`, 0, INT32_MAX);
  if (typeof temperature !== 'number' || !Number.isFinite(temperature) || temperature < 0)
    throw invalid(`${what}: temperature must be a finite number >= 0 (0: greedy), got ${typeName(temperature)}`);
  checkInt(topK, `${what}: topK`, 0);
  checkInt(seed, `${what}: seed`, 0);
  if (onToken !== undefined && typeof onToken !== 'function')
    throw invalid(`${what}: onToken must be a function (id) => boolean | void, got ${typeName(onToken)}`);
  return { ids, maxTokens, temperature, topK, seed, onToken };
}

// The axes a GPT-2 makes itself: a tokens tensor must not have them.
const GPT2_AXES = ['vocab', 'e', 'qkv', 'ao', 'mlp', 'part', 'head', 'hd', 'rank'];

function makeGpt2(fc, input) {
  const adopt = Symbol('a bound nn::Gpt2');
  let addLoraOf;  // Gpt2's #addLora, for nn.lora

  /** GPT-2 in the Hugging Face layout (C++'s nn::Gpt2): tokens{batch..., "t"} -> logits{..., "t", "vocab"}. */
  class Gpt2 {
    #h;            // the bound model; null once disposed
    #config;       // the config.json text of the model
    #generating = 0;  // generate calls running (onToken may call in again)
    #doomed = null;   // a model disposed from generate's onToken: deleted when generate returns

    constructor(config, seed = 0, options) {
      if (config === adopt) {
        this.#adopt(seed);
        return;
      }
      const json = configJson(config, 'nn.Gpt2');
      checkInt(seed, 'nn.Gpt2: seed', 0);
      const [dtype, trainable, checkpointBlocks] = gpt2Options(options, 'nn.Gpt2');
      this.#adopt(fc._call((M) => M.gpt2New(json, seed, dtype, trainable, checkpointBlocks)));
    }

    /** Loads model.safetensors bytes with their config.json (a parsed object). */
    static load(bytes, config, options) {
      checkBytes(bytes, 'nn.Gpt2.load: bytes');
      const json = configJson(config, 'nn.Gpt2.load');
      const [dtype, trainable, checkpointBlocks] = gpt2Options(options, 'nn.Gpt2.load');
      return new Gpt2(adopt, fc._call((M) => M.gpt2Load(bytes, json, dtype, trainable, checkpointBlocks)));
    }

    static {
      addLoraOf = (model, options, what) => model.#addLora(options, what);
    }

    #adopt(h) {
      try {
        this.#config = fc._call(() => h.config());
      } catch (e) {
        h.delete();
        throw e;
      }
      this.#h = h;
    }

    #call(method, fn) {
      if (!this.#h) throw invalid(`nn.Gpt2.${method}: this model was disposed`);
      return fc._call(() => fn(this.#h));
    }

    // Checks tokens{batch..., t} (i32/i64 ids below vocab_size) for method: at least min
    // positions, and no more than the model reads (n_positions, one more for loss's targets).
    #tokens(tokens, method, min) {
      if (!this.#h) throw invalid(`nn.Gpt2.${method}: this model was disposed`);
      input(tokens, `Gpt2.${method}`, 'tokens', { axes: { t: null }, dtypes: ['i32', 'i64'], forbid: GPT2_AXES });
      const { vocab_size: vocab, n_positions: positions } = this.config;
      const t = tokens.shape[tokens.tags.indexOf('t')];
      const max = positions + min - 1;
      if (t < min || t > max)
        throw invalid(`nn.Gpt2.${method}: tokens hold ${t} positions along 't'; ${method} takes ${min} to ${max} (n_positions ${positions})`);
      const ids = tokens.toArray();
      const bad = ids.findIndex((id) => id < 0 || id >= vocab);
      if (bad >= 0)
        throw outOfRange(`nn.Gpt2.${method}: tokens hold ${ids[bad]} (element ${bad}), not a token id in [0, ${vocab}) (vocab_size ${vocab})`);
      return tokens._handle;
    }

    /** The config.json fields of the model (a fresh object each time). */
    get config() {
      if (!this.#h) throw invalid('nn.Gpt2.config: this model was disposed');
      return JSON.parse(this.#config);
    }
    /** The dtype of the base's large matrices. */
    get dtype() { return this.#call('dtype', (h) => h.dtype()); }
    /** Whether each block is recomputed in backward (activation checkpointing). */
    get checkpointBlocks() { return this.#call('checkpointBlocks', (h) => h.checkpointBlocks()); }
    set checkpointBlocks(on) {
      checkBool(on, 'nn.Gpt2.checkpointBlocks');
      this.#call('checkpointBlocks', (h) => h.setCheckpointBlocks(on));
    }
    get isDisposed() { return this.#h === null; }

    /** logits{batch..., t, vocab} of tokens{batch..., t}. */
    logits(tokens) {
      const raw = this.#tokens(tokens, 'logits', 1);
      return fc._wrap(this.#call('logits', (h) => h.logits(raw)));
    }
    /** Mean next-token cross-entropy of tokens[.., :-1] predicting tokens[.., 1:]. */
    loss(tokens) {
      const raw = this.#tokens(tokens, 'loss', 2);
      return fc._wrap(this.#call('loss', (h) => h.loss(raw)));
    }
    /** The trainable tensors (every parameter when trainable, else the LoRA adapters, else none):
     * new handles, valid until disposed. */
    parameters() { return this.#call('parameters', (h) => h.parameters()).map((raw) => fc._wrap(raw)); }
    /** The base's tensors by Hugging Face name, in the file's order, as stored (new handles). */
    namedTensors() {
      const { names, tensors } = this.#call('namedTensors', (h) => h.namedTensors());
      return Object.fromEntries(names.map((n, i) => [n, fc._wrap(tensors[i])]));
    }
    /** The layers LoRA can adapt, by dotted name ('h.0.attn.c_attn', ...), in model order. */
    layers() { return this.#call('layers', (h) => h.layers()); }
    /** The base as Hugging Face safetensors bytes (adapters not included). */
    save() { return this.#call('save', (h) => h.save()); }

    /** Samples up to maxTokens tokens after prompt; returns them. */
    generate(prompt, options) {
      const what = 'nn.Gpt2.generate';
      if (!this.#h) throw invalid(`${what}: this model was disposed`);
      const { ids, maxTokens, temperature, topK, seed, onToken } =
        generateArgs(prompt, options, this.config.vocab_size, what);
      const h = this.#h;
      ++this.#generating;
      try {
        return Array.from(fc._call((M) => {
          // Nothing is thrown back into C++: what onToken throws is parked for _call to rethrow.
          const callback = onToken === undefined ? null : (id) => {
            try {
              return onToken(id) !== false;
            } catch (e) {
              M.pending ??= { error: e };
              return null;
            }
          };
          return h.generate(ids, maxTokens, temperature, topK, seed, callback);
        }));
      } finally {
        if (--this.#generating === 0 && this.#doomed) {
          this.#doomed.delete();
          this.#doomed = null;
        }
      }
    }

    #addLora(options, what) {
      const o = loraOptions(options, what);
      return this.#call('addLora', (h) => h.addLora(o)).map((raw) => fc._wrap(raw));
    }
    /** Adds LoRA adapters to the layers options.targets names; returns them (A, B per layer). */
    addLora(options) { return this.#addLora(options, 'nn.Gpt2.addLora'); }
    /** The adapters alone as safetensors bytes (peft's layout, fucina's options in the metadata). */
    saveAdapters() { return this.#call('saveAdapters', (h) => h.saveAdapters()); }
    /** Loads saveAdapters' bytes (or a peft file, with options); adds the adapters first if needed. */
    loadAdapters(bytes, options) {
      checkBytes(bytes, 'nn.Gpt2.loadAdapters: bytes');
      const o = options === undefined ? null : loraOptions(options, 'nn.Gpt2.loadAdapters');
      this.#call('loadAdapters', (h) => h.loadAdapters(bytes, o));
    }
    /** Folds every adapter into its weight (then f32); the adapters are gone. */
    mergeAdapters() { this.#call('mergeAdapters', (h) => h.mergeAdapters()); }
    /** Frees the model (tensors from parameters() stay valid until they are disposed). */
    dispose() {
      if (!this.#h) return;
      if (this.#generating) this.#doomed = this.#h;
      else this.#h.delete();
      this.#h = null;
    }
  }

  /** A frozen linear map with an optional LoRA adapter (C++'s nn::LoraLinear). */
  class LoraLinear {
    #h;
    #in;
    #out;
    #inExtent;
    #weight = null;
    #bias = null;
    #a = null;
    #b = null;

    constructor(weight, bias, inAxis, outAxis) {
      const what = 'nn.LoraLinear';
      for (const [k, v] of [['inAxis', inAxis], ['outAxis', outAxis]])
        if (typeof v !== 'string' || v === '') throw invalid(`${what}: ${k} must be an axis name, got ${typeName(v)}`);
      if (inAxis === outAxis) throw invalid(`${what}: inAxis and outAxis are both '${inAxis}'`);
      input(weight, 'LoraLinear', 'weight', { axes: { [inAxis]: null, [outAxis]: null }, dtypes: BASE_DTYPES });
      if (weight.tags.length !== 2) throw invalid(`${what}: weight must have exactly the axes '${inAxis}' and '${outAxis}', got {${weight.tags.join(', ')}}`);
      const outExtent = weight.shape[weight.tags.indexOf(outAxis)];
      if (bias !== null && bias !== undefined) {
        input(bias, 'LoraLinear', 'bias', { axes: { [outAxis]: outExtent } });
        if (bias.tags.length !== 1) throw invalid(`${what}: bias must have the one axis '${outAxis}', got {${bias.tags.join(', ')}}`);
      }
      const b = bias ?? null;
      const h = fc._call((M) => M.loraLinearNew(weight._handle, b?._handle ?? null, inAxis, outAxis));
      this.#h = h;
      this.#in = inAxis;
      this.#out = outAxis;
      this.#inExtent = weight.shape[weight.tags.indexOf(inAxis)];
      try {
        this.#weight = fc._wrap(fc._call(() => h.weight()));
        const raw = fc._call(() => h.bias());
        this.#bias = raw === null ? null : fc._wrap(raw);
      } catch (e) {
        this.dispose();
        throw e;
      }
    }

    #call(method, fn) {
      if (!this.#h) throw invalid(`nn.LoraLinear.${method}: this layer was disposed`);
      return fc._call(() => fn(this.#h));
    }

    /** Adds (or replaces) the adapter: A{rank, in} ~ U(±1/sqrt(in)) from seed, B{out, rank} zero. */
    adapt(options) {
      const what = 'nn.LoraLinear.adapt';
      const { rank = 8, alpha = 8, dropout = 0, seed = 0 } = checkOptions(options, ['rank', 'alpha', 'dropout', 'seed'], what);
      const o = loraOptions({ rank, alpha, dropout, seed }, what);
      this.#call('adapt', (h) => h.adapt(o.rank, o.alpha, o.dropout, o.seed));
      const [a, b] = this.#call('adapt', (h) => [h.a(), h.b()]);
      this.#a?.dispose();
      this.#b?.dispose();
      this.#a = fc._wrap(a);
      this.#b = fc._wrap(b);
    }
    /** x{..., in} -> {..., out}; with a dropoutSeed (training), the adapter's input goes
     * through dropout with the mask that seed chooses; without one, x is read as it is. */
    forward(x, dropoutSeed) {
      if (!this.#h) throw invalid('nn.LoraLinear.forward: this layer was disposed');
      input(x, 'LoraLinear.forward', 'x', { axes: { [this.#in]: this.#inExtent }, forbid: [this.#out, 'rank'] });
      if (dropoutSeed !== undefined) checkInt(dropoutSeed, 'nn.LoraLinear.forward: dropoutSeed', 0);
      return fc._wrap(this.#call('forward', (h) => h.forward(x._handle, dropoutSeed ?? null)));
    }
    /** W + scale·(B·A) as a new f32 constant with W's axes (W alone when not adapted). */
    merge() { return fc._wrap(this.#call('merge', (h) => h.merge())); }
    /** [a, b] when adapted, else []. */
    parameters() { return this.#a ? [this.#a, this.#b] : []; }
    get weight() { return this.#weight; }
    get bias() { return this.#bias; }
    get a() { return this.#a; }
    get b() { return this.#b; }
    get in() { return this.#in; }
    get out() { return this.#out; }
    /** alpha / rank (0 when not adapted). */
    get scale() { return this.#call('scale', (h) => h.scale()); }
    get isDisposed() { return this.#h === null; }
    /** Frees the layer and its tensors (weight, bias, a, b as this layer holds them). */
    dispose() {
      for (const t of [this.#weight, this.#bias, this.#a, this.#b]) t?.dispose();
      this.#weight = this.#bias = this.#a = this.#b = null;
      if (this.#h) this.#h.delete();
      this.#h = null;
    }
  }

  /** LoRA adapters on model's layers (C++'s nn::lora): returns them (A, B per layer). */
  function lora(model, options) {
    if (!(model instanceof Gpt2)) throw invalid(`nn.lora: model must be an nn.Gpt2, got ${typeName(model)}`);
    return addLoraOf(model, options, 'nn.lora');
  }

  return { Gpt2, LoraLinear, lora };
}
