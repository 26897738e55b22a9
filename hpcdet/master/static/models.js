// The model registry pages' forms (templates/models.html, model.html): create a model and
// register a checkpoint as a model's next version, through the JSON API as the signed-in
// user with the page's CSRF token (hpcdet.postJSON). On success the model's page opens.
(function () {
  "use strict";
  var h = window.hpcdet;

  // The page's status line (base.html), as the action buttons write it.
  var status = h.actionStatus;

  function values(form) {
    var out = {};
    new FormData(form).forEach(function (value, key) { out[key] = String(value).trim(); });
    return out;
  }

  function modelPage(form, name) {
    var base = form.dataset.modelsUrl || "/models";
    return base + "/" + encodeURIComponent(name);
  }

  function submit(form, url, body, done) {
    var button = form.querySelector("button[type=submit]");
    if (button) { button.disabled = true; }
    return h.postJSON(url, body).then(done).catch(function (error) {
      status("Failed: " + error.message, true);
    }).then(function () { if (button) { button.disabled = false; } });
  }

  function onRegister(form) {
    var v = values(form);
    if (!v.model) { status("Choose a model first (or create one).", true); return; }
    var url = "/api/v1/models/" + encodeURIComponent(v.model) + "/versions";
    var body = { checkpoint_uuid: v.checkpoint_uuid, name: v.name, comment: v.comment };
    submit(form, url, body, function (data) {
      var version = data.model_version || {};
      status("Registered as version " + version.version + " of " + v.model + ".");
      window.location.assign(modelPage(form, v.model));
    });
  }

  function onCreate(form) {
    var v = values(form);
    var body = { name: v.name, description: v.description };
    if (v.workspace) { body.workspace = v.workspace; }
    submit(form, "/api/v1/models", body, function (data) {
      var model = data.model || {};
      status("Created model " + model.name + ".");
      var params = new URLSearchParams(window.location.search);
      if (params.get("checkpoint")) { window.location.reload(); return; }
      window.location.assign("/models/" + encodeURIComponent(model.name));
    });
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form.matches("form[data-register-version]")) {
      event.preventDefault();
      onRegister(form);
    } else if (form.matches("form[data-create-model]")) {
      event.preventDefault();
      onCreate(form);
    }
  });
}());
