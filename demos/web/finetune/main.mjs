// The Fine-tune page: the base, the text and the choices go to the worker (which loads the base,
// adds the adapters and trains), and the page draws what comes back: the loss, the memory each
// part takes, the samples before and after, and the adapters as PEFT's two files. The base is the
// shipped tiny GPT-2 or a checkpoint picked from disk: a GPT-2, or a Llama-family model with its
// tokenizer.json. The page owns the tokenizer (finetune.mjs's createTokenizer), so the worker sees
// only token ids. The worker trains on the device the selector names (common/device.mjs).
import { Engine } from '../common/engine.mjs';
import { LineChart } from '../common/chart.mjs';
import { autostart, stepLimit, params, demo, showError, RateMeter, setText, showEngine } from '../common/page.mjs';
import { onChosenDevice, onDeviceChange, showFallback } from '../common/device.mjs';
import { createTokenizer, familyOf, parameterCount, dims, budgetFor, expectedFrozenBytes, adapterElements, DTYPES, RANKS,
  FAMILIES, TARGET_CHOICES } from './finetune.mjs';

const SMOOTHING = 0.9;
const $ = (id) => document.getElementById(id);
const lossChart = new LineChart($('loss'), { series: [{ name: 'per step', color: '#41679e' }, { name: 'smoothed', color: '#ffb454' }],
  yLabel: 'cross-entropy' });
const rate = new RateMeter();
const workerUrl = new URL('./worker.mjs', import.meta.url);
const engine = new Engine(onChosenDevice(workerUrl));

const SHIPPED_URL = new URL('./base/', import.meta.url).href;
// The base in use: { kind: 'shipped' | 'file', config, family, tokenizer } and, for a checkpoint
// from disk, files (its model.safetensors Files: the worker reads them as it loads).
let base = null;
let tokenizer = null, sentText = null, defaultText = '';
let ready = false, running = false, ema = 0, emaWeight = 0, stepMs = null, runId = 0;
let pendingRun = autostart ? stepLimit : null;  // steps to train once the next 'before' sample is in
let sampled = {};  // which ('before' | 'after') -> { prompt, promptIds, ids }
let downloadUrls = [];
Object.assign(demo, { losses: [], steps: 0, running: false, memory: null, info: null, samples: {}, runs: [], download: null,
  liveTensors: [] });

// The test hook's choices (?dtype=f32&rank=4&targets=all) before the first configuration.
for (const [id, allowed] of [['dtype', DTYPES], ['rank', RANKS.map(String)], ['targets', TARGET_CHOICES]]) {
  if (params.has(id) && allowed.includes(params.get(id))) $(id).value = params.get(id);
}
if (params.get('checkpoint') === '1') $('checkpoint').checked = true;
// The test hook: smaller batches (?batch=N&context=N), for a slow device.
const training = Object.fromEntries(['batch', 'context'].filter((k) => params.has(k)).map((k) => [k, Number(params.get(k))]));
if (Number.isFinite(stepLimit) && ![...$('steps').options].some((o) => Number(o.value) === stepLimit)) {
  $('steps').append(new Option(String(stepLimit)));
}
if (Number.isFinite(stepLimit)) $('steps').value = String(stepLimit);

// ---- formatting
const KiB = 1024, MiB = 1024 * 1024;
const bytes = (n) => (n === null || n === undefined ? '–' : n >= MiB ? `${(n / MiB).toFixed(2)} MiB`
  : `${(n / KiB).toFixed(n >= 100 * KiB ? 0 : 1)} KiB`);
const count = (n) => (n >= 1e6 ? `${(n / 1e6).toFixed(2)}M` : n >= 1e4 ? `${(n / 1e3).toFixed(1)}k` : n.toLocaleString('en'));
const targetsLabel = (c) => FAMILIES[c.family].labels[c.targets];
const choiceLabel = (c) => `${c.dtype} · r${c.rank} · ${targetsLabel(c)}${c.checkpointBlocks ? ' · checkpointed' : ''}`;

