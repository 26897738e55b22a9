// hpcdet's charts: hand-written SVG, no library. Lines (metrics over batches, epochs, records
// or time; one line per series) and scatter plots (a metric against a hyperparameter, numeric
// or categorical). The SVG is drawn at the container's size in CSS pixels (viewBox = pixels)
// and redrawn when that changes, so text is the same size on a phone as on a laptop.
//
// Each chart has: nice ticks on axes whose range covers the data, a log-scale toggle, an
// exponential-moving-average smoothing slider (as TensorBoard's), zoom (drag across the plot
// to select a range of x, double-click or "Reset zoom" to undo), a legend whose entries hide
// and show their series, and a crosshair with the nearest point of every series in a small
// box. Its settings survive redraws with new data (they live on the container).
// The <svg> carries data-points (points drawn) and data-series (series drawn) for tests.
(function () {
  "use strict";

  var NS = "http://www.w3.org/2000/svg";
  // The series colours: hpcdet.css's --series-0..9 (light or dark), these when it has none.
  var COLOURS = ["#0969da", "#cf222e", "#1a7f37", "#9a6700", "#8250df", "#bc4c00",
                 "#1b7c83", "#bf3989", "#57606a", "#4d2d00"].map(function (fallback, i) {
    return cssVar("--series-" + i) || fallback;
  });
  var PAD = { top: 10, right: 16, bottom: 46 };
  var DOT_LIMIT = 120;  // series with more points in view are drawn as lines only
  var clipCount = 0;

  // A custom property of the page's stylesheet (hpcdet.css), "" when it is not set.
  function cssVar(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  }

  function h() { return window.hpcdet; }

  function svgEl(tag, attrs, text) {
    var node = document.createElementNS(NS, tag);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    if (text !== undefined) { node.textContent = text; }
    return node;
  }

  // ---- Numbers and ticks ----

  function niceStep(raw) {
    var magnitude = Math.pow(10, Math.floor(Math.log10(raw)));
    return [1, 2, 2.5, 5, 10].map(function (m) { return m * magnitude; })
      .find(function (s) { return s >= raw * 0.999; });
  }

  // A range covering [lo, hi] that starts and ends on a tick, and ~count ticks in it.
  function linearAxis(lo, hi, count) {
    if (lo === hi) { var pad = Math.abs(lo) * 0.1 || 1; lo -= pad; hi += pad; }
    var step = niceStep((hi - lo) / Math.max(count, 1));
    var start = Math.floor(lo / step + 1e-9) * step, end = Math.ceil(hi / step - 1e-9) * step;
    var values = [];
    for (var v = start; v <= end + step * 1e-6; v += step) { values.push(Number(v.toPrecision(12))); }
    return { domain: [start, end], values: values, step: step };
  }

  // Log axes work in log10 units; ticks at powers of ten, with 2 and 5 when few decades show.
  function logAxis(lo, hi, count) {
    var start = Math.floor(lo), end = Math.ceil(hi);
    if (start === end) { end += 1; }
    var decades = end - start, values = [];
    for (var e = start; e <= end; e += Math.max(1, Math.ceil(decades / count))) {
      values.push(e);
      if (decades <= 2 && e < end) { values.push(e + Math.log10(2), e + Math.log10(5)); }
    }
    return { domain: [start, end], values: values, log: true };
  }

  var TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800,
                    21600, 43200, 86400, 172800, 604800];

  function timeAxis(lo, hi, count) {
    if (lo === hi) { lo -= 30; hi += 30; }
    var raw = (hi - lo) / Math.max(count, 1);
    var step = TIME_STEPS.find(function (s) { return s >= raw; }) || niceStep(raw / 86400) * 86400;
    var start = Math.floor(lo / step) * step, end = Math.ceil(hi / step) * step, values = [];
    for (var v = start; v <= end; v += step) { values.push(v); }
    return { domain: [start, end], values: values, time: true, step: step };
  }

  // Short tick labels: 1.5k, 2M, 0.001, 1e-5.
  function shortNumber(v) {
    var abs = Math.abs(v);
    if (abs === 0) { return "0"; }
    if (abs >= 1e9) { return Number((v / 1e9).toPrecision(3)) + "G"; }
    if (abs >= 1e6) { return Number((v / 1e6).toPrecision(3)) + "M"; }
    if (abs >= 1e4) { return Number((v / 1e3).toPrecision(3)) + "k"; }
    if (abs < 1e-3) { return v.toExponential(0); }
    return String(Number(v.toPrecision(4)));
  }

  function pad2(n) { return (n < 10 ? "0" : "") + n; }

  // Times are the reader's local time, as everywhere on the pages (hpcdet.fmtTime).
  function timeText(seconds, withDate) {
    var d = new Date(seconds * 1000);
    var hm = pad2(d.getHours()) + ":" + pad2(d.getMinutes());
    return withDate ? pad2(d.getMonth() + 1) + "-" + pad2(d.getDate()) + " " + hm
      : hm + ":" + pad2(d.getSeconds());
  }

  function tickLabel(axis, v) {
    if (axis.categories) { return axis.categories[v]; }
    if (axis.time) { return timeText(v, axis.domain[1] - axis.domain[0] > 86400).replace(/:00$/, ""); }
    return shortNumber(axis.log ? Math.pow(10, v) : v);
  }

  function valueText(axis, v) {
    if (axis.categories) { return String(axis.categories[v]); }
    if (axis.time) { return h().fmtTime(new Date(v * 1000)); }
    return h().fmtNumber(v);
  }

  // ---- Smoothing (TensorBoard's debiased exponential moving average) ----

  function smooth(points, weight) {
    if (!weight) { return points; }
    var last = 0;
    return points.map(function (p, i) {
      last = last * weight + (1 - weight) * p.y;
      return { x: p.x, y: last / (1 - Math.pow(weight, i + 1)), raw: p.y, label: p.label };
    });
  }

  // ---- State: kept on the container, so a redraw with new data keeps the reader's view ----

  function stateOf(container) {
    if (!container.hpcdetChart) {
      container.hpcdetChart = { log: false, smoothing: 0, zoom: null, hidden: {}, x: null,
                                tools: null, box: null, legend: null, width: 0 };
    }
    return container.hpcdetChart;
  }

  // The series as drawn: x from the chosen axis, hidden ones and points without x left out.
  function prepared(state, opts) {
    var key = state.x;
    return (opts.series || []).map(function (s, i) {
      var points = s.points.map(function (p) {
        var x = key ? (p.xs || {})[key] : p.x;
        return { x: x, y: p.y, label: p.label };
      }).filter(function (p) {
        return p.x !== undefined && p.x !== null && typeof p.y === "number" && isFinite(p.y);
      });
      return { name: s.name, colour: s.colour || COLOURS[i % COLOURS.length], marked: s.marked,
               points: points, hidden: !!state.hidden[s.name] };
    }).filter(function (s) { return s.points.length > 0; });
  }

  // ---- Axes ----

  function xAxisOf(points, opts, state, width) {
    var count = Math.max(2, Math.floor(width / 90));
    var numeric = points.every(function (p) { return typeof p.x === "number"; });
    if (!numeric) {
      var names = [];
      points.forEach(function (p) { if (names.indexOf(String(p.x)) < 0) { names.push(String(p.x)); } });
      return { categories: names, domain: [-0.5, names.length - 0.5],
               values: names.map(function (_, i) { return i; }),
               pos: function (v) { return names.indexOf(String(v)); } };
    }
    var xs = points.map(function (p) { return p.x; });
    var lo = Math.min.apply(null, xs), hi = Math.max.apply(null, xs);
    if (opts.xLog && lo > 0) {
      var axis = logAxis(Math.log10(lo), Math.log10(hi), count);
      axis.pos = Math.log10;
      return axis;
    }
    if (state.zoom) { lo = state.zoom[0]; hi = state.zoom[1]; }
    var made;
    if (state.x === "time") {
      made = timeAxis(lo, hi, count);
    } else {
      // Counts (batches, epochs, records) start at 0: a chart of steps 100 and 200 shows 0..200.
      if (opts.xFromZero && !state.zoom && lo > 0) { lo = 0; }
      made = linearAxis(lo, hi, count);
    }
    if (state.zoom) { made.domain = [lo, hi]; made.values = made.values.filter(function (v) {
      return v >= lo && v <= hi; }); }
    made.pos = function (v) { return v; };
    return made;
  }

  function yAxisOf(points, state, height) {
    var count = Math.max(3, Math.floor(height / 48));
    var ys = points.map(function (p) { return p.y; });
    if (ys.length === 0) { ys = [0, 1]; }
    var lo = Math.min.apply(null, ys), hi = Math.max.apply(null, ys);
    if (state.log && lo > 0) { return logAxis(Math.log10(lo), Math.log10(hi), count); }
    return linearAxis(lo, hi, count);
  }

  function scale(domain, lo, hi) {
    var span = domain[1] - domain[0] || 1;
    return function (v) { return lo + (v - domain[0]) / span * (hi - lo); };
  }

  function drawAxes(svg, frame, xAxis, yAxis, opts, state) {
    var f = frame;
    yAxis.values.forEach(function (v) {
      var y = f.y(v);
      svg.appendChild(svgEl("line", { x1: f.left, y1: y, x2: f.right, y2: y, "class": "grid" }));
      svg.appendChild(svgEl("text", { x: f.left - 6, y: y + 4, "class": "tick",
                                      "text-anchor": "end" }, tickLabel(yAxis, v)));
    });
    xAxis.values.forEach(function (v) {
      var x = f.x(v);
      svg.appendChild(svgEl("line", { x1: x, y1: f.bottom, x2: x, y2: f.bottom + 4, "class": "axis" }));
      svg.appendChild(svgEl("text", { x: x, y: f.bottom + 18, "class": "tick",
                                      "text-anchor": "middle" }, tickLabel(xAxis, v)));
    });
    svg.appendChild(svgEl("line", { x1: f.left, y1: f.bottom, x2: f.right, y2: f.bottom, "class": "axis" }));
    svg.appendChild(svgEl("line", { x1: f.left, y1: f.top, x2: f.left, y2: f.bottom, "class": "axis" }));
    var xLabel = xLabelOf(opts, state) + (xAxis.time ? " (" + (h().zoneName(new Date()) || "local time") + ")" : "");
    svg.appendChild(svgEl("text", { x: (f.left + f.right) / 2, y: f.height - 8, "class": "label",
                                    "text-anchor": "middle" }, xLabel));
    var mid = (f.top + f.bottom) / 2;
    svg.appendChild(svgEl("text", { x: 14, y: mid, "class": "label", "text-anchor": "middle",
                                    transform: "rotate(-90 14 " + mid + ")" },
                          (opts.yLabel || "") + (yAxis.log ? " (log)" : "")));
  }

  function xLabelOf(opts, state) {
    var choice = (opts.xChoices || []).find(function (c) { return c.key === state.x; });
    return choice ? choice.label : (opts.xLabel || "");
  }

  // ---- Drawing ----

  function frameOf(width, height, yAxis) {
    var widest = Math.max.apply(null, yAxis.values.map(function (v) {
      return tickLabel(yAxis, v).length; }).concat([1]));
    var left = 30 + widest * 7;
    return { width: width, height: height, left: left, right: width - PAD.right,
             top: PAD.top, bottom: height - PAD.bottom };
  }

  function seriesGroup(s, frame, xAxis, yAxis, opts, state, clipId) {
    var f = frame;
    var group = svgEl("g", { "class": "series" + (s.marked ? " marked" : ""), "data-series": s.name,
                             "clip-path": "url(#" + clipId + ")" });
    var drawn = s.points.map(function (p) {
      return { sx: f.x(xAxis.pos(p.x)), sy: f.y(yAxis.log ? Math.log10(p.y) : p.y), p: p };
    });
    if (opts.kind !== "scatter" && drawn.length > 1) {
      var d = drawn.map(function (q, k) {
        return (k ? "L" : "M") + q.sx.toFixed(1) + " " + q.sy.toFixed(1);
      }).join(" ");
      group.appendChild(svgEl("path", { d: d, stroke: s.colour, fill: "none", "class": s.faint ? "raw" : "line",
                                        "stroke-width": s.marked ? 3 : 1.8 }));
    }
    var inView = drawn.filter(function (q) { return q.sx >= f.left - 1 && q.sx <= f.right + 1; });
    if (!s.faint && (opts.kind === "scatter" || inView.length <= DOT_LIMIT)) {
      inView.forEach(function (q) {
        group.appendChild(svgEl("circle", { cx: q.sx.toFixed(1), cy: q.sy.toFixed(1), fill: s.colour,
                                            r: opts.kind === "scatter" ? (s.marked ? 5.5 : 4) : (s.marked ? 3.5 : 2.5),
                                            "class": "point" }));
      });
    }
    return { group: group, drawn: drawn };
  }

  function render(container) {
    var state = stateOf(container), opts = state.opts;
    // New data during a drag would drop the selection: draw it when the drag ends.
    if (state.dragging) { state.pending = true; return; }
    var series = prepared(state, opts);
    if (series.length === 0) {
      state.box.replaceChildren(h().el("p", { className: "live", text: opts.empty || "No data yet." }));
      state.legend.replaceChildren();
      syncTools(state, opts, []);
      return;
    }
    var visible = series.filter(function (s) { return !s.hidden; });
    var all = [].concat.apply([], (visible.length ? visible : series).map(function (s) { return s.points; }));
    var width = Math.max(container.clientWidth || 640, 240);
    var height = Math.round(Math.min(340, Math.max(220, width * 0.5)));
    var xAxis = xAxisOf(all, opts, state, width);
    var inZoom = state.zoom ? all.filter(function (p) {
      return p.x >= state.zoom[0] && p.x <= state.zoom[1]; }) : all;
    var logOk = all.every(function (p) { return p.y > 0; });
    var yAxis = yAxisOf(inZoom.length ? inZoom : all, { log: state.log && logOk }, height);
    var frame = frameOf(width, height, yAxis);
    frame.x = scale(xAxis.domain, frame.left, frame.right);
    frame.y = scale(yAxis.domain, frame.bottom, frame.top);
    var svg = svgEl("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height,
                             "class": "chart", role: "img", "data-points": String(all.length),
                             "data-series": String(visible.length),
                             "aria-label": (opts.yLabel || "") + " against " + xLabelOf(opts, state) });
    var clipId = "hpcdet-clip-" + (clipCount += 1);
    var clip = svgEl("clipPath", { id: clipId });
    // A little wider than the plot, so a point on the first or last x is drawn whole.
    clip.appendChild(svgEl("rect", { x: frame.left - 6, y: frame.top - 6,
                                     width: frame.right - frame.left + 12,
                                     height: frame.bottom - frame.top + 12 }));
    svg.appendChild(clip);
    drawAxes(svg, frame, xAxis, yAxis, opts, state);
    var hover = [];
    visible.forEach(function (s) {
      var weight = opts.kind === "scatter" ? 0 : state.smoothing;
      if (weight) { svg.appendChild(seriesGroup(Object.assign({}, s, { faint: true }), frame, xAxis, yAxis, opts, state, clipId).group); }
      var shown = seriesGroup(Object.assign({}, s, { points: smooth(s.points, weight) }),
                              frame, xAxis, yAxis, opts, state, clipId);
      svg.appendChild(shown.group);
      hover.push({ series: s, drawn: shown.drawn });
    });
    var tip = h().el("div", { className: "chart-tip", hidden: true });
    attachPointer(container, svg, frame, xAxis, hover, tip);
    state.box.replaceChildren(svg, tip);
    state.width = width;
    renderLegend(container, series);
    syncTools(state, opts, all, logOk);
  }

  // ---- Hover (crosshair and values) and zoom ----

  function nearestIndex(drawn, sx) {
    var lo = 0, hi = drawn.length - 1;
    while (hi - lo > 1) {
      var mid = (lo + hi) >> 1;
      if (drawn[mid].sx < sx) { lo = mid; } else { hi = mid; }
    }
    return Math.abs(drawn[lo].sx - sx) <= Math.abs(drawn[hi].sx - sx) ? lo : hi;
  }

  function hoverRows(hover, sx, sy, kind) {
    if (kind === "scatter") {
      var best = null;
      hover.forEach(function (hv) { hv.drawn.forEach(function (q) {
        var dist = Math.hypot(q.sx - sx, q.sy - sy);
        if (dist < 40 && (!best || dist < best.dist)) { best = { dist: dist, q: q, s: hv.series }; }
      }); });
      return best ? [{ q: best.q, s: best.s }] : [];
    }
    return hover.filter(function (hv) { return hv.drawn.length; }).map(function (hv) {
      return { q: hv.drawn[nearestIndex(hv.drawn, sx)], s: hv.series };
    });
  }

  function showTip(tip, rows, frame, xAxis, xLabel, sx) {
    var lines = [h().el("div", { className: "chart-tip-x",
      text: (xLabel || "x") + " " + valueText(xAxis, rows[0].q.p.x) })];
    rows.forEach(function (row) {
      var sw = h().el("span", { className: "swatch" });
      sw.style.background = row.s.colour;
      var value = h().fmtNumber(row.q.p.y) + (row.q.p.raw !== undefined ? " (raw " + h().fmtNumber(row.q.p.raw) + ")" : "");
      lines.push(h().el("div", {}, [sw, (row.q.p.label || row.s.name) + ": " + value]));
    });
    tip.replaceChildren.apply(tip, lines);
    tip.hidden = false;
    var left = sx + 12;
    if (left + 220 > frame.width) { left = Math.max(0, sx - 232); }
    tip.style.left = left + "px";
    tip.style.top = (frame.top + 4) + "px";
  }

  function attachPointer(container, svg, frame, xAxis, hover, tip) {
    var state = stateOf(container), opts = state.opts;
    var layer = svgEl("g", { "class": "hover" });
    var hit = svgEl("rect", { x: frame.left, y: frame.top, width: frame.right - frame.left,
                              height: frame.bottom - frame.top, "class": "hit" });
    svg.appendChild(layer);
    svg.appendChild(hit);
    var drag = null;
    function local(event) {
      var box = svg.getBoundingClientRect();
      return { x: (event.clientX - box.left) * frame.width / box.width,
               y: (event.clientY - box.top) * frame.height / box.height };
    }
    function hoverAt(at) {
      var rows = hoverRows(hover, at.x, at.y, opts.kind);
      layer.replaceChildren();
      if (rows.length === 0) { tip.hidden = true; return; }
      var cx = rows[0].q.sx;
      layer.appendChild(svgEl("line", { x1: cx, y1: frame.top, x2: cx, y2: frame.bottom, "class": "crosshair" }));
      rows.forEach(function (row) {
        layer.appendChild(svgEl("circle", { cx: row.q.sx, cy: row.q.sy, r: 4.5, fill: "#fff",
                                            stroke: row.s.colour, "stroke-width": 2 }));
      });
      showTip(tip, rows, frame, xAxis, xLabelOf(opts, state), cx);
    }
    hit.addEventListener("pointermove", function (event) {
      var at = local(event);
      if (drag) {
        drag.now = Math.min(Math.max(at.x, frame.left), frame.right);
        drag.rect.setAttribute("x", Math.min(drag.start, drag.now));
        drag.rect.setAttribute("width", Math.abs(drag.now - drag.start));
      }
      hoverAt(at);
    });
    hit.addEventListener("pointerleave", function () { layer.replaceChildren(); tip.hidden = true; });
    if (xAxis.categories || xAxis.log) { return; }  // zoom: numeric, linear x only
    hit.addEventListener("pointerdown", function (event) {
      if (event.button !== 0) { return; }
      var at = local(event);
      drag = { start: at.x, now: at.x, rect: svgEl("rect", { x: at.x, y: frame.top, width: 0,
               height: frame.bottom - frame.top, "class": "zoom-box" }) };
      layer.parentNode.insertBefore(drag.rect, layer);
      hit.setPointerCapture(event.pointerId);
      state.dragging = true;
    });
    hit.addEventListener("pointerup", function () {
      if (!drag) { return; }
      var picked = drag;
      drag = null;
      picked.rect.remove();
      state.dragging = false;
      if (Math.abs(picked.now - picked.start) < 6) {
        if (state.pending) { state.pending = false; render(container); }
        return;
      }
      state.pending = false;
      var toData = scale([frame.left, frame.right], xAxis.domain[0], xAxis.domain[1]);
      state.zoom = [toData(Math.min(picked.start, picked.now)), toData(Math.max(picked.start, picked.now))];
      render(container);
    });
    hit.addEventListener("dblclick", function () { state.zoom = null; render(container); });
  }

  // ---- Legend and tools ----

  function renderLegend(container, series) {
    var state = stateOf(container);
    if (series.length < 2 || state.opts.kind === "scatter") { state.legend.replaceChildren(); return; }
    state.legend.replaceChildren.apply(state.legend, series.map(function (s) {
      var swatch = h().el("span", { className: "swatch" });
      swatch.style.background = s.colour;
      var button = h().el("button", { type: "button", "aria-pressed": s.hidden ? "false" : "true",
                                      "data-legend": s.name, title: (s.hidden ? "Show " : "Hide ") + s.name },
                          [swatch, s.name + (s.marked ? " (best)" : "")]);
      button.addEventListener("click", function () {
        state.hidden[s.name] = !state.hidden[s.name];
        render(container);
      });
      return h().el("li", { className: (s.marked ? "marked" : "") + (s.hidden ? " hidden-series" : "") }, [button]);
    }));
  }

  function buildTools(container) {
    var state = stateOf(container), el = h().el;
    var xSelect = el("select", { "data-chart-x": "" });
    xSelect.addEventListener("change", function () { state.x = xSelect.value; state.zoom = null; render(container); });
    var log = el("input", { type: "checkbox", "data-chart-log": "" });
    log.addEventListener("change", function () { state.log = log.checked; render(container); });
    var smoothing = el("input", { type: "range", min: "0", max: "0.99", step: "0.01", value: "0",
                                  "data-chart-smoothing": "" });
    var smoothText = el("span", { className: "smoothing-value", text: "0" });
    smoothing.addEventListener("input", function () {
      state.smoothing = Number(smoothing.value);
      smoothText.textContent = smoothing.value;
      render(container);
    });
    var reset = el("button", { type: "button", "data-chart-reset": "", text: "Reset zoom" });
    reset.addEventListener("click", function () { state.zoom = null; render(container); });
    var tools = el("div", { className: "chart-tools" }, [
      el("label", { className: "x-choice" }, ["x axis ", xSelect]),
      el("label", {}, [log, " log scale"]),
      el("label", { className: "smoothing" }, ["smoothing ", smoothing, smoothText]), reset]);
    state.controls = { x: xSelect, log: log, smoothing: smoothing, reset: reset, tools: tools };
    state.tools = tools;
    state.box = el("div", { className: "chart-box" });
    state.legend = el("ul", { className: "legend" });
    container.replaceChildren(tools, state.box, state.legend);
  }

  function syncTools(state, opts, points, logOk) {
    var c = state.controls, choices = opts.xChoices || [];
    var have = Array.prototype.map.call(c.x.options, function (o) { return o.value; }).join("\n");
    if (have !== choices.map(function (x) { return x.key; }).join("\n")) {
      c.x.replaceChildren.apply(c.x, choices.map(function (x) {
        return h().el("option", { value: x.key, text: x.label }); }));
    }
    c.x.value = state.x || "";
    c.x.parentNode.hidden = choices.length < 2;
    c.log.checked = state.log && !!logOk;
    c.log.disabled = points.length > 0 && !logOk;
    c.log.parentNode.title = c.log.disabled ? "A log scale needs every value above 0." : "";
    c.smoothing.parentNode.hidden = opts.kind === "scatter";
    c.reset.hidden = !state.zoom;
    c.tools.hidden = points.length === 0;
  }

  // opts: {series: [{name, colour?, marked?, points: [{x, y, label?} or {xs: {key: x}, y}]}],
  //        kind: "line"|"scatter", xLabel, yLabel, empty, xLog (log10 x when all x > 0),
  //        xChoices: [{key, label}] (points carry xs: one x per key), xFromZero}
  function draw(container, opts) {
    var state = stateOf(container);
    state.opts = opts;
    var keys = (opts.xChoices || []).map(function (c) { return c.key; });
    if (keys.length && keys.indexOf(state.x) < 0) { state.x = keys[0]; state.zoom = null; }
    if (!keys.length) { state.x = null; }
    if (!state.tools || state.tools.parentNode !== container) { buildTools(container); }
    render(container);
    if (!state.observer && window.ResizeObserver) {
      state.observer = new ResizeObserver(function () {
        if (Math.abs((container.clientWidth || 0) - state.width) > 4) { render(container); }
      });
      state.observer.observe(container);
    }
  }

  window.hpcdetChart = { draw: draw, colours: COLOURS, cssVar: cssVar, linearAxis: linearAxis,
                         shortNumber: shortNumber, svgEl: svgEl };
}());
