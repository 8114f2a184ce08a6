// protobench's report charts: canvas line, point and bar charts of the page's own data.
// No library and no request: the data are the JSON document #pb-charts (columns by name,
// charts by id, the run's marks and time range); each figure.chart[data-chart=ID]
// gets a canvas, a legend (a click hides a series) and a tooltip. Time charts share one x
// range: drag across one to zoom them all, double-click to zoom out. What each chart drew
// (its plot area, its tick labels and where they lie) is kept in window.protobenchCharts
// for the page's tests.
(() => {
  'use strict';
  const DATA = JSON.parse(document.getElementById('pb-charts').textContent);
  const COLUMNS = DATA.columns;
  const FONT = '11px system-ui, -apple-system, "Segoe UI", sans-serif';
  const HEIGHT = 230;
  const GRID = '#e6e6e6';
  const AXIS = '#555';
  const registry = {};
  window.protobenchCharts = registry;

  // ---- numbers as people read them (no exponent, no trailing zeros) ----
  const trim = (v, digits) => {
    if (v === 0 || !Number.isFinite(v)) return v === 0 ? '0' : '';
    const decimals = Math.max(0, Math.min(6, digits - 1 - Math.floor(Math.log10(Math.abs(v)))));
    let s = v.toFixed(decimals);
    if (s.includes('.')) s = s.replace(/0+$/, '').replace(/\.$/, '');
    return s === '-0' ? '0' : s;
  };
  const grouped = (v) => Math.round(v).toLocaleString('en-US');
  // Tick labels carry 4 significant digits (a tick is a round number: 12.25 ms, not 12.3),
  // values in a tooltip 3.
  const si = (v, digits = 3) => {
    const a = Math.abs(v);
    if (a >= 1e9) return trim(v / 1e9, digits) + 'G';
    if (a >= 1e6) return trim(v / 1e6, digits) + 'M';
    if (a >= 1e3) return trim(v / 1e3, digits) + 'k';
    return trim(v, digits);
  };
  const latency = (v, digits = 3) => {
    const a = Math.abs(v);
    if (a === 0) return '0';
    if (a < 1e3) return trim(v, digits) + ' µs';
    if (a < 1e6) return trim(v / 1e3, digits) + ' ms';
    return trim(v / 1e6, digits) + ' s';
  };
  const bytes = (v, digits) => {
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
    return trim(v, digits) + ' ' + units[i];
  };
  const clock = (s) => {
    const total = Math.round(s);
    const m = Math.floor(total / 60);
    const r = total - m * 60;
    return m + ':' + String(r).padStart(2, '0');
  };
  const percentile = (x) => trim(100 * (1 - 1 / x), 6) + '%';
  // Per unit: a tick label, a value in a tooltip.
  const UNITS = {
    us: { tick: (v) => latency(v, 4), value: (v) => latency(v) },
    rate: { tick: (v) => si(v, 4), value: (v) => (Math.abs(v) < 100 ? trim(v, 3) : grouped(v)) + '/s' },
    count: { tick: (v) => si(v, 4), value: (v) => (Math.abs(v) < 100 ? trim(v, 3) : grouped(v)) },
    pct: { tick: (v) => trim(v, 4) + '%', value: (v) => trim(v, 3) + '%' },
    bytes: { tick: (v) => bytes(v, 4), value: (v) => bytes(v, 4) },
    s: { tick: (v) => trim(v, 4) + ' s', value: (v) => trim(v, 4) + ' s' },
    clock: { tick: clock, value: (v) => clock(v) + ' (' + trim(v, 5) + ' s)' },
    percentile: { tick: percentile, value: percentile },
  };

  // ---- ticks ----
  const STEPS = [1, 2, 2.5, 5, 10];
  const niceStep = (span, count) => {
    const raw = span / Math.max(1, count);
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of STEPS) if (m * mag >= raw * (1 - 1e-9)) return m * mag;
    return 10 * mag;
  };
  const CLOCK_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600];
  const clean = (v) => Number(v.toPrecision(12));
  const linearTicks = (lo, hi, count, unit) => {
    const k = binary(unit, lo, hi);
    let step = niceStep((hi - lo) / k, count) * k;
    if (unit === 'clock') step = CLOCK_STEPS.find((s) => s >= (hi - lo) / count) || step;
    const ticks = [];
    for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) {
      ticks.push(clean(v));
    }
    return ticks;
  };
  const logTicks = (lo, hi, room) => {
    const d0 = Math.floor(Math.log10(lo) + 1e-9);
    const d1 = Math.ceil(Math.log10(hi) - 1e-9);
    const sets = [[1, 2, 3, 5], [1, 2, 5], [1, 3], [1]];
    for (const mantissas of sets) {
      const ticks = [];
      for (let d = d0; d <= d1; d += 1) {
        for (const m of mantissas) {
          const v = clean(m * Math.pow(10, d));
          if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) ticks.push(v);
        }
      }
      if (ticks.length <= room) return ticks;
    }
    let every = 2;
    for (;;) {
      const ticks = [];
      for (let d = d0; d <= d1; d += 1) if ((d - d0) % every === 0) ticks.push(clean(Math.pow(10, d)));
      if (ticks.length <= room || every > 12) return ticks;
      every += 1;
    }
  };

  // ---- domains ----
  const values = (name) => COLUMNS[name] || [];
  const finite = (v, log) => v !== null && v !== undefined && Number.isFinite(v) && (!log || v > 0);

  // Snap a linear domain to the ticks around it; a log domain to the 1-2-5 values around it.
  // Bytes step in the binary unit their labels are in (0.25 MiB, not 262,144 B): its size.
  const binary = (unit, lo, hi) => {
    if (unit !== 'bytes') return 1;
    let k = 1;
    while (Math.max(Math.abs(lo), Math.abs(hi)) >= k * 1024) k *= 1024;
    return k;
  };
  const niceLinear = (lo, hi, zero, count, unit) => {
    if (zero) lo = Math.min(lo, 0);
    if (hi - lo <= Math.abs(hi) * 1e-9) {
      const pad = Math.abs(hi) * 0.1 || 1;
      hi += pad;
      if (!zero || lo > 0) lo -= pad;
    }
    hi += (hi - lo) * 0.04; // a line at the top is not drawn on the frame
    if (!zero) lo -= (hi - lo) * 0.04;
    const k = binary(unit, lo, hi);
    const step = niceStep((hi - lo) / k, count) * k;
    return [Math.floor(lo / step + 1e-9) * step, Math.ceil(hi / step - 1e-9) * step];
  };
  const LOG_STOPS = [1, 2, 5, 10];
  const niceLog = (lo, hi) => {
    if (hi <= lo) { lo /= 2; hi *= 2; }
    lo /= 1.04; // nor at the bottom
    hi *= 1.04;
    const below = (v) => {
      const d = Math.pow(10, Math.floor(Math.log10(v) + 1e-9));
      let out = d;
      for (const m of LOG_STOPS) if (m * d <= v * (1 + 1e-9)) out = m * d;
      return out;
    };
    const above = (v) => {
      const d = Math.pow(10, Math.floor(Math.log10(v) + 1e-9));
      for (const m of LOG_STOPS) if (m * d >= v * (1 - 1e-9)) return m * d;
      return 10 * d;
    };
    return [clean(below(lo)), clean(above(hi))];
  };

  // ---- shared x ranges ----
  const ranges = {};
  const rangeOf = (chart) => {
    const key = chart.spec.time ? 'time' : chart.id;
    if (!ranges[key]) {
      let full;
      if (chart.spec.time) {
        full = DATA.time;
      } else {
        let lo = Infinity;
        let hi = -Infinity;
        for (const s of chart.spec.series) {
          for (const v of values(s.x)) if (finite(v, chart.spec.x.log)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
        }
        full = Number.isFinite(lo) ? [lo, hi > lo ? hi : lo * 10] : [1, 10];
      }
      ranges[key] = { full, view: null, charts: [] };
    }
    return ranges[key];
  };

  // ---- one chart ----
  class Chart {
    constructor(figure, spec) {
      this.id = figure.dataset.chart;
      this.spec = spec;
      this.figure = figure;
      this.hidden = new Set();
      this.plotBox = figure.querySelector('.plot');
      this.canvas = document.createElement('canvas');
      this.canvas.setAttribute('role', 'img');
      this.canvas.setAttribute('aria-label', spec.title);
      this.tip = document.createElement('div');
      this.tip.className = 'tip';
      this.plotBox.append(this.canvas, this.tip);
      this.range = rangeOf(this);
      this.range.charts.push(this);
      this.buildLegend(figure.querySelector('.legend'));
      this.listen();
    }

    buildLegend(holder) {
      this.spec.series.forEach((s, index) => {
        const key = document.createElement('button');
        key.type = 'button';
        key.className = 'key';
        const swatch = document.createElement('i');
        swatch.style.borderColor = s.color;
        if (s.kind === 'bar') swatch.style.background = s.color;
        if (s.dash) swatch.classList.add('dash');
        key.append(swatch, document.createTextNode(s.label));
        key.title = 'show or hide ' + s.label;
        key.addEventListener('click', () => {
          if (this.hidden.has(index)) this.hidden.delete(index); else this.hidden.add(index);
          key.classList.toggle('off', this.hidden.has(index));
          this.draw();
        });
        holder.append(key);
      });
    }

    visible() {
      return this.spec.series.map((s, i) => [s, i]).filter(([, i]) => !this.hidden.has(i));
    }

    xView() {
      return this.range.view || this.range.full;
    }

    // The y domain of the visible series over the visible x range (stacked bars summed).
    yDomain(axis) {
      const spec = axis === 2 ? this.spec.y2 : this.spec.y;
      const [x0, x1] = this.xView();
      let lo = Infinity;
      let hi = -Infinity;
      const series = this.visible().filter(([s]) => (s.axis || 1) === axis);
      if (this.spec.stacked) {
        const sums = [];
        for (const [s] of series) {
          const xs = values(s.x);
          values(s.y).forEach((v, i) => {
            if (xs[i] >= x0 && (s.x0 ? values(s.x0)[i] : xs[i]) <= x1 && finite(v)) sums[i] = (sums[i] || 0) + v;
          });
        }
        for (const v of sums) if (v !== undefined) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
      } else {
        for (const [s] of series) {
          const xs = values(s.x);
          const ys = values(s.y);
          for (let i = 0; i < ys.length; i += 1) {
            if (xs[i] >= x0 && xs[i] <= x1 && finite(ys[i], spec.log)) { lo = Math.min(lo, ys[i]); hi = Math.max(hi, ys[i]); }
          }
        }
      }
      if (!Number.isFinite(lo)) { lo = spec.log ? 1 : 0; hi = spec.log ? 10 : 1; }
      return spec.log ? niceLog(lo, hi) : niceLinear(lo, hi, spec.zero !== false, 5, spec.unit);
    }

    size() {
      const width = Math.max(200, Math.floor(this.plotBox.clientWidth || 600));
      const height = this.spec.height || HEIGHT;
      const dpr = window.devicePixelRatio || 1;
      this.canvas.width = Math.round(width * dpr);
      this.canvas.height = Math.round(height * dpr);
      this.canvas.style.width = width + 'px';
      this.canvas.style.height = height + 'px';
      const ctx = this.canvas.getContext('2d');
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      return [ctx, width, height];
    }

    axisTicks(ctx, axisSpec, domain, pixels, vertical) {
      const room = Math.max(2, Math.floor(pixels / (vertical ? 28 : 70)));
      const unit = UNITS[axisSpec.unit] || UNITS.count;
      const raw = axisSpec.log ? logTicks(domain[0], domain[1], room + 1) : linearTicks(domain[0], domain[1], room, axisSpec.unit);
      return raw.map((v) => ({ v, label: unit.tick(v), width: ctx.measureText(unit.tick(v)).width }));
    }

    draw(hover) {
      const [ctx, width, height] = this.size();
      const spec = this.spec;
      ctx.font = FONT;
      const xd = this.xView();
      const yd = this.yDomain(1);
      const y2d = spec.y2 ? this.yDomain(2) : null;
      const plotHeight = height - 14 - 38;
      const yTicks = this.axisTicks(ctx, spec.y, yd, plotHeight, true);
      const y2Ticks = y2d ? this.axisTicks(ctx, spec.y2, y2d, plotHeight, true) : [];
      const left = 8 + 16 + Math.max(20, ...yTicks.map((t) => t.width)) + 6;
      const right = y2d ? 8 + 16 + Math.max(20, ...y2Ticks.map((t) => t.width)) + 6 : 16;
      const plot = { left, top: 14, width: Math.max(40, width - left - right), height: plotHeight };
      const xTicks = this.axisTicks(ctx, spec.x, xd, plot.width, false);
      const scale = (domain, log, from, size, flip) => {
        const [a, b] = log ? [Math.log10(domain[0]), Math.log10(domain[1])] : domain;
        return (v) => {
          const t = ((log ? Math.log10(v) : v) - a) / (b - a || 1);
          return flip ? from + size - t * size : from + t * size;
        };
      };
      const sx = scale(xd, spec.x.log, plot.left, plot.width, false);
      const sy = scale(yd, spec.y.log, plot.top, plot.height, true);
      const sy2 = y2d ? scale(y2d, spec.y2.log, plot.top, plot.height, true) : null;
      this.geometry = { plot, sx, xd, x: spec.x };

      ctx.clearRect(0, 0, width, height);
      ctx.fillStyle = '#fff';
      ctx.fillRect(0, 0, width, height);
      // grid
      ctx.strokeStyle = GRID;
      ctx.lineWidth = 1;
      ctx.beginPath();
      for (const t of yTicks) { const y = Math.round(sy(t.v)) + 0.5; ctx.moveTo(plot.left, y); ctx.lineTo(plot.left + plot.width, y); }
      for (const t of xTicks) { const x = Math.round(sx(t.v)) + 0.5; ctx.moveTo(x, plot.top); ctx.lineTo(x, plot.top + plot.height); }
      ctx.stroke();

      ctx.strokeStyle = '#bbb';
      ctx.strokeRect(plot.left + 0.5, plot.top + 0.5, plot.width - 1, plot.height - 1);
      ctx.save();
      ctx.beginPath();
      ctx.rect(plot.left, plot.top - 3, plot.width, plot.height + 6); // a line at 0 shows whole
      ctx.clip();
      this.markLabels = [];
      if (spec.time) this.drawMarks(ctx, plot, sx, 'bands');
      const drawn = this.drawSeries(ctx, sx, sy, sy2);
      if (spec.time) this.drawMarks(ctx, plot, sx, 'lines');
      if (hover) this.drawHover(ctx, plot, hover);
      ctx.restore();

      // axes
      ctx.fillStyle = AXIS;
      const shown = { x: [], y: [], y2: [] };
      ctx.textBaseline = 'middle';
      ctx.textAlign = 'right';
      let last = Infinity;
      for (const t of yTicks) {
        const y = sy(t.v);
        if (last - y < 13) continue;
        ctx.fillText(t.label, plot.left - 5, y);
        shown.y.push({ label: t.label, top: y - 6, bottom: y + 6, left: plot.left - 5 - t.width, right: plot.left - 5 });
        last = y;
      }
      if (y2d) {
        ctx.textAlign = 'left';
        last = Infinity;
        for (const t of y2Ticks) {
          const y = sy2(t.v);
          if (last - y < 13) continue;
          const x = plot.left + plot.width + 5;
          ctx.fillText(t.label, x, y);
          shown.y2.push({ label: t.label, top: y - 6, bottom: y + 6, left: x, right: x + t.width });
          last = y;
        }
      }
      ctx.textAlign = 'center';
      ctx.textBaseline = 'top';
      let end = -Infinity;
      for (const t of xTicks) {
        const x = sx(t.v);
        let from = x - t.width / 2;
        const to = Math.min(width - 2, from + t.width);
        from = to - t.width;
        if (from < end + 8 || from < 0) continue;
        ctx.fillText(t.label, from + t.width / 2, plot.top + plot.height + 6);
        shown.x.push({ label: t.label, left: from, right: to });
        end = to;
      }
      // axis titles
      ctx.fillStyle = '#333';
      ctx.textBaseline = 'bottom';
      ctx.fillText(spec.x.label, plot.left + plot.width / 2, height - 2);
      const vertical = (text, x) => {
        ctx.save();
        ctx.translate(x, plot.top + plot.height / 2);
        ctx.rotate(-Math.PI / 2);
        ctx.textAlign = 'center';
        ctx.textBaseline = 'top';
        ctx.fillText(text, 0, 0);
        ctx.restore();
      };
      vertical(spec.y.label, 4);
      if (spec.y2) {
        ctx.save();
        ctx.translate(width - 4, plot.top + plot.height / 2);
        ctx.rotate(Math.PI / 2);
        ctx.textAlign = 'center';
        ctx.textBaseline = 'top';
        ctx.fillText(spec.y2.label, 0, 0);
        ctx.restore();
      }
      registry[this.id] = {
        plot,
        ticks: shown,
        marks: this.markLabels,
        points: drawn,
        dots: this.dots,
        series: this.spec.series.map((s) => s.label),
        visible: this.visible().map(([s]) => s.label),
        x: xd,
      };
    }

    drawMarks(ctx, plot, sx, layer) {
      ctx.font = FONT;
      ctx.textBaseline = 'top';
      for (const mark of DATA.marks) {
        const a = sx(mark.start);
        if (mark.end !== null && layer === 'bands') {
          if (mark.kind === 'phase' && mark.label === 'sustain') continue;
          const b = sx(mark.end);
          const from = Math.max(plot.left, a);
          const to = Math.min(plot.left + plot.width, b);
          if (to <= from) continue;
          ctx.fillStyle = mark.kind === 'pause' ? 'rgba(230,159,0,0.16)' : 'rgba(0,0,0,0.05)';
          ctx.fillRect(from, plot.top, to - from, plot.height);
          const w = ctx.measureText(mark.label).width;
          let x = from + 4;
          if (x + w > plot.left + plot.width - 4) x = plot.left + plot.width - 4 - w;
          ctx.fillStyle = 'rgba(255,255,255,0.8)';
          ctx.fillRect(x - 2, plot.top + 2, w + 4, 13);
          ctx.fillStyle = mark.kind === 'pause' ? '#8a5a00' : '#666';
          ctx.fillText(mark.label, x, plot.top + 3);
          this.markLabels.push({ label: mark.label, left: x, right: x + w, top: plot.top + 3, bottom: plot.top + 15 });
        } else if (mark.end === null && layer === 'lines') {
          if (a < plot.left || a > plot.left + plot.width) continue;
          const x = Math.round(a) + 0.5;
          ctx.strokeStyle = mark.kind === 'rate' ? '#0072B2' : '#D55E00';
          ctx.setLineDash([4, 3]);
          ctx.beginPath();
          ctx.moveTo(x, plot.top);
          ctx.lineTo(x, plot.top + plot.height);
          ctx.stroke();
          ctx.setLineDash([]);
          // the label reads up along the line, on its left; on its right near the left edge
          const left = x - 16 >= plot.left;
          ctx.save();
          ctx.translate(left ? x - 3 : x + 3, plot.top + 18); // under the phase labels
          ctx.rotate(-Math.PI / 2);
          ctx.textAlign = 'right';
          ctx.textBaseline = left ? 'bottom' : 'top';
          const color = ctx.strokeStyle;
          const room = plot.height - 22;
          let label = mark.label;
          while (label.length > 3 && ctx.measureText(label).width > room) label = label.slice(0, -2) + '…';
          const length = ctx.measureText(label).width;
          ctx.fillStyle = 'rgba(255,255,255,0.8)';
          ctx.fillRect(-length - 2, left ? -13 : 0, length + 4, 13);
          ctx.fillStyle = color;
          ctx.fillText(label, 0, 0);
          ctx.restore();
          const from = left ? x - 15 : x + 3;
          this.markLabels.push({ label, left: from, right: from + 12, top: plot.top + 18, bottom: plot.top + 18 + length });
        }
      }
    }

    // Draw the visible series; return how many of their points lie in the x range shown.
    drawSeries(ctx, sx, sy, sy2) {
      let drawn = 0;
      this.dots = 0;
      const [lo, hi] = this.xView();
      const shown = (x) => x >= lo && x <= hi;
      const stackBase = [];
      for (const [s] of this.visible()) {
        const xs = values(s.x);
        const ys = values(s.y);
        const y = (s.axis || 1) === 2 ? sy2 : sy;
        const log = ((s.axis || 1) === 2 ? this.spec.y2 : this.spec.y).log;
        ctx.strokeStyle = s.color;
        ctx.fillStyle = s.color;
        ctx.lineWidth = s.width || 1.5;
        ctx.setLineDash(s.dash ? [5, 3] : []);
        if (s.kind === 'bar') {
          const starts = values(s.x0);
          for (let i = 0; i < ys.length; i += 1) {
            if (!finite(ys[i]) || ys[i] === 0) continue;
            const base = stackBase[i] || 0;
            const top = base + ys[i];
            const a = sx(starts[i]);
            const b = sx(xs[i]);
            const w = Math.max(1, b - a - (b - a > 3 ? 1 : 0));
            ctx.fillRect(a, y(top), w, Math.max(1, y(base) - y(top)));
            stackBase[i] = top;
            if (shown(xs[i])) drawn += 1;
          }
          continue;
        }
        const ok = (i) => i >= 0 && i < ys.length && finite(ys[i], log) && finite(xs[i], this.spec.x.log);
        if (s.kind !== 'points') {
          ctx.beginPath();
          let open = false;
          for (let i = 0; i < ys.length; i += 1) {
            if (!ok(i)) { open = false; continue; }
            const px = sx(xs[i]);
            const py = y(ys[i]);
            if (open) ctx.lineTo(px, py); else ctx.moveTo(px, py);
            open = true;
            if (shown(xs[i])) drawn += 1;
          }
          ctx.stroke();
        }
        ctx.setLineDash([]);
        // a point with no neighbour draws no line: show it as a dot (sparse operations)
        for (let i = 0; i < ys.length; i += 1) {
          if (!ok(i) || (s.kind !== 'points' && (ok(i - 1) || ok(i + 1)))) continue;
          ctx.beginPath();
          ctx.arc(sx(xs[i]), y(ys[i]), 4, 0, 2 * Math.PI);
          ctx.fill();
          if (shown(xs[i])) this.dots += 1;
          if (s.kind === 'points' && shown(xs[i])) drawn += 1;
        }
      }
      return drawn;
    }

    // The value of each visible series nearest to the pointer's x.
    nearest(xv) {
      const rows = [];
      let at = null;
      for (const [s] of this.visible()) {
        const xs = values(s.x);
        if (!xs.length) continue;
        let lo = 0;
        let hi = xs.length - 1;
        while (hi - lo > 1) { const mid = (lo + hi) >> 1; if (xs[mid] < xv) lo = mid; else hi = mid; }
        const i = Math.abs(xs[lo] - xv) <= Math.abs(xs[hi] - xv) ? lo : hi;
        const unit = UNITS[((s.axis || 1) === 2 ? this.spec.y2 : this.spec.y).unit] || UNITS.count;
        const v = values(s.y)[i];
        rows.push([s, finite(v) ? unit.value(v) : '–']);
        if (at === null) at = xs[i];
      }
      return { at, rows };
    }

    drawHover(ctx, plot, hover) {
      if (hover.select) {
        const [a, b] = [Math.min(hover.select[0], hover.select[1]), Math.max(hover.select[0], hover.select[1])];
        ctx.fillStyle = 'rgba(0,114,178,0.12)';
        ctx.fillRect(a, plot.top, b - a, plot.height);
        return;
      }
      if (hover.x === undefined) return;
      ctx.strokeStyle = 'rgba(0,0,0,0.35)';
      ctx.lineWidth = 1;
      ctx.beginPath();
      ctx.moveTo(Math.round(hover.x) + 0.5, plot.top);
      ctx.lineTo(Math.round(hover.x) + 0.5, plot.top + plot.height);
      ctx.stroke();
    }

    invert(px) {
      const { plot, xd, x } = this.geometry;
      const t = (px - plot.left) / plot.width;
      if (x.log) return Math.pow(10, Math.log10(xd[0]) + t * (Math.log10(xd[1]) - Math.log10(xd[0])));
      return xd[0] + t * (xd[1] - xd[0]);
    }

    showTip(px, py) {
      const { plot } = this.geometry;
      const found = this.nearest(this.invert(px));
      if (found.at === null) { this.hideTip(); return; }
      const unit = UNITS[this.spec.x.unit] || UNITS.count;
      this.tip.textContent = '';
      const head = document.createElement('b');
      head.textContent = unit.value(found.at);
      this.tip.append(head);
      for (const [s, text] of found.rows) {
        const row = document.createElement('div');
        const swatch = document.createElement('i');
        swatch.style.background = s.color;
        row.append(swatch, document.createTextNode(s.label + ': ' + text));
        this.tip.append(row);
      }
      this.tip.style.display = 'block';
      const boxWidth = this.tip.offsetWidth;
      const x = px + 14 + boxWidth > plot.left + plot.width ? px - 14 - boxWidth : px + 14;
      this.tip.style.left = Math.max(0, x) + 'px';
      this.tip.style.top = Math.max(0, Math.min(py, plot.top + plot.height - this.tip.offsetHeight)) + 'px';
      this.draw({ x: this.geometry.sx(found.at) });
    }

    hideTip() {
      this.tip.style.display = 'none';
    }

    listen() {
      const point = (event) => {
        const box = this.canvas.getBoundingClientRect();
        return [event.clientX - box.left, event.clientY - box.top];
      };
      const inside = (px, py) => {
        const p = this.geometry && this.geometry.plot;
        return p && px >= p.left && px <= p.left + p.width && py >= p.top && py <= p.top + p.height;
      };
      let dragging = null;
      this.canvas.addEventListener('mousedown', (event) => {
        const [px, py] = point(event);
        if (inside(px, py)) { dragging = px; event.preventDefault(); }
      });
      this.canvas.addEventListener('mousemove', (event) => {
        const [px, py] = point(event);
        if (dragging !== null) {
          this.hideTip();
          this.draw({ select: [dragging, Math.max(this.geometry.plot.left, Math.min(px, this.geometry.plot.left + this.geometry.plot.width))] });
        } else if (inside(px, py)) {
          this.showTip(px, py);
        } else {
          this.hideTip();
          this.draw();
        }
      });
      const finish = (event) => {
        if (dragging === null) return;
        const [px] = point(event);
        const a = Math.min(dragging, px);
        const b = Math.max(dragging, px);
        dragging = null;
        if (b - a > 5) {
          this.range.view = [this.invert(a), this.invert(b)];
          redraw(this.range.charts);
        } else {
          this.draw();
        }
      };
      this.canvas.addEventListener('mouseup', finish);
      this.canvas.addEventListener('mouseleave', (event) => {
        if (dragging !== null) finish(event);
        this.hideTip();
        this.draw();
      });
      this.canvas.addEventListener('dblclick', () => {
        this.range.view = null;
        redraw(this.range.charts);
      });
    }
  }

  const redraw = (list) => {
    for (const chart of list) {
      try { chart.draw(); } catch (error) { console.error('chart ' + chart.id + ': ' + error); }
    }
  };

  const charts = [];
  for (const figure of document.querySelectorAll('figure.chart[data-chart]')) {
    const spec = DATA.charts[figure.dataset.chart];
    if (spec) charts.push(new Chart(figure, spec));
  }
  redraw(charts);
  let pending = null;
  window.addEventListener('resize', () => {
    clearTimeout(pending);
    pending = setTimeout(() => redraw(charts), 150);
  });
})();