// ---- configuration: (re)load the base with the current choices
const choices = () => ({ dtype: $('dtype').value, rank: Number($('rank').value), targets: $('targets').value,
  checkpointBlocks: $('checkpoint').checked });

function enable(on) {
  for (const id of ['train', 'resample']) $(id).disabled = !on;
  $('download').disabled = !on || demo.steps === 0;
}

function setRunning(on) {
  running = on;
  demo.running = on;
  $('train').textContent = on ? 'Stop' : 'Train';
  for (const id of ['dtype', 'rank', 'targets', 'checkpoint', 'device']) $(id).disabled = on;
  for (const input of document.querySelectorAll('input[name=base], #model-files')) input.disabled = on;
  $('resample').disabled = on || !ready;
  $('download').disabled = on || !ready || demo.steps === 0;
}

/** Reloads the base with the current choices; the worker answers 'ready' (with this run's id). */
function configure() {
  ready = false;
  enable(false);
  lossChart.clear();
  rate.reset();
  [ema, emaWeight, stepMs] = [0, 0, null];
  sampled = {};
  Object.assign(demo, { losses: [], steps: 0, memory: null, info: null, samples: {}, download: null, liveTensors: [], done: false });
  for (const w of ['before', 'after']) { $(w).replaceChildren(); }
  $('after-head').textContent = 'after training';
  $('download-links').hidden = true;  // new adapters: the last ones' files are another run's
  for (const id of ['step', 'loss-value', 'smoothed-value', 'ms']) setText(id, id === 'step' ? '0' : '–');
  showMemory(null);
  setText('status', 'loading the base…');
  tokenizer = base.tokenizer;
  const tokens = encodeText();
  runId += 1;
  // A File is a handle to the disk, not its bytes: sending one costs nothing, whatever its size.
  const sent = base.kind === 'shipped' ? { url: SHIPPED_URL } : { files: base.files, config: base.config };
  engine.config({ run: runId, base: sent, tokens, training, ...choices() });
}
let failed = false;  // the last configuration failed on the page (an empty text)
const reconfigure = () => {
  failed = false;
  try {
    configure();
  } catch (e) {
    failed = true;
    showError(e.message);
    setText('status', 'not loaded');
  }
};
/** A new text: sent to the trained adapters, or a new try when the last configuration failed. */
function textChanged() {
  if (failed) reconfigure();
  else if (ready && !running) sendTextIfChanged();
}

// ---- the text: tokenized on the page, sent as ids
function encodeText() {
  const text = $('text').value;
  const tokens = tokenizer.encode(text);
  if (tokens.length < 2) throw new Error('the text is empty: paste, type or drop some text to train on');
  sentText = text;
  setText('text-info', `${new TextEncoder().encode(text).length.toLocaleString('en')} bytes · ` +
    `${tokens.length.toLocaleString('en')} tokens (${tokenizer.label})`);
  return tokens;
}
/** Sends the text's ids if it changed since the last time; false (and an error shown) when it
 * cannot be trained on. */
function sendTextIfChanged() {
  if (!tokenizer || $('text').value === sentText) return true;
  try {
    engine.send('tokens', { tokens: encodeText() });
    return true;
  } catch (e) {
    showError(e.message);
    return false;
  }
}
$('text').addEventListener('dragover', (e) => { e.preventDefault(); $('text').classList.add('drop'); });
$('text').addEventListener('dragleave', () => $('text').classList.remove('drop'));
$('text').addEventListener('drop', async (e) => {
  e.preventDefault();
  $('text').classList.remove('drop');
  const file = e.dataTransfer.files[0];
  if (file) $('text').value = await file.text();
  else if (e.dataTransfer.getData('text/plain')) $('text').value = e.dataTransfer.getData('text/plain');
  textChanged();
});
$('text').addEventListener('change', textChanged);
$('default-text').onclick = () => { $('text').value = defaultText; textChanged(); };

// ---- the base: the shipped one, or a checkpoint from disk (picked or dropped as one set of files)
async function shippedBase() {
  const response = await fetch(new URL('config.json', SHIPPED_URL));
  if (!response.ok) throw new Error(`base/config.json: HTTP ${response.status}`);
  const config = await response.json();
  return { kind: 'shipped', config, family: familyOf(config), tokenizer: await createTokenizer(config) };
}

