// Orbit console: refresh the live part of the page (<main data-refresh="ms">) in place, while
// the tab is visible and no form field is being edited. No framework, no build step.
(function () {
  "use strict";
  var main = document.getElementById("live");
  if (!main) { return; }
  var every = parseInt(main.getAttribute("data-refresh") || "0", 10);
  if (!every) { return; }
  function editing() {
    var active = document.activeElement;
    return active && main.contains(active) && /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName);
  }
  function schedule() { window.setTimeout(tick, every); }
  function tick() {
    if (document.hidden || editing()) { schedule(); return; }
    fetch(window.location.href, { headers: { "X-Orbit-Fragment": "1" }, credentials: "same-origin" })
      .then(function (response) {
        if (response.status === 401 || response.redirected) { window.location.reload(); return null; }
        return response.ok ? response.text() : null;
      })
      .then(function (html) {
        if (html !== null && html !== undefined && !editing()) {
          main.innerHTML = html;
          main.setAttribute("data-updated", String(Date.now()));
        }
      })
      .catch(function () { /* offline for a moment: try again at the next tick */ })
      .then(schedule);
  }
  schedule();
}());
