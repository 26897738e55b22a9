// The experiment page's trial comparison: pick trials (a checkbox each; the three best are
// picked at first), a group and a metric; their curves are drawn on one chart, a series per
// trial with a legend, from GET /api/v1/experiments/<id>/metrics?trial_id=...&max_points=N
// (downsampled per trial). The metric menu lists the picked trials' metrics (counters left
// out) from GET /api/v1/trials/<id>/metrics/series?group=G (names only).
// experiment.js calls window.hpcdetCompare.render(data, helpers) on every refresh.
(function () {
  "use strict";

  var h = window.hpcdet;
  var MAX_PICKED = 10;
  var MAX_POINTS = 400;
  var state = { picked: null, names: {}, drawnKey: "", data: null, helpers: null, wired: false,
                fetchedUrl: "", fetchedVersion: "" };

  function el(id) { return document.getElementById(id); }

  function defaultPicks(data, helpers) {
    var smaller = data.searcher_metric.smaller_is_better !== false;
    var scored = data.trials.filter(function (t) { return helpers.bestValue(t) !== null; });
    scored.sort(function (a, b) {
      var d = helpers.bestValue(a) - helpers.bestValue(b);
      return smaller ? d : -d;
    });
    return scored.slice(0, 3).map(function (t) { return t.id; });
  }

  function renderPicker(data) {
    var list = el("compare-trials");
    var have = Array.prototype.map.call(list.querySelectorAll("input"), function (i) { return i.value; });
    var ids = data.trials.map(function (t) { return String(t.id); });
    if (have.join(",") === ids.join(",")) { return; }
    list.replaceChildren.apply(list, data.trials.map(function (t) {
      var box = h.el("input", { type: "checkbox", value: String(t.id), checked: state.picked.indexOf(t.id) >= 0,
                                "data-compare-trial": t.id });
      box.addEventListener("change", function () { togglePick(t.id, box); });
      return h.el("label", {}, [box, " trial " + t.id]);
    }));
  }

  function togglePick(id, box) {
    var at = state.picked.indexOf(id);
    if (box.checked && at < 0) {
      if (state.picked.length >= MAX_PICKED) {
        box.checked = false;
        h.setStatus("At most " + MAX_PICKED + " trials can be compared at once.");
        return;
      }
      state.picked.push(id);
    } else if (!box.checked && at >= 0) {
      state.picked.splice(at, 1);
    }
    refresh(true);
  }

  // The union of the picked trials' metric names in the chosen group (fetched once a trial).
  function loadNames(group) {
    return Promise.all(state.picked.map(function (id) {
      var key = group + ":" + id;
      // The promise is kept, not its answer: a second render while the first ask is under
      // way waits for it instead of asking again.
      if (!state.names[key]) {
        state.names[key] = h.getJSON("/api/v1/trials/" + id + "/metrics/series?group=" + group)
          .then(function (answer) { return answer.names || []; }, function (error) {
            delete state.names[key];
            throw error;
          });
      }
      return state.names[key];
    })).then(function (lists) {
      var seen = {};
      lists.forEach(function (names) { names.forEach(function (n) { seen[n] = true; }); });
      return Object.keys(seen).sort();
    });
  }

  function fillMetrics(names, group) {
    var select = el("compare-metric");
    var current = select.value;
    select.replaceChildren.apply(select, names.map(function (n) { return h.el("option", { value: n, text: n }); }));
    var preferred = group === "validation" ? state.data.searcher_metric.name : "loss";
    select.value = names.indexOf(current) >= 0 ? current : (names.indexOf(preferred) >= 0 ? preferred : (names[0] || ""));
  }

  // What the picked trials have reported so far, as far as the experiment's poll says.
  function trialsVersion() {
    return JSON.stringify(state.data.trials.filter(function (t) {
      return state.picked.indexOf(t.id) >= 0;
    }).map(function (t) { return [t.id, t.state, t.steps_completed, t.best_validation]; }));
  }

  // The link to /compare with the picked trials, where trials of other experiments join.
  function acrossLink() {
    var link = document.querySelector("[data-compare-across]");
    if (link) { link.href = "/compare?trials=" + state.picked.join(","); }
  }

  function refresh(force) {
    acrossLink();
    var group = el("compare-group").value;
    var chart = el("compare-chart");
    if (state.picked.length === 0) {
      window.hpcdetChart.draw(chart, { kind: "line", series: [], empty: "Pick trials above to compare them." });
      return Promise.resolve();
    }
    return loadNames(group).then(function (names) {
      fillMetrics(names, group);
      var name = el("compare-metric").value;
      if (!name) {
        window.hpcdetChart.draw(chart, { kind: "line", series: [], empty: "The picked trials reported no " + group + " metrics yet." });
        return null;
      }
      var url = "/api/v1/experiments/" + state.data.experiment.id + "/metrics?group=" + group +
        "&name=" + encodeURIComponent(name) + "&max_points=" + MAX_POINTS +
        state.picked.map(function (id) { return "&trial_id=" + id; }).join("");
      // The page renders at load and again after each poll: the same chart of trials that
      // reported nothing new is not asked for again (a forced redraw, a pick, always is).
      var version = trialsVersion();
      if (!force && url === state.fetchedUrl && version === state.fetchedVersion) { return null; }
      // Marked before the answer: a render while this ask is under way does not ask again.
      state.fetchedUrl = url;
      state.fetchedVersion = version;
      return h.getJSON(url).then(function (answer) {
        var key = url + JSON.stringify(answer);
        if (!force && key === state.drawnKey) { return; }
        state.drawnKey = key;
        var byId = {};
        (answer.trials || []).forEach(function (t) { byId[t.trial_id] = t; });
        window.hpcdetChart.draw(chart, {
          kind: "line", xFromZero: true, xLabel: "batches (steps completed)", yLabel: name,
          empty: "The picked trials reported no " + name + " yet.",
          series: state.picked.map(function (id) {
            return { name: "trial " + id, colour: state.helpers.colourOf(id),
                     marked: id === state.data.experiment.best_trial_id,
                     points: ((byId[id] || {}).points || []).map(function (p) {
                       return { x: p.steps_completed, y: p.value, label: "trial " + id };
                     }) };
          }) });
      });
    }).catch(function (error) {
      state.fetchedUrl = "";  // asked again on the next render
      h.setStatus("Comparing the trials failed (" + error.message + ").");
    });
  }

  function render(data, helpers) {
    var section = el("compare");
    if (!section) { return; }
    state.data = data;
    state.helpers = helpers;
    section.hidden = data.trials.length < 2;
    if (section.hidden) { return; }
    if (state.picked === null) { state.picked = defaultPicks(data, helpers); }
    renderPicker(data);
    if (!state.wired) {
      state.wired = true;
      el("compare-group").addEventListener("change", function () { refresh(true); });
      el("compare-metric").addEventListener("change", function () { refresh(true); });
      el("compare-form").addEventListener("submit", function (event) { event.preventDefault(); });
    }
    refresh(false);
  }

  window.hpcdetCompare = { render: render };
}());
