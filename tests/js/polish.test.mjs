// Messages in the JS facade's terms, up-front argument checks in fc.nn,
// tensors of another instance or module copy, and what util.inspect / String show.
import { describe, test } from 'node:test';
import util from 'node:util';
import { VARIANTS, engine, init, throwsCode, assert, FucinaError } from './helpers.mjs';

// Engine messages must not reach JS callers in C++ spelling.
const CPP_ISMS = /\bctx\b|backwardWithGrad|grad_output|::|DType::|label_smoothing|weight_decay|abs_tol|rel_tol|max_norm|beta1|beta2/;

for (const variant of VARIANTS) {
  describe(`${variant}: JS wording of engine messages`, () => {
    test('backward names the JS method and argument', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['d'], [2], [1, 2]);
      const e = throwsCode(() => x.scale(2).backward(), 'MissingOutputGradient');
      assert.match(e.message, /t\.backward\(gradOutput\)/);
      assert.doesNotMatch(e.message, CPP_ISMS);
      const shape = throwsCode(() => x.scale(2).backward(fc.ones(['d'], [3])), 'ShapeMismatch');
      assert.match(shape.message, /^ShapeMismatch: backward: gradOutput \{d=3\}/);
      const constant = throwsCode(() => fc.ones(['d'], [2]).backward(fc.ones(['d'], [2])), 'NoGradientGraph');
      assert.match(constant.message, /backward\(gradOutput\) on a tensor/);
    });

    test('no C++ spelling (ctx, DType::, snake_case options, Class::) in messages JS callers see', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['d'], [2], [1, 2]);
      const cases = [
        [() => fc.ones(['d'], [2], 'i32').exp(), 'DTypeMismatch', /\.to\('f32'\)/],
        [() => fc.variable(fc.ones(['d'], [2], 'i32')), 'UnsupportedGradient', /\.to\('f32'\)/],
        [() => fc.optim.clipGradNorm([x], -1), 'InvalidArgument', /maxNorm/],
        [() => x.crossEntropy(fc.constant([], [], [0], 'i32'), 'd', { labelSmoothing: 2 }), 'InvalidArgument', /labelSmoothing/],
        [() => fc.gradcheck((a) => a.sumAll(), [x], { absTol: -1 }), 'InvalidGradcheckOptions', /gradcheck: absTol/],
        [() => fc.gradcheck((a) => a.sumAll(), [x], { relTol: -1 }), 'InvalidGradcheckOptions', /gradcheck: relTol/],
        [() => fc.optim.sgd([x], { lr: -1 }), 'InvalidArgument', /optim\.sgd/],
        [() => fc.optim.adam([x], { weightDecay: -1 }), 'InvalidArgument', /optim\.adam: option weightDecay/],
        [() => fc.optim.adamw([x], { betas: [2, 0.9] }), 'InvalidArgument', /optim\.adamw: option betas\[0\]/],
        [() => fc.optim.adam([x, x]), 'InvalidArgument', /already registered/],
        [() => fc.optim.adam([x.scale(2)]), 'InvalidArgument', /leaf variable/],
      ];
      for (const [fn, code, wanted] of cases) {
        const e = throwsCode(fn, code);
        assert.match(e.message, wanted);
        assert.doesNotMatch(e.message, CPP_ISMS, e.message);
        assert.ok(e.message.startsWith(`${code}: `), e.message);
      }
    });

    test('an axis name that looks like a C++ option stays as written', async () => {
      const fc = await engine(variant);
      const e = throwsCode(() => fc.ones(['weight_decay'], [2]).add(fc.ones(['weight_decay'], [3])), 'ShapeMismatch');
      assert.match(e.message, /'weight_decay'/);
    });
  });

  describe(`${variant}: fc.nn checks its arguments up front`, () => {
    // The code the op itself would have thrown for the same mistake: a missing axis, a wrong
    // extent or an axis the layer makes is ShapeMismatch, a wrong dtype DTypeMismatch; the rest
    // (a bad argument of the layer's own) InvalidArgument.
    const failsWith = (code) => (fn, ...patterns) => {
      const e = throwsCode(fn, code);
      for (const p of patterns) assert.match(e.message, p);
      return e;
    };
    const invalidWith = failsWith('InvalidArgument'), shapeWith = failsWith('ShapeMismatch');
    const dtypeWith = failsWith('DTypeMismatch');

    test('Gpt.forward and Gpt.loss name the method, the argument and what was expected', async () => {
      const fc = await engine(variant);
      const gpt = new fc.nn.Gpt({ vocab: 16, context: 8, dModel: 8, heads: 2, layers: 1, mlp: 16 });
      const tokens = (tags, shape, dtype = 'i32') => fc.constant(tags, shape, new Array(shape.reduce((a, b) => a * b, 1)).fill(1), dtype);
      for (const method of ['forward', 'loss']) {
        const run = (t) => gpt[method](t);
        shapeWith(() => run(tokens(['batch', 'time'], [1, 4])), new RegExp(`^ShapeMismatch: nn\\.Gpt\\.${method}: tokens must have an axis 't'`), /\{batch=1, time=4\} i32/);
        dtypeWith(() => run(tokens(['batch', 't'], [1, 4], 'f32')), new RegExp(`nn\\.Gpt\\.${method}: tokens must be an i32 or i64 tensor`));
        shapeWith(() => run(tokens(['e', 't'], [1, 4])), new RegExp(`nn\\.Gpt\\.${method}: tokens must not have 'e'`));
        invalidWith(() => run(tokens(['batch', 't'], [1, 10])), new RegExp(`nn\\.Gpt\\.${method}: tokens hold 10 positions`));
        invalidWith(() => run('tokens'), new RegExp(`nn\\.Gpt\\.${method}: tokens must be a Tensor`));
      }
      invalidWith(() => gpt.loss(tokens(['batch', 't'], [1, 1])), /nn\.Gpt\.loss: tokens hold 1 positions along 't'; loss takes 2 to 9/);
      assert.deepEqual(gpt.loss(tokens(['batch', 't'], [2, 9])).shape, []);
    });

    test('layers and the other models check axes, extents and dtypes', async () => {
      const fc = await engine(variant);
      const linear = new fc.nn.Linear('in', 'out', 2, 3, 1);
      shapeWith(() => linear.forward(fc.ones(['x'], [2])), /^ShapeMismatch: nn\.Linear\.forward: x must have an axis 'in' of extent 2/);
      shapeWith(() => linear.forward(fc.ones(['in'], [3])), /nn\.Linear\.forward: x: axis 'in' must have extent 2, got \{in=3\} f32/);
      dtypeWith(() => linear.forward(fc.ones(['in'], [2], 'f16')), /nn\.Linear\.forward: x must be an f32 tensor/);
      shapeWith(() => linear.forward(fc.ones(['in', 'out'], [2, 2])), /nn\.Linear\.forward: x must not have 'out'/);
      const conv = new fc.nn.Conv2d('c', 'o', 2, 3, 3, 1);
      shapeWith(() => conv.forward(fc.ones(['c', 'h'], [2, 5])), /nn\.Conv2d\.forward: x must have an axis 'w'/);
      shapeWith(() => conv.forward(fc.ones(['c', 'h', 'w'], [3, 5, 5])), /nn\.Conv2d\.forward: x: axis 'c' must have extent 2/);
      shapeWith(() => conv.forwardRelu(fc.ones(['c', 'h', 'w'], [3, 5, 5])), /nn\.Conv2d\.forwardRelu: x: axis 'c' must have extent 2/);
      const norm = new fc.nn.LayerNorm('e', 2);
      shapeWith(() => norm.forward(fc.ones(['e'], [3])), /nn\.LayerNorm\.forward: x: axis 'e' must have extent 2/);
      const embedding = new fc.nn.Embedding('v', 'd', 4, 3, 0.1, 1);
      dtypeWith(() => embedding.forward(fc.ones(['t'], [2])), /nn\.Embedding\.forward: ids must be an i32 or i64 tensor/);
      shapeWith(() => embedding.forward(fc.constant(['d'], [1], [0], 'i32')), /nn\.Embedding\.forward: ids must not have 'd'/);
      const mlp = new fc.nn.Mlp({ sizes: [4, 3, 2] });
      shapeWith(() => mlp.forward(fc.ones(['b', 'in'], [1, 5])), /nn\.Mlp\.forward: x: axis 'in' must have extent 4/);
      shapeWith(() => mlp.forward(fc.ones(['b', 'in', 'class'], [1, 4, 1])), /nn\.Mlp\.forward: x must not have 'class'/);
      const cnn = new fc.nn.Cnn({ image: 12, conv1: 2, conv2: 2, hidden: 4 });
      shapeWith(() => cnn.forward(fc.ones(['b', 'h', 'w'], [1, 12, 11])), /nn\.Cnn\.forward: images: axis 'w' must have extent 12/);
      shapeWith(() => cnn.forward(fc.ones(['b', 'c', 'h', 'w'], [1, 2, 12, 12])), /nn\.Cnn\.forward: images: axis 'c' must have extent 1/);
      assert.deepEqual(cnn.forward(fc.ones(['b', 'h', 'w'], [1, 12, 12])).shape, [1, 10]);
      assert.deepEqual(cnn.config, { image: 12, channels: 1, conv1: 2, conv2: 2, hidden: 4, classes: 10, channelsLast: false });
    });
  });

  describe(`${variant}: tensors of another instance or module copy`, () => {
    test('every path names the other instance', async () => {
      const fc = await engine(variant);
      const other = await init({ variant, threads: variant === 'threaded-simd' ? 1 : undefined });
      const foreign = other.variable(['in'], [2], [1, 2]);
      const x = fc.variable(['d'], [2], [1, 2]);
      const cases = [
        [() => new fc.nn.Embedding('v', 'e', 4, 3, 0.1, 1).forward(other.constant(['t'], [2], [0, 1], 'i32')), /nn\.Embedding\.forward: ids/],
        [() => new fc.nn.Linear('in', 'out', 2, 3, 1).forward(foreign), /nn\.Linear\.forward: x/],
        [() => fc.nn.saveParameters([foreign]), /nn\.saveParameters: params\[0\]/],
        [() => fc.optim.adam([foreign]), /optim\.adam: params\[0\]/],
        [() => fc.optim.clipGradNorm([foreign], 1), /optim\.clipGradNorm: params\[0\]/],
        [() => x.backward(foreign), /backward: gradOutput/],
      ];
      for (const [fn, where] of cases) {
        const e = throwsCode(fn, 'InvalidArgument');
        assert.match(e.message, where);
        assert.match(e.message, /another fucina instance/);
      }
    });

    test('a Tensor of a second copy of the module is named as such', async () => {
      const fc = await engine(variant);
      // A second copy of the facade module (as two bundles or import paths give) has its own Tensor class.
      const copy = await import(new URL('facade.mjs?second-copy', import.meta.resolve('fucina')).href);
      const { platform } = await import(new URL('platform.node.mjs', import.meta.resolve('fucina')).href);
      const other = await copy.makeInit(platform)({ variant, threads: variant === 'threaded-simd' ? 1 : undefined });
      const e = throwsCode(() => fc.ones(['d'], [2]).add(other.ones(['d'], [2])), 'InvalidArgument');
      assert.match(e.message, /add: y is a Tensor of another copy of the fucina module/);
    });
  });

  describe(`${variant}: inspection`, () => {
    test('String, toString, util.inspect and console.log describe a tensor', async () => {
      const fc = await engine(variant);
      const x = fc.variable(['a', 'b'], [2, 3], [1, 2, 3, 4, 5, 6.5]);
      const text = 'Tensor {a=2, b=3} f32 requiresGrad [[1, 2, 3], [4, 5, 6.5]]';
      assert.equal(String(x), text);
      assert.equal(x.toString(), text);
      assert.equal(`${x}`, text);
      assert.equal(util.inspect(x), text);
      assert.equal(util.format('%o', x), text);
      assert.equal(util.inspect({ x }), `{ x: ${text} }`);
      assert.equal(String(fc.scalar(0.1)), 'Tensor {} f32 0.1');
      assert.equal(String(fc.constant(['i'], [3], [1, 2, 3], 'i32')), 'Tensor {i=3} i32 [1, 2, 3]');
      assert.equal(String(fc.ones(['i'], [21])), 'Tensor {i=21} f32 (21 elements)');
      assert.equal(String(fc.ones(['i'], [20]).detach()).split(' [')[0], 'Tensor {i=20} f32');
      x.dispose();
      assert.equal(String(x), 'Tensor (disposed)');
      assert.equal(util.inspect(x), 'Tensor (disposed)');
    });

    test('util.inspect of a FucinaError shows the code and the message', async () => {
      const fc = await engine(variant);
      const e = throwsCode(() => fc.ones(['a'], [2]).add(fc.ones(['a'], [3])), 'ShapeMismatch');
      const shown = util.inspect(e);
      assert.match(shown, /^FucinaError \[ShapeMismatch\]: add: axis 'a' has extent 2/);
      assert.match(shown, /\n {4}at /);
      assert.match(util.inspect(new FucinaError('Custom', 'no prefix')), /^FucinaError \[Custom\]: no prefix/);
      assert.equal(String(e), `FucinaError: ${e.message}`);
    });
  });
}
