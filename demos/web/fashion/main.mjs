// The Fashion-MNIST page: Train/Stop/Reset, the model and device choices, the loss and
// test-accuracy curves, and a grid of test images captioned with the model's current guesses.
import { Engine } from '../common/engine.mjs';
import { LineChart } from '../common/chart.mjs';
import { params, autostart, stepLimit, demo, showError, RateMeter, setText, showEngine } from '../common/page.mjs';
import { onChosenDevice, onDeviceChange, showFallback } from '../common/device.mjs';

const CLASSES = ['T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt', 'Sneaker', 'Bag', 'Ankle boot'];
const SHORT = ['T-shirt', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt', 'Sneaker', 'Bag', 'Boot'];
const $ = (id) => document.getElementById(id);
const lossChart = new LineChart($('loss'), { series: [{ name: 'batch' }, { name: 'smoothed' }], yLabel: 'cross-entropy', logY: true });
const accuracyChart = new LineChart($('accuracy'), { series: [{ name: 'test', color: '#4cd08a' }], yLabel: 'accuracy (%)', yMin: 0, yMax: 100 });
lossChart.series[0].color = 'rgba(91, 156, 255, 0.35)';
const rate = new RateMeter();
const workerUrl = new URL('./worker.mjs', import.meta.url);
const engine = new Engine(onChosenDevice(workerUrl));
let running = false, smoothed = null, shown = null, info = null;
let limit = stepLimit, startWhenReady = autostart;
if (params.has('model')) $('model').value = params.get('model');
Object.assign(demo, { losses: [], accuracies: [], steps: 0 });

// ---- the grid of test images: drawn once per config, captions updated with each evaluation
function drawSamples({ images, labels }) {
  const box = $('samples');
  box.replaceChildren();
  labels.forEach((label, i) => {
    const cell = document.createElement('div');
    cell.className = 'sample';
    const canvas = document.createElement('canvas');
    canvas.width = canvas.height = 28;
    const image = new ImageData(28, 28);
    for (let p = 0; p < 784; ++p) {
      const v = Math.round(255 * images[i * 784 + p]);
      image.data.set([v, v, v, 255], 4 * p);
    }
    canvas.getContext('2d').putImageData(image, 0, 0);
    cell.append(canvas, document.createElement('span'));
    box.append(cell);
  });
}
function showPredictions(predictions) {
  const cells = $('samples').children;
  let right = 0;
  predictions.forEach((p, i) => {
    const truth = shown.labels[i], ok = p === truth;
    right += ok;
    cells[i].className = `sample ${ok ? 'right' : 'wrong'}`;
    cells[i].lastChild.textContent = SHORT[p];
    cells[i].title = ok ? CLASSES[p] : `guessed ${CLASSES[p]}, is ${CLASSES[truth]}`;
  });
  $('legend').textContent = `${right} of ${predictions.length} right: green, red when wrong (hover for the true class). ` +
    `Accuracy is measured on the first ${info.evalCount} test images every ${info.evalEvery} steps.`;
}
function showAccuracy(step, accuracy) {
  accuracyChart.append('test', step, 100 * accuracy);
  demo.accuracies.push(accuracy);
}

// ---- controls
function setRunning(on) {
  running = on;
  $('train').textContent = on ? 'Stop' : 'Train';
}
function configure(steps = stepLimit, start = autostart) {
  [limit, startWhenReady] = [steps, start];
  for (const id of ['train', 'reset']) $(id).disabled = true;
  setRunning(false);
  lossChart.clear();
  accuracyChart.clear();
  rate.reset();
  smoothed = null;
  Object.assign(demo, { losses: [], accuracies: [], steps: 0, done: false });
  engine.config({ model: $('model').value, steps,
    ...(params.has('eval') && { evalEvery: Number(params.get('eval')) }) });
}
$('train').onclick = () => { if (running) engine.stop(); else engine.start(); setRunning(!running); };
$('reset').onclick = () => configure();
$('model').onchange = () => configure();
onDeviceChange(() => { engine.restart(onChosenDevice(workerUrl)); configure(); });
/** The browser test's hook: switch to this model, train it for this many steps, then set demo.done. */
demo.run = (model, steps) => { $('model').value = model; configure(steps, true); };

engine.on('error', (m) => { showError(m.message); setText('status', 'Stopped by an error (above).'); });
engine.on('status', (m) => setText('status', m.text));
engine.on('fallback', (m) => { showFallback(m.message); configure(limit, startWhenReady || m.running); });
engine.on('ready', (m) => {
  ({ info } = m);
  showEngine(m);
  demo.model = info.model;
  setText('status', `${Math.round(info.parameters / 1000)}k parameters · batch ${info.batch} · Adam, lr ${info.lr}`);
  shown = info.shown;
  drawSamples(shown);
  showPredictions(info.predictions);
  showAccuracy(0, info.accuracy);
  for (const id of ['train', 'reset']) $(id).disabled = false;
  if (startWhenReady) { engine.start(); setRunning(true); }
});
engine.on('progress', (m) => {
  smoothed = smoothed === null ? m.loss : 0.9 * smoothed + 0.1 * m.loss;
  lossChart.append('batch', m.step, m.loss);
  lossChart.append('smoothed', m.step, smoothed);
  demo.losses.push(m.loss);
  demo.steps = m.step;
  rate.add(m.step);
  setText('rate', rate.perSecond.toFixed(1));
  if (m.predictions) {
    showAccuracy(m.step, m.accuracy);
    showPredictions(m.predictions);
  }
});
engine.on('stopped', () => {
  setRunning(false);
  if (demo.steps >= limit) demo.done = true;
});

configure();
