// Small SVG charts for hpcdet's pages: lines (a metric over steps, one line per series) and
// scatter plots (a metric against a hyperparameter, numeric or categorical x). Every point is
// a <circle class="point"> with a <title> so it can be read by hovering, by a screen reader
// and by tests; the <svg> carries data-points with the total. Hand-written, no library.
(function () {
  "use strict";

  var NS = "http://www.w3.org/2000/svg";
  var W = 640, H = 300, LEFT = 64, RIGHT = 16, TOP = 12, BOTTOM = 44;
  var COLOURS = ["#0969da", "#cf222e", "#1a7f37", "#9a6700", "#8250df", "#bc4c00",
                 "#1b7c83", "#bf3989", "#57606a", "#4d2d00"];

  function svgEl(tag, attrs, text) {
    var node = document.createElementNS(NS, tag);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    if (text !== undefined) { node.textContent = text; }
    return node;
  }

  // About `count` round tick values covering [lo, hi].
  function ticks(lo, hi, count) {
    if (lo === hi) { return [lo]; }
    var raw = (hi - lo) / count;
    var magnitude = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 5, 10].map(function (m) { return m * magnitude; })
      .find(function (s) { return s >= raw; });
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
      out.push(Number(v.toPrecision(12)));
    }
    return out;
  }

  function extent(values) {
    var lo = Math.min.apply(null, values), hi = Math.max.apply(null, values);
    if (lo === hi) { var pad = Math.abs(lo) * 0.05 || 1; return [lo - pad, hi + pad]; }
    var margin = (hi - lo) * 0.04;
    return [lo - margin, hi + margin];
  }

  function scale(domain, lo, hi) {
    return function (v) { return lo + (v - domain[0]) / (domain[1] - domain[0]) * (hi - lo); };
  }

  function axes(svg, x, y, xTicks, yTicks, opts) {
    var fmt = window.hpcdet.fmtNumber;
    svg.appendChild(svgEl("line", { x1: LEFT, y1: H - BOTTOM, x2: W - RIGHT, y2: H - BOTTOM,
                                    "class": "axis" }));
    svg.appendChild(svgEl("line", { x1: LEFT, y1: TOP, x2: LEFT, y2: H - BOTTOM, "class": "axis" }));
    xTicks.forEach(function (t) {
      svg.appendChild(svgEl("text", { x: x(t.value), y: H - BOTTOM + 16, "class": "tick",
                                      "text-anchor": "middle" }, t.label));
    });
    yTicks.forEach(function (t) {
      svg.appendChild(svgEl("line", { x1: LEFT, y1: y(t), x2: W - RIGHT, y2: y(t), "class": "grid" }));
      svg.appendChild(svgEl("text", { x: LEFT - 6, y: y(t) + 4, "class": "tick",
                                      "text-anchor": "end" }, fmt(t)));
    });
    svg.appendChild(svgEl("text", { x: (LEFT + W - RIGHT) / 2, y: H - 6, "class": "label",
                                    "text-anchor": "middle" }, opts.xLabel || ""));
    svg.appendChild(svgEl("text", { x: 14, y: (TOP + H - BOTTOM) / 2, "class": "label",
                                    "text-anchor": "middle",
                                    transform: "rotate(-90 14 " + (TOP + H - BOTTOM) / 2 + ")" },
                          opts.yLabel || ""));
  }

  function legend(series) {
    var list = window.hpcdet.el("ul", { className: "legend" });
    series.forEach(function (s, i) {
      var swatch = window.hpcdet.el("span", { className: "swatch" });
      swatch.style.background = s.colour || COLOURS[i % COLOURS.length];
      list.appendChild(window.hpcdet.el("li", { className: s.marked ? "marked" : "" },
                                        [swatch, s.name + (s.marked ? " (best)" : "")]));
    });
    return list;
  }

  function empty(container, text) {
    container.replaceChildren(window.hpcdet.el("p", { className: "live", text: text }));
  }

  function numericTicks(domain) {
    return ticks(domain[0], domain[1], 6).map(function (v) {
      return { value: v, label: window.hpcdet.fmtNumber(v) };
    });
  }

  // A log x axis (hyperparameters of type log): positions are log10 of the values, ticks at
  // the powers of ten in view (or round exponents when fewer than two are).
  function logMapping(points) {
    var domain = extent(points.map(function (p) { return Math.log10(p.x); }));
    var marks = ticks(domain[0], domain[1], 5);
    var powers = marks.filter(function (v) { return Number.isInteger(v); });
    var chosen = powers.length >= 2 ? powers : marks;
    return { pos: function (v) { return Math.log10(v); }, domain: domain,
             ticks: chosen.map(function (v) {
               return { value: v, label: window.hpcdet.fmtNumber(Math.pow(10, v)) };
             }) };
  }

  // Categorical x values (strings, booleans) are laid out evenly in first-seen order.
  function xMapping(points, log) {
    var numeric = points.every(function (p) { return typeof p.x === "number"; });
    if (numeric && log && points.every(function (p) { return p.x > 0; })) {
      return logMapping(points);
    }
    if (numeric) {
      var domain = extent(points.map(function (p) { return p.x; }));
      return { pos: function (v) { return v; }, domain: domain, ticks: numericTicks(domain) };
    }
    var names = [];
    points.forEach(function (p) { if (names.indexOf(String(p.x)) < 0) { names.push(String(p.x)); } });
    return { pos: function (v) { return names.indexOf(String(v)); },
             domain: [-0.5, names.length - 0.5],
             ticks: names.map(function (n, i) { return { value: i, label: n }; }) };
  }

  // opts: {series: [{name, points: [{x, y, label}], marked}], kind: "line"|"scatter",
  //        xLabel, yLabel, empty, xLog (a log10 x axis when every x is positive)}
  function draw(container, opts) {
    var series = (opts.series || []).filter(function (s) { return s.points.length > 0; });
    var all = [].concat.apply([], series.map(function (s) { return s.points; }));
    if (all.length === 0) { empty(container, opts.empty || "No data yet."); return; }
    var xm = xMapping(all, opts.xLog);
    var x = scale(xm.domain, LEFT, W - RIGHT);
    var yDomain = extent(all.map(function (p) { return p.y; }));
    var y = scale(yDomain, H - BOTTOM, TOP);
    var svg = svgEl("svg", { viewBox: "0 0 " + W + " " + H, "class": "chart", role: "img",
                             "data-points": String(all.length),
                             "aria-label": (opts.yLabel || "") + " against " + (opts.xLabel || "") });
    axes(svg, function (v) { return x(v); }, y, xm.ticks, ticks(yDomain[0], yDomain[1], 5), opts);
    series.forEach(function (s, i) {
      var colour = s.colour || COLOURS[i % COLOURS.length];
      var group = svgEl("g", { "class": "series" + (s.marked ? " marked" : ""),
                               "data-series": s.name });
      if (opts.kind !== "scatter" && s.points.length > 1) {
        var d = s.points.map(function (p, k) {
          return (k ? "L" : "M") + x(xm.pos(p.x)).toFixed(1) + " " + y(p.y).toFixed(1);
        }).join(" ");
        group.appendChild(svgEl("path", { d: d, stroke: colour, fill: "none",
                                          "stroke-width": s.marked ? 3 : 1.5 }));
      }
      s.points.forEach(function (p) {
        var dot = svgEl("circle", { cx: x(xm.pos(p.x)).toFixed(1), cy: y(p.y).toFixed(1),
                                    r: s.marked ? 4.5 : 3, fill: colour, "class": "point" });
        dot.appendChild(svgEl("title", {}, (p.label || s.name) + ": " + (opts.xLabel || "x") +
                              " " + p.x + ", " + (opts.yLabel || "y") + " " +
                              window.hpcdet.fmtNumber(p.y)));
        group.appendChild(dot);
      });
      svg.appendChild(group);
    });
    var nodes = [svg];
    if (series.length > 1 && opts.kind !== "scatter") { nodes.push(legend(series)); }
    container.replaceChildren.apply(container, nodes);
  }

  window.hpcdetChart = { draw: draw, colours: COLOURS };
}());
