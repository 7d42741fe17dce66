// The package entry for browsers and web workers (the "browser" exports condition): the facade bound to
// platform.browser.mjs. index.node.mjs and index.browser.mjs differ only in that import.
import { makeInit } from './facade.mjs';
import { makeReaders } from './data.mjs';
import { platform } from './platform.browser.mjs';

export { FucinaError, Tensor, Optimizer, PackedRhs, relaxedSimdSupported } from './facade.mjs';
export { parseIdx, shuffledIndices, makeBatch } from './data.mjs';
export const init = makeInit(platform);
export const { readIdx, loadFashionMnist } = makeReaders(platform);
