// fc.nn: layers and the benchmark models (W1 mlp, W2 cnn, W3 gpt), the JavaScript twins of
// src/fucina/nn/{layers,models}.h. Same axes, same initialisation from the same seeds, so a model
// built here with seed s holds exactly the parameters C++ builds with seed s.
import { checkInt, checkOptions, invalid, pair } from './errors.mjs';

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
  const input = (x, where, name, { axes = {}, dtypes = ['f32'], forbid = [] } = {}) => {
    const what = `nn.${where}: ${name}`;
    fc._operand(x, what);
    const [tags, shape, dtype] = [x.tags, x.shape, x.dtype];
    const got = () => `got {${tags.map((t, i) => `${t}=${shape[i]}`).join(', ')}} ${dtype}`;
    if (!dtypes.includes(dtype))
      throw invalid(`${what} must be an ${dtypes.join(' or ')} tensor, ${got()}`);
    for (const [axis, extent] of Object.entries(axes)) {
      const i = tags.indexOf(axis);
      if (i < 0) throw invalid(`${what} must have an axis '${axis}'${extent === null ? '' : ` of extent ${extent}`}, ${got()}`);
      if (extent !== null && shape[i] !== extent) throw invalid(`${what}: axis '${axis}' must have extent ${extent}, ${got()}`);
    }
    const clash = tags.filter((t) => forbid.includes(t));
    if (clash.length)
      throw invalid(`${what} must not have ${clash.map((t) => `'${t}'`).join(', ')}: the layer makes ${clash.length > 1 ? 'those axes' : 'that axis'} itself, ${got()}`);
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
    forward(x) {
      const { channels, height = 'h', width = 'w', outChannels, kernelH, kernelW } = this.options.axes;
      const groups = this.options.groups ?? 1;
      input(x, 'Conv2d.forward', 'x', { axes: { [channels]: this.weight.shape[1] * groups, [height]: null, [width]: null },
        forbid: [outChannels, kernelH, kernelW].filter((a) => a !== channels) });
      return x.conv2d(this.weight, { ...this.options, bias: this.bias }); }
    parameters() { return [this.weight, this.bias]; }
  }

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
    parameters() { return this.layers.flatMap((l) => l.parameters()); }
  }

  const afterConvPool = (size) => Math.floor((size - 2) / 2);

  /** W2: images{batch, "c", "h", "w"} (or {batch, "h", "w"}) -> logits{batch, "class"}. */
  class Cnn {
    constructor(options, seed = 0) {
      const { image, channels, conv1, conv2, hidden, classes } =
        config(options, { image: 28, channels: 1, conv1: 32, conv2: 64, hidden: 128, classes: 10 }, 'nn.Cnn');
      const side = afterConvPool(afterConvPool(image));
      if (side < 1) throw invalid(`nn.Cnn: images of ${image} pixels are too small (need >= 10)`);
      this.config = { image, channels, conv1, conv2, hidden, classes };
      this.flatFeatures = conv2 * side * side;
      layered(this, () => {
        this.conv1 = new Conv2d('c', 'c1', channels, conv1, 3, subSeed(seed, 0));
        this.conv2 = new Conv2d('c1', 'c2', conv1, conv2, 3, subSeed(seed, 1));
        this.fc1 = new Linear('feature', 'hidden', this.flatFeatures, hidden, subSeed(seed, 2));
        this.fc2 = new Linear('hidden', 'class', hidden, classes, subSeed(seed, 3));
      });
    }
    forward(images) {
      const { image, channels } = this.config;
      const forbid = ['c1', 'c2', 'kh', 'kw', 'feature', 'hidden', 'class'];
      input(images, 'Cnn.forward', 'images', { axes: { h: image, w: image }, forbid });
      // One-channel images may leave out 'c'.
      if (channels !== 1 || images.tags.includes('c')) input(images, 'Cnn.forward', 'images', { axes: { c: channels } });
      return fc.scope(() => {
        const x = images.tags.includes('c') ? images : images.insertAxis('c', images.tags.length - 2);
        let h = this.conv1.forward(x).relu().maxPool2d(2);
        h = this.conv2.forward(h).relu().maxPool2d(2).merge(['c2', 'h', 'w'], 'feature');
        return this.fc2.forward(this.fc1.forward(h).relu());
      });
    }
    parameters() { return [this.conv1, this.conv2, this.fc1, this.fc2].flatMap((l) => l.parameters()); }
  }

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
    #block(b, x, params) {
      // params: the block's parameters in slot order (they are checkpoint inputs when checkpointing).
      const [ln1w, ln1b, qkvw, qkvb, projw, projb, ln2w, ln2b, fcw, fcb, outw, outb] = params;
      const hd = this.config.dModel / this.config.heads;
      const qkv = x.layerNorm('e', { weight: ln1w, bias: ln1b }).addDot(qkvw, 'e', qkvb)
        .split('qkv', ['part', 'head', 'hd'], [3, this.config.heads, hd]);
      const a = fc.groupedAttention(qkv.select('part', 0), qkv.select('part', 1), qkv.select('part', 2),
        { heads: 'head', time: 't', dim: 'hd', causal: true });
      const h = x.add(a.merge(['head', 'hd'], 'ao').addDot(projw, 'ao', projb));
      return h.add(h.layerNorm('e', { weight: ln2w, bias: ln2b }).addDot(fcw, 'e', fcb).geluErf().addDot(outw, 'mlp', outb));
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
    // logits{batch..., t, vocab} of t checked tokens.
    #logits(tokens, t) {
      return fc.scope(() => {
        let x = this.token.forward(tokens).add(this.position.table.narrow('t', 0, t));
        for (const b of this.blocks) {
          const params = b.layers.flatMap((l) => l.parameters());
          if (!this.config.checkpointBlocks) {
            x = this.#block(b, x, params);
            continue;
          }
          // Trainable slots are checkpoint inputs; frozen ones (freezeProjections) stay captured.
          const trainable = params.filter((p) => p.requiresGrad);
          x = fc.checkpoint((xi, ...ps) => {
            let next = 0;
            return this.#block(b, xi, params.map((p) => (p.requiresGrad ? ps[next++] : p)));
          }, [x, ...trainable]);
        }
        return this.final.forward(x).dot(this.token.table, 'e');  // the head is tied to the embedding
      });
    }
    /** Mean next-token cross-entropy of tokens[:, :-1] predicting tokens[:, 1:]. */
    loss(tokens) {
      const t = this.#tokens(tokens, 'loss', 2);
      return fc.scope(() => this.#logits(tokens.narrow('t', 0, t - 1), t - 1).crossEntropy(tokens.narrow('t', 1, t - 1), 'vocab'));
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

  /** params (a model's parameters(), in order) as safetensors bytes: "param.0", "param.1", ... */
  function saveParameters(params, metadata = {}) {
    if (!Array.isArray(params)) throw invalid('nn.saveParameters: params must be an array of Tensors');
    params.forEach((p, i) => fc._operand(p, `nn.saveParameters: params[${i}]`));
    return fc.encodeSafetensors(Object.fromEntries(params.map((p, i) => [`param.${i}`, p])), metadata);
  }
  /** Reads saveParameters' bytes (or C++ nn::saveParameters' file) into params in place. */
  function loadParameters(params, bytes) { fc._loadParameters(params, bytes); }

  return { Linear, Conv2d, LayerNorm, Embedding, Mlp, Cnn, Gpt, subSeed, saveParameters, loadParameters };
}
