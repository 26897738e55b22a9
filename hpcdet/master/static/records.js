// Checkpoints, logs and config forms (the "records" area of the pages). Hand-written, no
// dependencies; text goes in through textContent only (hpcdet.el).
//  - hpcdetRecords.checkpointRow(c, downloadUrl): a checkpoint row exactly as
//    templates/_checkpoints.html renders it (trial.js re-renders the table with it).
//  - hpcdetRecords.logLevel(line): "error", "warning" or "", as web/trial_logs.py decides.
//  - form[data-config-form]: fork / continue, posted to the API as the signed-in user with
//    the page's CSRF token; the master's errors are shown beside the textarea.
(function () {
  "use strict";

  var h = window.hpcdet;
  var ERROR = /\b(?:CRITICAL|FATAL|ERROR)\b|^Traceback \(most recent call last\)|^\w*(?:Error|Exception): /;
  var WARNING = /\bWARN(?:ING)?\b/;
  // The HPC failure lines: as reports/failure.py FAILURE_LINE (a test keeps them equal).
  var FAILURE = /torch\.cuda\.OutOfMemoryError:|CUDA out of memory|\boom[-_]kill\b|Out Of Memory|(?:^|\d )Killed(?:\s{2,}|\s*$)|\*\*\* JOB \S+ ON \S+ CANCELLED AT \S+ DUE TO TIME LIMIT \*\*\*|=>> PBS: job killed: walltime|^(?:srun|slurmstepd): error:|\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT |Segmentation fault|=>> PBS: job killed/;

  function logLevel(line) {
    if (ERROR.test(line) || FAILURE.test(line)) { return "error"; }
    return WARNING.test(line) ? "warning" : "";
  }

  // As web/checkpoints.py size_text: "812 B", "1.5 KiB"; "—" when unknown.
  function sizeText(size) {
    if (size === null || size === undefined) { return "—"; }
    var units = ["B", "KiB", "MiB", "GiB", "TiB"];
    var value = size;
    for (var i = 0; i < units.length; i += 1) {
      if (value < 1024 || i === units.length - 1) {
        return i === 0 ? Math.floor(value) + " B" : value.toFixed(1) + " " + units[i];
      }
      value /= 1024;
    }
    return size + " B";
  }

  function metricText(c) {
    var values = c.validation_metrics || {};
    var first = c.searcher_metric;
    var names = Object.keys(values).sort(function (a, b) {
      var rank = (a !== first) - (b !== first);
      return rank || (a < b ? -1 : (a > b ? 1 : 0));
    });
    return names.map(function (name) { return name + " " + h.fmtNumber(values[name]); })
      .join(", ") || "—";
  }

  function mark(name) {
    return h.el("span", { className: "label-tag mark-" + name, "data-mark": name, text: name });
  }

  function checkpointRow(c, downloadUrl) {
    var deleted = c.state === "DELETED";
    var first = h.el("td", {}, [h.el("code", { className: "uuid", text: c.uuid }),
      c.best ? " " : null, c.best ? mark("best") : null,
      c.latest ? " " : null, c.latest ? mark("latest") : null]);
    var files = deleted ? h.el("span", { className: "live", text: "files deleted" })
      : h.el("a", { href: downloadUrl.replace("UUID", encodeURIComponent(c.uuid)),
                    "data-download": "", text: "Download .tar" });
    if (!deleted) { files.setAttribute("download", c.uuid + ".tar"); }
    return h.el("tr", { "data-checkpoint": c.uuid, "data-checkpoint-state": c.state,
                        className: "ckpt" + (deleted ? " ckpt-deleted" : "") }, [
      first, h.el("td", { text: c.steps_completed }), h.el("td", {}, [h.stateBadge(c.state)]),
      h.el("td", { text: metricText(c) }), h.el("td", { text: sizeText(c.size_bytes) }),
      h.el("td", {}, [files]), h.el("td", {}, [h.timeEl(c.reported_at)]),
      h.el("td", {}, [c.storage_path ? h.el("code", { className: "path", text: c.storage_path })
                                     : "—"])]);
  }

  // ---- Config forms: fork an experiment or a trial, continue a trial ----

  function csrfToken() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }

  // POSTs {config: text}; answers {ok, status, body} (the error's details kept, which
  // hpcdet.postJSON drops: a YAML error's details say which line).
  function submitConfig(url, text) {
    var headers = { "Accept": "application/json", "Content-Type": "application/json" };
    if (h.user()) { headers["X-Hpcdet-User"] = h.user(); }
    if (csrfToken()) { headers["X-CSRF-Token"] = csrfToken(); }
    return fetch(url, { method: "POST", headers: headers, body: JSON.stringify({ config: text }) })
      .then(function (response) {
        return response.json().catch(function () { return {}; }).then(function (body) {
          return { ok: response.ok, status: response.status, body: body };
        });
      });
  }

  function showError(box, error) {
    var message = (error && error.message) || "the master refused it";
    var details = (error && error.details) || [];
    box.replaceChildren(h.el("p", { text: message }),
      details.length ? h.el("ul", {}, details.map(function (d) {
        return h.el("li", { text: String(d) });
      })) : null);
    box.hidden = false;
  }

  function onConfigSubmit(event) {
    var form = event.target.closest("form[data-config-form]");
    if (!form) { return; }
    event.preventDefault();
    var box = form.querySelector("[data-config-error]");
    var button = form.querySelector("[data-config-submit]");
    button.disabled = true;
    box.hidden = true;
    submitConfig(form.dataset.submitUrl, form.querySelector("textarea").value)
      .then(function (result) {
        if (!result.ok) {
          showError(box, result.body.error || { message: "HTTP " + result.status });
          button.disabled = false;
          return;
        }
        var body = result.body;
        window.location.assign(form.dataset.mode === "continue" ? "/trials/" + body.trial_id
          : "/experiments/" + body.experiment.id);
      }).catch(function (error) {
        showError(box, { message: "Sending failed: " + error.message });
        button.disabled = false;
      });
  }

  document.addEventListener("submit", onConfigSubmit);

  window.hpcdetRecords = { checkpointRow: checkpointRow, logLevel: logLevel, sizeText: sizeText };
}());

// ---- The experiment page's checkpoint list: refetched while the experiment runs ----
(function () {
  "use strict";

  var EVERY_MS = 10000;  // checkpoints come minutes apart; the page's own poll is faster

  function refresh(section) {
    var url = section.dataset.refreshUrl + window.location.search;
    return fetch(url, { headers: { "Accept": "text/html" } }).then(function (response) {
      if (!response.ok) { throw new Error(response.statusText); }
      return response.text();
    }).then(function (text) {
      // The server's own escaped rendering, parsed apart from the page: no data as HTML.
      var fresh = new DOMParser().parseFromString(text, "text/html")
        .getElementById("checkpoints-section");
      if (!fresh) { return; }
      section.replaceChildren.apply(section, Array.prototype.slice.call(
        document.adoptNode(fresh).childNodes));
      section.dataset.ended = fresh.dataset.ended;
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var section = document.getElementById("checkpoints-section");
    if (!section || !document.getElementById("experiment-data")) { return; }
    var timer = window.setInterval(function () {
      if (section.dataset.ended === "1") { window.clearInterval(timer); return; }
      if (document.hidden) { return; }
      refresh(section).catch(function () { /* keep the last list; the next tick retries */ });
    }, EVERY_MS);
  });
}());
