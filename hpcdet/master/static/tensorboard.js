// The experiment page's "Open TensorBoard" button: goes to the user's active TensorBoard of
// this experiment, or starts one (POST /api/v1/tensorboards). A running one opens at its
// proxied address (/proxy/<id>/); one still starting is shown on the Tasks page, whose Open
// link appears once it runs. Nothing is loaded from outside the master.
(function () {
  "use strict";

  var h = window.hpcdet;

  function showsOnly(task, expId) {
    var config = task.config || {};
    var exps = config.experiment_ids || [];
    return exps.length === 1 && exps[0] === expId && (config.trial_ids || []).length === 0;
  }

  function go(task) {
    window.location.assign(task.state === "RUNNING" ? "/proxy/" + task.id + "/"
      : "/tasks?kind=tensorboard#task-" + task.id);
  }

  function open(button) {
    var expId = Number(button.dataset.openTensorboard);
    button.disabled = true;
    h.getJSON("/api/v1/tasks?kind=tensorboard&mine=true&active=true").then(function (body) {
      var found = (body.tasks || []).filter(function (t) { return showsOnly(t, expId); })[0];
      if (found) { return found; }
      return h.postJSON("/api/v1/tensorboards", { experiment_ids: [expId] })
        .then(function (answer) { return answer.task; });
    }).then(go).catch(function (error) {
      var status = document.querySelector("[data-action-status]");
      if (status) {
        status.hidden = false;
        status.className = "error";
        status.textContent = "Open TensorBoard failed: " + error.message;
      }
      button.disabled = false;
    });
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-open-tensorboard]");
    if (button) { open(button); }
  });
}());
