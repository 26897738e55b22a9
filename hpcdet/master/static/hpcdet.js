// hpcdet's shared page helpers: JSON requests as the signed-in user, DOM building through
// textContent only (never HTML from data), state badges, polling that stops when a page's
// subject has finished, and the confirmed action buttons. Hand-written; nothing external.
(function () {
  "use strict";

  var TERMINAL = ["COMPLETED", "CANCELED", "ERROR"];

  function user() {
    var match = document.cookie.match(/(?:^|;\s*)hpcdet_user=([^;]*)/);
    return match ? match[1] : "";
  }

  // The web session's CSRF token (a munge master; "" on an open master), sent with
  // every request so that a state-changing one is accepted.
  function csrfToken() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }

  function request(method, url, body) {
    var headers = { "Accept": "application/json" };
    if (user()) { headers["X-Hpcdet-User"] = user(); }
    if (csrfToken()) { headers["X-CSRF-Token"] = csrfToken(); }
    var init = { method: method, headers: headers };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(url, init).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (data) {
        if (!response.ok) {
          var message = (data.error && data.error.message) || response.statusText;
          throw new Error(message);
        }
        return data;
      });
    });
  }

  // el("td", {className: "x", text: "y", href: "/z", title: "t"}, [child, "text"])
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      var value = attrs[key];
      if (value === null || value === undefined) { return; }
      if (key === "text") { node.textContent = String(value); }
      else if (key === "className") { node.className = value; }
      else if (key.slice(0, 5) === "data-" || key === "title" || key === "href" ||
               key === "colspan" || key === "datetime" || key.slice(0, 5) === "aria-") {
        node.setAttribute(key, String(value));
      } else { node[key] = value; }
    });
    (children || []).forEach(function (child) {
      if (child === null || child === undefined) { return; }
      node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
    });
    return node;
  }

  // --- States and times in words (the "pages" area; formatting.py says the same) -------
  // STATE_WORDS is formatting.py's STATE_WORDS: keep the two alike.
  var STATE_WORDS = {
    ACTIVE: "Active", QUEUED: "Queued", RUNNING: "Running", SCHEDULED: "Running",
    PAUSED: "Paused", STOPPING_COMPLETED: "Stopping", STOPPING_CANCELED: "Canceling",
    STOPPING_KILLED: "Killing", STOPPING_ERROR: "Stopping (error)",
    COMPLETED: "Completed", CANCELED: "Canceled", ERROR: "Errored",
    DELETED: "Deleted", PARTIALLY_DELETED: "Partially deleted"
  };
  var EMPTY = "\u2014";

  // A state in words; an unknown one in sentence case ("NEW_THING" -> "New thing").
  function stateWord(state) {
    if (!state) { return EMPTY; }
    if (Object.prototype.hasOwnProperty.call(STATE_WORDS, state)) { return STATE_WORDS[state]; }
    var text = String(state).replace(/_/g, " ").toLowerCase();
    return text.charAt(0).toUpperCase() + text.slice(1);
  }

  // The badge formatting.py's state_badge renders: the word, the exact state on hover.
  function stateBadge(state) {
    if (!state) { return document.createTextNode(EMPTY); }
    return el("span", { className: "state state-" + state, title: state, text: stateWord(state) });
  }

  // Sets an existing badge (a span.state) to `state`.
  function setStateBadge(node, state) {
    node.className = "state state-" + state;
    node.title = state;
    node.textContent = stateWord(state);
  }

  function isTerminal(state) { return TERMINAL.indexOf(state) >= 0; }

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  // The reader's time zone, short ("CET", "GMT+1"), or "" where the browser cannot say.
  function zoneName(date) {
    try {
      var part = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" })
        .formatToParts(date).filter(function (p) { return p.type === "timeZoneName"; })[0];
      return part ? part.value : "";
    } catch (e) { return ""; }
  }

  function dateOf(iso) {
    var d = iso instanceof Date ? iso : new Date(iso);
    return isNaN(d.getTime()) ? null : d;
  }

  function dayText(d) { return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()); }

  // The exact time, in the one format of every page, in the reader's local time:
  // "2026-01-02 04:04:05 CET". "" for none.
  function fmtTime(iso) {
    if (!iso) { return ""; }
    var d = dateOf(iso);
    if (!d) { return String(iso); }
    var text = dayText(d) + " " + pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" +
      pad(d.getSeconds());
    var zone = zoneName(d);
    return zone ? text + " " + zone : text;
  }

  var MINUTE = 60000;
  var HOUR = 60 * MINUTE;

  // The local calendar day of a date as a whole number (today minus yesterday is 1, also
  // across a daylight-saving change).
  function dayNumber(d) {
    return Math.round(new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime() / (24 * HOUR));
  }

  // A time relative to `now` (default: this moment), short enough for a phone: "just now",
  // "3 min ago", "in 2 h" (under 12 hours), "today 09:15", "yesterday 14:02",
  // "tomorrow 08:00", else the local date and minute ("2026-11-28 14:02").
  function relTime(iso, now) {
    var d = iso ? dateOf(iso) : null;
    if (!d) { return iso ? String(iso) : ""; }
    var at = now || new Date();
    var diff = d.getTime() - at.getTime();
    var abs = Math.abs(diff);
    if (abs < MINUTE) { return "just now"; }
    if (abs < 12 * HOUR) {
      var amount = abs < HOUR ? Math.floor(abs / MINUTE) + " min" : Math.floor(abs / HOUR) + " h";
      return diff < 0 ? amount + " ago" : "in " + amount;
    }
    var clock = pad(d.getHours()) + ":" + pad(d.getMinutes());
    var days = dayNumber(d) - dayNumber(at);
    var word = { "-1": "yesterday", "0": "today", "1": "tomorrow" }[String(days)];
    return (word || dayText(d)) + " " + clock;
  }

  function isoUtc(iso) {
    var d = new Date(iso);
    return isNaN(d.getTime()) ? String(iso) : d.toISOString().replace(/\.\d{3}Z$/, "Z");
  }

  // Sets a <time datetime=...> to the relative text, with the exact local time on hover.
  function setRelative(node) {
    var iso = node.getAttribute("datetime");
    node.textContent = relTime(iso);
    node.title = fmtTime(iso);
  }

  // formatting.py's time_tag as the script writes it: the relative time, the exact local
  // time on hover, the ISO UTC moment in datetime=; `empty` for none. `exact`: the exact
  // local time as the text, the ISO moment on hover.
  function timeEl(iso, empty, exact) {
    if (!iso) { return document.createTextNode(empty === undefined ? EMPTY : empty); }
    var utc = isoUtc(iso);
    if (exact) { return el("time", { datetime: utc, title: utc, text: fmtTime(iso) }); }
    var node = el("time", { datetime: utc, "data-relative": "" });
    setRelative(node);
    return node;
  }

  // Rewrites the server's UTC <time> texts: relative, the exact local time on hover. A log
  // line's time (time.at) and those in a [data-exact-times] box (the health banner's
  // "since ...") stay exact, in local time.
  function localiseTimes(root) {
    (root || document).querySelectorAll("time[datetime]").forEach(function (node) {
      if (node.dataset.localised) { return; }
      node.dataset.localised = "1";
      if (node.classList.contains("at") || node.closest("[data-exact-times]")) {
        node.textContent = fmtTime(node.getAttribute("datetime"));
        return;
      }
      node.setAttribute("data-relative", "");
      setRelative(node);
    });
  }

  // Relative times age: every half minute each is written again ("just now", "1 min ago").
  function refreshTimes() {
    document.querySelectorAll("time[data-relative]").forEach(setRelative);
  }
  window.setInterval(refreshTimes, MINUTE / 2);

  // A scroll container the server rendered without a keyboard stop and a name gets both, so
  // that it can be scrolled from the keyboard and a screen reader says what it holds.
  function markScrollBoxes() {
    document.querySelectorAll(".scroll:not([tabindex])").forEach(function (box) {
      box.setAttribute("tabindex", "0");
      box.setAttribute("role", "region");
      if (!box.getAttribute("aria-label")) { box.setAttribute("aria-label", "Table (scrolls sideways)"); }
    });
  }
  document.addEventListener("DOMContentLoaded", function () { localiseTimes(); markScrollBoxes(); });

  function fmtNumber(value) {
    if (value === null || value === undefined || value === "") { return ""; }
    if (typeof value !== "number") { return String(value); }
    if (Number.isInteger(value)) { return String(value); }
    var abs = Math.abs(value);
    return abs !== 0 && (abs < 1e-3 || abs >= 1e6) ? value.toExponential(3)
      : String(Number(value.toPrecision(4)));
  }

  // Progress 0..1 as a whole percent, as hpcdet/master/web/formatting.py's percent().
  function percent(progress) {
    return Math.min(100, Math.max(0, Math.round((progress || 0) * 100)));
  }

  // The progress bar and its text, as templates/_progress.html renders them.
  function progressNodes(progress) {
    var pct = percent(progress);
    var fill = el("span");
    fill.style.width = pct + "%";
    var bar = el("span", { className: "progress", "aria-label": "Progress", "aria-valuemin": "0",
      "aria-valuemax": "100", "aria-valuenow": pct }, [fill]);
    bar.setAttribute("role", "progressbar");
    return [bar, " " + pct + "%"];
  }

  // A pending reason in words, by the rule of hpcdet/dispatcher/slurm/reasons.py:
  // `words` maps known codes to text; the code (and any detail after a comma) is kept.
  function reasonWords(reason, words) {
    if (!reason || reason === "None") { return ""; }
    var comma = reason.indexOf(",");
    var code = (comma < 0 ? reason : reason.slice(0, comma)).trim();
    var detail = comma < 0 ? "" : reason.slice(comma + 1).trim();
    if (!Object.prototype.hasOwnProperty.call(words || {}, code)) { return reason; }
    return words[code] + " (" + code + (detail ? ", " + detail : "") + ")";
  }

  function setStatus(text) {
    document.querySelectorAll("[data-poll-status]").forEach(function (node) {
      node.textContent = text;
    });
  }

  // Calls step() now and then every `seconds` while the tab is visible; step returns a
  // promise of true once the subject is finished, which stops the polling for good.
  // `fresh`: the page itself is what step() would fetch (tasks.js refetches its own URL),
  // so the first step waits a period instead of asking for the page a second time.
  function poll(seconds, step, fresh) {
    var timer = null;
    var stopped = false;
    function run() {
      if (stopped || document.hidden) { return Promise.resolve(); }
      return step().then(function (finished) {
        if (finished) {
          stopped = true;
          window.clearInterval(timer);
          setStatus("Finished: no longer refreshing.");
        } else {
          setStatus("Live: updated " + fmtTime(new Date()) + ".");
        }
      }).catch(function (error) {
        setStatus("Live refresh failed (" + error.message + "); showing the last data.");
      });
    }
    timer = window.setInterval(run, Math.max(1, seconds) * 1000);
    document.addEventListener("hpcdet:changed", run);
    if (fresh) {
      setStatus("Live: updated " + fmtTime(new Date()) + ".");
      return Promise.resolve();
    }
    return run();
  }

  function actionStatus(text, isError) {
    var node = document.querySelector("[data-action-status]");
    if (!node) { return; }
    node.hidden = false;
    node.textContent = text;
    node.className = isError ? "error" : "live";
  }

  // <button data-action-url="/api/v1/experiments/3/pause" data-confirm="Pause ...?">
  function onActionClick(event) {
    var button = event.target.closest("button[data-action-url]");
    if (!button) { return; }
    if (button.dataset.confirm && !window.confirm(button.dataset.confirm)) { return; }
    button.disabled = true;
    request("POST", button.dataset.actionUrl).then(function (data) {
      var exp = data.experiment || {};
      actionStatus((button.dataset.done || "Done") + (exp.state ? ": now " + stateWord(exp.state) : "") + ".");
      document.dispatchEvent(new CustomEvent("hpcdet:changed", { detail: data }));
    }).catch(function (error) {
      actionStatus(button.textContent.trim() + " failed: " + error.message, true);
    }).then(function () { button.disabled = false; });
  }

  document.addEventListener("click", onActionClick);

  // Show the buttons of _actions.html that apply to an experiment in `state`.
  function showActions(state, archived) {
    document.querySelectorAll("[data-actions] button[data-action]").forEach(function (button) {
      var unarchive = button.dataset.action === "unarchive";
      var applies = button.dataset.when.split(" ").indexOf(state) >= 0;
      button.hidden = unarchive ? !archived : (archived || !applies);
    });
  }

  window.hpcdet = {
    user: user, getJSON: function (url) { return request("GET", url); },
    postJSON: function (url, body) { return request("POST", url, body); },
    patchJSON: function (url, body) { return request("PATCH", url, body); },
    el: el, stateBadge: stateBadge, isTerminal: isTerminal, fmtTime: fmtTime, zoneName: zoneName,
    stateWord: stateWord, setStateBadge: setStateBadge, timeEl: timeEl,
    localiseTimes: localiseTimes, relTime: relTime, refreshTimes: refreshTimes,
    EMPTY: EMPTY, actionStatus: actionStatus,
    fmtNumber: fmtNumber, progressNodes: progressNodes, reasonWords: reasonWords, poll: poll, setStatus: setStatus,
    showActions: showActions
  };
}());