async function readJson(file) {
  try {
    return JSON.parse(await file.text());
  } catch (e) {
    throw new Error(`${file.name} is not JSON: ${e.message}`);
  }
}

/** The picked files as a base: model.safetensors (or a sharded checkpoint's files, in name order),
 * config.json, and for a Llama-family model tokenizer.json (tokenizer_config.json when given);
 * others (README.md, generation_config.json, ...) are left out. Null, with what is missing in the
 * base's caption, until they are all there. */
async function pickedBase(files) {
  const named = (name) => files.find((f) => f.name === name);
  const weights = files.filter((f) => f.name.endsWith('.safetensors') && f.name !== 'adapter_model.safetensors')
    .sort((a, b) => a.name.localeCompare(b.name));
  const [configFile, tokenizerFile, tokenizerConfigFile] = ['config.json', 'tokenizer.json', 'tokenizer_config.json'].map(named);
  const missing = [...(weights.length ? [] : ['model.safetensors']), ...(configFile ? [] : ['config.json'])];
  if (missing.length) {
    setText('base-info', files.length ? `${missing.join(' and ')} missing: pick all of the model's files at once`
      : "pick the model's files (above)");
    return null;
  }
  const config = await readJson(configFile);
  const family = familyOf(config);
  if (family === 'llama' && !tokenizerFile) {
    setText('base-info', `a ${config.model_type ?? 'Llama-family'} model is tokenized by its own tokenizer.json: pick it too`);
    return null;
  }
  if (family === 'gpt2' && weights.length > 1) throw new Error(`a GPT-2 loads from one model.safetensors, got ${weights.length}`);
  const tokenizer = await createTokenizer(config, family === 'gpt2' ? {} : {
    tokenizerJson: await readJson(tokenizerFile), tokenizerConfig: tokenizerConfigFile && await readJson(tokenizerConfigFile) });
  return { kind: 'file', config, family, tokenizer, files: weights };
}

/** The LoRA choices name the family's layers; a base of another family starts from its default. */
function showTargets(family, previous) {
  for (const option of $('targets').options) option.textContent = FAMILIES[family].labels[option.value];
  if (previous && previous !== family) $('targets').value = FAMILIES[family].defaultTargets;
}

async function chooseBase() {
  const kind = document.querySelector('input[name=base]:checked').value;
  const next = kind === 'shipped' ? await shippedBase() : await pickedBase([...$('model-files').files]);
  if (!next) return;
  showTargets(next.family, base?.family);
  base = next;
  demo.runs = [];  // the table compares choices on one base
  $('runs').replaceChildren();
  reconfigure();
}
// A base that cannot be used (a config that is not JSON, a tokenizer.json that does not load)
// leaves the one in use selected.
const pickBase = () => chooseBase().catch((e) => {
  showError(e.message);
  if (base) document.querySelector(`input[name=base][value=${base.kind}]`).checked = true;
});
for (const input of document.querySelectorAll('input[name=base]')) input.onchange = pickBase;
const pickFiles = () => {
  document.querySelector('input[name=base][value=file]').checked = true;
  pickBase();
};
$('model-files').onchange = pickFiles;
// Dropped on the card, the files become the picker's (as if picked there).
const baseCard = $('base-card');
baseCard.addEventListener('dragover', (e) => { e.preventDefault(); baseCard.classList.add('drop'); });
baseCard.addEventListener('dragleave', () => baseCard.classList.remove('drop'));
baseCard.addEventListener('drop', (e) => {
  e.preventDefault();
  baseCard.classList.remove('drop');
  if (running || e.dataTransfer.files.length === 0) return;
  $('model-files').files = e.dataTransfer.files;
  pickFiles();
});
for (const id of ['dtype', 'rank', 'targets', 'checkpoint']) $(id).onchange = () => { if (!running) reconfigure(); };

