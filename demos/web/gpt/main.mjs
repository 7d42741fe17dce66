// The Tiny GPT page: wires the controls (the device among them: common/device.mjs) to the worker
// and draws what it reports (the loss curve, the peak memory of each step with checkpointing off
// and on, and the text samples).
import { Engine } from '../common/engine.mjs';
import { LineChart } from '../common/chart.mjs';
import { autostart, stepLimit, params, demo, showError, RateMeter, setText, showEngine } from '../common/page.mjs';
import { onChosenDevice, onDeviceChange, showFallback } from '../common/device.mjs';

const SMOOTHING = 0.9;       // the smoothed curve: an exponential moving average, bias-corrected
const MAX_SAMPLES = 6;       // samples kept on the page, newest first
const MiB = 1024 * 1024;

const $ = (id) => document.getElementById(id);
const lossChart = new LineChart($('loss'), { series: [{ name: 'per step', color: '#41679e' }, { name: 'smoothed', color: '#ffb454' }], yLabel: 'cross-entropy' });
const memoryChart = new LineChart($('memory'), {
  series: [{ name: 'off', color: '#5b9cff' }, { name: 'on', color: '#4cd08a' }], yLabel: 'peak MiB', yMin: 0 });
const rate = new RateMeter();
const workerUrl = new URL('./worker.mjs', import.meta.url);
const engine = new Engine(onChosenDevice(workerUrl));
let running = false, ready = false, startWhenReady = autostart, ema = 0, emaWeight = 0, stepMs = null, batchTokens = 0;
// The latest peak (and what lived before the step) for each setting of the toggle.
const peaks = { off: null, on: null };
Object.assign(demo, { losses: [], steps: 0, running: false, peaks, samples: [], liveTensors: [], stepMs: [] });

const settings = () => ({
  prompt: $('prompt').value,
  temperature: Number($('temperature').value),
  length: Number(params.get('length') ?? 160),
  sampleEvery: Number(params.get('sampleEvery') ?? $('every').value),
});

// ---- controls
function setRunning(on) {
  running = on;
  demo.running = on;
  $('train').textContent = on ? 'Stop' : 'Train';
}
function enable(on) {
  for (const id of ['train', 'reset', 'sample']) $(id).disabled = !on;
}
function start() {
  if (Number.isFinite(stepLimit)) engine.send('runFor', { steps: stepLimit });
  engine.start();
  setRunning(true);
}
function reset(thenStart = autostart) {
  ready = false;
  startWhenReady = thenStart;
  enable(false);
  setRunning(false);
  lossChart.clear();
  memoryChart.clear();
  rate.reset();
  [ema, emaWeight, stepMs] = [0, 0, null];
  peaks.off = peaks.on = null;
  Object.assign(demo, { losses: [], steps: 0, samples: [], liveTensors: [], stepMs: [] });
  $('samples').replaceChildren();
  writing = null;
  showPeaks();
  setText('status', 'building the model…');
  engine.config({ checkpointing: $('checkpoint').checked, settings: settings() });
}
$('train').onclick = () => { if (running) engine.stop(); else start(); };
$('reset').onclick = () => reset();
onDeviceChange(() => { engine.restart(onChosenDevice(workerUrl)); reset(); });
$('sample').onclick = () => engine.send('sample');
$('checkpoint').onchange = () => engine.send('checkpoint', { on: $('checkpoint').checked });
for (const id of ['prompt', 'temperature', 'every']) $(id).oninput = () => engine.send('settings', { settings: settings() });
$('temperature').addEventListener('input', () => { $('temperature-out').value = Number($('temperature').value).toFixed(1); });
$('temperature-out').value = Number($('temperature').value).toFixed(1);

// ---- memory: two bars, each the memory that lived before the step plus what the step added
function showPeaks() {
  const top = Math.max(...['off', 'on'].map((k) => peaks[k]?.peakBytes ?? 0), 1);
  for (const key of ['off', 'on']) {
    const p = peaks[key];
    const row = $(`mem-${key}`);
    row.querySelector('.base').style.width = p ? `${(100 * p.liveBytes) / top}%` : '0';
    row.querySelector('.step').style.width = p ? `${(100 * (p.peakBytes - p.liveBytes)) / top}%` : '0';
    row.querySelector('b').textContent = p ? `${(p.peakBytes / MiB).toFixed(1)} MiB` : '–';
  }
  if (peaks.off && peaks.on) {
    const saved = 1 - peaks.on.peakBytes / peaks.off.peakBytes;
    const stepSaved = 1 - (peaks.on.peakBytes - peaks.on.liveBytes) / (peaks.off.peakBytes - peaks.off.liveBytes);
    $('saving').innerHTML = `Checkpointing lowers the peak by <b>${(100 * saved).toFixed(0)}%</b> ` +
      `(the step's own memory by ${(100 * stepSaved).toFixed(0)}%), at the cost of a second forward pass through each block.`;
  } else {
    $('saving').textContent = peaks.off || peaks.on
      ? `Now switch checkpointing ${peaks.off ? 'on' : 'off'} to compare.`
      : 'Train with checkpointing off and on to compare.';
  }
}

