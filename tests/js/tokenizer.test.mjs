// Tokenizers (web/README.md, "GPT-2 and tokenizers"): GPT-2's BPE from js-tiktoken, a
// devDependency of the repository (not of the package). Its ids round-trip, and fc.nn.Gpt2
// refuses an id its vocabulary does not have with an error that says so.
import { describe, test } from 'node:test';
import { readFileSync } from 'node:fs';
import { Tiktoken } from 'js-tiktoken/lite';
import gpt2 from 'js-tiktoken/ranks/gpt2';
import { VARIANTS, engine, assert, throwsCode } from './helpers.mjs';

const enc = new Tiktoken(gpt2);
const fixture = (name) => new URL(`../fixtures/gpt2/${name}`, import.meta.url);

test('GPT-2 BPE: text -> ids -> text', () => {
  assert.deepEqual(enc.encode('Hello, world!'), [15496, 11, 995, 0]);
  const text = 'Named axes, LoRA adapters and a frozen q8_0 base: fine-tuning GPT-2 in a browser tab.';
  const ids = enc.encode(text);
  assert.ok(ids.length > 10 && ids.every((id) => Number.isInteger(id) && id >= 0 && id < 50257), ids.join());
  assert.equal(enc.decode(ids), text);
  assert.equal(ids.map((id) => enc.decode([id])).join(''), text, 'one token at a time (ASCII text)');
});

for (const variant of VARIANTS) {
  describe(variant, () => {
    test('a GPT-2 with a smaller vocabulary refuses BPE ids past it, naming vocab_size', async () => {
      const fc = await engine(variant);
      const config = JSON.parse(readFileSync(fixture('config.json'), 'utf8'));
      const model = fc.nn.Gpt2.load(new Uint8Array(readFileSync(fixture('model.safetensors'))), config);
      const ids = enc.encode('Hello, world!');
      const e = throwsCode(() => model.generate(ids, { maxTokens: 4 }), 'IndexOutOfRange');
      assert.match(e.message, /prompt\[0\] = 15496 is not a token id in \[0, 96\) \(vocab_size 96\)/);
      const tokens = fc.constant(['batch', 't'], [1, ids.length], ids, 'i32');
      assert.match(throwsCode(() => model.logits(tokens), 'IndexOutOfRange').message, /tokens hold 15496 .*vocab_size 96/);
      assert.match(throwsCode(() => model.loss(tokens), 'IndexOutOfRange').message, /nn\.Gpt2\.loss/);
      // Ids within the vocabulary go through.
      assert.equal(model.generate(ids.filter((id) => id < 96), { maxTokens: 4 }).length, 4);
      tokens.dispose();
      model.dispose();
    });
  });
}
