// The playground page: makes the points, draws them over the worker's heatmap, and wires the
// controls. Changing the data, noise or width rebuilds the model; the learning rate changes live.
import { Engine } from '../common/engine.mjs';
import { LineChart } from '../common/chart.mjs';
import { params, autostart, stepLimit, demo, showError, RateMeter, setText, showEngine } from '../common/page.mjs';

const POINTS = 400;
const COLORS = [[91, 156, 255], [255, 180, 84]];   // class 0, class 1 (style.css --accent, --accent-2)
const BACKGROUND = [14, 18, 23];

const $ = (id) => document.getElementById(id);
const plane = $('plane');
const chart = new LineChart($('loss'), { series: [{ name: 'loss' }], yLabel: 'cross-entropy', logY: true });
const rate = new RateMeter();
const engine = new Engine(new URL('./worker.mjs', import.meta.url));
let seed = 1, data = null, heatmap = null, extent = 1.25, running = false;
if (params.has('dataset')) $('dataset').value = params.get('dataset');
Object.assign(demo, { losses: [], accuracy: null, steps: 0 });

// ---- data: two interleaved spirals or two moons in [-1, 1]², with Gaussian noise
function rng(s) {
  return () => ((s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) | 0) >>> 0) / 4294967296;
}
function makeData(kind, noise, s) {
  const random = rng(s * 7919 + 17);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const xy = new Float32Array(2 * POINTS), labels = new Int32Array(POINTS);
  for (let i = 0; i < POINTS; ++i) {
    const k = i % 2, u = random();
    let px, py;
    if (kind === 'spiral') {
      const r = 0.08 + 0.92 * u, t = 3.2 * Math.PI * u + k * Math.PI;
      [px, py] = [r * Math.cos(t), r * Math.sin(t)];
    } else {
      const t = Math.PI * u;
      [px, py] = k === 0 ? [Math.cos(t) - 0.5, Math.sin(t) - 0.25] : [0.5 - Math.cos(t), 0.25 - Math.sin(t)];
      [px, py] = [px * 0.75, py * 0.75];
    }
    xy[2 * i] = px + 0.15 * noise * gauss();
    xy[2 * i + 1] = py + 0.15 * noise * gauss();
    labels[i] = k;
  }
  return { xy, labels };
}

// ---- drawing: the heatmap (tinted by confidence) smoothed up to the canvas, the points on top
const small = document.createElement('canvas');
function draw() {
  const g = plane.getContext('2d');
  const size = plane.width;
  g.fillStyle = `rgb(${BACKGROUND})`;
  g.fillRect(0, 0, size, size);
  if (heatmap) {
    const n = Math.round(Math.sqrt(heatmap.length));
    small.width = small.height = n;
    const image = new ImageData(n, n);
    heatmap.forEach((p, i) => {
      const c = COLORS[p > 0.5 ? 1 : 0], strength = 0.08 + 0.3 * Math.abs(2 * p - 1);
      for (let j = 0; j < 3; ++j) image.data[4 * i + j] = BACKGROUND[j] + (c[j] - BACKGROUND[j]) * strength;
      image.data[4 * i + 3] = 255;
    });
    small.getContext('2d').putImageData(image, 0, 0);
    g.imageSmoothingEnabled = true;
    g.imageSmoothingQuality = 'high';
    g.drawImage(small, 0, 0, size, size);
  }
  const toPx = (v, flip) => ((flip ? -v : v) + extent) / (2 * extent) * size;
  g.lineWidth = size / 300;
  g.strokeStyle = 'rgba(8, 10, 14, 0.9)';
  for (let i = 0; i < data.labels.length; ++i) {
    g.fillStyle = `rgb(${COLORS[data.labels[i]]})`;
    g.beginPath();
    g.arc(toPx(data.xy[2 * i]), toPx(data.xy[2 * i + 1], true), size / 130, 0, 2 * Math.PI);
    g.fill();
    g.stroke();
  }
}

// ---- controls
function setRunning(on) {
  running = on;
  $('train').textContent = on ? 'Stop' : 'Train';
}
function reset() {
  data = makeData($('dataset').value, Number($('noise').value), seed);
  heatmap = null;
  chart.clear();
  rate.reset();
  demo.losses = [];
  setRunning(false);
  for (const id of ['train', 'reset']) $(id).disabled = true;
  draw();
  engine.config({ ...data, hidden: Number($('hidden').value), lr: Number($('lr').value), seed, steps: stepLimit });
}
$('train').onclick = () => { if (running) engine.stop(); else engine.start(); setRunning(!running); };
$('reset').onclick = () => { seed += 1; reset(); };
for (const id of ['dataset', 'hidden']) $(id).onchange = reset;
$('noise').oninput = () => { $('noise-out').value = Number($('noise').value).toFixed(2); };
$('noise').onchange = reset;
$('lr').onchange = () => engine.send('lr', { lr: Number($('lr').value) });
$('noise').oninput();

engine.on('error', (m) => showError(m.message));
engine.on('ready', (m) => {
  showEngine(m);
  setText('step', '0');
  setText('loss-value', '–');
  setText('accuracy', '–');
  setText('model', `MLP 2 → ${$('hidden').value} → ${$('hidden').value} → 2 (ReLU), ${m.info.parameters} parameters, full-batch Adam on ${POINTS} points.`);
  ({ extent } = m.info);
  heatmap = m.info.heatmap;
  draw();
  for (const id of ['train', 'reset']) $(id).disabled = false;
  if (autostart) { engine.start(); setRunning(true); }
});
engine.on('progress', (m) => {
  chart.append('loss', m.step, m.loss);
  demo.losses.push(m.loss);
  demo.steps = m.step;
  rate.add(m.step);
  setText('step', m.step);
  setText('loss-value', m.loss.toFixed(4));
  setText('rate', Math.round(rate.perSecond));
  if (m.heatmap) {
    heatmap = m.heatmap;
    demo.accuracy = m.accuracy;
    setText('accuracy', `${(100 * m.accuracy).toFixed(1)}%`);
    draw();
  }
});
engine.on('stopped', () => {
  setRunning(false);
  if (demo.steps >= stepLimit) demo.done = true;
});

reset();
