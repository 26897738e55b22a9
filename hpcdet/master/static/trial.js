// The trial page (/trials/<id>), live: the server renders everything once; this script then
// follows the trial through the JSON API (facts, jobs, checkpoints and history from
// /api/v1/trials/<id>, charts from its metrics, new log lines from logs?after=) until the
// trial has ended and a last fetch found nothing new. Text goes in through textContent only.
(function () {
  "use strict";

  var h = window.hpcdet;
  var data = null;
  var metrics = { training: [], validation: [] };
  var seen = { answer: "", metrics: "" };
  var logs = { pre: null, lastId: 0, rank: "", stream: "", generation: 0 };
  var poller = { factsDue: 0, terminalSeen: false, busy: false };
  var PREFERRED = { training: "loss", validation: null };

  // ---- Texts, written as hpcdet/master/web/trial.py writes them on the server ----

  function metricsText(values, first) {
    var names = Object.keys(values || {}).sort(function (a, b) {
      var rank = (a !== first) - (b !== first);
      return rank || (a < b ? -1 : (a > b ? 1 : 0));
    });
    return names.map(function (name) { return name + " " + h.fmtNumber(values[name]); })
      .join(", ");
  }

  function validationText(validation, first) {
    if (!validation) { return ""; }
    return "step " + validation.steps_completed + ": " + metricsText(validation.metrics, first);
  }

  function reasonWords(reason) { return h.reasonWords(reason, data.reasons); }

  function logPrefix(entry) {
    var parts = entry.rank === null || entry.rank === undefined ? [] : ["rank " + entry.rank];
    if (entry.node) { parts.push(entry.node); }
    parts.push(String(entry.stream));
    return "[" + parts.join(" ") + "]";
  }

  // ---- Facts and tables ----

  function setFact(name, text) {
    document.querySelectorAll('[data-fact="' + name + '"]').forEach(function (node) {
      node.textContent = text === null || text === undefined ? "" : String(text);
    });
  }

  function renderFacts(t) {
    var badge = document.querySelector("[data-trial-state]");
    badge.className = "state state-" + t.state;
    badge.textContent = t.state;
    var pending = t.state === "QUEUED" ? reasonWords(t.pending_reason) : "";
    setFact("pending", pending);
    document.querySelectorAll('[data-fact="pending"], [data-fact-label="pending"]')
      .forEach(function (node) { node.hidden = !pending; });
    setFact("steps_completed", t.steps_completed);
    setFact("restarts", t.restarts);
    setFact("best_validation", validationText(t.best_validation, data.searcher_metric) || "none yet");
    setFact("latest_validation", validationText(t.latest_validation, data.searcher_metric) ||
            "none yet");
    setFact("job_ids", (t.job_ids || []).join(", ") || "none yet");
    setFact("nodes", t.nodes || "none yet");
    setFact("ended_at", h.fmtTime(t.ended_at));
  }

  function td(value) {
    return h.el("td", { text: value === null || value === undefined ? "" : value });
  }

  function badgeCell(state) { return h.el("td", {}, [state ? h.stateBadge(state) : null]); }

  function fillBody(id, items, rowOf, emptyText) {
    var tbody = document.getElementById(id);
    var rows = items.map(rowOf);
    if (rows.length === 0) {
      var columns = tbody.parentNode.querySelectorAll("thead th").length;
      rows = [h.el("tr", {}, [h.el("td", { colspan: columns, text: emptyText })])];
    }
    tbody.replaceChildren.apply(tbody, rows);
  }

  function jobRow(j) {
    return h.el("tr", { "data-job-id": j.job_id || "" }, [
      td(j.job_id || "(being submitted)"), td(j.run_id), td(j.native_state), td(j.nodes),
      td(j.exit_code), td(j.requeues), td(h.fmtTime(j.submitted_at)), td(h.fmtTime(j.ended_at))]);
  }

  function checkpointRow(c) {
    return h.el("tr", { "data-checkpoint": c.uuid }, [
      td(c.uuid), td(c.steps_completed), td(c.state),
      td(metricsText(c.validation_metrics, data.searcher_metric)), td(h.fmtTime(c.reported_at))]);
  }

  function historyRow(change) {
    return h.el("tr", {}, [badgeCell(change.from), badgeCell(change.to), td(h.fmtTime(change.at)),
                           td(change.cause), td(change.actor)]);
  }

  function renderAnswer(answer) {
    var t = answer.trial;
    renderFacts(t);
    fillBody("jobs", t.jobs || [], jobRow, "No Slurm job yet.");
    fillBody("checkpoints", answer.checkpoints || [], checkpointRow, "No checkpoints yet.");
    fillBody("history", t.history || [], historyRow, "No state changes recorded.");
  }

  // ---- Charts ----

  function namesOf(entries) {
    var names = {};
    entries.forEach(function (entry) {
      Object.keys(entry.metrics || {}).forEach(function (name) { names[name] = true; });
    });
    return Object.keys(names).sort();
  }

  function syncOptions(select, names, preferred) {
    var current = select.value;
    var have = Array.prototype.map.call(select.options, function (o) { return o.value; });
    if (have.join("\n") === names.join("\n")) { return; }
    var options = names.map(function (name) { return h.el("option", { value: name, text: name }); });
    if (options.length === 0) { options = [h.el("option", { value: "", text: "(none reported yet)" })]; }
    select.replaceChildren.apply(select, options);
    var pick = names.indexOf(current) >= 0 ? current
      : (names.indexOf(preferred) >= 0 ? preferred : (names[0] || ""));
    select.value = pick;
  }

  function drawChart(group) {
    var name = document.getElementById(group + "-metric").value;
    var points = metrics[group].filter(function (entry) {
      return name && typeof (entry.metrics || {})[name] === "number";
    }).map(function (entry) {
      return { x: entry.steps_completed, y: entry.metrics[name], label: name };
    });
    window.hpcdetChart.draw(document.getElementById(group + "-chart"), {
      kind: "line", series: [{ name: name, points: points }], xLabel: "steps completed",
      yLabel: name, empty: "No " + group + " metrics yet." });
  }

  function refreshCharts() {
    ["training", "validation"].forEach(function (group) {
      syncOptions(document.getElementById(group + "-metric"), namesOf(metrics[group]),
                  PREFERRED[group]);
      drawChart(group);
    });
  }

  // ---- Logs ----

  function lineNode(entry) {
    return h.el("span", {
      className: "line" + (entry.stream === "stderr" ? " stderr" : ""),
      "data-log-id": entry.id, "data-stream": entry.stream,
      "data-rank": entry.rank === null || entry.rank === undefined ? "" : entry.rank
    }, [h.el("span", { className: "rank", text: logPrefix(entry) }), " " + entry.line + "\n"]);
  }

  function atBottom(pre) { return pre.scrollHeight - pre.scrollTop - pre.clientHeight < 8; }

  function addRankOptions(entries) {
    var select = document.getElementById("log-rank");
    entries.forEach(function (entry) {
      while (typeof entry.rank === "number" && select.options.length - 1 <= entry.rank) {
        var rank = String(select.options.length - 1);
        select.appendChild(h.el("option", { value: rank, text: rank }));
      }
    });
  }

  // Appends (or, with `replace`, shows only) `entries`; keeps the newest max_log_lines.
  function showLines(entries, replace) {
    var pre = logs.pre;
    var stick = replace || atBottom(pre);
    if (replace || pre.querySelector(".empty")) { pre.replaceChildren(); }
    var fragment = document.createDocumentFragment();
    entries.forEach(function (entry) { fragment.appendChild(lineNode(entry)); });
    pre.appendChild(fragment);
    for (var extra = pre.children.length - data.max_log_lines; extra > 0; extra -= 1) {
      pre.removeChild(pre.firstElementChild);
    }
    if (pre.children.length === 0) {
      pre.appendChild(h.el("span", { className: "empty", text: "No log lines yet." }));
    }
    pre.dataset.lastId = String(logs.lastId);
    if (stick) { pre.scrollTop = pre.scrollHeight; }
    addRankOptions(entries);
  }

  function logsUrl(params) {
    var query = Object.keys(params).filter(function (key) {
      return params[key] !== null && params[key] !== undefined && params[key] !== "";
    }).map(function (key) {
      return encodeURIComponent(key) + "=" + encodeURIComponent(params[key]);
    });
    return data.urls.logs + (query.length ? "?" + query.join("&") : "");
  }

  function describeFilter(count) {
    var text = "The last " + count + " line" + (count === 1 ? "" : "s");
    if (logs.rank !== "") { text += " of rank " + logs.rank; }
    if (logs.stream !== "") { text += " on " + logs.stream; }
    document.getElementById("logs-note").textContent = text + "; following new lines.";
  }

  // The filtered tail, in place of what is shown; answers {fresh, state} like followLogs.
  function reloadLogs() {
    var generation = logs.generation += 1;
    return h.getJSON(logsUrl({ tail: data.log_tail, rank: logs.rank, stream: logs.stream }))
      .then(function (body) {
        if (generation !== logs.generation) { return { fresh: 1, state: body.trial_state }; }
        logs.lastId = body.last_id;
        showLines(body.logs || [], true);
        describeFilter((body.logs || []).length);
        return { fresh: 1, state: body.trial_state };
      });
  }

  // New lines since the last one shown. A full page means the view fell far behind (a
  // hidden tab): it skips ahead to the tail rather than replaying thousands of lines.
  function followLogs() {
    var generation = logs.generation;
    var url = logsUrl({ after: logs.lastId, rank: logs.rank, stream: logs.stream,
                        limit: data.max_log_lines });
    return h.getJSON(url).then(function (body) {
      var entries = body.logs || [];
      if (generation !== logs.generation) { return { fresh: 1, state: body.trial_state }; }
      if (entries.length >= data.max_log_lines) { return reloadLogs(); }
      if (entries.length) {
        logs.lastId = body.last_id;
        showLines(entries, false);
      }
      return { fresh: entries.length, state: body.trial_state };
    });
  }

  function applyLogFilter(event) {
    if (event) { event.preventDefault(); }
    logs.rank = document.getElementById("log-rank").value;
    logs.stream = document.getElementById("log-stream").value;
    var query = logsUrl({ rank: logs.rank, stream: logs.stream }).split("?")[1];
    window.history.replaceState(null, "", window.location.pathname + (query ? "?" + query : ""));
    reloadLogs().catch(function (error) {
      h.setStatus("Loading the logs failed (" + error.message + ").");
    });
  }

  // ---- Polling ----

  function metricsUrl(group) { return data.urls.metrics + "?group=" + group; }

  // Facts and metrics; answers {changed, state}. Only what changed is re-rendered.
  function refreshFacts() {
    return Promise.all([h.getJSON(data.urls.trial), h.getJSON(metricsUrl("training")),
                        h.getJSON(metricsUrl("validation"))]).then(function (answers) {
      var answerText = JSON.stringify(answers[0]);
      var now = { training: answers[1].metrics || [], validation: answers[2].metrics || [] };
      var metricsText = JSON.stringify(now);
      var changed = answerText !== seen.answer || metricsText !== seen.metrics;
      if (answerText !== seen.answer) { seen.answer = answerText; renderAnswer(answers[0]); }
      if (metricsText !== seen.metrics) { seen.metrics = metricsText; metrics = now; refreshCharts(); }
      return { changed: changed, state: answers[0].trial.state };
    });
  }

  // Logs every tick, facts every facts_seconds (and every tick once the trial has ended).
  // Finished: the trial is terminal and neither fetch of this tick found anything new.
  function step() {
    // A slow answer must not let two ticks fetch the same lines twice.
    if (poller.busy) { return Promise.resolve(false); }
    poller.busy = true;
    return tick().then(function (finished) {
      poller.busy = false;
      return finished;
    }, function (error) {
      poller.busy = false;
      throw error;
    });
  }

  function tick() {
    var now = Date.now();
    var checkFacts = poller.terminalSeen || now >= poller.factsDue;
    if (checkFacts) { poller.factsDue = now + data.facts_seconds * 1000; }
    return Promise.all([followLogs(), checkFacts ? refreshFacts() : Promise.resolve(null)])
      .then(function (results) {
        var logResult = results[0], facts = results[1];
        var terminal = h.isTerminal(logResult.state) || (facts !== null && h.isTerminal(facts.state));
        poller.terminalSeen = poller.terminalSeen || terminal;
        return terminal && facts !== null && !facts.changed && logResult.fresh === 0;
      });
  }

  function wire() {
    ["training", "validation"].forEach(function (group) {
      document.getElementById(group + "-metric").addEventListener("change", function () {
        drawChart(group);
      });
    });
    document.querySelectorAll("[data-chart-form]").forEach(function (form) {
      form.addEventListener("submit", function (event) { event.preventDefault(); });
    });
    document.getElementById("log-filters").addEventListener("submit", applyLogFilter);
    document.getElementById("log-rank").addEventListener("change", applyLogFilter);
    document.getElementById("log-stream").addEventListener("change", applyLogFilter);
  }

  function start() {
    var node = document.getElementById("trial-data");
    if (!node) { return; }  // the 404 page
    data = JSON.parse(node.textContent);
    PREFERRED.validation = data.searcher_metric;
    metrics = data.metrics;
    seen.answer = JSON.stringify(data.answer);
    seen.metrics = JSON.stringify(data.metrics);
    logs.pre = document.getElementById("logs");
    logs.lastId = data.last_log_id;
    logs.rank = data.log_filter.rank === null ? "" : String(data.log_filter.rank);
    logs.stream = data.log_filter.stream || "";
    logs.pre.scrollTop = logs.pre.scrollHeight;
    wire();
    ["training", "validation"].forEach(drawChart);
    h.poll(data.log_seconds, step);
  }

  start();
}());