// ---- training
function start(steps = Number($('steps').value)) {
  if (!sendTextIfChanged()) return;
  demo.done = false;
  $('after-head').textContent = 'after training';
  engine.send('runFor', { steps });
  engine.start();
  setRunning(true);
}
$('train').onclick = () => { if (running) engine.stop(); else start(); };

// ---- samples: the same seed and settings before and after, so the difference is the adapters'
function requestSample(which) {
  const prompt = $('prompt').value;
  const promptIds = tokenizer.encode(prompt);
  sampled[which] = { prompt, promptIds, ids: [] };
  showSample(which);
  const { sampling } = budgetFor(base.config);
  if (params.has('sampleTokens')) sampling.maxTokens = Number(params.get('sampleTokens'));  // the test hook: shorter samples
  engine.send('sample', { which, prompt: promptIds, options: { start: tokenizer.start, ...sampling } });
}
/** What the model wrote after the prompt, as text. */
const sampleText = ({ promptIds, ids }) => tokenizer.continuation(promptIds, ids);
function showSample(which) {
  const span = document.createElement('span');
  span.className = 'prompt';
  span.textContent = sampled[which].prompt;
  $(which).replaceChildren(span, sampleText(sampled[which]));
}
// A new prompt: the base alone before any training, the adapted model after.
$('resample').onclick = () => requestSample(demo.steps === 0 ? 'before' : 'after');

// ---- memory: the latest step's parts, and one row per configuration trained
function showMemory(memory) {
  demo.memory = memory;
  const m = memory ?? {};
  const parts = [m.frozen?.bytes ?? 0, m.state ?? 0, m.activations ?? 0];
  const total = Math.max(1, parts.reduce((a, b) => a + b, 0));
  ['bar-frozen', 'bar-state', 'bar-acts'].forEach((id, i) => { $(id).style.width = `${(100 * parts[i]) / total}%`; });
  setText('mem-frozen', bytes(m.frozen?.bytes));
  setText('mem-state', bytes(m.state));
  setText('mem-acts', bytes(m.activations));
  setText('mem-peak', bytes(m.peak));
  if (memory) {
    $('mem-source').innerHTML = m.device === 'cpu' ? 'tensor bytes from <code>fc.memory()</code>'
      : `tensor bytes on ${m.device}, from <code>fc.memory().devices.${m.device}</code>`;
  }
  const detail = $('frozen-detail');
  detail.replaceChildren();
  if (m.frozen) {
    // A device counts no dtypes: the split is the cpu's, as the base loaded there before the move.
    if (m.device !== 'cpu') detail.append('as loaded on the cpu: ');
    for (const [dtype, n] of Object.entries(m.frozen.byDtype).sort((a, b) => b[1] - a[1])) {
      const chip = document.createElement('span');
      chip.className = 'dtype-chip';
      chip.textContent = `${dtype} ${bytes(n)}`;
      detail.append(chip);
    }
    const expected = m.expectedFrozen.total;
    detail.append(m.frozen.bytes === expected ? ' = what config.json implies' : ` (config.json implies ${bytes(expected)})`);
  } else detail.textContent = '–';
  setText('state-detail', !memory ? '–' : m.state === null ? `${count(m.adapterCount)} adapter parameters; measured after the first step`
    : `${count(m.adapterCount)} adapter parameters × ${(m.state / m.adapterCount).toFixed(1)} B (f32 weight, gradient, m, v)`);
}

/** The costs the config implies for every dtype and rank (the chosen ones highlighted). */
function showPredicted(info) {
  const item = (label, n, chosen) => {
    const b = document.createElement('b');
    if (chosen) b.className = 'chosen';
    b.textContent = `${label} ${bytes(n)}`;
    return b;
  };
  const join = (items) => items.flatMap((x, i) => (i ? [' · ', x] : [x]));
  $('predict-dtype').replaceChildren(...join(DTYPES.map((dt) => item(dt, expectedFrozenBytes(info.config, dt).total, dt === info.dtype))));
  $('predict-rank').replaceChildren(...join(RANKS.map((r) => item(`r${r}`, 16 * adapterElements(info.config, r, info.targets), r === info.rank))),
    ` (${targetsLabel(info)}; 16 B a parameter)`);
}

