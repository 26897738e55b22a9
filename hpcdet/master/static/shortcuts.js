// Keyboard shortcuts on every page (docs/web.md, "Keyboard shortcuts"): "/" focuses the
// page's search box, "g" then a page's key (data-key on the main navigation's links) goes
// there, "?" opens the list (dialog#shortcuts in templates/_shortcuts.html). None fires while
// the user types in a field, holds Ctrl, Alt or Meta, or has the list open.
(function () {
  "use strict";

  var SEQUENCE_MS = 1500;  // "g" waits this long for its second key
  var gAt = 0;  // when "g" was pressed (0: not pending)

  function typing(target) {
    return !!(target && target.closest &&
              (target.isContentEditable || target.closest("input, textarea, select")));
  }

  function searchBox() {
    return document.querySelector('main input[type="search"]');
  }

  function dialog() {
    return document.getElementById("shortcuts");
  }

  function go(key) {
    var links = document.querySelectorAll("nav a[data-key]");
    for (var i = 0; i < links.length; i++) {
      if (links[i].getAttribute("data-key") === key) { return links[i].href; }
    }
    return null;
  }

  // What the key does: a function, or null when it is not a shortcut here.
  function action(key) {
    var pending = gAt && Date.now() - gAt < SEQUENCE_MS;
    gAt = 0;
    if (pending) {
      var url = go(key);
      return url ? function () { window.location.assign(url); } : null;
    }
    if (key === "g") { return function () { gAt = Date.now(); }; }
    if (key === "?" && dialog() && dialog().showModal) {
      return function () { dialog().showModal(); };
    }
    var search = searchBox();
    if (key === "/" && search) { return function () { search.focus(); search.select(); }; }
    return null;
  }

  function onKey(event) {
    if (event.defaultPrevented || event.ctrlKey || event.altKey || event.metaKey ||
        event.repeat || typing(event.target) || (dialog() && dialog().open)) {
      gAt = 0;
      return;
    }
    var run = action(event.key);
    if (run) {
      event.preventDefault();
      run();
    }
  }

  function init() {
    var search = searchBox();
    if (search) { search.setAttribute("aria-keyshortcuts", "/"); }
    document.addEventListener("keydown", onKey);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
}());
