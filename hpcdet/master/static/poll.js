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
    cell(tr, (pool.gpu_types || []).join(", "));
    cell(tr, pool.jobs_pending);
    var marks = [];
    if (pool.default_compute) { marks.push("compute"); }
    if (pool.default_aux) { marks.push("aux"); }
    cell(tr, marks.join(", "));
    return tr;
  }

  // The words for Slurm's reason codes, embedded by queue.html.
  function reasonWords(reason) {
    var node = document.getElementById("reason-words");
    return h.reasonWords(reason, node ? JSON.parse(node.textContent) : {});
  }

  function jobRow(job) {
    var tr = document.createElement("tr");
    cell(tr, job.position);
    cell(tr, job.job_id);
    cell(tr, job.type);
    cell(tr, job.name);
    cell(tr, job.state, "state state-" + job.state);
    cell(tr, job.slots_acquired + "/" + job.slots_needed + " " + job.slot_kind);
    cell(tr, job.priority);
    cell(tr, job.qos);
    cell(tr, job.pool);
    cell(tr, job.user);
    cell(tr, reasonWords(job.reason));
    return tr;
  }

  var renderers = {
    pools: function (body) { return (body.resource_pools || []).map(poolRow); },
    jobs: function (body) { return (body.jobs || []).map(jobRow); }
  };

  function takenText(iso) {
    return iso ? h.fmtTime(iso) + " UTC" : "not read from Slurm yet";
  }

  function setText(selector, text) {
    var node = document.querySelector(selector);
    if (node) { node.textContent = text; }
  }

  function render(tbody, body) {
    var rows = renderers[tbody.dataset.render](body);
    if (rows.length === 0) {
      var tr = document.createElement("tr");
      cell(tr, tbody.dataset.empty || "Nothing here.").colSpan =
        tbody.parentNode.querySelectorAll("thead th").length;
      rows = [tr];
    }
    tbody.replaceChildren.apply(tbody, rows);
    setText("[data-poll-taken]", takenText(body.taken_at));
  }

  // The cluster and the queue never finish: hpcdet.poll keeps going (step answers false).
  function start(tbody) {
    h.poll(Number(tbody.dataset.every) || 15, function () {
      return h.getJSON(tbody.dataset.poll).then(function (body) {
        render(tbody, body);
        return false;
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("tbody[data-poll]").forEach(start);
  });
}());