function updateRun() {
  const c = demo.info;
  let run = demo.runs.find((r) => r.id === runId);
  if (!run) {
    run = { id: runId, label: choiceLabel(c), dtype: c.dtype, rank: c.rank, targets: c.targets, checkpointBlocks: c.checkpointBlocks };
    demo.runs.push(run);
  }
  const m = demo.memory;
  Object.assign(run, { frozen: m.frozen.bytes, state: m.state, activations: m.activations, peak: m.peak, steps: demo.steps,
    ms: stepMs, loss: ema / emaWeight });
  // Each row's peak as a stacked bar (frozen | adapters + optimizer | activations), all on one scale.
  const top = Math.max(...demo.runs.map((r) => r.peak ?? 0), 1);
  const rows = demo.runs.map((r) => {
    const tr = document.createElement('tr');
    if (r.id === runId) tr.className = 'current';
    for (const v of [r.label, bytes(r.frozen), bytes(r.state), bytes(r.activations), null, r.steps, Math.round(r.ms), r.loss.toFixed(3)]) {
      const td = document.createElement('td');
      if (v === null) {
        const cell = document.createElement('div');
        cell.className = 'peakcell';
        const label = document.createElement('span');
        label.textContent = bytes(r.peak);
        cell.append(label);
        const bar = document.createElement('div');
        bar.className = 'mini';
        [['frozen', r.frozen], ['state', r.state], ['acts', r.activations]].forEach(([cls, n]) => {
          const part = document.createElement('i');
          part.className = cls;
          part.style.width = `${(100 * (n ?? 0)) / top}%`;
          bar.append(part);
        });
        cell.append(bar);
        td.append(cell);
      } else td.textContent = v;
      tr.append(td);
    }
    return tr;
  });
  $('runs').replaceChildren(...rows);
}

// ---- downloads: PEFT's two files, under the names PeftModel.from_pretrained looks for in a folder
$('download').onclick = () => engine.send('peft');
engine.on('peft', (m) => {
  const files = [['adapter_model.safetensors', m.safetensors, 'application/octet-stream'],
    ['adapter_config.json', `${JSON.stringify(m.adapterConfig, null, 2)}\n`, 'application/json']];
  downloadUrls.forEach((url) => URL.revokeObjectURL(url));
  downloadUrls = files.map(([, data, type]) => URL.createObjectURL(new Blob([data], { type })));
  const links = files.map(([name], i) => {
    const link = document.createElement('a');
    Object.assign(link, { href: downloadUrls[i], download: name, textContent: name });
    return link;
  });
  // Both files download at once; the links stay, in case the browser holds the second one back.
  $('download-links').replaceChildren(`after ${m.step} steps: `, links[0], ' · ', links[1]);
  $('download-links').hidden = false;
  demo.download = { step: m.step, files: files.map(([name]) => name), adapterConfig: m.adapterConfig };
  links.forEach((link) => link.click());
});

