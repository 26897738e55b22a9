// The experiment page: draws the charts from the JSON the server embedded, then polls the
// experiment, the table's page of trials (data.trials_url: the same sort, offset and
// limit), their metric series and (adaptive_asha) the rungs, re-rendering the facts, the
// trials table, the charts and the history until the experiment has ended. Only the
// page's trials are read: a search of 10,000 trials is never fetched whole. The server
// renders the same tables, so the page is complete without this script. Hyperparameters
// with one value in every trial shown are listed once as constant and left out of the
// views (the per-hyperparameter charts here, hparam_views.js's axes). Text goes in
// through textContent only (hpcdet.el), never as HTML.
(function () {
  "use strict";

  var h = window.hpcdet;
  var source = document.getElementById("experiment-data");
  if (!h || !source) { return; }
  var data = JSON.parse(source.textContent);
  var base = "/api/v1/experiments/" + data.experiment.id;
  var metricName = data.searcher_metric.name;
  // The server's sortable header cells (links to the other orders), kept across re-renders.
  var sortCells = {};
  Array.prototype.forEach.call(document.querySelectorAll("#trials-head a[data-sort]"), function (a) {
    sortCells[a.dataset.sort] = a.closest("th");
  });

  function count(n) { return Number(n).toLocaleString("en-US"); }

  // Same words as hpcdet/master/web/experiment_trials.py range_text.
  function rangeText(offset, shown, total) {
    if (total === 0) { return "No trials yet."; }
    if (shown === 0) {
      return "This page is past the end: " + count(total) + " trial" +
        (total !== 1 ? "s" : "") + " in all.";
    }
    return "Showing trials " + count(offset + 1) + "\u2013" + count(offset + shown) + " of " +
      count(total);
  }

  // {"opt": {"lr": 0.1}} -> {"opt.lr": 0.1}, as the server's flat_hparams.
  function flatten(hparams, prefix, out) {
    Object.keys(hparams || {}).forEach(function (key) {
      var value = hparams[key];
      if (value !== null && typeof value === "object" && !Array.isArray(value) &&
          Object.keys(value).length > 0) {
        flatten(value, prefix + key + ".", out);
      } else {
        out[prefix + key] = value;
      }
    });
    return out;
  }

  function flatOf(trial) { return flatten(trial.hparams, "", {}); }

  function hparamNames(trials) {
    var seen = {};
    trials.forEach(function (t) { Object.keys(flatOf(t)).forEach(function (n) { seen[n] = true; }); });
    return Object.keys(seen).sort();
  }

  // The hyperparameters with one value in every trial (of two or more), as the server's
  // constant_hparams: {name: value}. The views leave them out and list them once.
  function constantHparams(trials, names) {
    var found = {};
    if (trials.length < 2) { return found; }
    var flats = trials.map(flatOf);
    names.forEach(function (n) {
      var key = JSON.stringify(flats[0][n]);
      var same = flats.every(function (f) {
        return Object.prototype.hasOwnProperty.call(f, n) && JSON.stringify(f[n]) === key;
      });
      if (same) { found[n] = flats[0][n]; }
    });
    return found;
  }

  function renderConstants(constants) {
    var line = document.querySelector("[data-constant-hparams]");
    if (!line) { return; }
    var names = Object.keys(constants).sort();
    var nodes = ["Constant (the same in every trial shown, left out of the views): "];
    names.forEach(function (n, i) {
      if (i) { nodes.push(", "); }
      nodes.push(h.el("code", { text: n + "=" + valueText(constants[n]), "data-constant": n }));
    });
    line.replaceChildren.apply(line, nodes);
    line.hidden = names.length === 0;
  }

  function valueText(value) {
    if (value === null || value === undefined) { return ""; }
    if (typeof value === "boolean") { return value ? "true" : "false"; }
    if (typeof value === "number") { return h.fmtNumber(value); }
    return typeof value === "string" ? value : JSON.stringify(value);
  }

  // The chart's x for a hyperparameter value: numbers stay numbers, the rest are categories.
  function chartX(value) {
    return typeof value === "number" || typeof value === "string" ? value : valueText(value);
  }

  function bestValue(trial) {
    var metrics = (trial.best_validation || {}).metrics || {};
    var value = metrics[metricName];
    return typeof value === "number" ? value : null;
  }

  function setFact(name, children) {
    var node = document.querySelector('[data-fact="' + name + '"]');
    if (node) { node.replaceChildren.apply(node, children); }
  }

  function labelNodes(labels) {
    if (!labels || labels.length === 0) { return ["none"]; }
    return labels.map(function (label) { return h.el("span", { className: "label-tag", text: label }); });
  }

  // "10,000: 9,500 Completed, 500 Error", as the server's Trials fact.
  function trialCountNodes(exp) {
    var nodes = [count(exp.num_trials)];
    var states = Object.keys(exp.trial_counts || {}).sort();
    states.forEach(function (state, i) {
      nodes.push(i ? ", " : ": ");
      nodes.push(h.el("span", { "data-trial-count": state },
                      [count(exp.trial_counts[state]) + " ", h.stateBadge(state)]));
    });
    return nodes;
  }

  function renderFacts(exp) {
    var badge = document.querySelector("[data-experiment-state]");
    if (badge) { h.setStateBadge(badge, exp.state); }
    setFact("archived", [exp.archived ? "yes" : "no"]);
    setFact("labels", labelNodes(exp.labels));
    setFact("progress", h.progressNodes(exp.progress));
    setFact("num_trials", trialCountNodes(exp));
    setFact("ended_at", [h.timeEl(exp.ended_at, "not yet")]);
    setFact("description", [exp.description || "none"]);
    h.showActions(exp.state, exp.archived);
  }

  function headCell(key, text) { return sortCells[key] || h.el("th", { text: text }); }

  function renderHead(names) {
    var cells = [headCell("id", "Trial"), headCell("state", "State")];
    names.forEach(function (n) { cells.push(h.el("th", { text: n, "data-hparam-column": n })); });
    cells.push(headCell("steps", "Steps"));
    cells.push(headCell("best_validation_metric", "Best " + (metricName || "")));
    ["Restarts", "Slurm job ID"].forEach(function (t) { cells.push(h.el("th", { text: t })); });
    if (data.rungs) { cells.push(h.el("th", { text: "Rung" })); }
    var head = document.getElementById("trials-head");
    head.replaceChildren.apply(head, cells);
    return cells.length;
  }

  // The trial's Slurm job ids, each a link to it in the queue (as experiment.html's cell).
  function jobIdsCell(ids) {
    var children = [];
    ids.forEach(function (id, i) {
      if (i) { children.push(", "); }
      children.push(h.el("a", { href: "/queue?q=" + encodeURIComponent(id), text: id,
        title: "Slurm job " + id + " in the queue" }));
    });
    return h.el("td", { className: "id" }, children);
  }

  function rungCell(rung) {
    if (!rung) { return h.el("td"); }
    return h.el("td", { text: rung.text, "data-rung": rung.rung,
                        title: "bracket " + (rung.bracket + 1) + "; this rung needs " +
                               rung.units_needed + " units of searcher.max_time" });
  }

  function trialRow(trial, names, rungs) {
    var best = trial.id === data.experiment.best_trial_id;
    var flat = flatOf(trial);
    var first = h.el("td", {}, [h.el("a", { href: "/trials/" + trial.id, text: trial.id }),
      best ? " " : null, best ? h.el("span", { className: "label-tag", text: "best", "data-best-mark": "" }) : null]);
    var cells = [first, h.el("td", {}, [h.stateBadge(trial.state)])];
    names.forEach(function (n) { cells.push(h.el("td", { text: valueText(flat[n]) })); });
    [trial.steps_completed, h.fmtNumber(bestValue(trial)), trial.restarts].forEach(function (v) {
      cells.push(h.el("td", { text: v }));
    });
    cells.push(jobIdsCell(trial.job_ids || []));
    if (data.rungs) { cells.push(rungCell(rungs[trial.id])); }
    return h.el("tr", { className: best ? "best" : "", "data-trial-id": trial.id }, cells);
  }

  function renderTrials() {
    var names = hparamNames(data.trials);
    var columns = renderHead(names);
    var rungs = {};
    ((data.rungs || {}).rungs || []).forEach(function (r) { rungs[r.trial_id] = r; });
    var rows = data.trials.map(function (t) { return trialRow(t, names, rungs); });
    if (rows.length === 0) {
      rows = [h.el("tr", {}, [h.el("td", { colspan: columns,
        text: "No trials yet: the searcher creates them when the master next runs it." })])];
    }
    var body = document.getElementById("trials");
    body.replaceChildren.apply(body, rows);
    var range = document.querySelector("[data-trials-range]");
    var page = data.pagination;
    if (range && page) {
      range.textContent = rangeText(page.offset, page.endIndex - page.startIndex, page.total);
    }
    return names;
  }

  function renderHistory(history) {
    var rows = (history || []).map(function (c) {
      return h.el("tr", {}, [h.el("td", {}, [c.from ? h.stateBadge(c.from) : null]),
        h.el("td", {}, [h.stateBadge(c.to)]), h.el("td", {}, [h.timeEl(c.at)]),
        h.el("td", { text: c.cause }), h.el("td", { text: c.actor })]);
    });
    var body = document.getElementById("history");
    body.replaceChildren.apply(body, rows);
  }

  // One colour per trial, the same in every chart: by the trial's place in the table.
  function colourOf(trialId) {
    var colours = window.hpcdetChart.colours;
    var index = data.trials.map(function (t) { return t.id; }).indexOf(trialId);
    return colours[Math.max(index, 0) % colours.length];
  }

  function drawValidation() {
    var series = data.metrics.trials.map(function (t) {
      return { name: "trial " + t.trial_id, colour: colourOf(t.trial_id),
               marked: t.trial_id === data.experiment.best_trial_id,
               points: t.points.map(function (p) {
                 return { x: p.steps_completed, y: p.value, label: "trial " + t.trial_id };
               }) };
    });
    window.hpcdetChart.draw(document.getElementById("validation-chart"), {
      kind: "line", series: series, xLabel: "batches (steps completed)", xFromZero: true,
      yLabel: metricName || "",
      empty: "No validation of " + (metricName || "the searcher metric") + " reported yet." });
  }

  function scatterSeries(name) {
    return data.trials.map(function (t) {
      var x = flatOf(t)[name], y = bestValue(t);
      var points = x === undefined || x === null || y === null ? [] :
        [{ x: chartX(x), y: y, label: "trial " + t.id }];
      return { name: "trial " + t.id, colour: colourOf(t.id), points: points,
               marked: t.id === data.experiment.best_trial_id };
    });
  }

  // The chart boxes, one per hyperparameter once there is more than one trial.
  function hparamBoxes(names) {
    var list = document.getElementById("hparam-chart-list");
    var shown = Array.prototype.map.call(list.querySelectorAll(".hparam-chart"),
                                         function (box) { return box.dataset.hparam; });
    if (shown.join("\n") !== names.join("\n")) {
      list.replaceChildren.apply(list, names.map(function (n) {
        return h.el("section", { className: "card" }, [h.el("h3", { text: n }),
          h.el("div", { className: "hparam-chart", "data-hparam": n })]);
      }));
    }
    document.getElementById("hparam-charts").hidden = names.length === 0;
    return list.querySelectorAll(".hparam-chart");
  }

  function drawHparams(names) {
    var boxes = hparamBoxes(data.trials.length > 1 ? names : []);
    Array.prototype.forEach.call(boxes, function (box) {
      var name = box.dataset.hparam;
      var log = (data.log_hparams || []).indexOf(name) >= 0;
      window.hpcdetChart.draw(box, { kind: "scatter", series: scatterSeries(name),
        xLabel: name + (log ? " (log scale)" : ""), xLog: log,
        yLabel: "best " + (metricName || ""), empty: "No trial has a best value yet." });
    });
  }

  function render() {
    renderFacts(data.experiment);
    var names = renderTrials();
    renderHistory(data.experiment.history);
    drawValidation();
    var constants = constantHparams(data.trials, names);
    renderConstants(constants);
    names = names.filter(function (n) { return !Object.prototype.hasOwnProperty.call(constants, n); });
    drawHparams(names);
    var helpers = { flatOf: flatOf, bestValue: bestValue, colourOf: colourOf };
    if (window.hpcdetHparams) { window.hpcdetHparams.render(data, helpers, names); }
    if (window.hpcdetCompare) { window.hpcdetCompare.render(data, helpers); }
  }

  // The validation series of the page's trials only (none: no request).
  function pageMetrics(trials) {
    if (!metricName || trials.length === 0) { return Promise.resolve({ trials: [] }); }
    return h.getJSON(base + "/metrics?" + trials.map(function (t) {
      return "trial_id=" + encodeURIComponent(t.id);
    }).join("&"));
  }

  function step() {
    var calls = [h.getJSON(base), h.getJSON(data.trials_url)];
    if (data.rungs) { calls.push(h.getJSON(base + "/rungs")); }
    return Promise.all(calls).then(function (answers) {
      return pageMetrics(answers[1].trials).then(function (metrics) {
        data.experiment = answers[0].experiment;
        data.trials = answers[1].trials;
        data.pagination = answers[1].pagination;
        data.metrics = metrics;
        if (data.rungs) { data.rungs = answers[2]; }
        render();
        return h.isTerminal(data.experiment.state);
      });
    });
  }

  // An action's answer carries the experiment: show its new state at once (the poll also
  // re-runs, but an ended experiment is no longer polled, e.g. after Archive).
  document.addEventListener("hpcdet:changed", function (event) {
    var exp = event.detail && event.detail.experiment;
    if (!exp || exp.id !== data.experiment.id) { return; }
    Object.keys(exp).forEach(function (key) { data.experiment[key] = exp[key]; });
    renderFacts(data.experiment);
  });

  render();
  h.poll(data.poll_seconds, step);
}());
