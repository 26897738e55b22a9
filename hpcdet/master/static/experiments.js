// The experiments list (/): refetches the same page of GET /api/v1/experiments (the
// <tbody id="experiments" data-api=...> URL: same filters, offset and limit) every
// data-every seconds and re-renders the rows, until every shown experiment has ended.
// The server-rendered rows stay when a fetch fails. Text goes in through textContent only.
(function () {
  "use strict";

  var h = window.hpcdet;
  var body = document.getElementById("experiments");
  if (!h || !body || !body.dataset.api) { return; }
  var COLUMNS = 9;

  function count(n) { return Number(n).toLocaleString("en-US"); }

  // Same words as hpcdet/master/web/experiments.py range_text.
  function rangeText(offset, shown, total) {
    if (total === 0) { return "No experiments."; }
    if (shown === 0) { return "No experiments on this page; " + count(total) + " in all."; }
    return "Showing " + count(offset + 1) + "\u2013" + count(offset + shown) + " of " +
      count(total);
  }

  function progressCell(progress) { return h.el("td", {}, h.progressNodes(progress)); }

  function bestCell(best) {
    if (!best) { return h.el("td"); }
    var better = best.smaller_is_better ? "smaller" : "larger";
    return h.el("td", { "data-best-trial": best.trial_id,
      title: "trial " + best.trial_id + "; " + better + " is better",
      text: best.name + " " + h.fmtNumber(best.value) });
  }

  function labelsCell(labels) {
    return h.el("td", {}, (labels || []).map(function (label) {
      return h.el("a", { className: "label-tag", href: "/?label=" + encodeURIComponent(label),
        text: label });
    }));
  }

  function stateCell(exp) {
    var td = h.el("td", {}, [h.stateBadge(exp.state)]);
    if (exp.archived) {
      td.appendChild(document.createTextNode(" "));
      td.appendChild(h.el("span", { className: "label-tag", text: "archived" }));
    }
    return td;
  }

  function row(exp) {
    return h.el("tr", { "data-experiment-id": exp.id, "data-state": exp.state }, [
      h.el("td", {}, [h.el("a", { href: "/experiments/" + exp.id, text: exp.id })]),
      h.el("td", {}, [h.el("a", { href: "/experiments/" + exp.id, text: exp.name })]),
      stateCell(exp),
      h.el("td", { text: exp.owner }),
      progressCell(exp.progress),
      bestCell(exp.best_metric),
      h.el("td", { text: exp.num_trials }),
      labelsCell(exp.labels),
      h.el("td", { text: h.fmtTime(exp.created_at) })
    ]);
  }

  function replaceRows(rows) {
    while (body.firstChild) { body.removeChild(body.firstChild); }
    rows.forEach(function (tr) { body.appendChild(tr); });
  }

  // Renders one answer; true when every shown experiment has ended (nothing left to
  // watch). An empty page keeps polling: the first experiment may be on its way.
  function render(data) {
    var experiments = data.experiments || [];
    var rows = experiments.map(row);
    if (!rows.length) {
      rows = [h.el("tr", {}, [h.el("td", { colspan: COLUMNS, text: body.dataset.empty })])];
    }
    replaceRows(rows);
    var range = document.querySelector("[data-range]");
    if (range) {
      range.textContent = rangeText(Number(body.dataset.offset) || 0, experiments.length,
                                    Number(data.total) || 0);
    }
    return experiments.length > 0 && experiments.every(function (exp) {
      return h.isTerminal(exp.state);
    });
  }

  h.poll(Number(body.dataset.every) || 15, function () {
    return h.getJSON(body.dataset.api).then(render);
  });
}());
