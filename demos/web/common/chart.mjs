// A small line chart on a plain canvas: several series, axes with round-number ticks, an optional
// log-scale y axis (for losses), redrawn (once per animation frame) whenever points are appended.
// Colours come from the page's CSS custom properties (--chart-*), so it follows style.css.
//
//   const chart = new LineChart(canvas, { series: [{ name: 'train' }, { name: 'test' }], logY: true });
//   chart.append('train', step, loss);

const PALETTE = ['#5b9cff', '#ffb454', '#4cd08a', '#f0707b', '#b58cff'];
const PAD = { left: 54, right: 14, top: 30, bottom: 34 };

export class LineChart {
  /** options: { series: [{ name, color? }], xLabel = 'step', yLabel = '', logY = false, yMin?, yMax? } */
  constructor(canvas, { series, xLabel = 'step', yLabel = '', logY = false, yMin, yMax } = {}) {
    this.canvas = canvas;
    this.options = { xLabel, yLabel, logY, yMin, yMax };
    this.series = series.map((s, i) => ({ name: s.name, color: s.color ?? PALETTE[i % PALETTE.length], xs: [], ys: [] }));
    this.pending = false;
    new ResizeObserver(() => this.draw()).observe(canvas);
  }

  /** Adds the point (x, y) to the named series; non-finite y (and y <= 0 on a log axis) are skipped. */
  append(name, x, y) {
    const s = this.series.find((t) => t.name === name);
    if (!s) throw new Error(`LineChart: no series named '${name}'`);
    if (!Number.isFinite(y) || (this.options.logY && y <= 0)) return;
    s.xs.push(x);
    s.ys.push(y);
    this.redraw();
  }

  clear() {
    for (const s of this.series) s.xs.length = s.ys.length = 0;
    this.redraw();
  }

