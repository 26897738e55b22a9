// The Tasks page (templates/tasks.html): the table is fetched again from the page itself
// every few seconds for as long as the page is open (and at once after Kill), so that the
// rows, their Open links and Kill buttons are rendered by the server only. Kill is
// hpcdet.js's confirmed action button. Nothing is loaded from outside the master.
(function () {
  "use strict";

  var h = window.hpcdet;

  function refresh(tbody) {
    return fetch(window.location.href, { headers: { "Accept": "text/html" } })
      .then(function (response) {
        if (!response.ok) { throw new Error(response.statusText); }
        return response.text();
      }).then(function (text) {
        var fresh = new DOMParser().parseFromString(text, "text/html").getElementById("tasks");
        if (fresh) {
          tbody.replaceChildren.apply(tbody, Array.prototype.slice.call(
            document.adoptNode(fresh).childNodes));
        }
        h.localiseTimes(tbody);
        // Never finished: a task started later (det cmd run ...) must appear without a reload.
        return false;
      });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var tbody = document.getElementById("tasks");
    if (!tbody) { return; }
    // true: the table was rendered with the page just now; the first refetch waits.
    h.poll(Number(tbody.dataset.every) || 15, function () { return refresh(tbody); }, true);
  });
}());
