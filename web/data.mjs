// Datasets for the JS side: IDX parsing (MNIST, Fashion-MNIST), seeded shuffling identical to C++'s
// fucina::data::shuffledIndices, and batching into tensors. Reading files and gunzip come from the
// platform (platform.node.mjs: node:fs and node:zlib; platform.browser.mjs: fetch and
// DecompressionStream), bound by makeReaders in each entry point.
import { FucinaError, checkInt, checkOptions, invalid, typeName } from './errors.mjs';

const bad = (message) => invalid(`IDX: ${message}`);

/** Parses uncompressed IDX bytes (unsigned-byte data) into { dims, values }. */
export function parseIdx(bytes) {
  if (!(bytes instanceof Uint8Array)) throw bad('expected a Uint8Array');
  if (bytes.length < 4 || bytes[0] !== 0 || bytes[1] !== 0) throw bad('not an IDX file (bad magic)');
  if (bytes[2] !== 0x08) throw bad(`only unsigned-byte IDX data (type 0x08) is supported, got type ${bytes[2]}`);
  const rank = bytes[3];
  if (rank === 0 || bytes.length < 4 + 4 * rank) throw bad('truncated header');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const dims = [];
  for (let i = 0; i < rank; ++i) dims.push(view.getUint32(4 + 4 * i, false));
  const n = dims.reduce((a, b) => a * b, 1);
  const header = 4 + 4 * rank;
  if (bytes.length - header !== n) throw bad(`expected ${n} values after the header, found ${bytes.length - header}`);
  return { dims, values: bytes.subarray(header) };
}

/** readIdx and loadFashionMnist for one platform (see platform.*.mjs). */
export function makeReaders(platform) {
  /** Reads an IDX file (a path or URL in Node, a URL in browsers), gzip-compressed or not. */
  async function readIdx(source) {
    if (typeof source !== 'string' && !(source instanceof URL)) throw bad(`the source must be a path or URL, got ${typeName(source)}`);
    let bytes;
    try {
      bytes = await platform.readBytes(source);
    } catch (e) {
      throw bad(`cannot read ${source}: ${e.message}`);
    }
    if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
      try {
        bytes = await platform.gunzip(bytes);
      } catch (e) {
        throw bad(`corrupt or truncated gzip data (${e.message})`);
      }
    }
    return parseIdx(bytes);
  }

  /** Loads Fashion-MNIST's train or test split as plain arrays: { images (f32 in [0,1], row-major
   * sample×h×w), labels (Int32Array), count, h, w }. `base` is a folder path (Node) or URL prefix. */
  async function loadFashionMnist(options) {
    const { base = '/usr/share/datasets/fashion-mnist', train = true } = checkOptions(options, ['base', 'train'], 'loadFashionMnist');
    const prefix = `${base}/${train ? 'train' : 't10k'}`;
    const [images, labels] = await Promise.all([
      readIdx(`${prefix}-images-idx3-ubyte.gz`), readIdx(`${prefix}-labels-idx1-ubyte.gz`)]);
    if (images.dims.length !== 3 || labels.dims.length !== 1 || images.dims[0] !== labels.dims[0])
      throw bad('images and labels do not match');
    const pixels = new Float32Array(images.values.length);
    for (let i = 0; i < pixels.length; ++i) pixels[i] = images.values[i] / 255;
    return { images: pixels, labels: Int32Array.from(labels.values), count: images.dims[0], h: images.dims[1], w: images.dims[2] };
  }

  return { readIdx, loadFashionMnist };
}

// splitmix64 over BigInt, exactly as src/fucina/data/idx.cpp.
const MASK = (1n << 64n) - 1n;
function splitmix64(state) {
  state.s = (state.s + 0x9e3779b97f4a7c15n) & MASK;
  let z = state.s;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK;
  return z ^ (z >> 31n);
}

// 16M samples: far beyond any dataset a page loads, and already some seconds of BigInt arithmetic.
const MAX_INDICES = 2 ** 24;

/** A permutation of [0, n) determined by seed: the same order as the C++ library gives. */
export function shuffledIndices(n, seed) {
  checkInt(n, 'shuffledIndices: n', 0, MAX_INDICES);
  if (typeof seed !== 'bigint') checkInt(seed, 'shuffledIndices: seed');
  let order;
  try {
    order = new Int32Array(n);
  } catch {
    throw new FucinaError('OutOfMemory', `OutOfMemory: shuffledIndices: no room for ${n} indices`);
  }
  for (let i = 0; i < n; ++i) order[i] = i;
  const state = { s: BigInt.asUintN(64, BigInt(seed)) };
  for (let i = n - 1; i > 0; --i) {
    const j = Number(splitmix64(state) % BigInt(i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}

/** Samples order[begin, begin+size) as tensors { images {batch, h, w}, labels {batch} i32 }. */
export function makeBatch(fc, split, order, begin, size) {
  if (typeof fc?.constant !== 'function') throw invalid('makeBatch: fc must be an engine from init()');
  if (!split || !(split.images instanceof Float32Array) || !(split.labels instanceof Int32Array))
    throw invalid('makeBatch: split must come from loadFashionMnist');
  if (split.labels.length !== split.count || split.images.length !== split.count * split.h * split.w)
    throw invalid(`makeBatch: the split has ${split.images.length / (split.h * split.w)} images and ${split.labels.length} labels for its count of ${split.count}`);
  if (!ArrayBuffer.isView(order) && !Array.isArray(order))
    throw invalid(`makeBatch: order must be an array of sample indices, got ${typeName(order)}`);
  checkInt(begin, 'makeBatch: begin', 0);
  checkInt(size, 'makeBatch: size', 0);
  const count = Math.max(0, Math.min(size, order.length - begin));
  const hw = split.h * split.w;
  const pixels = new Float32Array(count * hw);
  const ys = new Int32Array(count);
  for (let i = 0; i < count; ++i) {
    const s = order[begin + i];
    if (!(Number.isInteger(s) && s >= 0 && s < split.count)) throw new FucinaError('IndexOutOfRange', `IndexOutOfRange: sample ${s} outside [0, ${split.count})`);
    pixels.set(split.images.subarray(s * hw, (s + 1) * hw), i * hw);
    ys[i] = split.labels[s];
  }
  return {
    images: fc.constant(['batch', 'h', 'w'], [count, split.h, split.w], pixels),
    labels: fc.constant(['batch'], [count], ys, 'i32'),
  };
}
