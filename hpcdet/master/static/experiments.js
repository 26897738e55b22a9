// The experiments list (/): refetches the same page of GET /api/v1/experiments (the
// <tbody id="experiments" data-api=...> URL: same filters, order, offset and limit) every
// data-every seconds and re-renders the rows. It never stops: an experiment submitted after
// every listed one has ended must still appear without a reload. The server-rendered rows
// stay when a fetch fails. Text goes in through textContent only.
// Batch actions: rows the user may change (the page's #modify-rule, the rule of
// hpcdet.master.security.authz) have a checkbox; the buttons call the existing
// POST /api/v1/experiments/<id>/<action> for each selected row that the action applies to.
(function () {
  "use strict";

  var h = window.hpcdet;
  var body = document.getElementById("experiments");
  if (!h || !body || !body.dataset.api) { return; }
  var table = document.getElementById("experiments-table");
  var COLUMNS = 11;
  var ruleNode = document.getElementById("modify-rule");
  var rule = ruleNode ? JSON.parse(ruleNode.textContent) : { admin: false, workspaces: [] };
  var selected = {};   // experiment id -> its latest JSON shape (or a stub from the page)

  function count(n) { return Number(n).toLocaleString("en-US"); }

  // Same words as hpcdet/master/web/experiments.py range_text.
  function rangeText(offset, shown, total) {
    if (total === 0) { return "No experiments."; }
    if (shown === 0) {
      return "This page is past the end: " + count(total) + " experiment" +
        (total !== 1 ? "s" : "") + " in all.";
    }
    return "Showing " + count(offset + 1) + "\u2013" + count(offset + shown) + " of " +
      count(total);
  }

  function mayChange(exp) {
    return rule.admin || exp.owner === rule.actor || exp.owner === "anonymous" ||
      (exp.workspace_id !== null && rule.workspaces.indexOf(exp.workspace_id) >= 0);
  }

  function pickCell(exp) {
    if (!mayChange(exp)) { return h.el("td", { className: "pick" }); }
    var box = h.el("input", { type: "checkbox", "data-pick": exp.id,
      "aria-label": "Select experiment " + exp.id });
    box.checked = Object.prototype.hasOwnProperty.call(selected, exp.id);
    return h.el("td", { className: "pick" }, [box]);
  }

  function progressCell(progress) {
    return h.el("td", { "data-col": "progress" }, h.progressNodes(progress));
  }

  function bestCell(best) {
    if (!best) { return h.el("td", { "data-col": "best", text: h.EMPTY }); }
    var better = best.smaller_is_better ? "smaller" : "larger";
    return h.el("td", { "data-col": "best", "data-best-trial": best.trial_id,
      title: "trial " + best.trial_id + "; " + better + " is better",
      text: best.name + " " + h.fmtNumber(best.value) });
  }

  function labelsCell(labels) {
    if (!labels || !labels.length) { return h.el("td", { "data-col": "labels", text: h.EMPTY }); }
    return h.el("td", { "data-col": "labels" }, labels.map(function (label) {
      return h.el("a", { className: "label-tag", href: "/?label=" + encodeURIComponent(label),
        text: label });
    }));
  }

  function stateCell(exp) {
    var td = h.el("td", { "data-col": "state" }, [h.stateBadge(exp.state)]);
    if (exp.archived) {
      td.appendChild(document.createTextNode(" "));
      td.appendChild(h.el("span", { className: "label-tag", text: "archived" }));
    }
    if (exp.unmanaged) {
      td.appendChild(document.createTextNode(" "));
      td.appendChild(h.el("span", { className: "label-tag", text: "unmanaged",
        "data-unmanaged": "" }));
    }
    return td;
  }

  function row(exp) {
    var tr = h.el("tr", { "data-experiment-id": exp.id, "data-state": exp.state }, [
      pickCell(exp),
      h.el("td", { "data-col": "id" }, [h.el("a", { href: "/experiments/" + exp.id, text: exp.id })]),
      h.el("td", { className: "name", "data-col": "name" },
           [h.el("a", { href: "/experiments/" + exp.id, text: exp.name })]),
      stateCell(exp),
      h.el("td", { "data-col": "owner", text: exp.owner }),
      progressCell(exp.progress),
      bestCell(exp.best_metric),
      h.el("td", { "data-col": "trials", text: exp.num_trials }),
      labelsCell(exp.labels),
      h.el("td", { "data-col": "start" }, [h.timeEl(exp.created_at)]),
      h.el("td", { "data-col": "end" }, [h.timeEl(exp.ended_at)])
    ]);
    if (exp.archived) { tr.setAttribute("data-archived", ""); }
    return tr;
  }

  // Renders one answer. Never "finished": the list keeps polling for new experiments.
  function render(data) {
    var experiments = data.experiments || [];
    // The selection keeps the rows still shown (and changeable), with their new state.
    var kept = {};
    experiments.forEach(function (exp) {
      if (Object.prototype.hasOwnProperty.call(selected, exp.id) && mayChange(exp)) {
        kept[exp.id] = exp;
      }
    });
    selected = kept;
    var rows = experiments.map(row);
    if (!rows.length) {
      rows = [h.el("tr", {}, [h.el("td", { colspan: COLUMNS, text: body.dataset.empty })])];
    }
    body.replaceChildren.apply(body, rows);
    showColumns();
    var range = document.querySelector("[data-range]");
    if (range) {
      range.textContent = rangeText(Number(body.dataset.offset) || 0, experiments.length,
                                    Number(data.total) || 0);
    }
    updateBatch();
    return false;
  }

  // ---- The column chooser: the columns shown, remembered in localStorage ----
  // What is stored is the list of hidden columns, so that a column added later shows.

  var chooser = document.querySelector("[data-columns]");
  var COLUMNS_KEY = "hpcdet.experiments.hiddenColumns";
  // A phone (the stylesheet's 40rem) starts with these; the chooser adds the others.
  var PHONE_COLUMNS = ["name", "state", "start"];
  var hidden = [];

  function toggles() { return chooser ? chooser.querySelectorAll("input[data-col-toggle]") : []; }

  function storedHidden() {
    try {
      var value = JSON.parse(window.localStorage.getItem(COLUMNS_KEY));
      return Array.isArray(value) ? value : null;
    } catch (e) { return null; }
  }

  function defaultHidden() {
    if (!window.matchMedia("(max-width: 40rem)").matches) { return []; }
    return [].map.call(toggles(), function (box) { return box.dataset.colToggle; })
      .filter(function (key) { return PHONE_COLUMNS.indexOf(key) < 0; });
  }

  // Hides the cells (head and rows) of the columns not chosen.
  function showColumns() {
    if (!chooser || !table) { return; }
    table.querySelectorAll("[data-col]").forEach(function (cell) {
      cell.hidden = hidden.indexOf(cell.dataset.col) >= 0;
    });
  }

  function onChooseColumn() {
    hidden = [].filter.call(toggles(), function (box) { return !box.checked; })
      .map(function (box) { return box.dataset.colToggle; });
    try { window.localStorage.setItem(COLUMNS_KEY, JSON.stringify(hidden)); } catch (e) { /* not kept */ }
    showColumns();
  }

  if (chooser && table) {
    hidden = storedHidden() || defaultHidden();
    toggles().forEach(function (box) { box.checked = hidden.indexOf(box.dataset.colToggle) < 0; });
    chooser.addEventListener("change", onChooseColumn);
    chooser.hidden = false;
    showColumns();
  }

  // ---- Batch actions ----

  var batch = document.querySelector("[data-batch]");

  function selectedList() {
    return Object.keys(selected).map(function (id) { return selected[id]; });
  }

  // Whether `action` (a batch button) applies to an experiment, as _actions.html's rules.
  function applies(button, exp) {
    if (button.dataset.batchAction === "unarchive") { return Boolean(exp.archived); }
    return !exp.archived && button.dataset.when.split(" ").indexOf(exp.state) >= 0;
  }

  function updateBatch() {
    if (!batch) { return; }
    var list = selectedList();
    var countNode = batch.querySelector("[data-batch-count]");
    countNode.textContent = list.length ? list.length + " selected:" : "No experiments selected.";
    batch.querySelectorAll("button[data-batch-action]").forEach(function (button) {
      button.disabled = !list.some(function (exp) { return applies(button, exp); });
    });
    // The selected experiments' best trials side by side (/compare, hpcdet/master/web/compare.py).
    var compare = batch.querySelector("[data-compare-selected]");
    if (compare) {
      compare.hidden = list.length === 0;
      compare.href = "/compare?experiments=" + list.map(function (exp) { return exp.id; }).join(",");
    }
  }

  // The experiment as the page shows it, for a row picked before the first poll answered.
  function fromRow(tr) {
    return { id: Number(tr.dataset.experimentId), state: tr.dataset.state,
      archived: tr.hasAttribute("data-archived") };
  }

  function onPick(event) {
    var box = event.target;
    if (box.matches("[data-pick-all]")) {
      body.querySelectorAll("input[data-pick]").forEach(function (one) {
        one.checked = box.checked;
        pick(one);
      });
    } else if (box.matches("input[data-pick]")) {
      pick(box);
    }
    updateBatch();
  }

  function pick(box) {
    var tr = box.closest("tr");
    if (box.checked) { selected[tr.dataset.experimentId] = fromRow(tr); }
    else { delete selected[tr.dataset.experimentId]; }
  }

  function runBatch(button) {
    var targets = selectedList().filter(function (exp) { return applies(button, exp); });
    var label = button.textContent.trim();
    var ids = targets.map(function (exp) { return exp.id; });
    var question = label + " " + targets.length + " experiment" +
      (targets.length !== 1 ? "s" : "") + " (" + ids.join(", ") + ")? " +
      (button.dataset.effect || "");
    var left = selectedList().length - targets.length;
    if (left) { question += " The " + left + " other selected do" + (left === 1 ? "es" : "") +
      " not allow it and " + (left === 1 ? "is" : "are") + " left out."; }
    if (!window.confirm(question)) { return; }
    button.disabled = true;
    var action = button.dataset.batchAction;
    var failures = [];
    Promise.all(targets.map(function (exp) {
      return h.postJSON("/api/v1/experiments/" + exp.id + "/" + action).catch(function (error) {
        failures.push(exp.id + ": " + error.message);
      });
    })).then(function () {
      var done = targets.length - failures.length;
      h.actionStatus(label + " requested for " + done + " experiment" + (done !== 1 ? "s" : "") +
        (failures.length ? "; failed for " + failures.join("; ") : "") + ".", failures.length > 0);
      selected = {};
      var all = document.querySelector("[data-pick-all]");
      if (all) { all.checked = false; }
      document.dispatchEvent(new CustomEvent("hpcdet:changed"));
    });
  }

  if (batch && table) {
    batch.hidden = false;
    table.classList.add("batch-ready");
    table.addEventListener("change", onPick);
    batch.addEventListener("click", function (event) {
      var button = event.target.closest("button[data-batch-action]");
      if (button) { runBatch(button); }
    });
    updateBatch();
  }

  h.poll(Number(body.dataset.every) || 15, function () {
    return h.getJSON(body.dataset.api).then(render);
  });
}());
