// The package entry for Node (the "node" exports condition): the facade bound to
// platform.node.mjs. index.node.mjs and index.browser.mjs differ only in that import.
import { makeInit } from './facade.mjs';
import { makeReaders } from './data.mjs';
import { platform } from './platform.node.mjs';

export { FucinaError, Tensor, Optimizer, PackedRhs, relaxedSimdSupported } from './facade.mjs';
export { parseIdx, shuffledIndices, makeBatch } from './data.mjs';
export const init = makeInit(platform);
export const { readIdx, loadFashionMnist } = makeReaders(platform);
