// Live job page: while the job is queued or running, ask the server every 2 s
// whether the page changed, and swap in the body it rendered. Nothing else.
(function () {
  "use strict";
  var root = document.querySelector("[data-live]");
  if (!root) return;
  var url = root.getAttribute("data-live");
  var version = root.getAttribute("data-version");

  function swap(html) {
    // Keep the disclosure widgets the reader opened or closed.
    var open = {};
    root.querySelectorAll("details[id]").forEach(function (d) { open[d.id] = d.open; });
    root.innerHTML = html;
    root.querySelectorAll("details[id]").forEach(function (d) {
      if (d.id in open) d.open = open[d.id];
    });
  }

  function tick() {
    fetch(url + "?v=" + encodeURIComponent(version), {headers: {Accept: "application/json"}, credentials: "same-origin"})
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (data && data.html) { swap(data.html); version = data.version; }
        if (data && !data.live) { root.removeAttribute("data-live"); return; }
        setTimeout(tick, 2000);
      })
      .catch(function () { setTimeout(tick, 2000); });
  }
  setTimeout(tick, 2000);
})();
