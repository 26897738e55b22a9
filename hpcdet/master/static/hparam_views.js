// The experiment page's hyperparameter views, drawn by experiment.js's render() through
// window.hpcdetHparams.render(data, helpers):
// - parallel coordinates: one line per trial across an axis per hyperparameter and one for
//   the searcher metric's best value, coloured by that value (darker is better); categorical
//   hyperparameters get one tick per value, `type: log` ones a log axis; dragging along an
//   axis (pointer events) picks a range ("brushing"; the inputs under the chart do the same
//   by value from the keyboard): lines outside every picked range are dimmed and the trials
//   table's rows outside them hidden, with the count shown and a "Clear brushing" button;
// - a heat map of two chosen hyperparameters (numeric ones in up to 8 bins, categorical ones
//   one column or row per value), each cell the mean best metric of its trials, each trial a dot.
// Hand-written SVG at the container's size in CSS px; text through textContent only.
(function () {
  "use strict";

  var h = window.hpcdet;
  var C = window.hpcdetChart;
  var BINS = 8;
  // The worst and best metric colours: hpcdet.css's --heat-low/--heat-high ("r g b"), which
  // turn the other way round in dark mode (the best stands out on either background).
  var LOW = rgbVar("--heat-low", [222, 235, 247]), HIGH = rgbVar("--heat-high", [8, 48, 107]);
  // Picked ranges by axis label, kept across redraws: {lo, hi} in the axis' values for a
  // numeric axis, {names} for a categorical one.
  var brushes = {};
  var current = null;  // the last render's ctx (what the brush controls act on)
  // A drag in progress on an axis: a poll's render then waits for its end rather than redraw
  // the chart (and lose the drag) under the pointer.
  var dragging = false;

  function svgEl(tag, attrs, text) { return C.svgEl(tag, attrs, text); }

  function rgbVar(name, fallback) {
    var parts = C.cssVar(name).split(/\s+/).map(Number);
    return parts.length === 3 && parts.every(isFinite) ? parts : fallback;
  }

  // How the best colour differs from the worst, in words (dark mode turns it round).
  function betterWord() {
    var sum = function (rgb) { return rgb[0] + rgb[1] + rgb[2]; };
    return sum(HIGH) < sum(LOW) ? "darker" : "lighter";
  }

  // t in [0, 1], 1 the best: a light-to-dark blue.
  function colourAt(t) {
    var rgb = LOW.map(function (lo, i) { return Math.round(lo + (HIGH[i] - lo) * t); });
    return "rgb(" + rgb.join(",") + ")";
  }

  function goodness(values, smallerIsBetter) {
    var lo = Math.min.apply(null, values), hi = Math.max.apply(null, values);
    return function (v) {
      if (typeof v !== "number") { return null; }
      var t = hi === lo ? 1 : (v - lo) / (hi - lo);
      return smallerIsBetter ? 1 - t : t;
    };
  }

  // An axis over the trials' values of one hyperparameter: numeric (linear or log) or
  // categorical (strings, booleans, lists: one position per distinct value, first-seen order).
  function axisOf(values, log) {
    var present = values.filter(function (v) { return v !== undefined && v !== null; });
    var numeric = present.length > 0 && present.every(function (v) { return typeof v === "number"; });
    if (numeric) {
      var useLog = log && present.every(function (v) { return v > 0; });
      var tf = useLog ? Math.log10 : function (v) { return v; };
      var lo = Math.min.apply(null, present.map(tf)), hi = Math.max.apply(null, present.map(tf));
      if (lo === hi) { lo -= 1; hi += 1; }
      return { kind: useLog ? "log" : "number", lo: lo, hi: hi,
               at: function (v) { return typeof v === "number" ? (tf(v) - lo) / (hi - lo) : null; },
               value: function (t) { var v = lo + t * (hi - lo); return useLog ? Math.pow(10, v) : v; },
               label: function (t) { var v = lo + t * (hi - lo); return C.shortNumber(useLog ? Math.pow(10, v) : v); } };
    }
    var names = [];
    present.forEach(function (v) { var k = keyOf(v); if (names.indexOf(k) < 0) { names.push(k); } });
    return { kind: "category", names: names,
             at: function (v) {
               var i = names.indexOf(keyOf(v));
               return i < 0 ? null : (names.length === 1 ? 0.5 : i / (names.length - 1));
             } };
  }

  function keyOf(v) { return typeof v === "string" ? v : JSON.stringify(v); }

  function tipBox(box) {
    var tip = h.el("div", { className: "chart-tip", hidden: true });
    box.appendChild(tip);
    return function (lines, x, y, width) {
      if (!lines) { tip.hidden = true; return; }
      tip.replaceChildren.apply(tip, lines.map(function (t) { return h.el("div", { text: t }); }));
      tip.hidden = false;
      tip.style.left = Math.max(0, Math.min(x + 12, width - 230)) + "px";
      tip.style.top = (y + 12) + "px";
    };
  }

  function trialLines(trial, names, flat, value, metricName) {
    return ["trial " + trial.id].concat(names.map(function (n) {
      return n + ": " + (flat[n] === undefined ? "" : (typeof flat[n] === "number" ? h.fmtNumber(flat[n]) : keyOf(flat[n])));
    }), [metricName + ": " + (value === null ? "none yet" : h.fmtNumber(value))]);
  }

  // ---- Parallel coordinates ----

  function drawParallel(container, ctx) {
    var names = ctx.names;
    var width = Math.max(container.clientWidth || 640, names.length * 120 + 170);
    var height = 300, top = 40, bottom = height - 28, left = 56, right = width - 110;
    var step = (right - left) / Math.max(names.length, 1);
    var axes = ctx.axes, labels = ctx.labels;
    var svg = svgEl("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height,
                             "class": "chart parallel", role: "img",
                             "aria-label": "Parallel coordinates of " + labels.join(", ") });
    var xs = labels.map(function (_, i) { return left + i * step; });
    function yAt(t) { return bottom - t * (bottom - top); }
    var drawn = 0;
    ctx.trials.forEach(function (trial) {
      var parts = [];
      axes.forEach(function (axis, i) {
        var raw = i < names.length ? ctx.flat[trial.id][names[i]] : ctx.value[trial.id];
        var t = axis.at(raw);
        if (t !== null) { parts.push((parts.length ? "L" : "M") + xs[i].toFixed(1) + " " + yAt(t).toFixed(1)); }
      });
      if (parts.length < 2) { return; }
      var good = ctx.good(ctx.value[trial.id]);
      var kept = ctx.kept[trial.id];
      var path = svgEl("path", { d: parts.join(" "), fill: "none",
                                 "class": kept ? "trial-line" : "trial-line dimmed",
                                 stroke: good === null || !kept ? "#afb8c1" : colourAt(good),
                                 "stroke-width": trial.id === ctx.bestId ? 3.5 : 1.8,
                                 "data-trial-id": trial.id });
      path.addEventListener("pointerenter", function (event) {
        path.setAttribute("stroke-width", 4);
        var box = container.getBoundingClientRect();
        ctx.tip(trialLines(trial, names, ctx.flat[trial.id], ctx.value[trial.id], ctx.metricName),
                event.clientX - box.left, event.clientY - box.top, container.clientWidth);
      });
      path.addEventListener("pointerleave", function () {
        path.setAttribute("stroke-width", trial.id === ctx.bestId ? 3.5 : 1.8);
        ctx.tip(null);
      });
      svg.appendChild(path);
      drawn += 1;
    });
    axes.forEach(function (axis, i) {
      svg.appendChild(svgEl("line", { x1: xs[i], y1: top, x2: xs[i], y2: bottom, "class": "axis" }));
      var last = i === labels.length - 1;
      svg.appendChild(svgEl("text", { x: last ? xs[i] + 40 : xs[i], y: 16, "class": "label",
                                      "text-anchor": last ? "end" : "middle" }, labels[i]));
      var marks = axis.kind === "category"
        ? axis.names.map(function (n, k) {
          return { t: axis.names.length === 1 ? 0.5 : k / (axis.names.length - 1), text: n }; })
        : [0, 0.5, 1].map(function (t) { return { t: t, text: axis.label(t) }; });
      marks.forEach(function (m) {
        svg.appendChild(svgEl("text", { x: xs[i] + 4, y: yAt(m.t) + 4, "class": "tick" }, m.text));
      });
    });
    axes.forEach(function (axis, i) { brushAxis(svg, ctx, axis, labels[i], xs[i], top, bottom); });
    svg.setAttribute("data-lines", String(drawn));
    var scroll = h.el("div", { className: "scroll chart-box", tabIndex: 0, role: "region",
                               "aria-label": "Parallel coordinates (scrolls sideways)" }, [svg]);
    container.replaceChildren(scroll);
    ctx.tip = tipBox(scroll);
  }

  // ---- Brushing ----

  // Whether a raw value lies in a picked range.
  function inBrush(brush, raw) {
    if (raw === undefined || raw === null) { return false; }
    if (brush.names) { return brush.names.indexOf(keyOf(raw)) >= 0; }
    return typeof raw === "number" && raw >= brush.lo && raw <= brush.hi;
  }

  // The range of an axis between two positions (0 bottom, 1 top).
  function brushBetween(axis, t0, t1) {
    var lo = Math.min(t0, t1), hi = Math.max(t0, t1);
    if (axis.kind === "category") {
      return { names: axis.names.filter(function (n) { var t = axis.at(n); return t >= lo && t <= hi; }) };
    }
    return { lo: axis.value(lo), hi: axis.value(hi) };
  }

  // A picked range as positions on its axis (for its rectangle).
  function brushSpan(axis, brush) {
    var clamp = function (t) { return Math.max(0, Math.min(1, t)); };
    if (brush.names) {
      var ts = brush.names.map(function (n) { return axis.at(n); }).filter(function (t) { return t !== null; });
      return ts.length ? [clamp(Math.min.apply(null, ts) - 0.04), clamp(Math.max.apply(null, ts) + 0.04)] : null;
    }
    var lo = axis.at(Math.max(brush.lo, axis.value(0))), hi = axis.at(Math.min(brush.hi, axis.value(1)));
    return lo === null || hi === null || lo > hi ? null : [clamp(lo), clamp(hi)];
  }

  // An axis' picked range (drawn) and its hit area: drag to pick, click to drop.
  function brushAxis(svg, ctx, axis, label, x, top, bottom) {
    var yAt = function (t) { return bottom - t * (bottom - top); };
    var span = brushes[label] ? brushSpan(axis, brushes[label]) : null;
    var shown = svgEl("rect", { x: x - 7, width: 14, "class": "brush", "data-brush": label,
                                y: span ? yAt(span[1]) : top, height: span ? Math.max(yAt(span[0]) - yAt(span[1]), 2) : 0 });
    shown.style.display = span ? "" : "none";
    svg.appendChild(shown);
    var hit = svgEl("rect", { x: x - 12, y: top - 6, width: 24, height: bottom - top + 12, "class": "brush-hit",
                              fill: "transparent", "data-brush-axis": label });
    var start = null;
    var tOf = function (event) {
      var box = svg.getBoundingClientRect();
      return Math.max(0, Math.min(1, (bottom - (event.clientY - box.top)) / (bottom - top)));
    };
    hit.addEventListener("pointerdown", function (event) {
      start = tOf(event);
      dragging = true;
      hit.setPointerCapture(event.pointerId);
      event.preventDefault();
    });
    hit.addEventListener("pointermove", function (event) {
      if (start === null) { return; }
      var t = tOf(event);
      shown.style.display = "";
      shown.setAttribute("y", yAt(Math.max(start, t)));
      shown.setAttribute("height", Math.max(Math.abs(yAt(start) - yAt(t)), 2));
    });
    hit.addEventListener("pointerup", function (event) {
      if (start === null) { return; }
      var t = tOf(event);
      if (Math.abs(t - start) < 0.02) { delete brushes[label]; }
      else { brushes[label] = brushBetween(axis, start, t); }
      start = null;
      dragging = false;
      rebrush();
    });
    hit.addEventListener("pointercancel", function () {
      start = null;
      dragging = false;
      rebrush();
    });
    svg.appendChild(hit);
  }

  // Which trials are in every picked range of the drawn axes: {id: true|false}.
  function keptTrials(ctx) {
    var kept = {};
    ctx.trials.forEach(function (trial) {
      kept[trial.id] = ctx.labels.every(function (label, i) {
        var brush = brushes[label];
        if (!brush) { return true; }
        return inBrush(brush, i < ctx.names.length ? ctx.flat[trial.id][ctx.names[i]] : ctx.value[trial.id]);
      });
    });
    return kept;
  }

  // The trials table shows only the kept trials; the count and the Clear button follow.
  function applyBrush(ctx) {
    var brushed = ctx.labels.some(function (label) { return brushes[label]; });
    var keptCount = 0;
    ctx.trials.forEach(function (t) { if (ctx.kept[t.id]) { keptCount += 1; } });
    Array.prototype.forEach.call(document.querySelectorAll("#trials tr[data-trial-id]"), function (row) {
      row.hidden = brushed && !ctx.kept[row.dataset.trialId];
    });
    Array.prototype.forEach.call(document.querySelectorAll("[data-brush-count]"), function (count) {
      count.textContent = brushed ? keptCount + " of " + ctx.trials.length + " trials in the picked ranges."
        : "No range picked: every trial is shown.";
      count.setAttribute("data-brushed", brushed ? String(keptCount) : "");
    });
    // The chart's Clear button, and the note above the trials table (shown while brushed).
    var clear = document.querySelector(".brush-bar:not([data-brush-note]) [data-brush-clear]");
    if (clear) { clear.hidden = !brushed; }
    var note = document.querySelector("[data-brush-note]");
    if (note) { note.hidden = !brushed; }
  }

  // Min/max inputs per numeric axis: the keyboard's way to pick a range.
  function brushInputs(ctx) {
    var box = document.querySelector("[data-brush-inputs]");
    if (!box) { return; }
    var numeric = ctx.labels.filter(function (_, i) { return ctx.axes[i].kind !== "category"; });
    if (box.dataset.axes !== numeric.join("\n")) {
      box.dataset.axes = numeric.join("\n");
      box.replaceChildren.apply(box, numeric.map(function (label) {
        return h.el("fieldset", {}, [h.el("legend", { text: label }),
          h.el("label", {}, ["min ", h.el("input", { type: "number", step: "any", "data-brush-min": label })]),
          h.el("label", {}, ["max ", h.el("input", { type: "number", step: "any", "data-brush-max": label })])]);
      }));
      Array.prototype.forEach.call(box.querySelectorAll("input"), function (input) {
        input.addEventListener("change", function () { typedBrush(input.dataset.brushMin || input.dataset.brushMax); });
      });
    }
    // A poll leaves alone the box being typed in.
    var show = function (input, bound) {
      if (input !== document.activeElement) { input.value = isFinite(bound) ? String(+bound.toPrecision(4)) : ""; }
    };
    numeric.forEach(function (label) {
      var brush = brushes[label] || { lo: NaN, hi: NaN };
      show(box.querySelector('[data-brush-min="' + CSS.escape(label) + '"]'), brush.lo);
      show(box.querySelector('[data-brush-max="' + CSS.escape(label) + '"]'), brush.hi);
    });
  }

  function typedBrush(label) {
    var read = function (attr) {
      var input = document.querySelector("[" + attr + '="' + CSS.escape(label) + '"]');
      return input && input.value !== "" && isFinite(Number(input.value)) ? Number(input.value) : null;
    };
    var lo = read("data-brush-min"), hi = read("data-brush-max");
    if (lo === null && hi === null) { delete brushes[label]; }
    else { brushes[label] = { lo: lo === null ? -Infinity : lo, hi: hi === null ? Infinity : hi }; }
    rebrush();
  }

  // After a change of the picked ranges: redraw the lines and filter the table.
  function rebrush() {
    if (!current) { return; }
    current.kept = keptTrials(current);
    drawParallel(document.getElementById("parallel-chart"), current);
    applyBrush(current);
    brushInputs(current);
  }

  // ---- Heat map ----

  function binsOf(values, log) {
    var axis = axisOf(values, log);
    if (axis.kind === "category") {
      return { axis: axis, count: axis.names.length, labels: axis.names,
               bin: function (v) { var i = axis.names.indexOf(keyOf(v)); return i < 0 ? null : i; } };
    }
    var count = Math.min(BINS, new Set(values.filter(function (v) { return typeof v === "number"; })).size);
    count = Math.max(count, 1);
    var labels = [];
    for (var i = 0; i < count; i += 1) { labels.push(axis.label(i / count) + "–" + axis.label((i + 1) / count)); }
    return { axis: axis, count: count, labels: labels, bin: function (v) {
      var t = axis.at(v);
      return t === null ? null : Math.min(count - 1, Math.floor(t * count));
    } };
  }

  function inCell(t, bin, count) {
    var lo = (bin + 0.3) / count, hi = (bin + 0.7) / count;
    return Math.min(hi, Math.max(lo, t));
  }

  function drawHeatmap(container, ctx, xName, yName) {
    var xb = binsOf(ctx.trials.map(function (t) { return ctx.flat[t.id][xName]; }), ctx.logNames.indexOf(xName) >= 0);
    var yb = binsOf(ctx.trials.map(function (t) { return ctx.flat[t.id][yName]; }), ctx.logNames.indexOf(yName) >= 0);
    var cells = {};
    var dots = [];
    ctx.trials.forEach(function (trial) {
      var v = ctx.value[trial.id], fx = ctx.flat[trial.id][xName], fy = ctx.flat[trial.id][yName];
      var bx = xb.bin(fx), by = yb.bin(fy);
      if (bx === null || by === null || v === null) { return; }
      var key = bx + "," + by;
      (cells[key] = cells[key] || []).push(v);
      dots.push({ trial: trial, bx: bx, by: by, tx: xb.axis.at(fx), ty: yb.axis.at(fy) });
    });
    var width = Math.max(container.clientWidth || 480, 260);
    var widest = Math.max.apply(null, yb.labels.map(function (l) { return String(l).length; }).concat([2]));
    var left = Math.min(12 + widest * 7, width / 2), bottom = 64, top = 22, right = width - 12;
    var height = Math.round(Math.min(360, Math.max(240, width * 0.6)));
    var cw = (right - left) / xb.count, ch = (height - bottom - top) / yb.count;
    var svg = svgEl("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height,
                             "class": "chart heatmap", role: "img",
                             "aria-label": "Mean best " + ctx.metricName + " by " + xName + " and " + yName });
    var drawnCells = 0;
    Object.keys(cells).forEach(function (key) {
      var parts = key.split(",").map(Number), values = cells[key];
      var mean = values.reduce(function (a, b) { return a + b; }, 0) / values.length;
      var x = left + parts[0] * cw, y = height - bottom - (parts[1] + 1) * ch;
      var rect = svgEl("rect", { x: x + 1, y: y + 1, width: Math.max(cw - 2, 1), height: Math.max(ch - 2, 1),
                                 fill: colourAt(ctx.good(mean)), "class": "cell" });
      rect.addEventListener("pointerenter", function (event) {
        var box = container.getBoundingClientRect();
        ctx.heatTip([xName + ": " + xb.labels[parts[0]], yName + ": " + yb.labels[parts[1]],
                     "mean best " + ctx.metricName + ": " + h.fmtNumber(mean), values.length + " trial" + (values.length === 1 ? "" : "s")],
                    event.clientX - box.left, event.clientY - box.top, container.clientWidth);
      });
      rect.addEventListener("pointerleave", function () { ctx.heatTip(null); });
      svg.appendChild(rect);
      drawnCells += 1;
    });
    dots.forEach(function (d) {
      // Categorical bins: the dot sits in its cell's centre.
      // Numeric ones at the value, kept off the cell's edges.
      var fx = xb.axis.kind === "category" ? (d.bx + 0.5) / xb.count : inCell(d.tx, d.bx, xb.count);
      var fy = yb.axis.kind === "category" ? (d.by + 0.5) / yb.count : inCell(d.ty, d.by, yb.count);
      svg.appendChild(svgEl("circle", { cx: left + fx * (right - left), cy: height - bottom - fy * (height - bottom - top),
                                        r: 3, "class": "point", fill: "#fff", stroke: "#1f2328",
                                        "data-trial-id": d.trial.id }));
    });
    xb.labels.forEach(function (label, i) {
      var x = left + (i + 0.5) * cw;
      svg.appendChild(svgEl("text", { x: x, y: height - bottom + 16, "class": "tick", "text-anchor": "end",
                                      transform: "rotate(-30 " + x + " " + (height - bottom + 16) + ")" }, label));
    });
    yb.labels.forEach(function (label, i) {
      svg.appendChild(svgEl("text", { x: left - 6, y: height - bottom - (i + 0.5) * ch + 4, "class": "tick",
                                      "text-anchor": "end" }, label));
    });
    svg.appendChild(svgEl("text", { x: (left + right) / 2, y: height - 4, "class": "label", "text-anchor": "middle" }, xName));
    svg.appendChild(svgEl("text", { x: 4, y: 14, "class": "label" }, yName + " ↑"));
    svg.setAttribute("data-cells", String(drawnCells));
    svg.setAttribute("data-points", String(dots.length));
    var box = h.el("div", { className: "chart-box" }, [svg]);
    container.replaceChildren(box, h.el("p", { className: "heat-legend",
      text: "Each cell: the mean best " + ctx.metricName + " of its trials (dots); " + betterWord() + " is better." }));
    ctx.heatTip = tipBox(box);
  }

  // ---- Wiring ----

  function fillSelect(select, names, fallback) {
    var current = select.value;
    if (Array.prototype.map.call(select.options, function (o) { return o.value; }).join("\n") !== names.join("\n")) {
      select.replaceChildren.apply(select, names.map(function (n) { return h.el("option", { value: n, text: n }); }));
    }
    select.value = names.indexOf(current) >= 0 ? current : fallback;
  }

  function render(data, helpers, names) {
    var section = document.getElementById("hparam-views");
    if (!section) { return; }
    var metricName = data.searcher_metric.name;
    section.hidden = !metricName || data.trials.length < 2 || names.length === 0;
    if (section.hidden) {
      current = null;  // nothing to brush: every row shown
      var note = document.querySelector("[data-brush-note]");
      if (note) { note.hidden = true; }
      Array.prototype.forEach.call(document.querySelectorAll("#trials tr[hidden]"), function (row) { row.hidden = false; });
      return;
    }
    var ctx = { names: names, trials: data.trials, metricName: metricName, flat: {}, value: {},
                logNames: data.log_hparams || [], bestId: data.experiment.best_trial_id,
                tip: function () {}, heatTip: function () {} };
    data.trials.forEach(function (t) { ctx.flat[t.id] = helpers.flatOf(t); ctx.value[t.id] = helpers.bestValue(t); });
    var values = data.trials.map(function (t) { return ctx.value[t.id]; }).filter(function (v) { return v !== null; });
    ctx.good = values.length ? goodness(values, data.searcher_metric.smaller_is_better !== false)
      : function () { return null; };
    ctx.axes = names.map(function (n) {
      return axisOf(data.trials.map(function (t) { return ctx.flat[t.id][n]; }), ctx.logNames.indexOf(n) >= 0);
    }).concat([axisOf(data.trials.map(function (t) { return ctx.value[t.id]; }), false)]);
    ctx.labels = names.concat(["best " + metricName]);
    current = ctx;
    if (!dragging) { rebrush(); }
    var xSelect = document.getElementById("heatmap-x"), ySelect = document.getElementById("heatmap-y");
    fillSelect(xSelect, names, names[0]);
    fillSelect(ySelect, names, names[Math.min(1, names.length - 1)]);
    var heat = document.getElementById("heatmap-chart");
    // Two hyperparameters against each other: nothing to draw for a search of one.
    var heatCard = heat.closest(".card");
    if (heatCard) { heatCard.style.display = names.length < 2 ? "none" : ""; }
    if (names.length < 2) { return; }
    var redraw = function () { drawHeatmap(heat, ctx, xSelect.value, ySelect.value); };
    xSelect.onchange = redraw;
    ySelect.onchange = redraw;
    redraw();
  }

  document.addEventListener("click", function (event) {
    if (event.target.closest && event.target.closest("[data-brush-clear]")) {
      brushes = {};
      rebrush();
    }
  });

  window.hpcdetHparams = { render: render };
}());
