// The trial page (/trials/<id>), live: the server renders everything once; this script then
// follows the trial through the JSON API (facts, jobs, checkpoints and history from
// /api/v1/trials/<id>, charts from its downsampled metrics/series, new log lines from logs?after=) until the
// trial has ended and a last fetch found nothing new. Text goes in through textContent only.
(function () {
  "use strict";

  var h = window.hpcdet;
  var data = null;
  var metrics = { training: {}, validation: {} };
  var seen = { answer: "", training: "", validation: "" };
  var logs = { pre: null, lastId: 0, rank: "", stream: "", q: "", generation: 0, typing: null };
  var poller = { factsDue: 0, terminalSeen: false, busy: false };
  var PREFERRED = { training: "loss", validation: null };

  // ---- Texts, written as hpcdet/master/web/trial.py writes them on the server ----

  var COUNTERS = ["batches", "epochs", "records"];  // x axes, never metrics

  function metricsText(values, first) {
    var names = Object.keys(values || {}).filter(function (name) {
      return COUNTERS.indexOf(name) < 0;
    }).sort(function (a, b) {
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

  // The API says the reason in words by the master's scheduler; the legend is a fallback.
  function reasonWords(t) { return t.pending_words || h.reasonWords(t.pending_reason, data.reasons); }

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
    h.setStateBadge(badge, t.state);
    var pending = t.state === "QUEUED" ? reasonWords(t) : "";
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
    document.querySelectorAll('[data-fact="ended_at"]').forEach(function (node) {
      node.replaceChildren(h.timeEl(t.ended_at));
    });
  }

  // A cell of text, or of a node (a <time> from h.timeEl).
  function td(value) {
    if (value instanceof Node) { return h.el("td", {}, [value]); }
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
      td(j.exit_code), td(j.requeues), td(h.timeEl(j.submitted_at)), td(h.timeEl(j.ended_at))]);
  }

  // Size, location, best/latest marks and the download link: static/records.js.
  function checkpointRow(c) {
    return window.hpcdetRecords.checkpointRow(c, data.urls.checkpoint_download);
  }

  function historyRow(change) {
    return h.el("tr", {}, [badgeCell(change.from), badgeCell(change.to), td(h.timeEl(change.at)),
                           td(change.cause), td(change.actor)]);
  }

  function renderAnswer(answer) {
    var t = answer.trial;
    renderFacts(t);
    fillBody("jobs", t.jobs || [], jobRow, "No Slurm job yet.");
    fillBody("checkpoints", answer.checkpoints || [], checkpointRow, "No checkpoints yet.");
    fillBody("history", t.history || [], historyRow, "No state changes recorded.");
  }

  // ---- Charts (downsampled series from metrics/series; counters are x axes) ----

  function seriesUrl(group, names) {
    return data.urls.series + "?group=" + encodeURIComponent(group) + "&max_points=" +
      data.max_points + names.map(function (n) { return "&name=" + encodeURIComponent(n); }).join("");
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

  // What a chart may use as x: the step (batches), the counters reported with it, the time.
  function xChoices(counters) {
    var out = [{ key: "batches", label: "batches (steps completed)" }];
    ["epochs", "records"].forEach(function (c) {
      if ((counters || []).indexOf(c) >= 0) { out.push({ key: c, label: c }); }
    });
    out.push({ key: "time", label: "time" });
    return out;
  }

  function chartSeries(entry) {
    return { name: entry.name, points: entry.points.map(function (p) {
      return { y: p.value, label: entry.name,
               xs: { batches: p.batches, epochs: p.epochs, records: p.records, time: p.time } };
    }) };
  }

  function drawChart(group) {
    var answer = metrics[group];
    var name = document.getElementById(group + "-metric").value;
    var entry = (answer.series || []).find(function (s) { return s.name === name; });
    if (name && !entry) {
      loadSeries(group).catch(function (error) {
        h.setStatus("Loading " + name + " failed (" + error.message + ").");
      });
      return;
    }
    window.hpcdetChart.draw(document.getElementById(group + "-chart"), {
      kind: "line", series: entry ? [chartSeries(entry)] : [], xChoices: xChoices(answer.counters),
      xFromZero: true, yLabel: name, empty: "No " + group + " metrics yet." });
    if (group === "training") { drawThroughput(); }
  }

  // Batches per second between consecutive points of the training series (downsampled, so
  // an average over each stretch), over time: how fast the trial trains.
  function drawThroughput() {
    var entry = ((metrics.training || {}).series || [])[0];
    var points = [];
    var previous = null;
    ((entry || {}).points || []).forEach(function (p) {
      if (typeof p.time !== "number") { return; }
      if (previous && p.time > previous.time && p.batches > previous.batches) {
        points.push({ y: (p.batches - previous.batches) / (p.time - previous.time), label: "batches/s",
                      xs: { time: p.time, batches: p.batches } });
      }
      previous = p;
    });
    var card = document.getElementById("throughput-card");
    card.hidden = points.length < 2;
    if (card.hidden) { return; }
    window.hpcdetChart.draw(document.getElementById("throughput-chart"), {
      kind: "line", series: [{ name: "batches/s", points: points }],
      xChoices: [{ key: "time", label: "time" }, { key: "batches", label: "batches (steps completed)" }],
      yLabel: "batches/s", empty: "No training reports yet." });
  }

  function loadSeries(group) {
    var name = document.getElementById(group + "-metric").value;
    return h.getJSON(seriesUrl(group, name ? [name] : [])).then(function (answer) {
      var text = JSON.stringify(answer);
      var changed = text !== seen[group];
      seen[group] = text;
      metrics[group] = answer;
      syncOptions(document.getElementById(group + "-metric"), answer.names || [], PREFERRED[group]);
      if (changed || name !== document.getElementById(group + "-metric").value) { drawChart(group); }
      return changed;
    });
  }

  // The profiler's charts: one per family (CPU, memory, GPU, timings), a series per name,
  // over time.
  function drawProfiler(family, answer) {
    var box = document.querySelector('[data-profiler-chart="' + family.key + '"]');
    if (!box) { return; }
    window.hpcdetChart.draw(box, {
      kind: "line", series: (answer.series || []).map(chartSeries),
      xChoices: [{ key: "time", label: "time" }, { key: "batches", label: "batches (steps completed)" }],
      yLabel: family.title + " (" + family.unit + ")", empty: "No samples yet." });
  }

  function loadProfiler() {
    return Promise.all((data.profiler || []).map(function (family) {
      return h.getJSON(seriesUrl("profiling", family.names)).then(function (answer) {
        var text = JSON.stringify(answer);
        if (text === seen["profiler-" + family.key]) { return false; }
        seen["profiler-" + family.key] = text;
        drawProfiler(family, answer);
        return true;
      });
    })).then(function (changes) { return changes.some(Boolean); });
  }

  // ---- Logs ----

  // A line with its time, and coloured only when its own words say error or warning
  // (harness lines are on stderr because Python's logging writes there).
  function lineNode(entry) {
    var level = window.hpcdetRecords.logLevel(entry.line);
    var at = h.el("time", { className: "at", title: entry.at, text: h.fmtTime(entry.at) });
    at.setAttribute("datetime", entry.at || "");
    return h.el("span", {
      className: "line" + (entry.stream === "stderr" ? " stderr" : "") +
        (level ? " level-" + level : ""),
      id: "log-" + entry.id, "data-log-id": entry.id, "data-stream": entry.stream,
      "data-rank": entry.rank === null || entry.rank === undefined ? "" : entry.rank
    }, [at, " ", h.el("span", { className: "rank", text: logPrefix(entry) }),
        " " + entry.line + "\n"]);
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
      pre.appendChild(h.el("span", { className: "empty", text: logs.q
        ? "No line matches \u201c" + logs.q + "\u201d." : "No log lines yet." }));
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

  function describeFilter(count, matched) {
    var text = "The last " + count + " line" + (count === 1 ? "" : "s");
    if (logs.q) {
      text = matched + " line" + (matched === 1 ? "" : "s") + " match \u201c" + logs.q +
        "\u201d; showing the last " + count;
    }
    if (logs.rank !== "") { text += " of rank " + logs.rank; }
    if (logs.stream !== "") { text += " on " + logs.stream; }
    document.getElementById("logs-note").textContent = text + "; following new lines.";
  }

  // The filtered tail, in place of what is shown; answers {fresh, state} like followLogs.
  function reloadLogs() {
    var generation = logs.generation += 1;
    return h.getJSON(logsUrl({ tail: data.log_tail, rank: logs.rank, stream: logs.stream,
                               q: logs.q }))
      .then(function (body) {
        if (generation !== logs.generation) { return { fresh: 1, state: body.trial_state }; }
        logs.lastId = body.last_id;
        showLines(body.logs || [], true);
        describeFilter((body.logs || []).length, body.matched || 0);
        return { fresh: 1, state: body.trial_state };
      });
  }

  // New lines since the last one shown. A full page means the view fell far behind (a
  // hidden tab): it skips ahead to the tail rather than replaying thousands of lines.
  function followLogs() {
    var generation = logs.generation;
    var url = logsUrl({ after: logs.lastId, rank: logs.rank, stream: logs.stream, q: logs.q,
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
    logs.q = document.getElementById("log-search").value.trim().slice(0, 200);
    var query = logsUrl({ rank: logs.rank, stream: logs.stream, q: logs.q }).split("?")[1];
    window.history.replaceState(null, "", window.location.pathname + (query ? "?" + query : ""));
    document.getElementById("log-download").setAttribute("href",
      data.urls.logs_text + (query ? "?" + query : ""));
    reloadLogs().catch(function (error) {
      h.setStatus("Loading the logs failed (" + error.message + ").");
    });
  }

  // ---- Polling ----

  // Facts and the charts' series; answers {changed, state}. Only what changed is re-rendered.
  function refreshFacts() {
    return Promise.all([h.getJSON(data.urls.trial), loadSeries("training"),
                        loadSeries("validation"), loadProfiler()]).then(function (answers) {
      var answerText = JSON.stringify(answers[0]);
      var changed = answerText !== seen.answer || answers[1] || answers[2] || answers[3];
      if (answerText !== seen.answer) { seen.answer = answerText; renderAnswer(answers[0]); }
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
    // The search runs on the server (the log may be far longer than what is shown), a
    // moment after typing stops.
    document.getElementById("log-search").addEventListener("input", function () {
      window.clearTimeout(logs.typing);
      logs.typing = window.setTimeout(applyLogFilter, 300);
    });
  }

  function start() {
    var node = document.getElementById("trial-data");
    if (!node) { return; }  // the 404 page
    data = JSON.parse(node.textContent);
    PREFERRED.validation = data.searcher_metric;
    metrics = data.series;
    seen.answer = JSON.stringify(data.answer);
    seen.training = JSON.stringify(data.series.training);
    seen.validation = JSON.stringify(data.series.validation);
    logs.pre = document.getElementById("logs");
    logs.lastId = data.last_log_id;
    logs.rank = data.log_filter.rank === null ? "" : String(data.log_filter.rank);
    logs.stream = data.log_filter.stream || "";
    logs.q = data.log_filter.q || "";
    logs.pre.scrollTop = logs.pre.scrollHeight;
    wire();
    ["training", "validation"].forEach(drawChart);
    loadProfiler().catch(function (error) {
      h.setStatus("Loading the profiler's samples failed (" + error.message + ").");
    });
    // The facts and series came with the page and the profiler's are being fetched just
    // above: the first tick follows the logs only (no second request for any of them).
    poller.factsDue = Date.now() + data.facts_seconds * 1000;
    h.poll(data.log_seconds, step);
  }

  start();
}());
