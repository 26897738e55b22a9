// The queue page's "Change" form (templates/_job_update.html): a row's button opens it for
// that job; Apply posts the one change given to POST /api/v1/jobs/<id>/update (the API of
// `det job update`) with the page's user and CSRF token (hpcdet.postJSON), then refreshes
// the table. Text goes in through textContent only.
(function () {
  "use strict";

  var h = window.hpcdet;

  // The page's status line (base.html), as the action buttons write it.
  var status = h.actionStatus;

  function form() { return document.querySelector("[data-job-update]"); }

  function tbody() { return document.querySelector("tbody[data-poll]"); }

  // The waiting jobs the table shows now (it may be newer than the page's first render)
  // join the "Move ahead of" choices.
  function addWaitingChoices(select) {
    var known = {};
    Array.prototype.forEach.call(select.options, function (option) { known[option.value] = true; });
    document.querySelectorAll("tbody tr[data-job-id]").forEach(function (tr) {
      var id = tr.dataset.jobId;
      if (known[id] || !tr.querySelector(".state-QUEUED")) { return; }
      var name = tr.querySelector('[data-label="Name"]');
      var option = document.createElement("option");
      option.value = id;
      option.textContent = (id + " " + (name ? name.textContent : "")).slice(0, 60);
      select.appendChild(option);
    });
  }

  function open(jobId) {
    var f = form();
    f.reset();
    addWaitingChoices(f.elements.ahead_of);
    f.dataset.jobId = jobId;
    f.querySelector("[data-job-update-id]").textContent = jobId;
    Array.prototype.forEach.call(f.elements.ahead_of.options, function (option) {
      option.disabled = option.value === jobId;
    });
    f.hidden = false;
    if (tbody()) { tbody().dataset.paused = "yes"; }
    f.elements.priority.focus();
  }

  function close() {
    form().hidden = true;
    if (tbody()) { tbody().dataset.paused = ""; }
  }

  // The body of the update: the one value given (the API refuses mixing an order with
  // a priority or pool, and says so).
  function body(f) {
    var out = {};
    if (f.elements.priority.value !== "") { out.priority = Number(f.elements.priority.value); }
    if (f.elements.resource_pool.value) { out.resource_pool = f.elements.resource_pool.value; }
    if (f.elements.ahead_of.value) { out.ahead_of = f.elements.ahead_of.value; }
    return out;
  }

  function resultText(jobId, data) {
    var result = data.result || {};
    var text = "Job " + jobId + " updated";
    if (result.position !== undefined && result.position !== null) {
      text += ": now #" + result.position + " in the queue";
    }
    text += ".";
    return (result.messages || []).length ? text + " " + result.messages.join("; ") : text;
  }

  function submit(event) {
    event.preventDefault();
    var f = form();
    var jobId = f.dataset.jobId;
    var update = body(f);
    if (Object.keys(update).length === 0) {
      status("Give a priority, a pool or a job to move ahead of.", true);
      return;
    }
    var button = f.querySelector("button[type=submit]");
    button.disabled = true;
    h.postJSON("/api/v1/jobs/" + encodeURIComponent(jobId) + "/update", update)
      .then(function (data) {
        status(resultText(jobId, data));
        close();
        if (h.refreshPolls) { h.refreshPolls(); }
      })
      .catch(function (error) { status("Change of job " + jobId + " failed: " + error.message, true); })
      .then(function () { button.disabled = false; });
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-change]");
    if (button) { open(button.dataset.change); return; }
    if (event.target.closest("[data-job-update-close]")) { close(); }
  });

  document.addEventListener("DOMContentLoaded", function () {
    if (!form()) { return; }
    form().addEventListener("submit", submit);
    // Without this script the buttons would do nothing: they are shown only now.
    document.querySelectorAll("button[data-change]").forEach(function (button) {
      button.hidden = false;
    });
  });
}());
