// Dispatcher console: each panel (<section data-panel="/ui/panels/..." data-refresh="ms">)
// fetches its fragment every data-refresh ms and swaps it in place, keeping open <details>
// open. No framework, no build step; nothing is sent but GETs.
(function () {
  "use strict";
  var status = document.getElementById("live-status");
  function openIds(section) {
    var ids = {};
    section.querySelectorAll("details[open]").forEach(function (d) { if (d.id) { ids[d.id] = true; } });
    return ids;
  }
  function swap(section, html) {
    var open = openIds(section);
    section.innerHTML = html;
    section.querySelectorAll("details").forEach(function (d) { if (open[d.id]) { d.open = true; } });
    section.setAttribute("data-updated", String(Date.now()));
  }
  function say(text) { if (status) { status.textContent = text; } }
  function follow(section) {
    var every = parseInt(section.getAttribute("data-refresh") || "0", 10);
    if (!every) { return; }
    function tick() {
      if (document.hidden) { window.setTimeout(tick, every); return; }
      fetch(section.getAttribute("data-panel"), { credentials: "same-origin", cache: "no-store" })
        .then(function (response) {
          if (response.status === 401) { window.location.reload(); return null; }
          return response.ok ? response.text() : null;
        })
        .then(function (html) {
          if (html !== null && html !== undefined) {
            swap(section, html);
            say("Live: last refresh " + new Date().toISOString().slice(11, 19) + " UTC.");
          }
        })
        .catch(function () { say("Live: the dispatcher did not answer; retrying."); })
        .then(function () { window.setTimeout(tick, every); });
    }
    window.setTimeout(tick, every);
  }
  document.querySelectorAll("section[data-panel]").forEach(follow);
}());
