// The Fine-tune page: the base, the text and the choices go to the worker (which loads the base,
// adds the adapters and trains), and the page draws what comes back: the loss, the memory each
// part takes, the samples before and after, and the adapters as a download. The page owns the
// tokenizer (finetune.mjs's createTokenizer), so the worker sees only token ids.
import { Engine } from '../common/engine.mjs';
import { LineChart } from '../common/chart.mjs';
import { autostart, stepLimit, params, demo, showError, RateMeter, setText, showEngine } from '../common/page.mjs';
import { createTokenizer, parameterCount, dims, budgetFor, expectedFrozenBytes, adapterElements, DTYPES, RANKS, TARGETS }
  from './finetune.mjs';

const SMOOTHING = 0.9;
const $ = (id) => document.getElementById(id);
const lossChart = new LineChart($('loss'), { series: [{ name: 'per step', color: '#41679e' }, { name: 'smoothed', color: '#ffb454' }],
  yLabel: 'cross-entropy' });
const rate = new RateMeter();
const engine = new Engine(new URL('./worker.mjs', import.meta.url));

const SHIPPED = { name: 'shipped', url: new URL('./base/', import.meta.url).href };
let base = { kind: 'shipped', config: null };  // the base in use: its config and, for a file, its name and bytes
let userBase = null;                            // { name, bytes (until sent), config } from the file inputs
let tokenizer = null, sentText = null, defaultText = '';
let ready = false, running = false, ema = 0, emaWeight = 0, stepMs = null, runId = 0;
let pendingRun = autostart ? stepLimit : null;  // steps to train once the next 'before' sample is in
let sampled = {};  // which ('before' | 'after') -> { prompt, ids }
let downloadUrl = null;
Object.assign(demo, { losses: [], steps: 0, running: false, memory: null, info: null, samples: {}, runs: [], download: null,
  liveTensors: [] });

// The test hook's choices (?dtype=f32&rank=4&targets=all) before the first configuration.
for (const [id, allowed] of [['dtype', DTYPES], ['rank', RANKS.map(String)], ['targets', Object.keys(TARGETS)]]) {
  if (params.has(id) && allowed.includes(params.get(id))) $(id).value = params.get(id);
}
if (params.get('checkpoint') === '1') $('checkpoint').checked = true;
if (Number.isFinite(stepLimit) && ![...$('steps').options].some((o) => Number(o.value) === stepLimit)) {
  $('steps').append(new Option(String(stepLimit)));
}
if (Number.isFinite(stepLimit)) $('steps').value = String(stepLimit);

// ---- formatting
const KiB = 1024, MiB = 1024 * 1024;
const bytes = (n) => (n === null || n === undefined ? '–' : n >= MiB ? `${(n / MiB).toFixed(2)} MiB`
  : `${(n / KiB).toFixed(n >= 100 * KiB ? 0 : 1)} KiB`);
const count = (n) => (n >= 1e6 ? `${(n / 1e6).toFixed(2)}M` : n >= 1e4 ? `${(n / 1e3).toFixed(1)}k` : n.toLocaleString('en'));
const choiceLabel = (c) => `${c.dtype} · r${c.rank} · ${c.targets === 'all' ? 'all projections' : 'c_attn'}` +
  `${c.checkpointBlocks ? ' · checkpointed' : ''}`;

// ---- configuration: (re)load the base with the current choices
const choices = () => ({ dtype: $('dtype').value, rank: Number($('rank').value), targets: $('targets').value,
  checkpointBlocks: $('checkpoint').checked });

const tokenizers = new Map();  // vocab_size -> a promise of its tokenizer (GPT-2's takes a moment to build)
function tokenizerFor(vocabSize) {
  if (!tokenizers.has(vocabSize)) tokenizers.set(vocabSize, createTokenizer(vocabSize));
  return tokenizers.get(vocabSize);
}

async function baseConfig() {
  if (base.kind === 'file') return userBase.config;
  const response = await fetch(new URL('config.json', SHIPPED.url));
  if (!response.ok) throw new Error(`base/config.json: HTTP ${response.status}`);
  return response.json();
}

function enable(on) {
  for (const id of ['train', 'resample']) $(id).disabled = !on;
  $('download').disabled = !on || demo.steps === 0;
}

function setRunning(on) {
  running = on;
  demo.running = on;
  $('train').textContent = on ? 'Stop' : 'Train';
  for (const id of ['dtype', 'rank', 'targets', 'checkpoint']) $(id).disabled = on;
  for (const input of document.querySelectorAll('input[name=base], #model-file, #config-file')) input.disabled = on;
  $('resample').disabled = on || !ready;
  $('download').disabled = on || !ready || demo.steps === 0;
}

