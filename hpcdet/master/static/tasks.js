// The Tasks page (templates/tasks.html) and a task's page (templates/task.html): the live
// part (the list's table; a task's facts, failure summary and log) is fetched again from
// the page itself every few seconds and swapped for the server's fresh rendering (and at
// once after Kill), so that rows, links and buttons are rendered by the server only. The
// list refreshes for as long as the page is open; a task's page until the task has ended
// (its live part no longer marked data-active). Kill is hpcdet.js's confirmed action
// button. Nothing is loaded from outside the master.
(function () {
  "use strict";

  var h = window.hpcdet;

  function refresh(part, untilEnded) {
    return fetch(window.location.href, { headers: { "Accept": "text/html" } })
      .then(function (response) {
        if (!response.ok) { throw new Error(response.statusText); }
        return response.text();
      }).then(function (text) {
        var fresh = new DOMParser().parseFromString(text, "text/html").getElementById(part.id);
        if (!fresh) { return false; }
        part.replaceChildren.apply(part, Array.prototype.slice.call(
          document.adoptNode(fresh).childNodes));
        h.localiseTimes(part);
        // The list never finishes: a task started later (det cmd run ...) must appear.
        return untilEnded && !fresh.hasAttribute("data-active");
      });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var list = document.getElementById("tasks");
    var task = document.getElementById("task-live");
    var part = list || (task && task.hasAttribute("data-active") ? task : null);
    if (!part) { return; }
    // true: the part was rendered with the page just now; the first refetch waits.
    h.poll(Number(part.dataset.every) || 15, function () { return refresh(part, !list); }, true);
  });
}());
