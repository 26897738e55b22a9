// The /compare page: one chosen metric of every compared trial, whatever its experiment,
// overlaid in one chart (a series per trial, "trial 7 (exp 3)"). Each trial's points come
// from GET /api/v1/trials/<id>/metrics/series?group=G&name=N&max_points=400 (the API's own
// permission check), which also lists the group's metric names for the menu. The tables of
// trials and hyperparameters are rendered by the server; this script only draws the chart.
(function () {
  "use strict";

  var h = window.hpcdet;
  var source = document.getElementById("compare-data");
  if (!h || !source || !window.hpcdetChart) { return; }
  var data = JSON.parse(source.textContent);
  var MAX_POINTS = 400;
  var group = document.getElementById("compare-page-group");
  var metric = document.getElementById("compare-page-metric");
  var chart = document.getElementById("compare-page-chart");
  var asked = 0;  // the latest ask: an older answer arriving late is dropped

  function seriesUrl(trialId, name) {
    return "/api/v1/trials/" + trialId + "/metrics/series?group=" + encodeURIComponent(group.value) +
      (name ? "&name=" + encodeURIComponent(name) : "") + "&max_points=" + MAX_POINTS;
  }

  function fillMetrics(lists, wanted) {
    var seen = {};
    lists.forEach(function (answer) { (answer.names || []).forEach(function (n) { seen[n] = true; }); });
    var names = Object.keys(seen).sort();
    metric.replaceChildren.apply(metric, names.map(function (n) { return h.el("option", { value: n, text: n }); }));
    var preferred = group.value === "validation" ? data.metric : "loss";
    metric.value = names.indexOf(wanted) >= 0 ? wanted :
      (names.indexOf(preferred) >= 0 ? preferred : (names[0] || ""));
    return metric.value;
  }

  function draw(answers, name) {
    var colours = window.hpcdetChart.colours;
    window.hpcdetChart.draw(chart, {
      kind: "line", xFromZero: true, xLabel: "batches (steps completed)", yLabel: name,
      empty: "The trials reported no " + (name || group.value + " metrics") + " yet.",
      series: data.trials.map(function (t, i) {
        var found = (answers[i].series || [])[0] || {};
        return { name: t.label, colour: colours[i % colours.length],
                 points: (found.points || []).map(function (p) {
                   return { x: p.batches, y: p.value, label: t.label };
                 }) };
      }) });
  }

  // Asks every trial for `name` (and the names), then again for the menu's choice when the
  // trials have no `name` in this group.
  function refresh(name) {
    var mine = asked += 1;
    var ask = function (wanted) {
      return Promise.all(data.trials.map(function (t) { return h.getJSON(seriesUrl(t.id, wanted)); }));
    };
    return ask(name).then(function (answers) {
      if (mine !== asked) { return; }
      var chosen = fillMetrics(answers, name);
      if (chosen === name || !chosen) { draw(answers, chosen); return; }
      return ask(chosen).then(function (again) { if (mine === asked) { draw(again, chosen); } });
    }).catch(function (error) {
      h.setStatus("Comparing the trials failed (" + error.message + ").");
    });
  }

  document.getElementById("compare-metrics").hidden = false;
  document.getElementById("compare-page-form").addEventListener("submit", function (e) { e.preventDefault(); });
  group.addEventListener("change", function () { refresh(group.value === "validation" ? data.metric : "loss"); });
  metric.addEventListener("change", function () { refresh(metric.value); });
  refresh(data.metric);
}());
