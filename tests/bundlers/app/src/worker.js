// The app's engine worker: what a web developer writes, with a bare 'fucina' import and nothing
// bundler-specific.
import { init } from 'fucina';
import { trainOnMessage } from './train.js';

self.onmessage = trainOnMessage(() => init());
