// The health banner (templates/_health.html): refetches the master's health every 30 s and
// shows its problems, or hides the banner when it is ok. Text goes in through textContent.
(function () {
  "use strict";

  var EVERY_MS = 30000;

  function show(banner, health) {
    var list = banner.querySelector("[data-health-problems]");
    var problems = health.status === "degraded" ? (health.problems || []) : [];
    list.replaceChildren.apply(list, problems.map(function (problem) {
      var li = document.createElement("li");
      li.textContent = problem;
      return li;
    }));
    banner.hidden = problems.length === 0;
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
