// donegate serve: live updates by polling /live (the pages work without this script).
// Status badges marked data-live-task="ID" are refreshed every few seconds; a task page whose
// task leaves pending/running reloads itself so its runs and journal show the new state.
(function () {
  "use strict";
  var INTERVAL_MS = 2000;
  function poll() {
    var badges = document.querySelectorAll("[data-live-task]");
    var page = document.querySelector("[data-live-reload]");
    if (!badges.length && !page) { return; }
    var ids = [];
    badges.forEach(function (el) {
      var id = el.getAttribute("data-live-task");
      if (ids.indexOf(id) < 0) { ids.push(id); }
    });
    var query = ids.slice(0, 100).map(function (id) { return "task=" + encodeURIComponent(id); }).join("&");
    fetch("/live?" + query, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (!data) { return; }
        badges.forEach(function (el) {
          var state = data.tasks[el.getAttribute("data-live-task")];
          if (state && el.textContent !== state.status) {
            el.textContent = state.status;
            el.className = "status status-" + state.status;
          }
        });
        if (page) {
          var state = data.tasks[page.getAttribute("data-live-reload")];
          if (state && state.status !== page.getAttribute("data-live-status")) {
            window.location.reload();
            return;
          }
        }
        var open = document.querySelector("[data-live-open]");
        if (open && typeof data.open === "number") { open.textContent = String(data.open); }
      })
      .catch(function () { /* the server is away for now; try again next tick */ })
      .finally(function () { window.setTimeout(poll, INTERVAL_MS); });
  }
  document.addEventListener("DOMContentLoaded", function () { window.setTimeout(poll, INTERVAL_MS); });
})();