// ---- the worker's reports
// The engine's typed errors (a FucinaError: a file or a config.json it cannot read) are the user's
// to fix, and their message says how: the stack would only bury it. Anything else keeps its stack.
const readable = (text) => (text.startsWith('FucinaError: ') ? text.slice('FucinaError: '.length).split('\n    at ')[0] : text);
onDeviceChange(() => { engine.restart(onChosenDevice(workerUrl)); reconfigure(); });
// A device that cannot train the base: the page loads it again, on the cpu, and trains on if it was.
engine.on('fallback', (m) => {
  showFallback(m.message);
  if (m.running) pendingRun = Number($('steps').value);
  reconfigure();
});
engine.on('error', (m) => {
  showError(readable(m.message));
  if (!ready) setText('status', 'not loaded');
});
engine.on('ready', (m) => {
  const { run, config, family, dtype, rank, targets, checkpointBlocks, fileBytes, shards, adapterCount, training: t, span, tokens,
    loadMs } = m.info;
  if (run !== runId) return;  // a base the page has since replaced
  showEngine(m);
  demo.info = { family, dtype, rank, targets, checkpointBlocks, config, adapterCount, fileBytes, span, tokens, loadMs };
  const d = dims(config);
  const heads = d.kvHeads === d.heads ? `${d.heads} heads` : `${d.heads} heads (${d.kvHeads} kv)`;
  setText('base-info', `${config.model_type} · ${d.layers} blocks · d ${d.d} · ${heads} · context ${d.positions} · ` +
    `vocab ${d.vocab} · ${count(parameterCount(config))} parameters · ${shards > 1 ? `${shards} files` : 'file'} ` +
    `${bytes(fileBytes)} · loaded as ${dtype} in ${Math.round(loadMs)} ms`);
  setText('trainable', count(adapterCount));
  const adapted = targets === 'all' ? 'every projection' : targetsLabel(demo.info);
  $('trainable').parentElement.title = `LoRA rank ${rank} on ${adapted}: ` +
    `batches of ${t.batch} windows of ${span - 1} tokens, AdamW lr ${t.lr}`;
  showMemory(m.info.memory);
  showPredicted(demo.info);
  setText('status', 'sampling…');
  ready = true;
  requestSample('before');
});
engine.on('token', (m) => {
  if (!ready || !sampled[m.which]) return;
  sampled[m.which].ids.push(m.id);
  showSample(m.which);
});
engine.on('sample', (m) => {
  if (!ready) return;
  sampled[m.which].ids = m.ids;
  showSample(m.which);
  demo.samples[m.which] = { step: m.step, prompt: sampled[m.which].prompt, text: sampleText(sampled[m.which]), ms: m.ms };
  if (m.which === 'after') {
    $('after-head').textContent = `after ${m.step} steps (${choiceLabel(demo.info)})`;
    if (!running) demo.done = true;  // the test hook: a run has ended and its sample is in
  }
  if (running) return;
  setText('status', demo.steps ? `stopped at step ${demo.steps}` : 'ready');
  enable(true);
  if (m.which === 'before' && pendingRun !== null) {
    const steps = pendingRun;
    pendingRun = null;
    start(Number.isFinite(steps) ? steps : undefined);
  }
});
engine.on('tokens', (m) => { if (demo.info) Object.assign(demo.info, { span: m.span, tokens: m.tokens }); });
engine.on('started', () => setText('status', 'training…'));
engine.on('progress', (m) => {
  if (!ready) return;
  demo.losses.push(m.loss);
  demo.steps = m.step;
  demo.liveTensors.push(m.liveTensors);
  stepMs = stepMs === null ? m.ms : 0.8 * stepMs + 0.2 * m.ms;
  ema = SMOOTHING * ema + (1 - SMOOTHING) * m.loss;
  emaWeight = SMOOTHING * emaWeight + (1 - SMOOTHING);
  const smoothed = ema / emaWeight;
  lossChart.append('per step', m.step, m.loss);
  lossChart.append('smoothed', m.step, smoothed);
  showMemory(m.memory);
  updateRun();
  rate.add(m.step);
  setText('step', m.step);
  setText('loss-value', m.loss.toFixed(3));
  setText('smoothed-value', smoothed.toFixed(3));
  setText('rate', rate.perSecond.toFixed(1));
  setText('ms', Math.round(stepMs));
});
engine.on('stopped', () => {
  setRunning(false);
  rate.reset();  // the badge keeps the last rate (RateMeter)
  if (!ready) return;
  setText('status', 'sampling…');
  requestSample('after');
});

/** The test hook: new choices, then `steps` steps of training (window.__demo.done when over). */
demo.run = (options, steps) => {
  for (const [id, value] of Object.entries(options)) {
    if (id === 'checkpoint') $(id).checked = value;
    else $(id).value = String(value);
  }
  pendingRun = steps;
  demo.done = false;
  reconfigure();
};

// ---- start: the default text, then the shipped base
(async () => {
  const response = await fetch(new URL('./log.txt', import.meta.url));
  if (!response.ok) throw new Error(`log.txt: HTTP ${response.status}`);
  defaultText = await response.text();
  $('text').value = defaultText;
  base = await shippedBase();
  reconfigure();
})().catch((e) => showError(e.message));
