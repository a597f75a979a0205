// The RoPE explorer's style and script (train/extend/rope_explorer.h).
//
// The script reads the JSON rotor embeds (#explorer-data: per model, the
// slider stops and per method the curves rotor computed at each of them;
// rope_explorer.h) and draws one section per model with inline SVG. It has
// no frequency math: a slider snaps to the stops, and moving it looks the
// curves of that stop up and draws them. It writes any error, the stop it
// drew, the sliders, every curve, and each chart's y-tick count and the box
// of every text it drew into #explorer-state as JSON, which the browser
// test reads. The URL hash (#factor=8&length=2048) sets the sliders to the
// nearest stops, so a test can move them without a mouse.
#include "train/extend/rope_explorer_page.h"

namespace rotor::train {

const char kRopeExplorerStyle[] = R"CSS(
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 64em;
       color: #222; line-height: 1.45; }
table { border-collapse: collapse; margin: 0.6em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
code { background: #f3f3f3; padding: 0 0.2em; }
.rx-model { border-top: 2px solid #888; margin-top: 2em; }
.rx-controls { display: flex; gap: 2em; flex-wrap: wrap; margin: 0.8em 0;
               align-items: center; }
.rx-controls input { width: 16em; vertical-align: middle; }
.rx-chart { width: 100%; max-width: 60em; height: auto; display: block; }
.rx-chart text { font-size: 12px; fill: #333; }
.rx-note { color: #555; font-size: 0.92em; }
.rx-temperature td:last-child { text-align: left; }
)CSS";

const char kRopeExplorerScript[] = R"JS(
(function () {
  'use strict';
  var stateEl = document.getElementById('explorer-state');
  var state = { ready: false, errors: [], models: [] };
  function publish() { stateEl.textContent = JSON.stringify(state); }
  window.addEventListener('error', function (e) {
    state.errors.push(String(e.message)); publish();
  });
  var consoleError = console.error;
  console.error = function () {
    state.errors.push(Array.prototype.join.call(arguments, ' ')); publish();
    consoleError.apply(console, arguments);
  };

  var METHODS = ['default', 'linear', 'ntk', 'dynamic', 'yarn', 'llama3',
                 'longrope'];
  var COLORS = { default: '#777777', linear: '#d62728', ntk: '#2ca02c',
                 dynamic: '#9467bd', yarn: '#1f77b4', llama3: '#ff7f0e',
                 longrope: '#8c564b' };
  var SVGNS = 'http://www.w3.org/2000/svg';

  // ---- SVG line charts ----
  function el(name, attrs, parent) {
    var node = document.createElementNS(SVGNS, name);
    for (var k in attrs) node.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(node);
    return node;
  }
  function fmt(v) {
    if (v === 0) return '0';
    if (v >= 1e5 || v < 1e-2) return v.toExponential(1).replace('e+', 'e');
    return String(Math.round(v * 100) / 100);
  }
  // Ticks of an axis from lo to hi (lo < hi, in data units): on a log axis
  // the powers of ten, else 1-2-5 or 1-9 times them, else (a range within
  // one decade) evenly spaced round numbers; the first of these with at
  // least 4 ticks in range, so no chart is left with one or none.
  function roundTicks(lo, hi) {
    var steps = [], p = Math.pow(10, Math.floor(Math.log10(hi - lo)) + 1);
    for (var k = 0; k < 4; ++k, p /= 10) steps.push(p, p / 2, p / 5);
    for (var i = 0; i < steps.length; ++i) {
      var out = [], st = steps[i];
      for (var v = Math.ceil(lo / st - 1e-9) * st; v <= hi + st * 1e-9; v += st) {
        out.push(Number(v.toPrecision(12)));
      }
      if (out.length >= 4) return out;
    }
    return [lo, hi];
  }
  function logTicks(lo, hi) {
    var mantissas = [[1], [1, 2, 5], [1, 2, 3, 4, 5, 6, 7, 8, 9]];
    for (var m = 0; m < mantissas.length; ++m) {
      var out = [];
      for (var e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); ++e) {
        mantissas[m].forEach(function (d) {
          var v = Number((d * Math.pow(10, e)).toPrecision(12));
          if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push(v);
        });
      }
      if (out.length >= 4) {
        // Many decades: every second or third power, up to 10 labels.
        var every = Math.ceil(out.length / 10);
        return out.filter(function (v, n) { return n % every === 0; });
      }
    }
    return roundTicks(lo, hi);
  }
  // The width of `text` as the chart draws it.
  function textWidth(svg, text) {
    var t = el('text', { x: 0, y: 0 }, svg);
    t.textContent = text;
    var w = t.getBBox().width;
    svg.removeChild(t);
    return w || 7 * text.length;  // not laid out: an estimate
  }
  // spec: {title, xLabel, yLabel, logX, logY, series: [{name, method,
  // variant, points: [[x, y]], dash}], hlines: [{y, label}], yMin, yMax,
  // markers}. The right margin holds the reference lines' labels, then the
  // legend, each as wide as its longest text, so no label is cut or drawn
  // over another. Returns each text's box (for #explorer-state) and the
  // number of y ticks.
  function drawChart(svg, spec) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var W = 760, H = 330, L = 70, T = 28, B = 44;
    var hlines = spec.hlines || [];
    var hlineW = 0, legendW = 0;
    hlines.forEach(function (h) { hlineW = Math.max(hlineW, textWidth(svg, h.label)); });
    spec.series.forEach(function (s) { legendW = Math.max(legendW, textWidth(svg, s.name)); });
    var R = 8 + (hlineW ? hlineW + 14 : 0) + 24 + legendW + 6;
    var legendX = W - R + 8 + (hlineW ? hlineW + 14 : 0);
    H = Math.max(H, T + 14 + 15 * spec.series.length + B);
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    var texts = [];  // every text or legend entry, for layout()
    function text(role, attrs, content) {
      var t = el('text', attrs, svg);
      t.textContent = content;
      t.setAttribute('data-role', role);
      texts.push(t);
      return t;
    }
    function layout(yTicks) {
      var box = svg.getBoundingClientRect();
      return { chart: svg.getAttribute('data-chart'), y_ticks: yTicks,
               width: box.width, height: box.height,
               texts: texts.map(function (t) {
                 var b = t.getBoundingClientRect();
                 return { role: t.getAttribute('data-role'), text: t.textContent,
                          x: b.left - box.left, y: b.top - box.top,
                          w: b.width, h: b.height };
               }) };
    }
    var xs = [], ys = [];
    if (!spec.series.length) {
      text('title', { x: L, y: 16, 'font-weight': 'bold' },
           spec.title + ': nothing measured');
      return layout(0);
    }
    spec.series.forEach(function (s) {
      s.points.forEach(function (p) { xs.push(p[0]); ys.push(p[1]); });
    });
    hlines.forEach(function (h) { ys.push(h.y); });
    if (spec.yMin !== undefined) ys.push(spec.yMin);
    if (spec.yMax !== undefined) ys.push(spec.yMax);
    var tx = spec.logX ? Math.log10 : function (v) { return v; };
    var ty = spec.logY ? Math.log10 : function (v) { return v; };
    var x0 = tx(Math.min.apply(null, xs)), x1 = tx(Math.max.apply(null, xs));
    var y0 = ty(Math.min.apply(null, ys)), y1 = ty(Math.max.apply(null, ys));
    // One x (a single measured length): a little room on either side.
    if (x1 === x0) { var pad = spec.logX ? 0.15 : 0.5; x0 -= pad; x1 += pad; }
    if (y1 - y0 < 1e-9) { y0 -= spec.logY ? 0.15 : 0.5; y1 += spec.logY ? 0.15 : 0.5; }
    function X(v) { return L + (tx(v) - x0) / (x1 - x0) * (W - L - R); }
    function Y(v) { return H - B - (ty(v) - y0) / (y1 - y0) * (H - T - B); }
    function untx(v) { return spec.logX ? Math.pow(10, v) : v; }
    function unty(v) { return spec.logY ? Math.pow(10, v) : v; }
    text('title', { x: L, y: 16, 'font-weight': 'bold' }, spec.title);
    el('rect', { x: L, y: T, width: W - L - R, height: H - T - B, fill: 'none',
                 stroke: '#999' }, svg);
    var ticks = spec.logY ? logTicks(unty(y0), unty(y1)) : roundTicks(unty(y0), unty(y1));
    ticks.forEach(function (v) {
      el('line', { x1: L, x2: W - R, y1: Y(v), y2: Y(v), stroke: '#eee' }, svg);
      text('y-tick', { x: L - 6, y: Y(v) + 4, 'text-anchor': 'end' }, fmt(v));
    });
    var xt = [];
    if (spec.logX) {
      var lo2 = Math.ceil(x0 / Math.log10(2) - 1e-9), hi2 = Math.floor(x1 / Math.log10(2) + 1e-9);
      for (var p = lo2; p <= hi2; ++p) xt.push(Math.pow(2, p));
    } else {
      var step = Math.max(1, Math.ceil((x1 - x0) / 8));
      for (var q = Math.ceil(x0); q <= x1; q += step) xt.push(q);
    }
    // Low enough that the lowest y tick's label does not touch the first.
    xt.forEach(function (v) {
      text('x-tick', { x: X(v), y: H - B + 18, 'text-anchor': 'middle' }, fmt(v));
    });
    text('x-label', { x: (L + W - R) / 2, y: H - 6, 'text-anchor': 'middle' }, spec.xLabel);
    text('y-label', { x: 14, y: (T + H - B) / 2, 'text-anchor': 'middle',
                      transform: 'rotate(-90 14 ' + (T + H - B) / 2 + ')' }, spec.yLabel);
    // Reference lines, their labels top to bottom at least a line apart.
    var labelY = -Infinity;
    hlines.slice().sort(function (a, b) { return Y(a.y) - Y(b.y); }).forEach(function (h) {
      el('line', { x1: L, x2: W - R, y1: Y(h.y), y2: Y(h.y), stroke: '#444',
                   'stroke-dasharray': '2 3', 'data-hline': h.label }, svg);
      labelY = Math.max(Y(h.y) + 4, labelY + 15);
      text('hline', { x: W - R + 4, y: labelY }, h.label);
    });
    spec.series.forEach(function (s, n) {
      var pts = s.points.map(function (p) {
        return X(p[0]).toFixed(2) + ',' + Y(p[1]).toFixed(2);
      }).join(' ');
      el('polyline', { points: pts, fill: 'none', stroke: COLORS[s.method],
                       'stroke-width': 2, 'stroke-dasharray': s.dash || 'none',
                       'data-method': s.method, 'data-variant': s.variant || '',
                       'data-points': s.points.length }, svg);
      if (spec.markers) {
        s.points.forEach(function (p) {
          el('circle', { cx: X(p[0]), cy: Y(p[1]), r: 3, fill: COLORS[s.method] }, svg);
        });
      }
      // A legend entry: its line and its name, one box.
      var ly = T + 14 + 15 * n, entry = el('g', { 'data-role': 'legend' }, svg);
      el('line', { x1: legendX, x2: legendX + 20, y1: ly - 4, y2: ly - 4,
                   stroke: COLORS[s.method], 'stroke-width': 2,
                   'stroke-dasharray': s.dash || 'none' }, entry);
      el('text', { x: legendX + 24, y: ly }, entry).textContent = s.name;
      texts.push(entry);
    });
    return layout(ticks.length);
  }

  // ---- One section per model ----
  var data = JSON.parse(document.getElementById('explorer-data').textContent);
  var root = document.getElementById('rope-explorer');

  function html(tag, attrs, text, parent) {
    var node = document.createElement(tag);
    for (var k in attrs) node.setAttribute(k, attrs[k]);
    if (text !== undefined) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }

  function Section(model, index) {
    var self = this;
    this.model = model;
    this.fi = model.factors.indexOf(model.factor);
    this.li = model.lengths.indexOf(model.length);
    var div = html('div', { 'class': 'rx-model', 'data-model': index }, undefined, root);
    html('h2', {}, 'RoPE explorer: ' + model.name, div);
    html('p', { 'class': 'rx-note' },
         'head_dim ' + model.head_dim + ', rotary dimension r = ' + model.rotary_dim +
         ' (' + model.rotary_dim / 2 + ' pairs), rope_theta ' + model.rope_theta +
         ', original length L0 = ' + model.original_length + '. Pair i turns once every ' +
         '2\u03c0/inv_freq_i tokens (its wavelength); a method slows a pair down by the ' +
         'ratio unscaled/scaled inv_freq. Every number is rotor\u2019s (nn/rope_scaling.h), ' +
         'computed at each stop of the sliders.', div);
    var controls = html('div', { 'class': 'rx-controls' }, undefined, div);
    var fl = html('label', {}, 'factor s ', controls);
    this.factorInput = html('input', { type: 'range', min: 0, max: model.factors.length - 1,
                                       step: 1, value: this.fi, 'class': 'rx-factor' }, undefined, fl);
    this.factorOut = html('output', {}, '', fl);
    var ll = html('label', {}, ' sequence length (dynamic, longrope) ', controls);
    this.lengthInput = html('input', { type: 'range', min: 0, max: model.lengths.length - 1,
                                       step: 1, value: this.li, 'class': 'rx-length' }, undefined, ll);
    this.lengthOut = html('output', {}, '', ll);
    this.factorInput.addEventListener('input', function () {
      self.update(Number(self.factorInput.value), self.li);
    });
    this.lengthInput.addEventListener('input', function () {
      self.update(self.fi, Number(self.lengthInput.value));
    });
    this.wavelengthSvg = el('svg', { 'class': 'rx-chart', 'data-chart': 'wavelength' }, div);
    this.scaleSvg = el('svg', { 'class': 'rx-chart', 'data-chart': 'scale' }, div);
    html('h3', {}, 'Attention temperature', div);
    this.table = html('table', { 'class': 'rx-temperature' }, undefined, div);
    var measured = model.methods.some(function (m) { return m.measured; });
    if (measured) {
      this.measuredCharts = {};
      var kinds = [['ppl_zeroshot', 'zeroshot'], ['ppl_finetuned', 'finetuned'],
                   ['passkey', 'passkey']];
      // Retrieval only where a report measured it (eval.retrieval_tasks).
      if (model.methods.some(function (m) {
        return m.measured && Object.keys(m.measured).some(function (v) {
          return m.measured[v].retrieval.length > 0;
        });
      })) kinds.push(['retrieval', 'retrieval']);
      var slots = kinds.map(function (c) {
        return document.querySelector('[data-rx-plot="' + c[0] + '"]');
      });
      // A chart goes into the report's own slot for its plot (report.html);
      // the rest under a heading here, which is left out when none is left.
      if (slots.some(function (slot) { return !slot; })) {
        html('h3', {}, 'Measured (rotor extend-report)', div);
      }
      kinds.forEach(function (c, n) {
        self.measuredCharts[c[1]] = el('svg', { 'class': 'rx-chart', 'data-chart': c[0] },
                                       slots[n] || div);
      });
    }
  }

  // Each method's curve at factor stop fi and length stop li: rotor's.
  Section.prototype.lookup = function (fi, li) {
    var out = {};
    this.model.methods.forEach(function (m) {
      var at = m.at[fi];
      out[m.method] = m.curves[typeof at === 'number' ? at : at[li]];
    });
    return out;
  };

  function slider(input) {
    return { min: Number(input.min), max: Number(input.max), step: Number(input.step),
             value: Number(input.value) };
  }

  Section.prototype.update = function (fi, li) {
    var model = this.model, s = model.factors[fi], length = model.lengths[li];
    this.fi = fi; this.li = li;
    this.factorInput.value = fi; this.lengthInput.value = li;
    this.factorOut.textContent = ' ' + s;
    this.lengthOut.textContent = ' ' + length;
    var f = this.lookup(fi, li);
    var wavelength = [], scale = [], curves = { wavelength: {}, scale: {} };
    METHODS.forEach(function (m) {
      function points(values) { return values.map(function (v, i) { return [i, v]; }); }
      wavelength.push({ name: m, method: m, points: points(f[m].wavelength) });
      scale.push({ name: m, method: m, points: points(f[m].scale) });
      curves.wavelength[m] = f[m].wavelength;
      curves.scale[m] = f[m].scale;
    });
    var L0 = model.original_length, extended = Math.round(s * L0);
    var hlines = [{ y: L0, label: 'L0 = ' + L0 }, { y: extended, label: 's\u00b7L0 = ' + extended }];
    if (length !== extended) hlines.push({ y: length, label: 'length ' + length });
    var charts = [drawChart(this.wavelengthSvg, { title: 'Wavelength of each rotary pair (tokens per turn)',
      xLabel: 'pair index i', yLabel: 'wavelength (tokens)', logY: true,
      series: wavelength, hlines: hlines }),
      drawChart(this.scaleSvg, { title: 'How much each method slows each pair down (unscaled / scaled inv_freq)',
      xLabel: 'pair index i', yLabel: 'slow-down', logY: true, yMin: 1,
      series: scale, hlines: [{ y: s, label: 's = ' + s }] })];
    this.drawTemperature(f);
    if (this.measuredCharts) charts = charts.concat(this.drawMeasured());
    return { name: model.name, factor: s, length: length, stop: { factor: fi, length: li },
             sliders: { factor: slider(this.factorInput), length: slider(this.lengthInput) },
             curves: curves, charts: charts,
             attention_factor: METHODS.reduce(function (a, m) {
               a[m] = f[m].attention_factor; return a; }, {}) };
  };

  Section.prototype.drawTemperature = function (f) {
    var model = this.model, t = this.table;
    while (t.firstChild) t.removeChild(t.firstChild);
    var head = html('tr', {}, undefined, t);
    ['method', 'attention factor a', 'logits scale a\u00b2', 'base in force', 'what it does']
        .forEach(function (h) { html('th', {}, h, head); });
    model.methods.forEach(function (m) {
      var r = f[m.method], note = '';
      if (m.method === 'yarn') {
        note = 'ramp from pair ' + r.yarn_ramp[0] + ' (kept) to pair ' + r.yarn_ramp[1] +
               ' (divided by s)';
      } else if (m.method === 'llama3') {
        note = 'wavelengths < ' + fmt(r.llama3_bands[0]) + ' kept, > ' + fmt(r.llama3_bands[1]) +
               ' divided by s';
      } else if (m.method === 'longrope') {
        note = r.longrope_factors + '_factor in use';
      } else if (m.method === 'dynamic') {
        note = 'NTK base for a sequence of ' + model.lengths[this.li];
      } else if (m.method === 'linear') { note = 'every pair divided by s'; }
      else if (m.method === 'ntk') { note = 'base raised so the slowest pair is divided by s'; }
      else { note = 'unscaled'; }
      if (m.own) note += ' (this config\u2019s settings)';
      var row = html('tr', { 'data-method': m.method }, undefined, t);
      html('td', {}, m.method, row);
      html('td', {}, r.attention_factor.toFixed(6), row);
      html('td', {}, (r.attention_factor * r.attention_factor).toFixed(6), row);
      html('td', {}, fmt(r.base), row);
      html('td', {}, note, row);
    }, this);
  };

  Section.prototype.drawMeasured = function () {
    var model = this.model, charts = this.measuredCharts;
    var variants = [['zeroshot', 'zero-shot', 'none'], ['finetuned', 'fine-tuned', 'none'],
                    ['lora', 'LoRA', '6 3']];
    var L0 = model.original_length, sl = Math.round(model.factor * L0);
    function series(kind, which) {
      var out = [];
      model.methods.forEach(function (m) {
        variants.forEach(function (v) {
          if (which.indexOf(v[0]) < 0 || !m.measured || !m.measured[v[0]]) return;
          var pts = m.measured[v[0]][kind];
          if (pts.length) out.push({ name: m.method + ' ' + v[1], method: m.method,
                                     variant: v[0], points: pts, dash: v[2] });
        });
      });
      return out;
    }
    // Accuracies against length: solid zero-shot, dashed fine-tuned.
    function accuracyChart(svg, kind, what) {
      return drawChart(svg, { title: what + '; solid zero-shot, dashed fine-tuned',
        xLabel: 'context length (tokens)', yLabel: 'accuracy', logX: true, yMin: 0, yMax: 1,
        markers: true, series: series(kind, ['zeroshot', 'finetuned', 'lora'])
          .map(function (s) { if (s.variant === 'finetuned') s.dash = '5 3'; return s; }) });
    }
    var drawn = [drawChart(charts.zeroshot, { title: 'Perplexity against context length, zero-shot (L = ' +
        L0 + ', s\u00b7L = ' + sl + ')', xLabel: 'context length (tokens)', yLabel: 'perplexity',
        logX: true, logY: true, markers: true, series: series('perplexity', ['zeroshot']) }),
      drawChart(charts.finetuned, { title: 'Perplexity against context length after fine-tuning',
        xLabel: 'context length (tokens)', yLabel: 'perplexity', logX: true, logY: true,
        markers: true, series: series('perplexity', ['finetuned', 'lora']) }),
      accuracyChart(charts.passkey, 'passkey', 'Passkey retrieval (mean over depths)')];
    if (charts.retrieval) {
      drawn.push(accuracyChart(charts.retrieval, 'retrieval',
                               'Retrieval (mean over tasks and depths)'));
    }
    return drawn;
  };

  // The index of the stop nearest `value` by ratio (the stops are
  // spaced evenly on a log scale).
  function nearestStop(stops, value) {
    function off(v) { return Math.max(v / value, value / v); }
    return stops.reduce(function (best, v, i) { return off(v) < off(stops[best]) ? i : best; }, 0);
  }

  function fromHash() {
    var out = {};
    location.hash.replace(/^#/, '').split('&').forEach(function (kv) {
      var p = kv.split('=');
      if (p.length === 2 && p[1] !== '' && isFinite(Number(p[1])) && Number(p[1]) > 0) {
        out[p[0]] = Number(p[1]);
      }
    });
    return out;
  }

  var sections = data.models.map(function (m, i) { return new Section(m, i); });
  function render() {
    var h = fromHash();
    state.models = sections.map(function (s) {
      var m = s.model;
      return s.update(h.factor !== undefined ? nearestStop(m.factors, h.factor)
                                             : m.factors.indexOf(m.factor),
                      h.length !== undefined ? nearestStop(m.lengths, h.length)
                                             : m.lengths.indexOf(m.length));
    });
    state.ready = true;
    publish();
  }
  // A test (or a learner in the console) can move every slider at once.
  window.rotorExplorer = {
    set: function (factor, length) { location.hash = 'factor=' + factor + '&length=' + length; },
    state: function () { return state; }
  };
  window.addEventListener('hashchange', render);
  var refresh = function () {
    state.models = sections.map(function (s) { return s.update(s.fi, s.li); });
    publish();
  };
  sections.forEach(function (s) {
    s.factorInput.addEventListener('change', refresh);
    s.lengthInput.addEventListener('change', refresh);
  });
  render();
})();
)JS";

}  // namespace rotor::train