  /** Schedules one draw for the next frame, however many points arrive before it. */
  redraw() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => { this.pending = false; this.draw(); });
  }

  draw() {
    const { canvas, options: o } = this;
    const dpr = window.devicePixelRatio || 1;
    const width = canvas.clientWidth, height = canvas.clientHeight;
    if (width === 0 || height === 0) return;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    const g = canvas.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    const css = getComputedStyle(canvas);
    const color = (name, fallback) => css.getPropertyValue(name).trim() || fallback;
    const text = color('--chart-text', '#8b95a5'), grid = color('--chart-grid', 'rgba(128,128,128,0.18)');
    g.font = `12px ${css.fontFamily}`;

    const plot = { x: PAD.left, y: PAD.top, w: width - PAD.left - PAD.right, h: height - PAD.top - PAD.bottom };
    const xMax = Math.max(1, ...this.series.map((s) => s.xs.at(-1) ?? 0));  // x only grows
    const [dataLo, dataHi] = range(this.series.map((s) => s.ys));
    let yLo = o.yMin ?? (dataLo ?? 0), yHi = o.yMax ?? (dataHi ?? 1);
    if (o.logY) {
      if (!(yLo > 0)) yLo = 0.1;
      if (!(yHi > yLo)) yHi = yLo * 10;
    } else if (!(yHi - yLo > 1e-9 * Math.max(Math.abs(yLo), Math.abs(yHi)))) {
      // Flat (or flat to rounding: a smoothed curve's first value can be one ulp off the raw one).
      [yLo, yHi] = [yLo - 0.5, yHi + 0.5];
    }

    const yTicks = o.logY ? logTicks(yLo, yHi) : niceTicks(yLo, yHi, Math.max(2, Math.floor(plot.h / 40)));
    if (o.logY) {
      // Widen to the ticks just outside the data, so the curve never touches the frame.
      [yLo, yHi] = [o.yMin ?? Math.max(...yTicks.filter((t) => t <= yLo)), o.yMax ?? Math.min(...yTicks.filter((t) => t >= yHi))];
    } else [yLo, yHi] = [Math.min(yLo, yTicks[0]), Math.max(yHi, yTicks.at(-1))];
    // The x axis (steps: whole numbers) ends at the last point, so the curve reaches the right edge.
    const xTicks = niceTicks(0, xMax, Math.max(2, Math.floor(plot.w / 80))).filter((t) => t <= xMax && Number.isInteger(t));
    const yv = o.logY ? Math.log10 : (v) => v;
    const px = (x) => plot.x + (x / xMax) * plot.w;
    const py = (y) => plot.y + plot.h - ((yv(y) - yv(yLo)) / (yv(yHi) - yv(yLo))) * plot.h;

    // Grid and tick labels.
    g.strokeStyle = grid;
    g.fillStyle = text;
    g.lineWidth = 1;
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    for (const t of yTicks) {
      if (t < yLo || t > yHi) continue;
      const y = Math.round(py(t)) + 0.5;
      g.beginPath(); g.moveTo(plot.x, y); g.lineTo(plot.x + plot.w, y); g.stroke();
      g.fillText(format(t), plot.x - 6, y);
    }
    g.textAlign = 'center';
    g.textBaseline = 'top';
    for (const t of xTicks) {
      const x = Math.round(px(t)) + 0.5;
      g.beginPath(); g.moveTo(x, plot.y); g.lineTo(x, plot.y + plot.h); g.stroke();
      g.fillText(format(t), x, plot.y + plot.h + 5);
    }
    // Axis labels: x under the ticks, y above the axis (horizontal text reads better than rotated).
    g.textAlign = 'right';
    g.fillText(o.xLabel, plot.x + plot.w, plot.y + plot.h + 19);
    g.textAlign = 'left';
    g.textBaseline = 'alphabetic';
    g.fillText(o.yLabel + (o.logY ? ' (log)' : ''), 4, 14);

    // The series, clipped to the plot area.
    g.save();
    g.beginPath(); g.rect(plot.x, plot.y - 2, plot.w, plot.h + 4); g.clip();
    g.lineWidth = 2;
    g.lineJoin = 'round';
    for (const s of this.series) {
      g.strokeStyle = s.color;
      g.beginPath();
      // At most about two points per pixel column: long runs stay cheap to draw.
      const stride = Math.max(1, Math.floor(s.xs.length / (2 * plot.w)));
      for (let i = 0; i < s.xs.length; i += stride) g.lineTo(px(s.xs[i]), py(s.ys[i]));
      if (s.xs.length) g.lineTo(px(s.xs.at(-1)), py(s.ys.at(-1)));
      g.stroke();
      if (s.xs.length === 1) { g.fillStyle = s.color; g.fillRect(px(s.xs[0]) - 2, py(s.ys[0]) - 2, 4, 4); }
    }
    g.restore();

    // Legend, right-aligned above the plot: a swatch, the name and the latest value.
    g.textAlign = 'left';
    g.textBaseline = 'middle';
    let x = plot.x + plot.w;
    for (const s of [...this.series].reverse()) {
      const label = s.ys.length ? `${s.name} ${format(s.ys.at(-1), 3)}` : s.name;
      x -= g.measureText(label).width;
      g.fillStyle = text;
      g.fillText(label, x, 12);
      x -= 16;
      g.fillStyle = s.color;
      g.fillRect(x, 10, 11, 4);
      x -= 14;
    }
  }
}

/** [min, max] over several arrays ([undefined, undefined] when all are empty); no spread, so no
 * argument-count limit however long the run. */
function range(arrays) {
  let lo, hi;
  for (const a of arrays) for (const v of a) { if (!(v >= lo)) lo = v; if (!(v <= hi)) hi = v; }
  return [lo, hi];
}

/** About n round-number ticks covering [lo, hi] (steps of 1, 2 or 5 times a power of ten). */
export function niceTicks(lo, hi, n) {
  const raw = (hi - lo) / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  // A step too small to move t (a range of a few ulps) would never end the loop.
  if (!(step > 0) || lo + step === lo || hi + step === hi) return [lo, hi];
  const ticks = [];
  for (let t = Math.floor(lo / step) * step; t < hi + step * 0.999; t += step) ticks.push(+t.toPrecision(12));
  return ticks;
}

/** Powers of ten over [lo, hi], with 2× and 5× in between when the range spans few decades. */
export function logTicks(lo, hi) {
  const a = Math.floor(Math.log10(lo)), b = Math.ceil(Math.log10(hi));
  const mults = b - a <= 2 ? [1, 2, 3, 5] : [1];
  const ticks = [];
  for (let e = a; e <= b; ++e) for (const m of mults) ticks.push(+(m * 10 ** e).toPrecision(12));
  return ticks;
}

function format(v, digits = 4) {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e4 && Number.isInteger(v)) return v >= 1e6 ? `${+(v / 1e6).toPrecision(3)}M` : `${+(v / 1e3).toPrecision(3)}k`;
  if (a < 1e-3) return v.toExponential(1);
  return String(+v.toPrecision(digits));
}
