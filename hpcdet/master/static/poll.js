// Live refresh for hpcdet's pages, hand-written, no framework, nothing loaded from outside.
// A <tbody data-poll="URL" data-render="KIND" data-every="SECONDS"> is refetched every
// SECONDS (hpcdet.poll, which also writes the live status) and re-rendered; the
// server-rendered rows stay when the fetch fails, so every page works without this script.
// All text goes in through textContent (never as HTML).
(function () {
  "use strict";

  var h = window.hpcdet;

  function cell(tr, text, className) {
    var td = className ? h.el("td", {}, [h.el("span", { className: className, text: text })])
      : h.el("td", { text: text === null || text === undefined ? "" : text });
    tr.appendChild(td);
    return td;
  }

  function poolRow(pool) {
    var tr = document.createElement("tr");
    var link = document.createElement("a");
    link.href = "/queue?pool=" + encodeURIComponent(pool.name);
    link.textContent = pool.name;
    cell(tr, "").appendChild(link);
    cell(tr, pool.partition);
    cell(tr, pool.slot_type);
    cell(tr, pool.nodes_up + "/" + pool.nodes_total);
    cell(tr, pool.slots_used + "/" + pool.slots_total);
    cell(tr, dash(pool.slots_used_by_own_jobs));
    cell(tr, (pool.shares_nodes_with || []).join(", ") || "\u2014");
    cell(tr, (pool.gpu_types || []).join(", ") || "\u2014");
    cell(tr, pool.jobs_pending);
    var marks = [];
    if (pool.default_compute) { marks.push("compute"); }
    if (pool.default_aux) { marks.push("aux"); }
    cell(tr, marks.join(", ") || "\u2014");
    tr.dataset.pool = pool.name;
    return tr;
  }

  function dash(value) {
    return value === null || value === undefined || value === "" ? "\u2014" : value;
  }

  // JSON embedded by queue.html: the words for reason codes and job types, and who looks.
  function embedded(id) {
    var node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : {};
  }

  // The API says a row's reason in words by the master's scheduler; the embedded legend
  // (code -> words) is for an answer without them.
  function reasonWords(job) {
    return job.reason_words || h.reasonWords(job.reason, embedded("reason-words"));
  }

  // The same cells as queue.html, with the labels the phone's card layout shows.
  function jobRow(job) {
    var tr = document.createElement("tr");
    var context = embedded("queue-context");
    var labelled = function (label, text, className) {
      cell(tr, text, className).dataset.label = label;
    };
    tr.dataset.jobId = job.job_id;
    labelled("#", job.position);
    if (job.array_tasks) {
      tr.dataset.array = "";
      tr.appendChild(h.el("td", { "data-label": "Job ID" }, [arrayDetails(job)]));
    } else {
      labelled("Job ID", job.job_id);
    }
    labelled("Type", embedded("type-words")[job.type] || job.type);
    tr.lastChild.title = job.type;
    var link = jobLink(job);
    tr.appendChild(h.el("td", { "data-label": "Name" }, [link
      ? h.el("a", { href: link, text: job.name || job.job_id }) : dash(job.name)]));
    tr.appendChild(h.el("td", { "data-label": "State" }, [h.stateBadge(job.state)]));
    labelled("Slots", job.slots_acquired + "/" + job.slots_needed + " " + job.slot_kind);
    labelled("Priority", dash(job.priority));
    labelled("Slurm priority", dash(job.slurm_priority));
    labelled("Pool / QOS", dash(job.pool) + " / " + dash(job.qos));
    labelled("User", dash(job.user));
    labelled("Time / limit", duration(job.time_used) + " / " + duration(job.time_limit));
    tr.appendChild(h.el("td", { "data-label": "Expected start", className: "start" },
                        [h.timeEl(job.expected_start)]));
    labelled("Why waiting", reasonWords(job) || (job.state === "QUEUED" ? "\u2014" : "running"));
    tr.lastChild.className = "why";
    var change = cell(tr, "");
    change.className = "change";
    if (job.state === "QUEUED" && !job.external && !job.array_tasks && (context.admin || job.user === context.me)) {
      change.appendChild(h.el("button", { type: "button", "data-change": job.job_id,
                                          "aria-label": "Change job " + job.job_id,
                                          text: "Change\u2026" }));
    }
    return tr;
  }

  // web/queue.py's job_link: the trial, else the experiment, else the task of a row.
  function jobLink(job) {
    if (job.trial_id) { return "/trials/" + job.trial_id; }
    if (job.experiment_id) { return "/experiments/" + job.experiment_id; }
    if (job.task_id) { return "/tasks/" + job.task_id; }
    return null;
  }

  function pad2(n) { return (n < 10 ? "0" : "") + n; }

  // web/queue.py's duration_text: seconds as squeue writes times (0:31, 1:02:03,
  // 1-02:03:04); an em dash for none.
  function duration(seconds) {
    if (seconds === null || seconds === undefined) { return "\u2014"; }
    var days = Math.floor(seconds / 86400), hours = Math.floor(seconds % 86400 / 3600);
    var minutes = Math.floor(seconds % 3600 / 60), secs = seconds % 60;
    if (days) { return days + "-" + pad2(hours) + ":" + pad2(minutes) + ":" + pad2(secs); }
    return hours ? hours + ":" + pad2(minutes) + ":" + pad2(secs) : minutes + ":" + pad2(secs);
  }

  // An array's row (GET /api/v1/jobs?arrays=grouped): its id and task counts by Slurm
  // state, opening to its entries as Slurm lists them; open ones stay open across polls.
  function arrayDetails(job) {
    var counts = Object.keys(job.array_tasks).sort().map(function (state) {
      return Number(job.array_tasks[state]).toLocaleString("en-US") + " " + state;
    }).join(", ");
    var was = document.querySelector('details[data-array-id="' + CSS.escape(job.job_id) + '"]');
    var entries = (job.array_entries || []).map(function (e) {
      var trial = e.trial_id ? [" (", h.el("a", { href: "/trials/" + e.trial_id, text: "trial " + e.trial_id }), ")"] : [];
      return h.el("li", { "data-array-entry": e.job_id }, [e.job_id + " " + (e.slurm_state || "")].concat(trial));
    });
    var details = h.el("details", { "data-array-id": job.job_id }, [
      h.el("summary", {}, [job.job_id + " ", h.el("span", { "data-array-tasks": "", text: "(array: " + counts + ")" })]),
      h.el("ul", { className: "array-entries" }, entries)]);
    details.open = Boolean(was && was.open);
    return details;
  }

  var renderers = {
    pools: function (body) { return (body.resource_pools || []).map(poolRow); },
    jobs: function (body) { return (body.jobs || []).map(jobRow); }
  };

  // When the snapshot was taken, as the server's taken_text: a relative <time>.
  function setTaken(iso) {
    var node = document.querySelector("[data-poll-taken]");
    if (node) { node.replaceChildren(h.timeEl(iso, "not read from Slurm yet")); }
  }

  function render(tbody, body) {
    // The rows stay while the page's user edits one of them (the queue's Change form).
    if (tbody.dataset.paused === "yes") { return; }
    var rows = renderers[tbody.dataset.render](body);
    if (rows.length === 0) {
      var tr = document.createElement("tr");
      cell(tr, tbody.dataset.empty || "Nothing here.").colSpan =
        tbody.parentNode.querySelectorAll("thead th").length;
      rows = [tr];
    }
    tbody.replaceChildren.apply(tbody, rows);
    setTaken(body.taken_at);
  }

  // data-render="page": the URL is the page itself, rendered by the server; its fresh
  // <tbody> (same id) and snapshot time replace this page's (adopted nodes, never HTML text).
  function renderPage(tbody, text) {
    var fresh = new DOMParser().parseFromString(text, "text/html");
    var rows = fresh.getElementById(tbody.id);
    if (!rows) { return; }
    tbody.replaceChildren.apply(tbody, Array.prototype.slice.call(document.adoptNode(rows).childNodes));
    var taken = fresh.querySelector("[data-poll-taken]");
    var here = document.querySelector("[data-poll-taken]");
    if (taken && here) { here.replaceChildren.apply(here, Array.prototype.slice.call(document.adoptNode(taken).childNodes)); }
    h.localiseTimes();
  }

  function fetchPage(url) {
    return fetch(url, { headers: { "Accept": "text/html" } }).then(function (response) {
      if (!response.ok) { throw new Error(response.statusText); }
      return response.text();
    });
  }

  // The cluster and the queue never finish: hpcdet.poll keeps going (step answers false).
  function start(tbody) {
    var page = tbody.dataset.render === "page";
    h.poll(Number(tbody.dataset.every) || 15, function () {
      if (page) {
        return fetchPage(tbody.dataset.poll).then(function (text) {
          renderPage(tbody, text);
          return false;
        });
      }
      return h.getJSON(tbody.dataset.poll).then(function (body) {
        render(tbody, body);
        return false;
      });
    }, page);
  }

  // Refetch every polled table now (after an action changed what they show).
  h.refreshPolls = function () {
    document.querySelectorAll("tbody[data-poll]:not([data-render=page])").forEach(function (tbody) {
      h.getJSON(tbody.dataset.poll).then(function (body) { render(tbody, body); });
    });
  };

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("tbody[data-poll]").forEach(start);
  });
}());
