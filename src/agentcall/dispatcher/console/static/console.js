// Dispatcher console: every refresh interval, fetch each panel's fragment
// (<section data-panel="/ui/panels/...">) and swap it in place, keeping open <details> open.
// No framework, no build step; nothing is sent but GETs.
(function () {
  "use strict";
  var every = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
  var status = document.getElementById("live-status");
  if (!every) { return; }
  function openIds(section) {
    var ids = {};
    section.querySelectorAll("details[open]").forEach(function (d) { if (d.id) { ids[d.id] = true; } });
    return ids;
  }
  function refresh(section) {
    return fetch(section.getAttribute("data-panel"), { credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        if (response.status === 401) { window.location.reload(); return null; }
        return response.ok ? response.text() : null;
      })
      .then(function (html) {
        if (html === null || html === undefined) { return false; }
        var open = openIds(section);
        section.innerHTML = html;
        section.querySelectorAll("details").forEach(function (d) { if (open[d.id]) { d.open = true; } });
        section.setAttribute("data-updated", String(Date.now()));
        return true;
      });
  }
  function tick() {
    if (document.hidden) { window.setTimeout(tick, every); return; }
    var sections = Array.prototype.slice.call(document.querySelectorAll("section[data-panel]"));
    Promise.all(sections.map(refresh))
      .then(function () {
        if (status) { status.textContent = "Live: refreshed every " + every / 1000 + " s (last " + new Date().toISOString().slice(11, 19) + " UTC)."; }
      })
      .catch(function () {
        if (status) { status.textContent = "Live: the dispatcher did not answer; retrying."; }
      })
      .then(function () { window.setTimeout(tick, every); });
  }
  window.setTimeout(tick, every);
}());
