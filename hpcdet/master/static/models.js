// The model registry pages' forms (templates/models.html, model.html): create a model,
// register a checkpoint as a model's next version (picked, or its UUID typed) and edit a
// model's description, labels and metadata, through the JSON API as the signed-in user with
// the page's CSRF token (hpcdet.postJSON/patchJSON). On success the model's page opens.
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

  function submit(form, url, body, done, send) {
    var button = form.querySelector("button[type=submit]");
    if (button) { button.disabled = true; }
    return (send || h.postJSON)(url, body).then(done).catch(function (error) {
      status("Failed: " + error.message, true);
    }).then(function () { if (button) { button.disabled = false; } });
  }

  function onRegister(form) {
    var v = values(form);
    if (!v.model) { status("Choose a model first (or create one).", true); return; }
    var url = "/api/v1/models/" + encodeURIComponent(v.model) + "/versions";
    // A typed UUID wins over the picker's choice (the fallback for any other checkpoint).
    var uuid = v.checkpoint_uuid_typed || v.checkpoint_uuid;
    if (!uuid) { status("Choose a checkpoint or type its UUID.", true); return; }
    var body = { checkpoint_uuid: uuid, name: v.name, comment: v.comment };
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

  // "key = value" lines as metadata: a value that parses as JSON stays JSON, else text.
  function parseMetadata(text) {
    var out = {};
    text.split("\n").forEach(function (line) {
      var at = line.indexOf("=");
      var key = (at < 0 ? line : line.slice(0, at)).trim();
      if (!key) { return; }
      var raw = at < 0 ? "" : line.slice(at + 1).trim();
      try { out[key] = JSON.parse(raw); } catch (e) { out[key] = raw; }
    });
    return out;
  }

  // PATCH merges metadata: a key that was there and is no longer gets null (removed).
  function onEdit(form) {
    var v = values(form);
    var was = JSON.parse(form.querySelector("[data-metadata-was]").textContent || "{}");
    var metadata = parseMetadata(v.metadata || "");
    Object.keys(was).forEach(function (key) {
      if (!Object.prototype.hasOwnProperty.call(metadata, key)) { metadata[key] = null; }
    });
    var labels = (v.labels || "").split(",").map(function (label) { return label.trim(); })
      .filter(function (label) { return label !== ""; });
    var name = form.dataset.editModel;
    var body = { description: v.description, labels: labels, metadata: metadata };
    submit(form, "/api/v1/models/" + encodeURIComponent(name), body, function () {
      status("Saved.");
      window.location.assign(modelPage(form, name));
    }, h.patchJSON);
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form.matches("form[data-register-version]")) {
      event.preventDefault();
      onRegister(form);
    } else if (form.matches("form[data-edit-model]")) {
      event.preventDefault();
      onEdit(form);
    } else if (form.matches("form[data-create-model]")) {
      event.preventDefault();
      onCreate(form);
    }
  });
}());
