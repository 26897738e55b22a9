// The health banner (templates/_health.html): refetches the master's health every 30 s and
// shows its problems (their UTC moments in the reader's local time), or hides the banner
// when it is ok. Text goes in through textContent.
(function () {
  "use strict";

  var EVERY_MS = 30000;

  function show(banner, health) {
    var list = banner.querySelector("[data-health-problems]");
    var problems = health.status === "degraded" ? (health.problems || []) : [];
    list.replaceChildren.apply(list, problems.map(function (problem) {
      return window.hpcdet.el("li", {}, withTimes(problem));
    }));
    banner.hidden = problems.length === 0;
  }

  // A problem's "2026-01-02 03:04:05 UTC" moments as <time> in exact local time (as
  // web/health_banner.py renders them); the rest as text.
  function withTimes(problem) {
    var pattern = /(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}) UTC/g;
    var parts = [];
    var last = 0;
    var found;
    while ((found = pattern.exec(problem)) !== null) {
      parts.push(problem.slice(last, found.index));
      parts.push(window.hpcdet.timeEl(found[1] + "T" + found[2] + "Z", "", true));
      last = pattern.lastIndex;
    }
    parts.push(problem.slice(last));
    return parts;
  }

  function refresh(banner) {
    // As the signed-in user (hpcdet.getJSON sends who it is): health is a read like others.
    window.hpcdet.getJSON("/api/v1/master/health")
      .then(function (health) { show(banner, health); })
      .catch(function () { /* the server-rendered banner stays */ });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var banner = document.querySelector("[data-health-banner]");
    if (banner) { window.setInterval(function () { refresh(banner); }, EVERY_MS); }
  });
}());