/** Reloads the base with the current choices; the worker answers 'ready'. */
async function configure() {
  ready = false;
  enable(false);
  lossChart.clear();
  rate.reset();
  [ema, emaWeight, stepMs] = [0, 0, null];
  sampled = {};
  Object.assign(demo, { losses: [], steps: 0, memory: null, info: null, samples: {}, download: null, liveTensors: [], done: false });
  for (const w of ['before', 'after']) { $(w).replaceChildren(); }
  $('after-head').textContent = 'after training';
  for (const id of ['step', 'loss-value', 'smoothed-value', 'ms']) setText(id, id === 'step' ? '0' : '–');
  showMemory(null);
  setText('status', 'loading the base…');
  const config = await baseConfig();
  base.config = config;
  tokenizer = await tokenizerFor(config.vocab_size);
  const tokens = encodeText();
  const c = choices();
  runId += 1;
  const message = { base: base.kind === 'shipped' ? SHIPPED : { name: userBase.name, config }, tokens, ...c };
  if (base.kind === 'file' && userBase.bytes) {
    // The first time only, and transferred rather than copied (a GPT-2 is hundreds of MB): the
    // worker keeps it by name for the next change of dtype or rank.
    message.base.bytes = userBase.bytes;
    engine.worker.postMessage({ type: 'config', config: message }, [userBase.bytes.buffer]);
    userBase.bytes = null;
  } else engine.config(message);
}
let failed = false;  // the last configuration failed on the page (an empty text, a bad config.json)
const reconfigure = () => {
  failed = false;
  configure().catch((e) => { failed = true; showError(e.message); setText('status', 'not loaded'); });
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
    `${tokens.length.toLocaleString('en')} tokens (${tokenizer.kind === 'bytes' ? 'bytes are tokens' : "GPT-2's BPE"})`);
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

// ---- the base: the shipped one, or a model.safetensors + config.json pair from disk
async function readUserBase() {
  const [model, config] = [$('model-file').files[0], $('config-file').files[0]];
  if (!model || !config) {
    setText('base-info', `pick ${model ? 'config.json' : config ? 'model.safetensors' : 'both files'} (from a Hugging Face GPT-2 folder)`);
    return false;
  }
  let parsed;
  try {
    parsed = JSON.parse(await config.text());
  } catch (e) {
    throw new Error(`${config.name} is not JSON: ${e.message}`);
  }
  await tokenizerFor(parsed.vocab_size);  // fails here, clearly, for a vocabulary with no tokenizer
  setText('base-info', `reading ${model.name} (${bytes(model.size)})…`);
  userBase = { name: `${model.name}:${model.size}:${model.lastModified}`, bytes: new Uint8Array(await model.arrayBuffer()), config: parsed };
  return true;
}
async function chooseBase() {
  const kind = document.querySelector('input[name=base]:checked').value;
  if (kind === 'file' && !(await readUserBase())) return;
  base = { kind, config: null };
  reconfigure();
}
// A base that cannot be used (a vocabulary with no tokenizer, a config that is not JSON) leaves the
// one in use selected.
const pickBase = () => chooseBase().catch((e) => {
  showError(e.message);
  document.querySelector(`input[name=base][value=${base.kind}]`).checked = true;
});
for (const input of document.querySelectorAll('input[name=base]')) input.onchange = pickBase;
for (const id of ['model-file', 'config-file']) {
  $(id).onchange = () => {
    document.querySelector('input[name=base][value=file]').checked = true;
    pickBase();
  };
}
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
  sampled[which] = { prompt, ids: [] };
  showSample(which);
  const { sampling } = budgetFor(base.config);
  if (params.has('sampleTokens')) sampling.maxTokens = Number(params.get('sampleTokens'));  // the test hook: shorter samples
  engine.send('sample', { which, prompt: tokenizer.encode(prompt), options: { start: tokenizer.start, ...sampling } });
}
function showSample(which) {
  const span = document.createElement('span');
  span.className = 'prompt';
  span.textContent = sampled[which].prompt;
  $(which).replaceChildren(span, tokenizer.decode(sampled[which].ids));
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
  const detail = $('frozen-detail');
  detail.replaceChildren();
  if (m.frozen) {
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
    ` (${info.targets === 'all' ? 'all projections' : 'c_attn'}; 16 B a parameter)`);
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

// ---- downloads
$('download').onclick = () => engine.send('adapters');
engine.on('adapters', (m) => {
  if (downloadUrl) URL.revokeObjectURL(downloadUrl);
  downloadUrl = URL.createObjectURL(new Blob([m.bytes], { type: 'application/octet-stream' }));
  const link = $('download-link');
  link.href = downloadUrl;
  link.download = `adapters-${demo.info.dtype}-r${demo.info.rank}-${demo.info.targets}-${m.step}steps.safetensors`;
  demo.download = { bytes: m.bytes.length, name: link.download, href: downloadUrl };
  link.click();
});

// ---- the worker's reports
engine.on('error', (m) => showError(m.message));
engine.on('ready', (m) => {
  const { config, dtype, rank, targets, checkpointBlocks, fileBytes, adapterCount, training: t, span, tokens, loadMs } = m.info;
  showEngine(m);
  demo.info = { dtype, rank, targets, checkpointBlocks, config, adapterCount, fileBytes, span, tokens, loadMs };
  const d = dims(config);
  setText('base-info', `${d.layers} blocks · d ${d.d} · ${d.heads} heads · context ${d.positions} · vocab ${d.vocab} · ` +
    `${count(parameterCount(config))} parameters · file ${bytes(fileBytes)} · loaded as ${dtype} in ${Math.round(loadMs)} ms`);
  setText('trainable', count(adapterCount));
  $('trainable').parentElement.title = `LoRA rank ${rank} on ${targets === 'all' ? 'every projection' : 'c_attn'}: ` +
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
  demo.samples[m.which] = { step: m.step, prompt: sampled[m.which].prompt, text: tokenizer.decode(m.ids), ms: m.ms };
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
  reconfigure();
})().catch((e) => showError(e.message));