// ---- samples: newest first, the prompt dimmed before the model's continuation. A sample being
// written ('sampleText' after every byte) shows in one item that its final 'sample' completes.
let writing = null;  // the item of the sample being written

function showSample(item, m) {
  const head = document.createElement('div');
  head.className = 'sample-head';
  head.textContent = `step ${m.step} · temperature ${m.temperature.toFixed(1)}`;
  const body = document.createElement('pre');
  const prompt = document.createElement('span');
  prompt.className = 'prompt';
  prompt.textContent = m.prompt;
  // Bytes the model made that are not printable ASCII ('·' runs) are dimmed.
  const parts = m.text.split(/(\u00b7+)/).map((part, i) => {
    if (i % 2 === 0) return part;
    const dim = document.createElement('span');
    dim.className = 'unprintable';
    dim.textContent = part;
    return dim;
  });
  body.append(prompt, ...parts);
  item.replaceChildren(head, body);
}

function sampleItem() {
  if (writing) return writing;
  writing = document.createElement('div');
  writing.className = 'sample';
  $('samples').prepend(writing);
  while ($('samples').children.length > MAX_SAMPLES) $('samples').lastChild.remove();
  return writing;
}

function addSample(m) {
  demo.samples.push({ step: m.step, text: m.text, ms: m.ms });
  showSample(sampleItem(), m);
  writing = null;
}

// ---- the worker's reports
engine.on('error', (m) => showError(m.message));
engine.on('fallback', (m) => { showFallback(m.message); reset(startWhenReady || m.running); });
engine.on('ready', (m) => {
  const { model: c, training: t, parameters } = m.info;
  showEngine(m);
  demo.parameters = parameters;
  batchTokens = t.batch * c.context;
  setText('step', '0');
  setText('loss-value', '–');
  setText('smoothed-value', '–');
  setText('ms', '–');
  setText('tokens', '–');
  setText('model', `${c.layers} blocks · d ${c.dModel} · ${c.heads} heads · MLP ${c.mlp} · context ${c.context} bytes · ` +
    `${(parameters / 1000).toFixed(0)}k parameters · batches of ${t.batch} random windows · AdamW, lr ${t.lr} ` +
    `(warm-up ${t.warmupSteps} steps) · text ${(m.info.textBytes / 1024).toFixed(0)} KiB`);
  setText('status', 'ready');
  addSample(m.info.sample);
  ready = true;
  enable(true);
  if (startWhenReady) start();
});
engine.on('started', () => setText('status', 'training…'));
engine.on('progress', (m) => {
  if (!ready) return;  // a report of the model a reset just replaced
  demo.losses.push(m.loss);
  demo.steps = m.step;
  demo.liveTensors.push(m.liveTensors);
  demo.stepMs.push(m.ms);
  stepMs = stepMs === null ? m.ms : 0.8 * stepMs + 0.2 * m.ms;  // the training step alone, no sampling
  ema = SMOOTHING * ema + (1 - SMOOTHING) * m.loss;
  emaWeight = SMOOTHING * emaWeight + (1 - SMOOTHING);
  const smoothed = ema / emaWeight;
  lossChart.append('per step', m.step, m.loss);
  lossChart.append('smoothed', m.step, smoothed);
  const key = m.checkpointing ? 'on' : 'off';
  peaks[key] = { peakBytes: m.peakBytes, liveBytes: m.liveBytes };
  memoryChart.append(key, m.step, m.peakBytes / MiB);
  showPeaks();
  rate.add(m.step);
  setText('step', m.step);
  setText('loss-value', m.loss.toFixed(3));
  setText('smoothed-value', smoothed.toFixed(3));
  setText('rate', rate.perSecond.toFixed(1));
  setText('ms', Math.round(stepMs));
  setText('tokens', Math.round((1000 * batchTokens) / stepMs).toLocaleString('en'));
});
engine.on('sampleText', (m) => { if (ready) showSample(sampleItem(), m); });
engine.on('sample', (m) => { if (ready) addSample(m); });
engine.on('stopped', () => {
  setRunning(false);
  if (demo.steps >= stepLimit) demo.done = true;  // page.mjs's test hook: a run of ?steps=N ended
  rate.reset();
  if (ready) setText('status', `stopped at step ${demo.steps}`);
});

reset();
